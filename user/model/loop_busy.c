// SPDX-License-Identifier: GPL-2.0-only
/* Request windows per serving thread (loop_busy.h). */
#include <errno.h>
#include <stdlib.h>
#include "user/model/loop_busy.h"

struct window {
	uint64_t req_id;
	uint64_t start_ns, end_ns;	/* read done -> first token written */
	uint32_t tid;
};

struct loop_busy {
	struct window w[LOOP_BUSY_WINDOWS];
	size_t n, head;			/* head: the next slot written once full */
	struct loop_busy_stats stats;
};

struct loop_busy *loop_busy__new(void)
{
	return calloc(1, sizeof(struct loop_busy));
}

void loop_busy__free(struct loop_busy *lb)
{
	free(lb);
}

void loop_busy__add(struct loop_busy *lb, uint64_t req_id, uint32_t tid, uint64_t read_done_ns,
		    uint64_t first_write_ns)
{
	struct window *w;

	if (!lb || !tid || first_write_ns <= read_done_ns)
		return;
	if (lb->n < LOOP_BUSY_WINDOWS) {
		w = &lb->w[lb->n++];
	} else {
		w = &lb->w[lb->head];
		lb->head = (lb->head + 1) % LOOP_BUSY_WINDOWS;
		lb->stats.overwritten++;
	}
	*w = (struct window){ req_id, read_done_ns, first_write_ns, tid };
	lb->stats.windows++;
}

int loop_busy__who(const struct loop_busy *lb, uint32_t tid, uint64_t t0_ns, uint64_t t1_ns,
		   uint64_t self_id, uint64_t *req_id, uint64_t *overlap_ns)
{
	const struct window *best = NULL;
	uint64_t best_ov = 0;

	if (!lb || t1_ns <= t0_ns)
		return -ENOENT;
	for (size_t i = 0; i < lb->n; i++) {
		const struct window *w = &lb->w[i];
		uint64_t lo = w->start_ns > t0_ns ? w->start_ns : t0_ns;
		uint64_t hi = w->end_ns < t1_ns ? w->end_ns : t1_ns;

		if (w->tid != tid || w->req_id == self_id || hi <= lo)
			continue;
		if (hi - lo > best_ov) {
			best_ov = hi - lo;
			best = w;
		}
	}
	if (!best)
		return -ENOENT;
	*req_id = best->req_id;
	*overlap_ns = best_ov;
	return 0;
}

const struct loop_busy_stats *loop_busy__stats(const struct loop_busy *lb)
{
	return &lb->stats;
}
