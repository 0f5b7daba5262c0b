// SPDX-License-Identifier: GPL-2.0-only
#include <dirent.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include "user/probe/proc_task.h"

/* /proc/TGID/task/TID/<file>, first line without the newline; "" when unreadable. */
static void read_task_file(uint32_t tgid, uint32_t tid, const char *file, char *buf, size_t len)
{
	char path[64];
	FILE *f;

	buf[0] = '\0';
	snprintf(path, sizeof(path), "/proc/%u/task/%u/%s", tgid, tid, file);
	f = fopen(path, "re");
	if (!f)
		return;
	if (!fgets(buf, len, f))
		buf[0] = '\0';
	fclose(f);
	buf[strcspn(buf, "\n")] = '\0';
}

void proc_task__comm(uint32_t tgid, uint32_t tid, char *buf, size_t len)
{
	read_task_file(tgid, tid, "comm", buf, len);
}

int proc_task__sleeping(uint32_t tgid, uint32_t *tids, int cap, uint64_t *now_ns)
{
	char path[64], stat[512];
	struct timespec ts;
	struct dirent *d;
	int n = 0;
	DIR *dir;

	snprintf(path, sizeof(path), "/proc/%u/task", tgid);
	dir = opendir(path);
	if (!dir)
		return -errno;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	*now_ns = ts.tv_sec * 1000000000ULL + ts.tv_nsec;
	while ((d = readdir(dir)) && n < cap) {
		uint32_t tid = strtoul(d->d_name, NULL, 10);
		char *p;

		if (!tid)
			continue;
		read_task_file(tgid, tid, "stat", stat, sizeof(stat));
		/* "pid (comm) S ...": comm may hold spaces and parentheses. */
		p = strrchr(stat, ')');
		if (!p || p[1] != ' ' || (p[2] != 'S' && p[2] != 'D'))
			continue;
		tids[n++] = tid;
	}
	closedir(dir);
	return n;
}
