// SPDX-License-Identifier: GPL-2.0-only
#include <errno.h>
#include "user/lib/fit.h"

void linfit__add(struct linfit *f, double x, double y)
{
	if (!f->n || x < f->x_min)
		f->x_min = x;
	if (!f->n || x > f->x_max)
		f->x_max = x;
	f->n++;
	f->sx += x;
	f->sy += y;
	f->sxx += x * x;
	f->sxy += x * y;
	f->syy += y * y;
}

int linfit__solve(const struct linfit *f, double *a, double *b, double *r2)
{
	double vx, vy, cxy;

	if (f->n < 3 || f->x_max <= f->x_min)
		return -EDOM;
	vx = f->sxx - f->sx * f->sx / f->n;
	vy = f->syy - f->sy * f->sy / f->n;
	cxy = f->sxy - f->sx * f->sy / f->n;
	if (vx <= 0)
		return -EDOM;
	*b = cxy / vx;
	*a = (f->sy - *b * f->sx) / f->n;
	*r2 = vy > 0 ? cxy * cxy / (vx * vy) : 1.0;
	return 0;
}
