/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * Replay: the counters the live run ended with (names and values copied,
 * in their order). The pipeline's registry becomes that list with the
 * values it computes itself in place of the recorded ones
 * (pipeline__set_recorded_counters), so a replay prints the live summary.
 */
#ifndef TTFTRACE_RECORDED_COUNTERS_H
#define TTFTRACE_RECORDED_COUNTERS_H

#include "user/lib/records.h"

struct recorded_counters {
	struct report_counter *c;
	char (*names)[256];
	int n;			/* 0: none recorded */
};

/* Keep c[0..n) (at most max); n <= 0 forgets them. 0 or -ENOMEM. */
int recorded_counters__set(struct recorded_counters *rc, const struct report_counter *c, int n,
			   int max);
/*
 * The recorded ones into out[0..cap), each with own's value where own has
 * one of that name, then own ones the recording lacks (a newer tracer's)
 * once they are not 0. Returns how many.
 */
int recorded_counters__merge(const struct recorded_counters *rc, const struct report_counter *own,
			     int n_own, struct report_counter *out, int cap);
void recorded_counters__free(struct recorded_counters *rc);

#endif /* TTFTRACE_RECORDED_COUNTERS_H */
