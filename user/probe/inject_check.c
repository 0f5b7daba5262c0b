// SPDX-License-Identifier: GPL-2.0-only
/* Checks before a ptrace attach: see inject_check.h. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "user/probe/inject_check.h"

/* Read a small /proc file into buf (NUL-terminated). Bytes read, or -errno. */
static int read_text(const char *path, char *buf, size_t len)
{
	FILE *f = fopen(path, "re");
	size_t n;

	if (!f)
		return -errno;
	n = fread(buf, 1, len - 1, f);
	fclose(f);
	buf[n] = '\0';
	return (int)n;
}

int inject_check__yama_scope(const char *path)
{
	char buf[32], *end;
	long v;
	int n = read_text(path ? path : INJECT_YAMA_PATH, buf, sizeof(buf));

	if (n < 0)
		return n == -ENOENT ? -ENOENT : n;
	v = strtol(buf, &end, 10);
	if (end == buf || (*end && *end != '\n') || v < 0 || v > 3)
		return -EINVAL;
	return (int)v;
}

int inject_check__yama(int scope, bool cap_sys_ptrace, char *why, size_t len)
{
	if (scope == 3) {
		snprintf(why, len, "Yama's ptrace_scope is 3: no process may be traced until reboot");
		return -EPERM;
	}
	if (scope == 2 && !cap_sys_ptrace) {
		snprintf(why, len, "Yama's ptrace_scope is 2: only a tracer with CAP_SYS_PTRACE may "
			 "attach");
		return -EPERM;
	}
	return 0;
}

static int parse_line(const char *text, const char *key, unsigned int v[4])
{
	const char *p = strstr(text, key);
	char *end;

	if (!p || (p != text && p[-1] != '\n'))
		return -EINVAL;
	p += strlen(key);
	for (int i = 0; i < 4; i++) {
		errno = 0;
		v[i] = (unsigned int)strtoul(p, &end, 10);
		if (end == p || errno)
			return -EINVAL;
		p = end;
	}
	return 0;
}

int inject_check__parse_ids(const char *text, struct inject_ids *out)
{
	if (parse_line(text, "Uid:", out->uid) || parse_line(text, "Gid:", out->gid))
		return -EINVAL;
	return 0;
}

int inject_check__read_ids(pid_t pid, struct inject_ids *out)
{
	char path[64], buf[4096];
	int n;

	if (pid)
		snprintf(path, sizeof(path), "/proc/%d/status", (int)pid);
	else
		snprintf(path, sizeof(path), "/proc/self/status");
	n = read_text(path, buf, sizeof(buf));
	if (n < 0)
		return n;
	return inject_check__parse_ids(buf, out);
}

bool inject_check__same_user(const struct inject_ids *tracer, const struct inject_ids *target)
{
	for (int i = 0; i < 3; i++)
		if (target->uid[i] != tracer->uid[0] || target->gid[i] != tracer->gid[0])
			return false;
	return true;
}

int inject_check__same_ns(pid_t pid, const char *ns)
{
	char path[64];
	struct stat a, b;

	snprintf(path, sizeof(path), "/proc/self/ns/%s", ns);
	if (stat(path, &a))
		return -errno;
	snprintf(path, sizeof(path), "/proc/%d/ns/%s", (int)pid, ns);
	if (stat(path, &b))
		return -errno;
	return a.st_dev == b.st_dev && a.st_ino == b.st_ino;
}

int inject_check__parse_state(const char *text)
{
	const char *p = strrchr(text, ')'); /* comm may hold spaces and parentheses */

	if (!p || p[1] != ' ' || !p[2])
		return -EINVAL;
	return (unsigned char)p[2];
}

int inject_check__thread_state(pid_t pid, pid_t tid)
{
	char path[64], buf[1024];
	int n;

	snprintf(path, sizeof(path), "/proc/%d/task/%d/stat", (int)pid, (int)tid);
	n = read_text(path, buf, sizeof(buf));
	if (n < 0)
		return n;
	return inject_check__parse_state(buf);
}

int inject_check__parse_tracer(const char *text)
{
	const char *p = strstr(text, "\nTracerPid:");
	char *end;
	long v;

	if (!p)
		return -EINVAL;
	v = strtol(p + 11, &end, 10);
	if (end == p + 11 || v < 0)
		return -EINVAL;
	return (int)v;
}
