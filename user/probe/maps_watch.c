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

/*
 * The TLS probe, the engine probe and the engine profile setup each watch
 * every traced process from the same tick: one status read per process
 * and tick serves all of them (a read costs tens of us on a VM where a
 * syscall traps). Keyed by the tick's time, so a later time reads again.
 */
#define EXEC_KB_MEMO 8
static struct {
	uint32_t tgid;
	int rc;
	uint64_t now_ns, kb;
} exec_kb_memo[EXEC_KB_MEMO];

static int exec_kb_at(uint32_t tgid, uint64_t now_ns, uint64_t *kb)
{
	__typeof__(exec_kb_memo[0]) *m = &exec_kb_memo[tgid % EXEC_KB_MEMO];

	if (m->tgid != tgid || m->now_ns != now_ns || !now_ns) {
		m->rc = maps_watch__exec_kb(tgid, &m->kb);
		m->tgid = tgid;
		m->now_ns = now_ns;
	}
	*kb = m->kb;
	return m->rc;
}

bool maps_watch__changed(struct maps_watch *w, uint32_t tgid, uint64_t now_ns)
{
	__typeof__(w->slot[0]) *s = &w->slot[tgid % MAPS_WATCH_SLOTS];
	uint64_t kb = 0;

	if (exec_kb_at(tgid, now_ns, &kb) == 0 && s->tgid == tgid && s->exec_kb == kb &&
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
