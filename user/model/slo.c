// SPDX-License-Identifier: GPL-2.0-only
#include <ctype.h>
#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include "user/lib/stats.h"
#include "user/model/slo.h"

static const char *const metric_names[SLO_N_METRICS] = { "ttft", "tpot", "itl", "e2e", "ttfv" };
static const char *const pct_names[SLO_N_PCTS] = { "p50", "p90", "p95", "p99" };
static const double pct_values[SLO_N_PCTS] = { 50, 90, 95, 99 };

static const struct {
	const char *name;
	double to_ms;
} units[] = { { "ns", 1e-6 }, { "us", 1e-3 }, { "ms", 1.0 }, { "s", 1e3 } };

const char *slo__metric_name(enum slo_metric m)
{
	return (unsigned)m < SLO_N_METRICS ? metric_names[m] : NULL;
}

const char *slo__pct_name(enum slo_pct p)
{
	return (unsigned)p < SLO_N_PCTS ? pct_names[p] : NULL;
}

static int fail(char *err, size_t err_sz, const char *fmt, ...)
{
	va_list ap;

	if (err && err_sz) {
		va_start(ap, fmt);
		vsnprintf(err, err_sz, fmt, ap);
		va_end(ap);
	}
	return -EINVAL;
}

static int lookup(const char *const *names, int n, const char *s, size_t len)
{
	for (int i = 0; i < n; i++)
		if (strlen(names[i]) == len && !strncmp(names[i], s, len))
			return i;
	return -1;
}

/* One "metric_pct=limit" item of len bytes (trimmed). */
static int parse_item(const char *s, size_t len, struct slo *out, char *err, size_t err_sz)
{
	const char *eq = memchr(s, '=', len), *us = memchr(s, '_', len);
	char num[64], *end;
	size_t ulen;
	double v;
	int m, p;

	if (!eq)
		return fail(err, err_sz, "'%.*s' has no '=LIMIT'", (int)len, s);
	if (!us || us > eq)
		return fail(err, err_sz, "'%.*s': expected METRIC_PCT before '='", (int)(eq - s), s);
	m = lookup(metric_names, SLO_N_METRICS, s, us - s);
	if (m < 0)
		return fail(err, err_sz, "unknown metric '%.*s' (ttft, tpot, itl, e2e, ttfv)",
			    (int)(us - s), s);
	p = lookup(pct_names, SLO_N_PCTS, us + 1, eq - us - 1);
	if (p < 0)
		return fail(err, err_sz, "unknown percentile '%.*s' (p50, p90, p95, p99)",
			    (int)(eq - us - 1), us + 1);
	len -= eq + 1 - s;
	s = eq + 1;
	if (!len || len >= sizeof(num))
		return fail(err, err_sz, "%s_%s: missing or too long limit", metric_names[m],
			    pct_names[p]);
	memcpy(num, s, len);
	num[len] = '\0';
	errno = 0;
	v = strtod(num, &end);
	/* strtod also reads hex and "inf": only plain decimals are limits */
	if (end == num || errno || !isfinite(v) || v <= 0 || !isdigit((unsigned char)num[0]) ||
	    strpbrk(num, "xX"))
		return fail(err, err_sz, "%s_%s: limit '%s' is not a positive number with a unit",
			    metric_names[m], pct_names[p], num);
	ulen = strlen(end);
	for (size_t i = 0; i < sizeof(units) / sizeof(units[0]); i++) {
		if (ulen == strlen(units[i].name) && !strcmp(end, units[i].name)) {
			out->metric = m;
			out->pct = p;
			out->limit_ms = v * units[i].to_ms;
			return 0;
		}
	}
	return fail(err, err_sz, "%s_%s: limit '%s' needs a unit ns, us, ms or s", metric_names[m],
		    pct_names[p], num);
}

int slo__parse(const char *spec, struct slo_set *out, char *err, size_t err_sz)
{
	const char *p = spec;
	int ret;

	if (!spec || !out)
		return fail(err, err_sz, "no SLO given");
	memset(out, 0, sizeof(*out));
	for (;;) {
		const char *comma = strchr(p, ',');
		const char *e = comma ? comma : p + strlen(p);
		struct slo it;

		while (p < e && isspace((unsigned char)*p))
			p++;
		while (e > p && isspace((unsigned char)e[-1]))
			e--;
		if (e == p)
			return fail(err, err_sz, "empty item in '%s'", spec);
		ret = parse_item(p, e - p, &it, err, err_sz);
		if (ret)
			return ret;
		for (int i = 0; i < out->n; i++)
			if (out->items[i].metric == it.metric && out->items[i].pct == it.pct)
				return fail(err, err_sz, "%s_%s given twice",
					    metric_names[it.metric], pct_names[it.pct]);
		/* Duplicates are refused, so there are at most SLO_MAX distinct items. */
		out->items[out->n++] = it;
		if (!comma)
			break;
		p = comma + 1;
	}
	return 0;
}

void slo_values__init(struct slo_values *v)
{
	for (int m = 0; m < SLO_N_METRICS; m++)
		for (int p = 0; p < SLO_N_PCTS; p++)
			v->ms[m][p] = NAN;
}

void slo_values__from_stats(struct slo_values *v, enum slo_metric m, struct stats *s)
{
	if ((unsigned)m >= SLO_N_METRICS)
		return;
	for (int p = 0; p < SLO_N_PCTS; p++)
		v->ms[m][p] = s && stats__count(s) ? stats__percentile(s, pct_values[p]) : NAN;
}

int slo__check(const struct slo_set *s, const struct slo_values *v, struct slo_result *out)
{
	if (!s || !v || !out)
		return -EINVAL;
	memset(out, 0, sizeof(*out));
	for (int i = 0; i < s->n; i++) {
		const struct slo *it = &s->items[i];
		double val = v->ms[it->metric][it->pct];

		out->value_ms[i] = val;
		/* NaN fails: !(NaN <= x) */
		out->failed[i] = !(val <= it->limit_ms);
		out->n_failed += out->failed[i];
	}
	return out->n_failed;
}

void slo__print(FILE *f, const char *prefix, const struct slo_set *s, const struct slo_result *r)
{
	for (int i = 0; i < s->n; i++) {
		const struct slo *it = &s->items[i];

		fprintf(f, "%s: SLO %s_%s <= %g ms: ", prefix, metric_names[it->metric],
			pct_names[it->pct], it->limit_ms);
		if (isnan(r->value_ms[i]))
			fprintf(f, "FAILED (not measured)\n");
		else
			fprintf(f, "%s (%.3f ms)\n", r->failed[i] ? "FAILED" : "met",
				r->value_ms[i]);
	}
}
