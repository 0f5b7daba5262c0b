/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * The listener map (docs/design.md D11, docs/cases.md #35): each listening
 * TCP socket of the traced processes and every process that holds it, on
 * stderr at start-up and when --port finds a new server; and the traced
 * processes' new children, each named once it holds one of those sockets
 * (a worker the parent starts later: fork-inherited at once, a spawned
 * interpreter after it received the socket with SCM_RIGHTS).
 */
#ifndef TTFTRACE_LISTEN_MAP_H
#define TTFTRACE_LISTEN_MAP_H

#include <stdint.h>
#include <stdio.h>
#include "user/probe/target.h"

/* A new child is looked for among the holders until this long after its fork. */
#define LISTEN_MAP_FORKED_NS 5000000000ull

struct listen_map {
	struct target_listener listeners[16];
	size_t n_listeners;
	struct {
		uint32_t tgid, parent;	/* a traced process's new child, and its parent */
		uint64_t until_ns;	/* looked for until then (CLOCK_MONOTONIC) */
	} forked[64];
	int n_forked;
	uint64_t forked_unchecked;	/* children not looked for: forked[] was full (said once) */
};

/*
 * Find the listening sockets on ts->ports and their holders (one walk of
 * every /proc/PID/fd) and print one line each to out: `Listener port P
 * (socket:[I]): held by PID a (comm), PID b (comm, not traced), ...`.
 */
void listen_map__print(struct listen_map *m, const struct target_set *ts, FILE *out);
/*
 * A traced process forked child at ts_ns (CLOCK_MONOTONIC): look for it on
 * the next checks. Past 64 pending children the rest are traced but not
 * looked for, which the first one says on stderr.
 */
void listen_map__forked(struct listen_map *m, uint32_t parent, uint32_t child, uint64_t ts_ns);
/*
 * Look at the pending children's descriptors: print `Listener port P
 * (socket:[I]): PID w (comm), forked by PID p, holds it too: traced.` for
 * each that holds a listener now; forget those that do not by their
 * deadline or are gone.
 */
void listen_map__check(struct listen_map *m, uint64_t now_ns, FILE *out);

#endif /* TTFTRACE_LISTEN_MAP_H */
