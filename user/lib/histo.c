// SPDX-License-Identifier: GPL-2.0-only
#include <errno.h>
#include <math.h>
#include <string.h>
#include "user/lib/histo.h"

int histo__init(struct histo *h, const double *bounds, int n)
{
	if (n < 1 || n > HISTO_MAX_BOUNDS)
		return -EINVAL;
	for (int i = 0; i < n; i++)
		if (!isfinite(bounds[i]) || (i && bounds[i] <= bounds[i - 1]))
			return -EINVAL;
	memset(h, 0, sizeof(*h));
	h->bounds = bounds;
	h->n_bounds = n;
	return 0;
}

void histo__add(struct histo *h, double v)
{
	int lo = 0, hi = h->n_bounds;

	if (isnan(v))
		return;
	/* first bound >= v (binary search; hi = n_bounds is +Inf) */
	while (lo < hi) {
		int mid = (lo + hi) / 2;

		if (h->bounds[mid] >= v)
			hi = mid;
		else
			lo = mid + 1;
	}
	h->counts[lo]++;
	h->count++;
	h->sum += v;
}

uint64_t histo__cumulative(const struct histo *h, int i)
{
	uint64_t c = 0;

	if (i > h->n_bounds)
		i = h->n_bounds;
	for (int k = 0; k <= i; k++)
		c += h->counts[k];
	return c;
}
