/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * Sample collector: answers percentile, mean, min, max and population
 * standard deviation, in bounded memory. The first STATS_EXACT_MAX samples
 * are kept (8 bytes each) and answers are exact; past that the samples move
 * into a fixed-size log-linear histogram (HDR-style, 128 buckets per power
 * of two for |v| in [2^-24, 2^40), one bucket below, one above: 64 KiB, and
 * as much again once a negative sample comes) and the array is freed.
 *
 * Histogram mode error bound: a sample is read back as the middle of its
 * bucket, at most 1/256 (0.39%) of its value away, clamped to [min, max];
 * a percentile interpolates two such values, so for samples of one sign
 * with |v| in [2^-24, 2^40) it is within 0.39% of the exact percentile
 * (|v| < 2^-24 reads as 0; |v| >= 2^40 as max). count, mean, min and max
 * stay exact; stddev comes from Welford's running sums (exact up to
 * rounding).
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
#include <stdint.h>

/* Samples kept exactly before the histogram takes over. */
#define STATS_EXACT_MAX 2048

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
