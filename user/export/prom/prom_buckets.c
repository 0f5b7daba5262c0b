// SPDX-License-Identifier: GPL-2.0-only
/* The histogram buckets: the defaults and the --buckets option that replaces them. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "user/export/prom/prom.h"

/*
 * Default buckets. TTFT: vLLM's (1 ms .. 2560 s); E2E: the same start, on to
 * 7680 s like vLLM's request latency; stages and tokenize: from 0.1 ms (a
 * stage is often below a millisecond) to 2560 s; TPOT and ITL: 0.5 ms .. 60 s,
 * fine at the low end where token gaps are.
 */
static const double ttft_s[] = {
	0.001, 0.005, 0.01, 0.02, 0.04, 0.06, 0.08, 0.1, 0.25, 0.5, 0.75, 1, 2.5, 5, 7.5,
	10, 20, 40, 80, 160, 640, 2560,
};
static const double e2e_s[] = {
	0.001, 0.005, 0.01, 0.02, 0.04, 0.06, 0.08, 0.1, 0.25, 0.5, 0.75, 1, 2.5, 5, 7.5,
	10, 20, 40, 80, 160, 320, 640, 1280, 2560, 5120, 7680,
};
static const double stage_s[] = {
	0.0001, 0.00025, 0.0005, 0.001, 0.0025, 0.005, 0.01, 0.02, 0.04, 0.06, 0.08, 0.1,
	0.25, 0.5, 0.75, 1, 2.5, 5, 10, 20, 40, 80, 160, 640, 2560,
};
static const double itl_s[] = {
	0.0005, 0.001, 0.0025, 0.005, 0.0075, 0.01, 0.015, 0.02, 0.03, 0.05, 0.075, 0.1,
	0.15, 0.2, 0.3, 0.5, 0.75, 1, 1.5, 2, 3, 5, 10, 20, 30, 60,
};
#define NB(a) ((int)(sizeof(a) / sizeof(a[0])))

static const struct {
	const char *name;	/* the --buckets NAME */
	const double *bounds;
	int n;
} hist_defaults[PROM_H__N] = {
	[PROM_H_TTFT] = { "ttft", ttft_s, NB(ttft_s) },
	[PROM_H_STAGE] = { "stage", stage_s, NB(stage_s) },
	[PROM_H_TOKENIZE] = { "tokenize", stage_s, NB(stage_s) },
	[PROM_H_TPOT] = { "tpot", itl_s, NB(itl_s) },
	[PROM_H_ITL] = { "itl", itl_s, NB(itl_s) },
	[PROM_H_E2E] = { "e2e", e2e_s, NB(e2e_s) },
};

const double *prom_buckets__get(const struct prom_buckets *b, enum prom_hist h, int *n)
{
	if (b && b->n[h] > 0) {
		*n = b->n[h];
		return b->bounds[h];
	}
	*n = hist_defaults[h].n;
	return hist_defaults[h].bounds;
}

int prom_buckets__parse(struct prom_buckets *b, const char *arg, char *err, size_t err_len)
{
	const char *eq = strchr(arg, '='), *p;
	double v[HISTO_MAX_BOUNDS];
	int h, n = 0;

	if (!eq || eq == arg) {
		snprintf(err, err_len, "'%s' is not NAME=B1,B2,...", arg);
		return -EINVAL;
	}
	for (h = 0; h < PROM_H__N; h++)
		if (strlen(hist_defaults[h].name) == (size_t)(eq - arg) &&
		    !strncmp(arg, hist_defaults[h].name, eq - arg))
			break;
	if (h == PROM_H__N) {
		snprintf(err, err_len, "unknown histogram '%.*s'", (int)(eq - arg), arg);
		return -EINVAL;
	}
	for (p = eq + 1;; p++) {
		char *end;
		double x;

		if (n == HISTO_MAX_BOUNDS) {
			snprintf(err, err_len, "%s: more than %d bounds", hist_defaults[h].name,
				 HISTO_MAX_BOUNDS);
			return -EINVAL;
		}
		errno = 0;
		x = strtod(p, &end);
		/* digits only: no "inf", "nan", hex, or blanks */
		if (end == p || errno || !(x > 0) || x > 1e9 || (*end && *end != ',') ||
		    strspn(p, "0123456789.eE+-") < (size_t)(end - p)) {
			snprintf(err, err_len, "%s: bad bound '%.*s' (a number of seconds > 0)",
				 hist_defaults[h].name, (int)strcspn(p, ","), p);
			return -EINVAL;
		}
		if (n && x <= v[n - 1]) {
			snprintf(err, err_len, "%s: bounds must be strictly ascending (%g after %g)",
				 hist_defaults[h].name, x, v[n - 1]);
			return -EINVAL;
		}
		v[n++] = x;
		if (!*end)
			break;
		p = end;
	}
	memcpy(b->bounds[h], v, n * sizeof(v[0]));
	b->n[h] = n;
	return 0;
}
