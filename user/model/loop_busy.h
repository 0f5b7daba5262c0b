/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * Which request a serving thread was working on (docs/design.md D14).
 *
 * An asyncio server (uvicorn, vLLM's API server) runs every request's
 * frontend work on one event-loop thread: while one request tokenizes or
 * renders a template there, no other request on that loop writes a token.
 * This keeps, per request, the window its frontend work can lie in: from
 * the end of its read to its first token write, on the thread that read
 * it. An ITL outlier of another request whose writer thread was on CPU
 * through the gap is then named after the request whose window covers it
 * most (user/model/attrib.c).
 *
 * Bounded: the newest LOOP_BUSY_WINDOWS windows are kept (older ones are
 * overwritten, counted in loop_busy_stats.overwritten: an outlier that old
 * is then named by what the scheduler shows alone).
 */
#ifndef TTFTRACE_LOOP_BUSY_H
#define TTFTRACE_LOOP_BUSY_H

#include <stdint.h>

#define LOOP_BUSY_WINDOWS 4096

struct loop_busy;

struct loop_busy_stats {
	uint64_t windows;	/* windows recorded */
	uint64_t overwritten;	/* the oldest, overwritten by newer ones */
};

/* NULL on ENOMEM. */
struct loop_busy *loop_busy__new(void);
void loop_busy__free(struct loop_busy *lb);

/*
 * Request req_id, read by thread tid until read_done_ns (CLOCK_MONOTONIC),
 * wrote its first token at first_write_ns. Windows with first_write_ns <=
 * read_done_ns are ignored.
 */
void loop_busy__add(struct loop_busy *lb, uint64_t req_id, uint32_t tid, uint64_t read_done_ns,
		    uint64_t first_write_ns);

/*
 * The request other than self_id whose window on thread tid overlaps
 * [t0_ns, t1_ns] most: 0 with *req_id and *overlap_ns set, -ENOENT when
 * none does.
 */
int loop_busy__who(const struct loop_busy *lb, uint32_t tid, uint64_t t0_ns, uint64_t t1_ns,
		   uint64_t self_id, uint64_t *req_id, uint64_t *overlap_ns);

const struct loop_busy_stats *loop_busy__stats(const struct loop_busy *lb);

#endif /* TTFTRACE_LOOP_BUSY_H */
