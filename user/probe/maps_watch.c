// SPDX-License-Identifier: GPL-2.0-only
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "user/probe/maps_watch.h"

/* The kB number after "key:" in status text, or -1. */
static int64_t status_kb(const char *text, const char *key)
{
	const char *p = strstr(text, key);
	char *end;
	long long v;

	if (!p)
		return -1;
	v = strtoll(p + strlen(key), &end, 10);
	return end == p + strlen(key) || v < 0 ? -1 : v;
}

int maps_watch__exec_kb(uint32_t tgid, uint64_t *kb)
{
	char path[40], buf[4096];
	int64_t exe, lib;
	ssize_t n;
	int fd;

	snprintf(path, sizeof(path), "/proc/%u/status", tgid);
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	do
		n = read(fd, buf, sizeof(buf) - 1);
	while (n < 0 && errno == EINTR);
	close(fd);
	if (n < 0)
		return -errno;
	buf[n] = '\0';
	exe = status_kb(buf, "\nVmExe:");
	lib = status_kb(buf, "\nVmLib:");
	if (exe < 0 || lib < 0)
		return -ENODATA;
	*kb = (uint64_t)exe + (uint64_t)lib;
	return 0;
}

bool maps_watch__changed(struct maps_watch *w, uint32_t tgid, uint64_t now_ns)
{
	__typeof__(w->slot[0]) *s = &w->slot[tgid % MAPS_WATCH_SLOTS];
	uint64_t kb = 0;

	if (maps_watch__exec_kb(tgid, &kb) == 0 && s->tgid == tgid && s->exec_kb == kb &&
	    now_ns - s->full_ns < MAPS_WATCH_FULL_NS)
		return false;
	s->tgid = tgid;
	s->exec_kb = kb;
	s->full_ns = now_ns;
	return true;
}

bool maps_watch__known(const struct maps_watch *w, uint32_t tgid)
{
	return tgid && w->slot[tgid % MAPS_WATCH_SLOTS].tgid == tgid;
}
