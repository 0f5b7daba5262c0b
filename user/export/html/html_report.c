// SPDX-License-Identifier: GPL-2.0-only
/*
 * The HTML report page (html_report.h): NDJSON in, one JSON data object
 * built with cJSON, written into the compiled-in template.
 */
#include <errno.h>
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <cjson/cJSON.h>
#include "report_template.h"	/* generated: const char report_template_html[] */
#include "user/export/html/html_groups.h"
#include "user/export/html/html_report.h"
#include "user/model/vocab.h"
#include "user/lib/stats.h"

#define DATA_MARK "/*TTF_DATA*/"

/*
 * Stages in the table's order, the time order of user/model/vocab.h (tokenize
 * is a part of frontend, server merges frontend..emit); the NDJSON keys are
 * their names there.
 */
#define N_STAGES TTF_STAGE_ORDER_N

static const char *stage_key(size_t i)
{
	return ttf_stage_name(ttf_stage_time_order[i]);
}

/* Token metrics: stats name, NDJSON field, table label, SLO metric. */
static const struct {
	const char *name, *field, *label;
	enum slo_metric slo;
} metrics[] = {
	{ "ttft", "ttft_ms", "TTFT", SLO_TTFT },
	{ "ttfv", "ttfv_ms", "TTFV (first visible)", SLO_TTFV },
	{ "tpot", "tpot_ms", "TPOT", SLO_TPOT },
	{ "itl", "itl_ms", "ITL", SLO_ITL },
	{ "e2e", "e2e_ms", "E2E", SLO_E2E },
};
#define N_METRICS (sizeof(metrics) / sizeof(metrics[0]))

struct acc {
	struct stats *m[N_METRICS];
	struct stats *st[N_STAGES];
	unsigned grades[4];	/* A, B, C, - */
	uint64_t t0_ns;		/* earliest arrival */
	uint64_t t_last_ns;
	cJSON *reqs;		/* the NDJSON request objects, owned */
	cJSON *summary;		/* owned, or NULL */
	unsigned left_out;	/* requests not successful: kept out of the statistics */
	unsigned outcomes[TTF_OC__MAX];	/* from the requests' flags, as the summary counts them */
	struct html_groups *by_route, *by_model;
};

static int has_flag(const cJSON *r, const char *name)
{
	const cJSON *f;

	cJSON_ArrayForEach(f, cJSON_GetObjectItemCaseSensitive(r, "flags"))
		if (cJSON_IsString(f) && !strcmp(f->valuestring, name))
			return 1;
	return 0;
}

/*
 * The summary's outcome counts (user/export/report/report.c) from one request's
 * flags: aborted, incomplete, error and unknown each count; ok is none of
 * them; nonstream, buffered and truncated ("trunc") are counted besides.
 * Returns whether the request is ok in that sense.
 */
static int count_outcomes(unsigned *oc, const cJSON *r)
{
	static const struct {
		enum ttf_outcome oc;
		const char *flag;
		int failure;
	} map[] = {
		{ TTF_OC_ABORTED, "aborted", 1 },     { TTF_OC_INCOMPLETE, "incomplete", 1 },
		{ TTF_OC_ERROR, "error", 1 },	      { TTF_OC_UNKNOWN, "unknown", 1 },
		{ TTF_OC_NONSTREAM, "nonstream", 0 }, { TTF_OC_BUFFERED, "buffered", 0 },
		{ TTF_OC_TRUNCATED, "trunc", 0 },
	};
	int ok = 1;

	for (size_t i = 0; i < sizeof(map) / sizeof(map[0]); i++)
		if (has_flag(r, map[i].flag)) {
			oc[map[i].oc]++;
			ok &= !map[i].failure;
		}
	oc[TTF_OC_OK] += ok;
	return ok;
}

/* As ttf_vocab__success(), on an NDJSON request: 2xx and none of the failure flags. */
static int json_success(const cJSON *r)
{
	static const enum ttf_outcome bad[] = { TTF_OC_ABORTED, TTF_OC_INCOMPLETE, TTF_OC_ERROR,
						TTF_OC_UNKNOWN };
	const cJSON *st = cJSON_GetObjectItemCaseSensitive(r, "status");

	if (!cJSON_IsNumber(st) || st->valuedouble < 200 || st->valuedouble > 299)
		return 0;
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
		if (has_flag(r, ttf_outcome_name(bad[i])))
			return 0;
	return 1;
}

/* The route of a request: its "route" when the NDJSON has one, else its path without the query. */
static void route_key(const cJSON *r, char *buf, size_t sz)
{
	const cJSON *v = cJSON_GetObjectItemCaseSensitive(r, "route");

	buf[0] = 0;
	if (!cJSON_IsString(v))
		v = cJSON_GetObjectItemCaseSensitive(r, "path");
	if (cJSON_IsString(v))
		snprintf(buf, sz, "%.*s", (int)strcspn(v->valuestring, "?"), v->valuestring);
}

static int fail(char *err, size_t sz, const char *fmt, const char *a, unsigned n)
{
	if (err && sz)
		snprintf(err, sz, fmt, a, n);
	return -EINVAL;
}

static double num_or_nan(const cJSON *o, const char *k)
{
	const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, k);

	return cJSON_IsNumber(v) ? v->valuedouble : NAN;
}

static uint64_t ns_field(const cJSON *o, const char *k)
{
	double v = num_or_nan(o, k);

	return isfinite(v) && v > 0 ? (uint64_t)v : 0;
}

static int add_sample(struct stats *s, double v)
{
	return isfinite(v) ? stats__add(s, v) : 0;
}

/* Statistics of one request object. */
static int account(struct acc *a, const cJSON *r)
{
	const cJSON *itl = cJSON_GetObjectItemCaseSensitive(r, "itl_ms"), *v;
	const cJSON *stages = cJSON_GetObjectItemCaseSensitive(r, "stages_ms");
	const cJSON *g = cJSON_GetObjectItemCaseSensitive(r, "grade");
	const cJSON *model = cJSON_GetObjectItemCaseSensitive(r, "model");
	uint64_t t = ns_field(r, "t_arrival_ns"), te = ns_field(r, "t_end_ns");
	double ttft = num_or_nan(r, "ttft_ms"), tpot = num_or_nan(r, "tpot_ms");
	int err = 0, success = json_success(r);
	char route[256];

	if (t && (!a->t0_ns || t < a->t0_ns))
		a->t0_ns = t;
	if (te > a->t_last_ns)
		a->t_last_ns = te;
	count_outcomes(a->outcomes, r);
	route_key(r, route, sizeof(route));
	if (html_groups__add(a->by_route, route[0] ? route : NULL, success, ttft, tpot) ||
	    html_groups__add(a->by_model, cJSON_IsString(model) && model->valuestring[0] ?
			     model->valuestring : NULL, success, ttft, tpot))
		return -ENOMEM;
	/* latency statistics: successful responses only (the summary's rule) */
	if (!success) {
		a->left_out++;
		return 0;
	}

	for (size_t i = 0; i < N_METRICS; i++)
		if (strcmp(metrics[i].name, "itl"))
			err |= add_sample(a->m[i], num_or_nan(r, metrics[i].field));
	cJSON_ArrayForEach(v, itl)
		if (cJSON_IsNumber(v))
			err |= add_sample(a->m[3], v->valuedouble);
	for (size_t i = 0; stages && i < N_STAGES; i++)
		err |= add_sample(a->st[i], num_or_nan(stages, stage_key(i)));
	if (cJSON_IsString(g)) {
		static const char abc[] = "ABC";
		const char *k = g->valuestring[0] ? strchr(abc, g->valuestring[0]) : NULL;

		a->grades[k ? k - abc : 3]++;
	}
	return err ? -ENOMEM : 0;
}

/* Read every line; keeps request objects and the summary. */
static int read_ndjson(FILE *in, struct acc *a, struct html_report_result *res, char *err,
		       size_t err_sz)
{
	char *line = NULL;
	size_t cap = 0;
	ssize_t len;
	unsigned lineno = 0;
	int ret = 0;

	while ((len = getline(&line, &cap, in)) > 0) {
		int last_partial = line[len - 1] != '\n';
		const cJSON *type;
		cJSON *o;
		char *p = line;

		lineno++;
		while (*p == ' ' || *p == '\t' || *p == '\r' || *p == '\n')
			p++;
		if (!*p)
			continue;
		o = cJSON_Parse(p);
		if (!cJSON_IsObject(o)) {
			cJSON_Delete(o);
			if (last_partial && (res->requests || a->summary)) {
				res->bad_lines++;	/* the run was cut off while writing */
				continue;
			}
			ret = fail(err, err_sz, "%s: line %u is not a JSON object (not NDJSON)",
				   "input", lineno);
			goto cleanup;
		}
		type = cJSON_GetObjectItemCaseSensitive(o, "type");
		if (cJSON_IsString(type) && !strcmp(type->valuestring, "request")) {
			ret = account(a, o);
			cJSON_AddItemToArray(a->reqs, o);
			res->requests++;
			if (ret)
				goto cleanup;
		} else if (cJSON_IsString(type) && !strcmp(type->valuestring, "summary")) {
			cJSON_Delete(a->summary);
			a->summary = o;
		} else {
			cJSON_Delete(o);	/* other record types: not for this page */
		}
	}
	if (ferror(in)) {
		ret = errno ? -errno : -EIO;
		snprintf(err, err_sz, "reading the input: %s", strerror(-ret));
	} else if (!res->requests && !a->summary) {
		ret = fail(err, err_sz, "%s has no ttftrace request or summary objects (%u lines)",
			   "input", lineno);
	}
cleanup:
	free(line);
	return ret;
}

static cJSON *copy_field(cJSON *dst, const cJSON *src, const char *from, const char *to)
{
	const cJSON *v = cJSON_GetObjectItemCaseSensitive(src, from);
	cJSON *c = v ? cJSON_Duplicate(v, 1) : cJSON_CreateNull();

	if (c && !cJSON_AddItemToObject(dst, to, c)) {
		cJSON_Delete(c);
		return NULL;
	}
	return c;
}

static cJSON *num_or_null(double v)
{
	return isfinite(v) ? cJSON_CreateNumber(v) : cJSON_CreateNull();
}

/* The request as the page uses it: fewer fields, times relative to the run's start. */
static cJSON *slim_request(const cJSON *r, uint64_t t0_ns)
{
	static const char *const same[][2] = {
		{ "id", "id" }, { "method", "method" }, { "path", "path" }, { "status", "status" },
		{ "ttft_ms", "ttft" }, { "e2e_ms", "e2e" },
		{ "tpot_ms", "tpot" }, { "tokens", "tokens" }, { "grade", "grade" },
		{ "itl_cv", "cv" }, { "itl_ms", "itl" }, { "itl_mean_ms", "itl_mean" },
		{ "outliers", "outliers" }, { "attribution", "attribution" },
		{ "inferred_by", "inferred_by" }, { "flags", "flags" }, { "model", "model" },
	};
	const cJSON *stages = cJSON_GetObjectItemCaseSensitive(r, "stages_ms");
	cJSON *o = cJSON_CreateObject(), *st;
	const cJSON *hops = cJSON_GetObjectItemCaseSensitive(r, "hop_stages_ms");
	uint64_t ta = ns_field(r, "t_arrival_ns"), tf = ns_field(r, "t_first_token_ns");
	int ok = o != NULL;

	for (size_t i = 0; ok && i < sizeof(same) / sizeof(same[0]); i++)
		ok = copy_field(o, r, same[i][0], same[i][1]) != NULL;
	ok = ok && cJSON_AddBoolToObject(o, "ok", json_success(r));
	if (ok && cJSON_IsObject(hops))
		ok = copy_field(o, r, "hop_stages_ms", "hops") != NULL;
	/* an array in meta.stage_keys' order: at 10,000 requests the keys would be a fifth of the page */
	st = ok ? cJSON_AddArrayToObject(o, "stages") : NULL;
	for (size_t i = 0; st && ok && i < N_STAGES; i++)
		ok = cJSON_AddItemToArray(st, num_or_null(num_or_nan(stages, stage_key(i))));
	ok = ok && st;
	ok = ok && cJSON_AddNumberToObject(o, "n_outliers",
		cJSON_GetArraySize(cJSON_GetObjectItemCaseSensitive(r, "outliers")));
	ok = ok && cJSON_AddItemToObject(o, "t_arrival",
		ta && ta >= t0_ns ? cJSON_CreateNumber((ta - t0_ns) / 1e6) : cJSON_CreateNull());
	ok = ok && cJSON_AddItemToObject(o, "t_first",
		tf && tf >= t0_ns ? cJSON_CreateNumber((tf - t0_ns) / 1e6) : cJSON_CreateNull());
	if (!ok) {
		cJSON_Delete(o);
		return NULL;
	}
	return o;
}

static cJSON *stat_row(struct stats *s, const char *name, const char *label, const char *group)
{
	cJSON *o = cJSON_CreateObject();
	size_t n = stats__count(s);
	int ok = o && cJSON_AddStringToObject(o, "name", name) &&
		 cJSON_AddStringToObject(o, "label", label) &&
		 cJSON_AddStringToObject(o, "group", group) && cJSON_AddNumberToObject(o, "n", n);
	static const double pcts[] = { 50, 90, 95, 99 };
	static const char *const keys[] = { "p50", "p90", "p95", "p99" };

	for (int i = 0; ok && i < 4; i++)
		ok = cJSON_AddItemToObject(o, keys[i],
					   num_or_null(n ? stats__percentile(s, pcts[i]) : NAN));
	ok = ok && cJSON_AddItemToObject(o, "mean", num_or_null(n ? stats__mean(s) : NAN));
	ok = ok && cJSON_AddItemToObject(o, "max", num_or_null(n ? stats__max(s) : NAN));
	if (!ok) {
		cJSON_Delete(o);
		return NULL;
	}
	return o;
}

static int add_slo(cJSON *data, struct acc *a, const struct slo_set *set,
		   struct html_report_result *res)
{
	struct slo_values v;
	cJSON *arr = cJSON_AddArrayToObject(data, "slo");
	char name[32];

	if (!arr)
		return -ENOMEM;
	if (!set || !set->n)
		return 0;
	slo_values__init(&v);
	for (size_t i = 0; i < N_METRICS; i++)
		slo_values__from_stats(&v, metrics[i].slo, a->m[i]);
	slo__check(set, &v, &res->slo);
	for (int i = 0; i < set->n; i++) {
		cJSON *o = cJSON_CreateObject();

		snprintf(name, sizeof(name), "%s_%s", slo__metric_name(set->items[i].metric),
			 slo__pct_name(set->items[i].pct));
		if (!o || !cJSON_AddItemToArray(arr, o) || !cJSON_AddStringToObject(o, "name", name) ||
		    !cJSON_AddNumberToObject(o, "limit_ms", set->items[i].limit_ms) ||
		    !cJSON_AddItemToObject(o, "value_ms", num_or_null(res->slo.value_ms[i])) ||
		    !cJSON_AddBoolToObject(o, "pass", !res->slo.failed[i]))
			return -ENOMEM;
	}
	return 0;
}

/* "/v1/chat/completions" or "3 paths". */
static void paths_text(const cJSON *reqs, char *buf, size_t sz)
{
	const char *first = NULL;
	const cJSON *r;
	int distinct = 0;

	buf[0] = 0;
	cJSON_ArrayForEach(r, reqs) {
		const cJSON *p = cJSON_GetObjectItemCaseSensitive(r, "path");

		if (!cJSON_IsString(p))
			continue;
		if (!first) {
			first = p->valuestring;
			distinct = 1;
		} else if (strcmp(first, p->valuestring)) {
			distinct = 2;
		}
	}
	if (distinct == 1)
		snprintf(buf, sz, "%s", first);
	else if (distinct > 1)
		snprintf(buf, sz, "several paths");
}

/* The summary's outcome counts; counted from the requests when there is no summary. */
static int add_outcomes(cJSON *data, const struct acc *a)
{
	const cJSON *sum = cJSON_GetObjectItemCaseSensitive(a->summary, "outcomes");
	cJSON *o;

	if (cJSON_IsObject(sum))
		return copy_field(data, a->summary, "outcomes", "outcomes") &&
		       cJSON_AddStringToObject(data, "outcomes_from", "summary");
	o = cJSON_AddObjectToObject(data, "outcomes");
	for (int i = 0; o && i < TTF_OC__MAX; i++)
		if (!cJSON_AddNumberToObject(o, ttf_outcome_name(i), a->outcomes[i]))
			return 0;
	return o && cJSON_AddStringToObject(data, "outcomes_from", "requests");
}

static cJSON *build(struct acc *a, const struct html_report_opts *o,
		    struct html_report_result *res)
{
	cJSON *data = cJSON_CreateObject(), *meta, *arr, *grades, *r, *keys;
	char when[64], paths[128];
	int ok = data != NULL;

	if (o->generated) {
		snprintf(when, sizeof(when), "%s", o->generated);
	} else {
		time_t now = time(NULL);
		struct tm tm;

		strftime(when, sizeof(when), "%Y-%m-%d %H:%M UTC", gmtime_r(&now, &tm));
	}
	paths_text(a->reqs, paths, sizeof(paths));
	meta = ok ? cJSON_AddObjectToObject(data, "meta") : NULL;
	ok = meta && cJSON_AddStringToObject(meta, "title", o->title ? o->title : "ttftrace report") &&
	     cJSON_AddStringToObject(meta, "source", o->source ? o->source : "") &&
	     cJSON_AddStringToObject(meta, "generated", when) &&
	     cJSON_AddNumberToObject(meta, "requests", res->requests) &&
	     cJSON_AddNumberToObject(meta, "left_out", a->left_out) &&
	     cJSON_AddNumberToObject(meta, "span_s", a->t_last_ns > a->t0_ns && a->t0_ns ?
				     (a->t_last_ns - a->t0_ns) / 1e9 : 0) &&
	     cJSON_AddStringToObject(meta, "paths", paths) &&
	     cJSON_AddNumberToObject(meta, "bad_lines", res->bad_lines) &&
	     cJSON_AddBoolToObject(meta, "no_summary", !a->summary);
	keys = ok ? cJSON_AddArrayToObject(meta, "stage_keys") : NULL;
	ok = keys != NULL;
	for (size_t i = 0; ok && i < N_STAGES; i++)
		ok = cJSON_AddItemToArray(keys, cJSON_CreateString(stage_key(i)));
	arr = ok ? cJSON_AddArrayToObject(data, "requests") : NULL;
	ok = arr != NULL;
	cJSON_ArrayForEach(r, a->reqs) {
		cJSON *s = ok ? slim_request(r, a->t0_ns) : NULL;

		ok = s && cJSON_AddItemToArray(arr, s);
	}
	arr = ok ? cJSON_AddArrayToObject(data, "stats") : NULL;
	ok = arr != NULL;
	for (size_t i = 0; ok && i < N_METRICS; i++)
		ok = cJSON_AddItemToArray(arr, stat_row(a->m[i], metrics[i].name, metrics[i].label,
							"Token metrics"));
	for (size_t i = 0; ok && i < N_STAGES; i++)
		if (stats__count(a->st[i]))
			ok = cJSON_AddItemToArray(arr, stat_row(a->st[i], stage_key(i),
								stage_key(i), "TTFT stages"));
	grades = ok ? cJSON_AddObjectToObject(data, "grades") : NULL;
	ok = grades && cJSON_AddNumberToObject(grades, "A", a->grades[0]) &&
	     cJSON_AddNumberToObject(grades, "B", a->grades[1]) &&
	     cJSON_AddNumberToObject(grades, "C", a->grades[2]) &&
	     cJSON_AddNumberToObject(grades, "-", a->grades[3]);
	ok = ok && !add_slo(data, a, o->slo, res);
	ok = ok && add_outcomes(data, a);
	ok = ok && cJSON_AddItemToObject(data, "by_route", html_groups__json(a->by_route)) &&
	     cJSON_AddItemToObject(data, "by_model", html_groups__json(a->by_model));
	ok = ok && copy_field(data, a->summary, "counters", "counters") &&
	     copy_field(data, a->summary, "tail_stage", "tail_stage");
	if (!ok) {
		cJSON_Delete(data);
		return NULL;
	}
	return data;
}

/* JSON inside <script>: '<' only occurs in strings, where \u003c keeps "</script>" out. */
static void put_json(FILE *out, const char *s)
{
	for (; *s; s++) {
		if (*s == '<')
			fputs("\\u003c", out);
		else
			fputc(*s, out);
	}
	fputc('\n', out);
}

int html_report__render(FILE *in, FILE *out, const struct html_report_opts *o,
			struct html_report_result *res, char *err, size_t err_sz)
{
	struct acc a = { 0 };
	const char *mark = strstr(report_template_html, DATA_MARK), *rest;
	cJSON *data = NULL;
	char *json = NULL;
	int ret = -ENOMEM;

	memset(res, 0, sizeof(*res));
	if (err && err_sz)
		err[0] = 0;
	a.reqs = cJSON_CreateArray();
	a.by_route = html_groups__new();
	a.by_model = html_groups__new();
	if (!a.by_route || !a.by_model)
		goto cleanup;
	for (size_t i = 0; i < N_METRICS; i++)
		if (!(a.m[i] = stats__new()))
			goto cleanup;
	for (size_t i = 0; i < N_STAGES; i++)
		if (!(a.st[i] = stats__new()))
			goto cleanup;
	if (!a.reqs || !mark)
		goto cleanup;
	ret = read_ndjson(in, &a, res, err, err_sz);
	if (ret)
		goto cleanup;
	res->have_summary = a.summary != NULL;
	ret = -ENOMEM;
	data = build(&a, o, res);
	json = data ? cJSON_PrintUnformatted(data) : NULL;
	if (!json)
		goto cleanup;
	/* the template's marker line is replaced, the rest goes out as it is */
	rest = strchr(mark, '\n');
	fwrite(report_template_html, 1, mark - report_template_html, out);
	put_json(out, json);
	fputs(rest ? rest + 1 : "", out);
	ret = fflush(out) || ferror(out) ? -EIO : 0;
	if (ret)
		snprintf(err, err_sz, "writing the page failed");
cleanup:
	if (ret == -ENOMEM && err && err_sz && !err[0])
		snprintf(err, err_sz, "out of memory");
	free(json);
	cJSON_Delete(data);
	cJSON_Delete(a.reqs);
	cJSON_Delete(a.summary);
	html_groups__free(a.by_route);
	html_groups__free(a.by_model);
	for (size_t i = 0; i < N_METRICS; i++)
		stats__free(a.m[i]);
	for (size_t i = 0; i < N_STAGES; i++)
		stats__free(a.st[i]);
	return ret;
}
