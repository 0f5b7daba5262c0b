// SPDX-License-Identifier: GPL-2.0-only
/* Sample collector; definitions and the histogram's error bound in stats.h. */
#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include "user/lib/stats.h"

/* Log-linear buckets: STATS_SUB per power of two, for |v| in [2^MIN_EXP, 2^(MIN_EXP+OCTAVES)). */
#define SUB_BITS 7
#define STATS_SUB (1 << SUB_BITS)
#define MIN_EXP (-24)
#define OCTAVES 64
#define N_BUCKETS (OCTAVES * STATS_SUB)

struct stats {
	double *v;		/* exact mode: the samples; NULL in histogram mode */
	size_t n;
	size_t cap;
	int sorted;
	double sum;
	double min;
	double max;
	double w_mean, w_m2;	/* Welford's running mean and sum of squared deviations */
	/* histogram mode: counts by bucket of |v|; [N_BUCKETS] overflow */
	uint64_t *pos, *neg;	/* neg allocated at the first negative sample */
	uint64_t zero;		/* |v| < 2^MIN_EXP */
};

struct stats *stats__new(void)
{
	struct stats *s = calloc(1, sizeof(*s));

	if (!s)
		errno = ENOMEM;
	return s;
}

void stats__free(struct stats *s)
{
	if (!s)
		return;
	free(s->v);
	free(s->pos);
	free(s->neg);
	free(s);
}

/* Bucket of |v| >= 2^MIN_EXP from the double's exponent and top mantissa bits. */
static size_t bucket(double a)
{
	uint64_t bits;
	int e;

	memcpy(&bits, &a, sizeof(bits));
	e = (int)((bits >> 52) & 0x7ff) - 1023;
	if (e >= MIN_EXP + OCTAVES)
		return N_BUCKETS;
	return (size_t)(e - MIN_EXP) * STATS_SUB + ((bits >> (52 - SUB_BITS)) & (STATS_SUB - 1));
}

static int hist_add(struct stats *s, double v)
{
	double a = fabs(v);
	uint64_t **h = v < 0 ? &s->neg : &s->pos;

	if (a < ldexp(1, MIN_EXP)) {
		s->zero++;
		return 0;
	}
	if (!*h && !(*h = calloc(N_BUCKETS + 1, sizeof(**h))))
		return -ENOMEM;
	(*h)[bucket(a)]++;
	return 0;
}

/* Past STATS_EXACT_MAX samples: move them into the histogram, drop the array. */
static int to_histogram(struct stats *s)
{
	s->pos = calloc(N_BUCKETS + 1, sizeof(*s->pos));
	if (!s->pos)
		return -ENOMEM;
	for (size_t i = 0; i < s->n; i++)
		if (hist_add(s, s->v[i]))
			return -ENOMEM;
	free(s->v);
	s->v = NULL;
	s->cap = 0;
	return 0;
}

int stats__add(struct stats *s, double v)
{
	double d;

	if (isnan(v))
		return -EINVAL;
	if (!s->pos && s->n == STATS_EXACT_MAX && to_histogram(s))
		return -ENOMEM;
	if (s->pos) {
		if (hist_add(s, v))
			return -ENOMEM;
	} else {
		if (s->n == s->cap) {
			size_t cap = s->cap ? s->cap * 2 : 64;
			double *nv = realloc(s->v, cap * sizeof(*nv));

			if (!nv)
				return -ENOMEM;
			s->v = nv;
			s->cap = cap;
		}
		s->v[s->n] = v;
		s->sorted = 0;
	}
	if (!s->n || v < s->min)
		s->min = v;
	if (!s->n || v > s->max)
		s->max = v;
	s->n++;
	s->sum += v;
	d = v - s->w_mean;
	s->w_mean += d / (double)s->n;
	s->w_m2 += d * (v - s->w_mean);
	return 0;
}

size_t stats__count(const struct stats *s)
{
	return s->n;
}

static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return (x > y) - (x < y);
}

/* Middle of bucket b of |v| (the overflow bucket: +inf, clamped by the caller). */
static double bucket_mid(size_t b)
{
	if (b == N_BUCKETS)
		return INFINITY;
	return ldexp(1.0 + ((double)(b % STATS_SUB) + 0.5) / STATS_SUB,
		     (int)(b / STATS_SUB) + MIN_EXP);
}

/* The k-th smallest sample (0-based) as its bucket's middle, within [min, max]. */
static double hist_value(const struct stats *s, size_t k)
{
	double v = NAN;
	size_t b;

	for (b = N_BUCKETS + 1; s->neg && b-- > 0;) {
		if (k < s->neg[b]) {
			v = -bucket_mid(b);
			goto out;
		}
		k -= s->neg[b];
	}
	if (k < s->zero) {
		v = 0;
		goto out;
	}
	k -= s->zero;
	for (b = 0; b <= N_BUCKETS; b++) {
		if (k < s->pos[b]) {
			v = bucket_mid(b);
			break;
		}
		k -= s->pos[b];
	}
out:
	return v < s->min ? s->min : v > s->max ? s->max : v;
}

double stats__percentile(struct stats *s, double p)
{
	double rank, frac, lo, hi;
	size_t i;

	if (!s->n || isnan(p))
		return NAN;
	if (!s->pos && !s->sorted) {
		qsort(s->v, s->n, sizeof(*s->v), cmp_double);
		s->sorted = 1;
	}
	if (p < 0)
		p = 0;
	if (p > 100)
		p = 100;
	if (p == 0)
		return s->min;
	rank = p / 100.0 * (double)(s->n - 1);
	i = (size_t)floor(rank);
	if (i >= s->n - 1)
		return s->pos ? s->max : s->v[s->n - 1];
	frac = rank - (double)i;
	lo = s->pos ? hist_value(s, i) : s->v[i];
	hi = s->pos ? hist_value(s, i + 1) : s->v[i + 1];
	return lo + frac * (hi - lo);
}

double stats__mean(const struct stats *s)
{
	return s->n ? s->sum / (double)s->n : NAN;
}

double stats__min(const struct stats *s)
{
	return s->n ? s->min : NAN;
}

double stats__max(const struct stats *s)
{
	return s->n ? s->max : NAN;
}

double stats__stddev(const struct stats *s)
{
	double mean, acc = 0;
	size_t i;

	if (!s->n)
		return NAN;
	if (s->pos)
		return sqrt(s->w_m2 / (double)s->n);
	/* Two passes: the one-pass sum-of-squares form loses precision for ns-scale values. */
	mean = s->sum / (double)s->n;
	for (i = 0; i < s->n; i++)
		acc += (s->v[i] - mean) * (s->v[i] - mean);
	return sqrt(acc / (double)s->n);
}
