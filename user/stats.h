/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * Sample collector: keeps every sample (a growable array of doubles) and
 * answers percentile, mean, min, max and population standard deviation.
 * Memory grows with the number of samples (8 bytes each); bounded-memory
 * histograms are a later addition.
 *
 * Percentile definition (numpy's default, "linear"): sort the n samples
 * v[0] <= ... <= v[n-1]; rank = p / 100 * (n - 1); with i = floor(rank),
 *   P(p) = v[i] + (rank - i) * (v[i + 1] - v[i])      (v[i] when i = n - 1).
 * E.g. samples 1..10: P50 = 5.5, P90 = 9.1, P95 = 9.55, P99 = 9.91.
 *
 * Queries on an empty collector return NAN. Samples are unitless: callers
 * keep one unit per collector and say it in the collector's name.
 */
#ifndef TTFTRACE_STATS_H
#define TTFTRACE_STATS_H

#include <stddef.h>

struct stats;

/* Returns NULL (errno = ENOMEM) on allocation failure. */
struct stats *stats__new(void);
void stats__free(struct stats *s);

/* Add one sample. Returns 0, -EINVAL for NaN, or -ENOMEM (the sample is not kept). */
int stats__add(struct stats *s, double v);
size_t stats__count(const struct stats *s);

/* p in [0, 100] (clamped). Sorts the samples in place on first use after an add. */
double stats__percentile(struct stats *s, double p);
double stats__mean(const struct stats *s);
double stats__min(const struct stats *s);
double stats__max(const struct stats *s);
/* Population standard deviation: sqrt(sum((v - mean)^2) / n). */
double stats__stddev(const struct stats *s);

#endif /* TTFTRACE_STATS_H */
