/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * Fixed-bucket histogram with constant memory, in the shape Prometheus
 * exposes (https://prometheus.io/docs/concepts/metric_types/#histogram):
 * bucket i counts the observations v <= bounds[i] that no lower bucket took;
 * one more bucket counts the rest (+Inf). Unitless: the caller picks one unit
 * per histogram and says it in the histogram's name.
 */
#ifndef TTFTRACE_HISTO_H
#define TTFTRACE_HISTO_H

#include <stdint.h>

#define HISTO_MAX_BOUNDS 32

struct histo {
	const double *bounds;	/* ascending finite upper bounds (not owned) */
	int n_bounds;
	/* per bucket, not cumulative; [n_bounds] = +Inf */
	uint64_t counts[HISTO_MAX_BOUNDS + 1];
	uint64_t count;
	double sum;
};

/* 0, or -EINVAL when n is not 1..HISTO_MAX_BOUNDS or bounds are not strictly ascending. */
int histo__init(struct histo *h, const double *bounds, int n);
/* Add one observation (NaN is ignored). */
void histo__add(struct histo *h, double v);
/* Observations <= bounds[i] (i = n_bounds: all of them), as Prometheus' `le` buckets. */
uint64_t histo__cumulative(const struct histo *h, int i);

#endif /* TTFTRACE_HISTO_H */
