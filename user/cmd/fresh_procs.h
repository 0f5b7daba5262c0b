/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * Processes the tracer began to trace in the last few seconds (a traced
 * process's fork, -c's command): for FRESH_NS each is looked at again at
 * every drain whose check finds its executable mappings changed (an exec,
 * then ld.so mapping the libraries), so that engine and TLS uprobes attach
 * before its first requests, not at the next once-a-second rescan. While
 * any is fresh the tracer drains every FRESH_DRAIN_MS instead of
 * --drain-ms: a server that forks every few seconds keeps it there.
 *
 * The FORK record wakes the tracer at once (bpf/net_follow.bpf.h): at that
 * moment the child still maps its parent's files, so the look at the fork
 * alone would miss what the child execs.
 */
#ifndef TTFTRACE_FRESH_PROCS_H
#define TTFTRACE_FRESH_PROCS_H

#include <stdbool.h>
#include <stdint.h>
#include "user/probe/maps_watch.h"

#define FRESH_MAX 32
#define FRESH_NS 3000000000ull	/* how long a process stays fresh */
#define FRESH_DRAIN_MS 100

struct fresh_procs {
	uint32_t tgid[FRESH_MAX];
	uint64_t until_ns[FRESH_MAX];
	int n;
	struct maps_watch watch;	/* each one's mappings when it became fresh */
};

/* tgid became traced at now_ns (CLOCK_MONOTONIC). A full list drops its first entry. */
void fresh_procs__add(struct fresh_procs *f, uint32_t tgid, uint64_t now_ns);

/* Drop the expired; true while any is fresh. */
bool fresh_procs__any(struct fresh_procs *f, uint64_t now_ns);

/* Call fn for each fresh process whose executable mappings changed since the last look. */
void fresh_procs__changed(struct fresh_procs *f, uint64_t now_ns,
			  void (*fn)(void *ctx, uint32_t tgid), void *ctx);

#endif
