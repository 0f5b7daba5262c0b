/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * Least-squares line y = a + b x over a stream of points, in O(1) memory:
 * used for "prefill time vs prompt tokens" in the summary.
 */
#ifndef TTFTRACE_FIT_H
#define TTFTRACE_FIT_H

#include <stdint.h>

struct linfit {
	double n, sx, sy, sxx, sxy, syy;
	double x_min, x_max;
};

void linfit__add(struct linfit *f, double x, double y);
/*
 * Fit: *a intercept, *b slope, *r2 coefficient of determination.
 * Returns 0, or -EDOM with fewer than 3 points or no spread in x.
 */
int linfit__solve(const struct linfit *f, double *a, double *b, double *r2);

#endif /* TTFTRACE_FIT_H */
