// SPDX-License-Identifier: GPL-2.0-only
/* The step store: processed steps by start time, kept for queries over a horizon. */
#include "user/model/timeline/timeline_int.h"

/* Keep the step ring sorted by start time; evict beyond the horizon or cap. */
void tl_store_step(struct timeline *tl, const struct tl_step *s)
{
	size_t i;

	while (tl->n_steps && (tl->n_steps == MAX_STEPS ||
			       step_at(tl, 0)->end_ns + tl->horizon_ns < s->start_ns)) {
		tl->steps_head = (tl->steps_head + 1) % MAX_STEPS;
		if (tl->n_steps == MAX_STEPS)
			tl->stats.steps_capped++;
		tl->n_steps--;
		tl->stats.dropped_old++;
	}
	i = tl->n_steps++;
	while (i > 0 && step_at(tl, i - 1)->start_ns > s->start_ns) {
		*step_at(tl, i) = *step_at(tl, i - 1);
		i--;
	}
	*step_at(tl, i) = *s;
	if (s->end_ns > s->start_ns && s->end_ns - s->start_ns > tl->max_step_ns)
		tl->max_step_ns = s->end_ns - s->start_ns;
}

void timeline__steps_in(const struct timeline *tl, uint64_t start_ns, uint64_t end_ns,
			int (*cb)(void *ctx, const struct tl_step *s), void *ctx)
{
	/*
	 * The ring is sorted by start and no step is longer than max_step_ns:
	 * one starting before start_ns - max_step_ns ended before start_ns.
	 * Binary search for the first that may overlap, then scan.
	 */
	uint64_t lo_ns = start_ns > tl->max_step_ns ? start_ns - tl->max_step_ns : 0;
	size_t lo = 0, hi = tl->n_steps;

	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;

		if (step_at(tl, mid)->start_ns < lo_ns)
			lo = mid + 1;
		else
			hi = mid;
	}
	for (size_t i = lo; i < tl->n_steps; i++) {
		const struct tl_step *s = step_at(tl, i);

		if (s->start_ns > end_ns)
			break;
		if (s->end_ns < start_ns)
			continue;
		if (cb(ctx, s))
			break;
	}
}
