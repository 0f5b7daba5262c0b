// SPDX-License-Identifier: GPL-2.0-only
/* Sample collector; definitions in stats.h. */
#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include "user/stats.h"

struct stats {
	double *v;
	size_t n;
	size_t cap;
	int sorted;
	double sum;
	double min;
	double max;
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
	free(s);
}

int stats__add(struct stats *s, double v)
{
	if (isnan(v))
		return -EINVAL;
	if (s->n == s->cap) {
		size_t cap = s->cap ? s->cap * 2 : 64;
		double *nv = realloc(s->v, cap * sizeof(*nv));

		if (!nv)
			return -ENOMEM;
		s->v = nv;
		s->cap = cap;
	}
	if (!s->n || v < s->min)
		s->min = v;
	if (!s->n || v > s->max)
		s->max = v;
	s->v[s->n++] = v;
	s->sum += v;
	s->sorted = 0;
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

double stats__percentile(struct stats *s, double p)
{
	double rank, frac;
	size_t i;

	if (!s->n || isnan(p))
		return NAN;
	if (!s->sorted) {
		qsort(s->v, s->n, sizeof(*s->v), cmp_double);
		s->sorted = 1;
	}
	if (p < 0)
		p = 0;
	if (p > 100)
		p = 100;
	rank = p / 100.0 * (double)(s->n - 1);
	i = (size_t)floor(rank);
	if (i >= s->n - 1)
		return s->v[s->n - 1];
	frac = rank - (double)i;
	return s->v[i] + frac * (s->v[i + 1] - s->v[i]);
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
	/* Two passes: the one-pass sum-of-squares form loses precision for ns-scale values. */
	mean = s->sum / (double)s->n;
	for (i = 0; i < s->n; i++)
		acc += (s->v[i] - mean) * (s->v[i] - mean);
	return sqrt(acc / (double)s->n);
}
