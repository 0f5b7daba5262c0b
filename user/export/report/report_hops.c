// SPDX-License-Identifier: GPL-2.0-only
/* Hops in the report (report_hops.h). */
#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include "user/export/report/report_hops.h"
#include "user/lib/stats.h"
#include "user/model/hops/view.h"
#include "user/model/vocab.h"

struct hop_stats {
	struct stats *st[TTF_HS__MAX];
	uint64_t n, buffering, exact, upstream_seen, pd;
};

/* The summary's stages: the prefill ones only once a chain had them. */
static int hs_stage_shown(const struct hop_stats *hs, int s)
{
	return hs->pd || (s != TTF_HS_PREFILL_CALL && s != TTF_HS_HANDOFF);
}

static const double pcts[] = { 50, 95, 99 };
static const char *const pct_keys[] = { "p50", "p95", "p99" };

/* The upstream's stages, in time order, as the chain reports them. */
static const enum ttf_stage up_order[] = {
	TTF_ST_NET_IN, TTF_ST_READ_WAIT, TTF_ST_FRONTEND, TTF_ST_TOKENIZE, TTF_ST_SERVER,
	TTF_ST_QUEUE, TTF_ST_PREFILL, TTF_ST_EMIT, TTF_ST_NET_OUT,
};

static double ms(int64_t ns)
{
	return round(ns / 1e3) / 1e3;
}

struct hop_stats *hop_stats__new(void)
{
	struct hop_stats *hs = calloc(1, sizeof(*hs));

	for (int i = 0; hs && i < TTF_HS__MAX; i++) {
		hs->st[i] = stats__new();
		if (!hs->st[i]) {
			hop_stats__free(hs);
			return NULL;
		}
	}
	return hs;
}

void hop_stats__free(struct hop_stats *hs)
{
	if (!hs)
		return;
	for (int i = 0; i < TTF_HS__MAX; i++)
		stats__free(hs->st[i]);
	free(hs);
}

int hop_stats__add(struct hop_stats *hs, const struct ttf_attrib *a)
{
	const struct ttf_hop_chain *c = a ? a->hops : NULL;
	int err = 0;

	if (!c)
		return 0;
	hs->n++;
	hs->buffering += c->buffering;
	hs->exact += c->exact;
	hs->upstream_seen += c->up_tgid != 0;
	hs->pd += c->pd.seen;
	for (int i = 0; i < TTF_HS__MAX; i++)
		if (ttf_hop_stage_present(c, i))
			err |= stats__add(hs->st[i], c->stage_ns[i] / 1e6);
	return err ? -ENOMEM : 0;
}

static void add_ms(cJSON *o, const char *k, int64_t ns, int *err)
{
	*err |= !(ns >= 0 ? cJSON_AddNumberToObject(o, k, ms(ns)) : cJSON_AddNullToObject(o, k));
}

static void add_str(cJSON *o, const char *k, const char *v, int *err)
{
	*err |= !(v && v[0] ? cJSON_AddStringToObject(o, k, v) : cJSON_AddNullToObject(o, k));
}

static void gateway_json(cJSON *arr, const struct ttf_hop_chain *c, int *err)
{
	cJSON *h = cJSON_CreateObject(), *st;

	if (!h || !cJSON_AddItemToArray(arr, h)) {
		cJSON_Delete(h);
		*err = 1;
		return;
	}
	*err |= !cJSON_AddStringToObject(h, "hop", "gateway");
	*err |= !cJSON_AddStringToObject(h, "comm", c->gw_comm);
	*err |= !cJSON_AddNumberToObject(h, "pid", c->gw_tgid);
	*err |= !cJSON_AddStringToObject(h, "join", c->exact ? "exact" : "inferred");
	*err |= !cJSON_AddStringToObject(h, "join_why", c->why);
	st = cJSON_AddObjectToObject(h, "stages_ms");
	*err |= !st;
	if (st) {
		add_ms(st, "gateway_in", c->stage_ns[TTF_HS_GATEWAY_IN], err);
		add_ms(st, "gateway_out", c->stage_ns[TTF_HS_GATEWAY_OUT], err);
	}
	*err |= !cJSON_AddBoolToObject(h, "buffering", c->buffering);
	*err |= !cJSON_AddNumberToObject(h, "held_reads", c->held_reads);
	add_ms(h, "held_ms", c->held_ns, err);
	add_ms(h, "itl_in_mean_ms", c->itl_in_mean_ns >= 0 ? (int64_t)c->itl_in_mean_ns : -1, err);
	add_ms(h, "itl_out_mean_ms", c->itl_out_mean_ns >= 0 ? (int64_t)c->itl_out_mean_ns : -1,
	       err);
}

static void upstream_json(cJSON *arr, const struct ttf_hop_chain *c, int *err)
{
	cJSON *h = cJSON_CreateObject(), *st;

	if (!h || !cJSON_AddItemToArray(arr, h)) {
		cJSON_Delete(h);
		*err = 1;
		return;
	}
	*err |= !cJSON_AddStringToObject(h, "hop", "upstream");
	if (c->up_unix) {	/* no ports: the connection's two socket inodes */
		*err |= !cJSON_AddNullToObject(h, "port");
		*err |= !cJSON_AddNullToObject(h, "gateway_port");
		*err |= !cJSON_AddNumberToObject(h, "unix_inode", (double)c->up_ino);
		*err |= !cJSON_AddNumberToObject(h, "gateway_unix_inode", (double)c->gw_ino);
	} else {
		*err |= !cJSON_AddNumberToObject(h, "port", c->up_port);
		*err |= !cJSON_AddNumberToObject(h, "gateway_port", c->gw_port);
	}
	if (!c->up_tgid) {
		*err |= !cJSON_AddNullToObject(h, "pid");
		*err |= !cJSON_AddNullToObject(h, "join");
		*err |= !cJSON_AddStringToObject(h, "merged_why", c->up_why);
		return;
	}
	*err |= !cJSON_AddStringToObject(h, "comm", c->up_comm);
	*err |= !cJSON_AddNumberToObject(h, "pid", c->up_tgid);
	*err |= !cJSON_AddNumberToObject(h, "request_id", (double)c->up_req_id);
	*err |= !cJSON_AddStringToObject(h, "join", "exact");
	*err |= !cJSON_AddStringToObject(h, "join_why", c->up_unix ?
					 "the same unix socket connection (its inode pair), seen "
					 "from both ends" :
					 "the same TCP connection, seen from both ends");
	*err |= !cJSON_AddStringToObject(h, "attribution", ttf_attrib_kind_name(c->up_kind));
	add_str(h, "inferred_by", c->up_inferred_by, err);
	add_str(h, "merged", c->up_merged, err);
	st = cJSON_AddObjectToObject(h, "stages_ms");
	*err |= !st;
	for (size_t i = 0; st && i < sizeof(up_order) / sizeof(up_order[0]); i++)
		add_ms(st, ttf_stage_name(up_order[i]), c->up_stage_ns[up_order[i]], err);
}

/* The prefill call of a disaggregated chain (its tokens never reach the client). */
static void prefill_json(cJSON *arr, const struct ttf_hop_chain *c, int *err)
{
	cJSON *h = cJSON_CreateObject();

	if (!h || !cJSON_AddItemToArray(arr, h)) {
		cJSON_Delete(h);
		*err = 1;
		return;
	}
	*err |= !cJSON_AddStringToObject(h, "hop", "prefill");
	*err |= !cJSON_AddNumberToObject(h, "port", c->pd.port);
	add_ms(h, "call_ms", c->stage_ns[TTF_HS_PREFILL_CALL], err);
	*err |= !cJSON_AddNumberToObject(h, "tokens_discarded", c->pd.tokens);
	if (!c->pd.tgid) {
		*err |= !cJSON_AddNullToObject(h, "pid");
		*err |= !cJSON_AddNullToObject(h, "join");
		return;
	}
	*err |= !cJSON_AddStringToObject(h, "comm", c->pd.comm);
	*err |= !cJSON_AddNumberToObject(h, "pid", c->pd.tgid);
	*err |= !cJSON_AddNumberToObject(h, "request_id", (double)c->pd.req_id);
	*err |= !cJSON_AddStringToObject(h, "join", "exact");
	add_ms(h, "server_ms", c->pd.server_ns, err);
}

void report_hops__json(cJSON *o, const struct ttf_attrib *a, int *err)
{
	const struct ttf_hop_chain *c = a ? a->hops : NULL;
	cJSON *arr, *st;

	if (!c)
		return;
	arr = cJSON_AddArrayToObject(o, "hops");
	*err |= !arr;
	if (arr) {
		gateway_json(arr, c, err);
		if (c->pd.seen)
			prefill_json(arr, c, err);
		upstream_json(arr, c, err);
	}
	st = cJSON_AddObjectToObject(o, "hop_stages_ms");
	*err |= !st;
	for (int i = 0; st && i < TTF_HS__MAX; i++)
		if (ttf_hop_stage_present(c, i))
			add_ms(st, ttf_hop_stage_name(i), c->stage_ns[i], err);
}

void report_hops__text_line(FILE *out, const struct ttf_attrib *a)
{
	const struct ttf_hop_chain *c = a ? a->hops : NULL;

	if (!c)
		return;
	fprintf(out, "    hops(ms): %s gateway_in %.2f | ", c->gw_comm,
		c->stage_ns[TTF_HS_GATEWAY_IN] / 1e6);
	if (c->pd.seen)
		fprintf(out, "prefill port %u %.2f (%u token%s discarded) handoff %.2f | decode ",
			c->pd.port, c->stage_ns[TTF_HS_PREFILL_CALL] / 1e6, c->pd.tokens,
			c->pd.tokens == 1 ? "" : "s", c->stage_ns[TTF_HS_HANDOFF] / 1e6);
	if (c->up_tgid) {
		fprintf(out, "%s", c->up_comm);
		for (size_t i = 0; i < sizeof(up_order) / sizeof(up_order[0]); i++)
			if (c->up_stage_ns[up_order[i]] >= 0 && up_order[i] != TTF_ST_TOKENIZE)
				fprintf(out, " %s %.2f", ttf_stage_name(up_order[i]),
					c->up_stage_ns[up_order[i]] / 1e6);
	} else {
		if (c->up_unix)
			fprintf(out, "unix:%llu upstream %.2f (not traced)",
				(unsigned long long)c->up_ino, c->stage_ns[TTF_HS_UPSTREAM] / 1e6);
		else
			fprintf(out, "port %u upstream %.2f (not traced)", c->up_port,
				c->stage_ns[TTF_HS_UPSTREAM] / 1e6);
	}
	fprintf(out, " | upstream_out %.2f gateway_out %.2f", c->stage_ns[TTF_HS_UPSTREAM_OUT] / 1e6,
		c->stage_ns[TTF_HS_GATEWAY_OUT] / 1e6);
	if (c->buffering)
		fprintf(out, " [%s buffers: held %.1f ms over %u more reads]", c->gw_comm,
			c->held_ns / 1e6, c->held_reads);
	fprintf(out, " [join %s]\n", c->exact ? "exact" : "inferred");
}

/* The hop stage with the largest P95. */
static int tail_stage(const struct hop_stats *hs)
{
	int best = -1;
	double v = -1;

	for (int i = 0; i < TTF_HS__MAX; i++) {
		double p = stats__percentile(hs->st[i], 95);

		if (!hs_stage_shown(hs, i))
			continue;
		if (p > v) {
			v = p;
			best = i;
		}
	}
	return best;
}

void report_hops__summary_text(FILE *out, const struct hop_stats *hs)
{
	int t;

	if (!hs || !hs->n)
		return;
	fprintf(out, "Hops: %llu requests through a gateway (%llu joined exactly, %llu with the "
		"upstream traced, %llu buffered by the gateway):\n", (unsigned long long)hs->n,
		(unsigned long long)hs->exact, (unsigned long long)hs->upstream_seen,
		(unsigned long long)hs->buffering);
	for (int i = 0; i < TTF_HS__MAX; i++) {
		if (!hs_stage_shown(hs, i))
			continue;
		fprintf(out, "  %-13s", ttf_hop_stage_name(i));
		for (size_t k = 0; k < 3; k++)
			fprintf(out, " %s %9.3f", pct_keys[k], stats__percentile(hs->st[i], pcts[k]));
		fputc('\n', out);
	}
	t = tail_stage(hs);
	if (t >= 0)
		fprintf(out, "  the tail (P95) is longest in: %s\n", ttf_hop_stage_name(t));
}

void report_hops__summary_json(cJSON *o, const struct hop_stats *hs, int *err)
{
	cJSON *h, *st;
	int t;

	if (!hs || !hs->n)
		return;
	h = cJSON_AddObjectToObject(o, "hops");
	*err |= !h;
	if (!h)
		return;
	*err |= !cJSON_AddNumberToObject(h, "requests", (double)hs->n);
	*err |= !cJSON_AddNumberToObject(h, "joined_exact", (double)hs->exact);
	*err |= !cJSON_AddNumberToObject(h, "upstream_traced", (double)hs->upstream_seen);
	*err |= !cJSON_AddNumberToObject(h, "buffered", (double)hs->buffering);
	if (hs->pd)
		*err |= !cJSON_AddNumberToObject(h, "disaggregated", (double)hs->pd);
	st = cJSON_AddObjectToObject(h, "stages_ms");
	*err |= !st;
	for (int i = 0; st && i < TTF_HS__MAX; i++) {
		cJSON *s;

		if (!hs_stage_shown(hs, i))
			continue;
		s = cJSON_AddObjectToObject(st, ttf_hop_stage_name(i));
		*err |= !s;
		for (size_t k = 0; s && k < 3; k++)
			*err |= !cJSON_AddNumberToObject(s, pct_keys[k], round(1e3 *
				stats__percentile(hs->st[i], pcts[k])) / 1e3);
	}
	t = tail_stage(hs);
	*err |= !cJSON_AddStringToObject(h, "tail_stage", t >= 0 ? ttf_hop_stage_name(t) : "");
}
