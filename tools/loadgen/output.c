// SPDX-License-Identifier: GPL-2.0-only
/* loadgen's JSON result and its human summary. */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cjson/cJSON.h>

#include "user/lib/stats.h"
#include "tools/loadgen/loadgen.h"

static double ms(uint64_t a_ns, uint64_t b_ns)
{
	return (double)(int64_t)(b_ns - a_ns) / 1e6;
}

/* NaN (not measured) becomes JSON null. */
static void add_num(cJSON *o, const char *k, double v)
{
	if (isnan(v))
		cJSON_AddNullToObject(o, k);
	else
		cJSON_AddNumberToObject(o, k, round(v * 1000.0) / 1000.0);
}

double lg_req__ttft_ms(const struct lg_req *r)
{
	return r->start_ns && r->first_token_ns ? ms(r->start_ns, r->first_token_ns) : NAN;
}

/* (t_last - t_first) / (tokens - 1), the definition in docs/metrics.md M8. */
double lg_req__tpot_ms(const struct lg_req *r)
{
	uint32_t n = lg_req__tokens(r);

	return r->first_token_ns && n > 1 ? ms(r->first_token_ns, r->last_token_ns) / (n - 1) : NAN;
}

double lg_req__e2e_ms(const struct lg_req *r)
{
	return r->start_ns && r->end_ns ? ms(r->start_ns, r->end_ns) : NAN;
}

/* Position of each request on its connection: the join key with ttftrace's conn_seq. */
static void assign_conn_seq(struct lg_req *reqs, unsigned n)
{
	for (unsigned i = 0; i < n; i++) {
		reqs[i].conn_seq = 0;
		if (reqs[i].new_conn)
			continue;
		for (unsigned j = 0; j < n; j++) {
			if (j != i && reqs[j].local_port == reqs[i].local_port &&
			    reqs[j].start_ns && reqs[j].start_ns < reqs[i].start_ns)
				reqs[i].conn_seq++;
		}
	}
}

static cJSON *req_json(const struct lg_req *r)
{
	cJSON *o = cJSON_CreateObject();
	const char *fail = lg_req__failure(r);

	if (!o)
		return NULL;
	cJSON_AddNumberToObject(o, "index", r->idx);
	cJSON_AddNumberToObject(o, "status", r->status);
	if (fail)
		cJSON_AddStringToObject(o, "error", fail);
	else
		cJSON_AddNullToObject(o, "error");
	cJSON_AddNumberToObject(o, "local_port", r->local_port);
	cJSON_AddBoolToObject(o, "new_conn", r->new_conn);
	cJSON_AddNumberToObject(o, "conn_seq", r->conn_seq);
	cJSON_AddNumberToObject(o, "start_ns", (double)r->start_ns);
	cJSON_AddNumberToObject(o, "first_token_ns", (double)r->first_token_ns);
	cJSON_AddNumberToObject(o, "last_token_ns", (double)r->last_token_ns);
	cJSON_AddNumberToObject(o, "end_ns", (double)r->end_ns);
	cJSON_AddNumberToObject(o, "events", r->events);
	cJSON_AddNumberToObject(o, "tokens", lg_req__tokens(r));
	cJSON_AddStringToObject(o, "tokens_source", r->has_usage ? "usage" : "events");
	if (r->has_usage)
		cJSON_AddNumberToObject(o, "prompt_tokens", r->usage_prompt_tokens);
	cJSON_AddBoolToObject(o, "done_marker", r->done_marker);
	add_num(o, "ttft_ms", lg_req__ttft_ms(r));
	add_num(o, "tpot_ms", lg_req__tpot_ms(r));
	add_num(o, "e2e_ms", lg_req__e2e_ms(r));
	return o;
}

static cJSON *pct_json(struct stats *s)
{
	cJSON *o = cJSON_CreateObject();

	if (!o)
		return NULL;
	add_num(o, "p50", stats__percentile(s, 50));
	add_num(o, "p90", stats__percentile(s, 90));
	add_num(o, "p95", stats__percentile(s, 95));
	add_num(o, "p99", stats__percentile(s, 99));
	add_num(o, "mean", stats__mean(s));
	add_num(o, "max", stats__max(s));
	return o;
}

static void human_line(const char *name, struct stats *s)
{
	fprintf(stderr, "  %-8s p50 %8.2f  p90 %8.2f  p99 %8.2f  max %8.2f\n", name,
		stats__percentile(s, 50), stats__percentile(s, 90), stats__percentile(s, 99),
		stats__max(s));
}

int lg_output(const struct lg_opts *o, struct lg_req *reqs, unsigned n, uint64_t wall_ns)
{
	struct stats *ttft = stats__new(), *tpot = stats__new(), *e2e = stats__new();
	cJSON *root = cJSON_CreateObject(), *arr, *sum;
	double wall_s = wall_ns / 1e9;
	uint64_t tokens = 0;
	unsigned ok = 0;
	char *text = NULL;
	FILE *f = stdout;
	int err = -ENOMEM;

	if (!ttft || !tpot || !e2e || !root)
		goto cleanup;
	assign_conn_seq(reqs, n);
	arr = cJSON_AddArrayToObject(root, "requests");
	if (!arr)
		goto cleanup;
	for (unsigned i = 0; i < n; i++) {
		cJSON *rj = req_json(&reqs[i]);

		if (!rj)
			goto cleanup;
		cJSON_AddItemToArray(arr, rj);
		if (lg_req__failure(&reqs[i]))
			continue;
		ok++;
		tokens += lg_req__tokens(&reqs[i]);
		stats__add(ttft, lg_req__ttft_ms(&reqs[i]));
		stats__add(tpot, lg_req__tpot_ms(&reqs[i])); /* NaN (1 token) is refused */
		stats__add(e2e, lg_req__e2e_ms(&reqs[i]));
	}
	sum = cJSON_AddObjectToObject(root, "summary");
	if (!sum)
		goto cleanup;
	cJSON_AddNumberToObject(sum, "requests", n);
	cJSON_AddNumberToObject(sum, "ok", ok);
	cJSON_AddNumberToObject(sum, "failed", n - ok);
	cJSON_AddNumberToObject(sum, "concurrency", o->concurrency);
	cJSON_AddNumberToObject(sum, "prompt_chars", o->prompt_tokens);
	cJSON_AddNumberToObject(sum, "max_tokens", o->max_tokens);
	cJSON_AddNumberToObject(sum, "tokens", (double)tokens);
	add_num(sum, "wall_s", wall_s);
	add_num(sum, "throughput_tok_s", wall_s > 0 ? tokens / wall_s : NAN);
	add_num(sum, "req_s", wall_s > 0 ? ok / wall_s : NAN);
	cJSON_AddItemToObject(sum, "ttft_ms", pct_json(ttft));
	cJSON_AddItemToObject(sum, "tpot_ms", pct_json(tpot));
	cJSON_AddItemToObject(sum, "e2e_ms", pct_json(e2e));

	text = cJSON_PrintUnformatted(root);
	if (!text)
		goto cleanup;
	if (o->output) {
		f = fopen(o->output, "w");
		if (!f) {
			err = -errno;
			fprintf(stderr, "Error: cannot write %s: %s\n", o->output, strerror(errno));
			goto cleanup;
		}
	}
	fprintf(f, "%s\n", text);
	if (f != stdout ? fclose(f) : fflush(f)) {
		err = -errno;
		fprintf(stderr, "Error: writing the results failed: %s\n", strerror(errno));
		goto cleanup;
	}
	if (!o->quiet) {
		fprintf(stderr, "loadgen: %u/%u requests ok in %.2f s, %.1f tokens/s, %.2f req/s\n",
			ok, n, wall_s, wall_s > 0 ? tokens / wall_s : 0.0,
			wall_s > 0 ? ok / wall_s : 0.0);
		if (ok) {
			human_line("TTFT ms", ttft);
			human_line("TPOT ms", tpot);
			human_line("E2E ms", e2e);
		}
		for (unsigned i = 0; i < n; i++) {
			const char *fail = lg_req__failure(&reqs[i]);

			if (fail)
				fprintf(stderr, "  request %u failed: %s (HTTP %ld)\n", i, fail,
					reqs[i].status);
		}
	}
	err = 0;
cleanup:
	free(text);
	cJSON_Delete(root);
	stats__free(ttft);
	stats__free(tpot);
	stats__free(e2e);
	return err;
}
