// SPDX-License-Identifier: GPL-2.0-only
/*
 * loadgen --sweep: stepped concurrency with warm-up, the client's table and
 * SLO verdict per step; --sweep-result: the same table from the sweep's
 * JSON, with ttftrace's numbers of the same time windows side by side.
 */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cjson/cJSON.h>

#include "user/lib/progress.h"
#include "user/lib/stats.h"
#include "tools/loadgen/loadgen.h"

static const enum slo_metric row_metrics[] = { SLO_TTFT, SLO_TPOT, SLO_E2E };
static const char *const row_keys[] = { "ttft_ms", "tpot_ms", "e2e_ms" };
#define N_ROW_METRICS 3

struct step_row {
	unsigned concurrency;
	unsigned warmup;
	unsigned n;		/* measured requests (client) / requests in the window (ttftrace) */
	unsigned ok;
	unsigned failed;
	double wall_s;
	double req_s;
	double tok_s;
	uint64_t t_start_ns;	/* first measured request sent .. */
	uint64_t t_end_ns;	/* .. last measured byte received, CLOCK_MONOTONIC */
	uint64_t t_window_ns;	/* server arrivals from here to t_end_ns belong to the step */
	struct slo_values v;
	int slo_met;		/* -1: no SLO */
};

/* Step verdict: every request ok and every SLO met. Prints nothing. */
static int step_slo(const struct slo_set *slo, const struct step_row *r)
{
	struct slo_result res;

	if (!slo->n)
		return -1;
	return !r->failed && r->n && slo__check(slo, &r->v, &res) == 0;
}

static void print_header(FILE *f)
{
	fprintf(f, "%6s  %-8s %5s  %9s %9s %9s  %9s %9s %9s  %7s  %s\n", "C", "source", "n",
		"TTFT p50", "p95", "p99", "TPOT p50", "p95", "p99", "req/s", "SLO");
}

static void print_num(FILE *f, double v, int width)
{
	if (isnan(v))
		fprintf(f, " %*s", width, "-");
	else
		fprintf(f, " %*.2f", width, v);
}

/* One table row; concurrency 0 leaves the C column blank (second row of a step). */
static void print_row(FILE *f, const struct step_row *r, const char *source, bool first)
{
	static const enum slo_pct cols[] = { SLO_P50, SLO_P95, SLO_P99 };

	if (first)
		fprintf(f, "%6u  %-8s %5u ", r->concurrency, source, r->n);
	else
		fprintf(f, "%6s  %-8s %5u ", "", source, r->n);
	for (int m = 0; m < 2; m++) {
		for (int c = 0; c < 3; c++)
			print_num(f, r->v.ms[row_metrics[m]][cols[c]], 9);
		fputc(' ', f);
	}
	print_num(f, r->req_s, 7);
	fprintf(f, "  %s\n", r->slo_met < 0 ? "" : r->slo_met ? "met" : "FAILED");
}

static cJSON *dist_json(const struct slo_values *v, enum slo_metric m)
{
	cJSON *o = cJSON_CreateObject();

	for (int p = 0; o && p < SLO_N_PCTS; p++) {
		double x = v->ms[m][p];

		if (isnan(x))
			cJSON_AddNullToObject(o, slo__pct_name(p));
		else
			cJSON_AddNumberToObject(o, slo__pct_name(p), round(x * 1000.0) / 1000.0);
	}
	return o;
}

static cJSON *step_json(const struct step_row *r)
{
	cJSON *o = cJSON_CreateObject(), *c;

	if (!o)
		return NULL;
	cJSON_AddNumberToObject(o, "concurrency", r->concurrency);
	cJSON_AddNumberToObject(o, "warmup", r->warmup);
	cJSON_AddNumberToObject(o, "requests", r->n);
	cJSON_AddNumberToObject(o, "ok", r->ok);
	cJSON_AddNumberToObject(o, "failed", r->failed);
	cJSON_AddNumberToObject(o, "wall_s", round(r->wall_s * 1000.0) / 1000.0);
	cJSON_AddNumberToObject(o, "req_s", round(r->req_s * 1000.0) / 1000.0);
	cJSON_AddNumberToObject(o, "throughput_tok_s", round(r->tok_s * 10.0) / 10.0);
	cJSON_AddNumberToObject(o, "t_start_ns", (double)r->t_start_ns);
	cJSON_AddNumberToObject(o, "t_end_ns", (double)r->t_end_ns);
	cJSON_AddNumberToObject(o, "t_window_ns", (double)r->t_window_ns);
	c = cJSON_AddObjectToObject(o, "client");
	for (int i = 0; c && i < N_ROW_METRICS; i++)
		cJSON_AddItemToObject(c, row_keys[i], dist_json(&r->v, row_metrics[i]));
	if (r->slo_met < 0)
		cJSON_AddNullToObject(o, "slo_met");
	else
		cJSON_AddBoolToObject(o, "slo_met", r->slo_met);
	return o;
}

/*
 * The window opens up to WINDOW_SLACK_NS before the first measured
 * request's start, but never before the last warm-up request was sent
 * (sent_ns: curl reports the headers after their write, so the server has
 * that request by then).
 */
#define WINDOW_SLACK_NS 1000000ull

/* Client numbers of the measured requests reqs[w..n). */
static int measure(struct step_row *row, struct lg_req *reqs, unsigned w, unsigned n)
{
	struct stats *st[N_ROW_METRICS] = {};
	uint64_t tokens = 0, last_warm_ns = 0;
	int err = -ENOMEM;

	for (int i = 0; i < N_ROW_METRICS; i++)
		if (!(st[i] = stats__new()))
			goto cleanup;
	row->n = n - w;
	for (unsigned i = 0; i < w; i++)
		if (reqs[i].sent_ns > last_warm_ns)
			last_warm_ns = reqs[i].sent_ns;
	for (unsigned i = w; i < n; i++) {
		const struct lg_req *r = &reqs[i];

		if (r->start_ns && (!row->t_start_ns || r->start_ns < row->t_start_ns))
			row->t_start_ns = r->start_ns;
		if (r->end_ns > row->t_end_ns)
			row->t_end_ns = r->end_ns;
		if (lg_req__failure(r)) {
			row->failed++;
			continue;
		}
		row->ok++;
		tokens += lg_req__tokens(r);
		stats__add(st[0], lg_req__ttft_ms(r));
		stats__add(st[1], lg_req__tpot_ms(r));	/* NaN (1 token) is refused */
		stats__add(st[2], lg_req__e2e_ms(r));
	}
	row->t_window_ns = row->t_start_ns > WINDOW_SLACK_NS ? row->t_start_ns - WINDOW_SLACK_NS : 0;
	if (row->t_window_ns < last_warm_ns)
		row->t_window_ns = last_warm_ns;
	row->wall_s = row->t_end_ns > row->t_start_ns ? (row->t_end_ns - row->t_start_ns) / 1e9 : NAN;
	row->req_s = row->wall_s > 0 ? row->ok / row->wall_s : NAN;
	row->tok_s = row->wall_s > 0 ? tokens / row->wall_s : NAN;
	slo_values__init(&row->v);
	for (int i = 0; i < N_ROW_METRICS; i++)
		slo_values__from_stats(&row->v, row_metrics[i], st[i]);
	err = 0;
cleanup:
	for (int i = 0; i < N_ROW_METRICS; i++)
		stats__free(st[i]);
	return err;
}

int lg_slo_check_run(const struct lg_opts *o, struct lg_req *reqs, unsigned n)
{
	struct step_row row = {};
	struct slo_result res;

	if (measure(&row, reqs, 0, n)) {
		fprintf(stderr, "Error: out of memory for the SLO check\n");
		return LG_EXIT_RUNTIME;
	}
	slo__check(&o->slo, &row.v, &res);
	slo__print(stderr, "loadgen", &o->slo, &res);
	if (!res.n_failed)
		return LG_EXIT_OK;
	fprintf(stderr, "loadgen: %d of %d SLOs not met (exit %d)\n", res.n_failed, o->slo.n,
		LG_EXIT_SLO);
	return LG_EXIT_SLO;
}

static void print_best(FILE *f, const char *what, int best, bool have_slo)
{
	if (!have_slo)
		return;
	if (best > 0)
		fprintf(f, "%s: highest concurrency that meets the SLO: %d\n", what, best);
	else
		fprintf(f, "%s: no step meets the SLO\n", what);
}

static int write_json(const struct lg_opts *o, cJSON *root)
{
	char *text = cJSON_PrintUnformatted(root);
	FILE *f = stdout;
	int err = 0;

	if (!text)
		return -ENOMEM;
	if (o->output && !(f = fopen(o->output, "w"))) {
		err = -errno;
		fprintf(stderr, "Error: cannot write %s: %s\n", o->output, strerror(errno));
		goto cleanup;
	}
	fprintf(f, "%s\n", text);
	if (f != stdout ? fclose(f) : fflush(f)) {
		err = -errno;
		fprintf(stderr, "Error: writing the sweep result failed: %s\n", strerror(errno));
	}
cleanup:
	free(text);
	return err;
}

int lg_sweep(struct lg_opts *o)
{
	cJSON *root = cJSON_CreateObject(), *sw, *steps;
	unsigned idx0 = 0, any_failed = 0;
	int best = 0, ret = LG_EXIT_RUNTIME;

	if (!root || !(sw = cJSON_AddObjectToObject(root, "sweep")) ||
	    !(steps = cJSON_AddArrayToObject(root, "steps")))
		goto cleanup;
	cJSON_AddStringToObject(sw, "url", o->url);
	cJSON_AddNumberToObject(sw, "prompt_chars", o->prompt_tokens);
	cJSON_AddNumberToObject(sw, "max_tokens", o->max_tokens);
	if (o->slo_spec)
		cJSON_AddStringToObject(sw, "slo", o->slo_spec);
	else
		cJSON_AddNullToObject(sw, "slo");
	o->progress = progress__new(stderr, "loadgen");
	if (!o->quiet) {
		fprintf(stderr, "loadgen sweep: %s, %u-character prompts, %u max tokens, client ms\n",
			o->url, o->prompt_tokens, o->max_tokens);
		print_header(stderr);
	}
	for (unsigned k = 0; k < o->n_steps; k++) {
		struct lg_opts so = *o;
		unsigned c = o->steps[k];
		unsigned w = o->warmup_set ? o->warmup : c;
		unsigned n = o->n_set ? o->n_requests : (4 * c > 16 ? 4 * c : 16);
		struct step_row row = { .concurrency = c, .warmup = w };
		struct lg_req *reqs = calloc(w + n, sizeof(*reqs));
		uint64_t wall_ns;
		char label[48];
		int err;

		if (!reqs) {
			fprintf(stderr, "Error: out of memory for %u requests\n", w + n);
			goto cleanup;
		}
		so.concurrency = c;
		so.n_requests = w + n;
		so.idx0 = idx0;
		idx0 += w + n;
		snprintf(label, sizeof(label), "step %u/%u c=%u", k + 1, o->n_steps, c);
		progress__set_step(o->progress, label, w + n);
		err = lg_run(&so, reqs, &wall_ns);
		progress__clear(o->progress);
		if (!err)
			err = measure(&row, reqs, w, w + n);
		for (unsigned i = 0; i < w + n; i++)
			lg_req__cleanup(&reqs[i]);
		free(reqs);
		if (err) {
			fprintf(stderr, "Error: step c=%u failed: %s\n", c, strerror(-err));
			goto cleanup;
		}
		row.slo_met = step_slo(&o->slo, &row);
		if (row.slo_met > 0)
			best = c;
		any_failed += row.failed;
		if (!o->quiet) {
			print_row(stderr, &row, "client", true);
			if (row.slo_met == 0) {
				struct slo_result res;
				char prefix[32];

				snprintf(prefix, sizeof(prefix), "        c=%u", c);
				slo__check(&o->slo, &row.v, &res);
				slo__print(stderr, prefix, &o->slo, &res);
			}
		}
		cJSON_AddItemToArray(steps, step_json(&row));
	}
	if (best)
		cJSON_AddNumberToObject(root, "best_concurrency", best);
	else
		cJSON_AddNullToObject(root, "best_concurrency");
	if (write_json(o, root))
		goto cleanup;
	print_best(stderr, "loadgen", best, o->slo.n);
	if (any_failed)
		fprintf(stderr, "Error: %u measured requests failed\n"
			"HINT: a step with failures never meets the SLO; see the server's log\n",
			any_failed);
	ret = o->slo.n && !best ? LG_EXIT_SLO : any_failed ? LG_EXIT_FAILED : LG_EXIT_OK;
cleanup:
	progress__free(o->progress);
	o->progress = NULL;
	cJSON_Delete(root);
	return ret;
}

static double num(const cJSON *o, const char *k)
{
	const cJSON *x = cJSON_GetObjectItemCaseSensitive(o, k);

	return cJSON_IsNumber(x) ? x->valuedouble : NAN;
}

static char *read_file(const char *path)
{
	FILE *f = fopen(path, "r");
	char *buf = NULL;
	size_t len = 0;
	FILE *m;

	if (!f)
		return NULL;
	m = open_memstream(&buf, &len);
	if (m) {
		char chunk[65536];
		size_t n;

		while ((n = fread(chunk, 1, sizeof(chunk), f)) > 0)
			fwrite(chunk, 1, n, m);
		fclose(m);
	}
	fclose(f);
	return buf;
}

static int load_steps(const char *path, struct step_row *rows, unsigned *n_rows,
		      char *slo_spec, size_t slo_sz)
{
	char *text = read_file(path);
	cJSON *root = text ? cJSON_Parse(text) : NULL, *steps, *st, *sw;
	int err = -EINVAL;

	free(text);
	if (!root)
		return -EINVAL;
	sw = cJSON_GetObjectItemCaseSensitive(root, "sweep");
	st = cJSON_GetObjectItemCaseSensitive(sw, "slo");
	snprintf(slo_spec, slo_sz, "%s", cJSON_IsString(st) ? st->valuestring : "");
	steps = cJSON_GetObjectItemCaseSensitive(root, "steps");
	if (!cJSON_IsArray(steps))
		goto cleanup;
	*n_rows = 0;
	cJSON_ArrayForEach(st, steps) {
		struct step_row *r = &rows[*n_rows];
		cJSON *c = cJSON_GetObjectItemCaseSensitive(st, "client");

		if (*n_rows == LG_MAX_STEPS || !cJSON_IsObject(c) || isnan(num(st, "t_window_ns")))
			goto cleanup;
		memset(r, 0, sizeof(*r));
		r->concurrency = num(st, "concurrency");
		r->warmup = num(st, "warmup");
		r->n = num(st, "requests");
		r->ok = num(st, "ok");
		r->failed = num(st, "failed");
		r->wall_s = num(st, "wall_s");
		r->req_s = num(st, "req_s");
		r->tok_s = num(st, "throughput_tok_s");
		r->t_start_ns = num(st, "t_start_ns");
		r->t_end_ns = num(st, "t_end_ns");
		r->t_window_ns = num(st, "t_window_ns");
		slo_values__init(&r->v);
		for (int i = 0; i < N_ROW_METRICS; i++) {
			cJSON *d = cJSON_GetObjectItemCaseSensitive(c, row_keys[i]);

			for (int p = 0; p < SLO_N_PCTS; p++)
				r->v.ms[row_metrics[i]][p] = num(d, slo__pct_name(p));
		}
		(*n_rows)++;
	}
	err = 0;
cleanup:
	cJSON_Delete(root);
	return err;
}

static bool has_flag(const cJSON *req, const char *flag)
{
	const cJSON *f, *flags = cJSON_GetObjectItemCaseSensitive(req, "flags");

	cJSON_ArrayForEach(f, flags)
		if (cJSON_IsString(f) && !strcmp(f->valuestring, flag))
			return true;
	return false;
}

/*
 * ttftrace's request objects, each given to the step whose window holds its
 * t_arrival_ns (see WINDOW_SLACK_NS; with the default warm-up W = C every
 * warm-up request arrived a full request time before the window opens). Requests that lost sync
 * ("unknown") feed no percentile, as in ttftrace's summary.
 */
static int load_server(const char *path, const struct step_row *client, unsigned n_rows,
		       struct step_row *server, unsigned *outside)
{
	struct stats *st[LG_MAX_STEPS][N_ROW_METRICS] = {};
	char *text = read_file(path), *line, *save = NULL;
	int err = -ENOMEM;

	if (!text)
		return -errno ? -errno : -EIO;
	*outside = 0;
	for (unsigned k = 0; k < n_rows; k++)
		for (int i = 0; i < N_ROW_METRICS; i++)
			if (!(st[k][i] = stats__new()))
				goto cleanup;
	for (line = strtok_r(text, "\n", &save); line; line = strtok_r(NULL, "\n", &save)) {
		cJSON *o = cJSON_Parse(line), *t = cJSON_GetObjectItemCaseSensitive(o, "type");
		double arr = num(o, "t_arrival_ns");
		unsigned k;

		if (!cJSON_IsString(t) || strcmp(t->valuestring, "request") || isnan(arr)) {
			cJSON_Delete(o);
			continue;
		}
		for (k = 0; k < n_rows; k++)
			if (arr >= client[k].t_window_ns && arr <= client[k].t_end_ns)
				break;
		if (k == n_rows) {
			(*outside)++;	/* warm-up, or another client */
		} else {
			server[k].n++;
			if (!has_flag(o, "unknown"))
				for (int i = 0; i < N_ROW_METRICS; i++)
					stats__add(st[k][i], num(o, row_keys[i]));
		}
		cJSON_Delete(o);
	}
	for (unsigned k = 0; k < n_rows; k++) {
		slo_values__init(&server[k].v);
		for (int i = 0; i < N_ROW_METRICS; i++)
			slo_values__from_stats(&server[k].v, row_metrics[i], st[k][i]);
	}
	err = 0;
cleanup:
	for (unsigned k = 0; k < n_rows; k++)
		for (int i = 0; i < N_ROW_METRICS; i++)
			stats__free(st[k][i]);
	free(text);
	return err;
}

int lg_sweep_result(const struct lg_opts *o)
{
	static struct step_row client[LG_MAX_STEPS], server[LG_MAX_STEPS];
	char file_slo[512], msg[160];
	struct slo_set slo = o->slo;
	unsigned n_rows = 0, outside = 0;
	int best_c = 0, best_s = 0, err;

	err = load_steps(o->sweep_result, client, &n_rows, file_slo, sizeof(file_slo));
	if (err) {
		fprintf(stderr, "Error: %s is not a loadgen --sweep result\n"
			"HINT: loadgen -u URL --sweep -o FILE writes one\n", o->sweep_result);
		return LG_EXIT_RUNTIME;
	}
	if (!o->slo_spec && file_slo[0] && slo__parse(file_slo, &slo, msg, sizeof(msg))) {
		fprintf(stderr, "Error: the sweep's SLO '%s': %s\n", file_slo, msg);
		return LG_EXIT_RUNTIME;
	}
	for (unsigned k = 0; k < n_rows; k++)
		server[k] = (struct step_row){ .concurrency = client[k].concurrency, .req_s = NAN };
	if (o->ttftrace_ndjson) {
		err = load_server(o->ttftrace_ndjson, client, n_rows, server, &outside);
		if (err) {
			fprintf(stderr, "Error: cannot read %s: %s\n", o->ttftrace_ndjson,
				strerror(-err));
			return LG_EXIT_RUNTIME;
		}
	}
	printf("sweep %s: client and ttftrace (server) ms per step\n", o->sweep_result);
	print_header(stdout);
	for (unsigned k = 0; k < n_rows; k++) {
		client[k].slo_met = step_slo(&slo, &client[k]);
		if (client[k].slo_met > 0)
			best_c = client[k].concurrency;
		print_row(stdout, &client[k], "client", true);
		if (!o->ttftrace_ndjson)
			continue;
		server[k].slo_met = step_slo(&slo, &server[k]);
		if (server[k].slo_met > 0)
			best_s = server[k].concurrency;
		print_row(stdout, &server[k], "ttftrace", false);
	}
	if (o->ttftrace_ndjson)
		printf("ttftrace requests outside the measured windows (warm-up, other "
			"clients): %u\n", outside);
	print_best(stdout, "client", best_c, slo.n);
	if (o->ttftrace_ndjson)
		print_best(stdout, "ttftrace", best_s, slo.n);
	if (fflush(stdout)) {
		fprintf(stderr, "Error: writing the table failed: %s\n", strerror(errno));
		return LG_EXIT_RUNTIME;
	}
	return slo.n && !best_c ? LG_EXIT_SLO : LG_EXIT_OK;
}
