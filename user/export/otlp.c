// SPDX-License-Identifier: GPL-2.0-only
#include <cjson/cJSON.h>
#include <curl/curl.h>
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include "user/lib/hash.h"
#include "user/lib/log.h"
#include "user/model/hops.h"
#include "user/model/vocab.h"
#include "user/lib/version.h"
#include "user/export/otlp.h"

#define SPAN_KIND_INTERNAL 1
#define SPAN_KIND_SERVER 2
#define SPAN_KIND_CLIENT 3
#define STATUS_CODE_ERROR 2

/* ---- pure part: span sources, ids, JSON ---- */

void otlp_span_src__fill(struct otlp_span_src *s, const struct ttf_request *r,
			 const struct ttf_req_metrics *m, const struct ttf_attrib *a)
{
	uint64_t end;

	memset(s, 0, sizeof(*s));
	s->req_id = r->id;
	s->tgid = r->tgid;
	memcpy(s->comm, r->comm, sizeof(s->comm) - 1);
	memcpy(s->method, r->method, sizeof(s->method) - 1);
	memcpy(s->path, r->path, sizeof(s->path) - 1);
	memcpy(s->model, r->model, sizeof(s->model) - 1);
	s->status = r->status;
	s->api = r->api;
	s->server_port = r->addr.lport;
	s->flags = r->flags;
	s->vflags = ttf_vocab__flags(r, m);
	s->start_ns = m->t_start_ns;
	/* the response end, else the last moment the request was seen */
	end = m->t_end_ns;
	if (!end) {
		end = r->closed_ns > m->t_last_token_ns ? r->closed_ns : m->t_last_token_ns;
		if (m->t_first_token_ns > end)
			end = m->t_first_token_ns;
	}
	s->end_ns = end > s->start_ns ? end : s->start_ns;
	s->ttft_ns = m->ttft_ns;
	s->e2e_ns = m->e2e_ns;
	s->tpot_ns = m->tpot_ns;
	s->itl_cv = m->itl_cv;
	s->grade = m->grade;
	s->ttft_end_is_xmit = m->ttft_end_is_xmit;
	s->tokens_from_usage = m->tokens_from_usage;
	s->n_tokens = m->n_tokens;
	s->n_events = m->n_events;
	s->n_outliers = m->n_outliers;
	if (r->flags & TTF_REQ_USAGE)
		s->prompt_tokens = r->usage_prompt_tokens;
	for (int i = 0; i < TTF_ST__ALL; i++)
		s->stage_ns[i] = -1;
	if (!a)
		return;
	s->have_stages = a->valid;
	if (a->valid)
		memcpy(s->stage_ns, a->stage_ns, sizeof(s->stage_ns));
	s->kind = a->kind;
	memcpy(s->inferred_by, a->inferred_by, sizeof(s->inferred_by) - 1);
	memcpy(s->merged, a->merged, sizeof(s->merged) - 1);
	s->prefill_steps = a->prefill_steps;
	s->n_steps = a->n_step_spans;
	memcpy(s->steps, a->step_spans, sizeof(s->steps[0]) * a->n_step_spans);
	for (uint32_t i = 0; i < a->n_causes && s->n_causes < OTLP_MAX_CAUSES; i++)
		snprintf(s->causes[s->n_causes++], sizeof(s->causes[0]), "itl #%u %.3f ms: %s",
			 a->causes[i].index, a->causes[i].itl_ns / 1e6, a->causes[i].cause);
	if (a->hops && a->valid) {
		const struct ttf_hop_chain *c = a->hops;
		uint64_t t = s->start_ns;

		s->have_hops = 1;
		s->hops[0].tgid = c->gw_tgid;
		memcpy(s->hops[0].comm, c->gw_comm, sizeof(s->hops[0].comm) - 1);
		s->hops[0].start_ns = t;
		for (int i = 0; i < TTF_HS_UPSTREAM; i++)
			t += c->stage_ns[i];
		s->hops[1].tgid = c->up_tgid;
		memcpy(s->hops[1].comm, c->up_comm, sizeof(s->hops[1].comm) - 1);
		s->hops[1].start_ns = t;
		s->hops[1].end_ns = t + c->stage_ns[TTF_HS_UPSTREAM];
		s->hops[0].end_ns = s->start_ns + (s->ttft_ns > 0 ? s->ttft_ns : 0);
		s->hop_exact = c->exact;
		s->hop_buffering = c->buffering;
		s->hop_held_ns = c->held_ns;
		s->hop_upstream_port = c->up_port;
	}
}

void otlp__ids(uint64_t seed, uint64_t req_id, int idx, char trace_hex[33], char span_hex[17])
{
	/* splitmix64 spreads sequential ids over the whole id space */
	uint64_t hi = ttf_mix64(seed), lo = ttf_mix64(seed ^ ttf_mix64(req_id)), sp;

	if (trace_hex)
		snprintf(trace_hex, 33, "%016llx%016llx", (unsigned long long)hi,
			 (unsigned long long)(lo ? lo : 1));
	sp = ttf_mix64(lo ^ ((uint64_t)idx << 56 | (uint64_t)idx));
	if (span_hex)
		snprintf(span_hex, 17, "%016llx", (unsigned long long)(sp ? sp : 1));
}

int64_t otlp__clock_offset_ns(void)
{
	int64_t best_width = INT64_MAX, offset = 0;

	for (int i = 0; i < 5; i++) {
		struct timespec a, r, b;
		int64_t a_ns, b_ns, r_ns;

		clock_gettime(CLOCK_MONOTONIC, &a);
		clock_gettime(CLOCK_REALTIME, &r);
		clock_gettime(CLOCK_MONOTONIC, &b);
		a_ns = a.tv_sec * 1000000000ll + a.tv_nsec;
		b_ns = b.tv_sec * 1000000000ll + b.tv_nsec;
		r_ns = r.tv_sec * 1000000000ll + r.tv_nsec;
		if (b_ns - a_ns < best_width) {
			best_width = b_ns - a_ns;
			offset = r_ns - (a_ns + (b_ns - a_ns) / 2);
		}
	}
	return offset;
}

/* Attribute helpers; each sets *err on ENOMEM. */
static cJSON *attr(cJSON *arr, const char *key, int *err)
{
	cJSON *kv = cJSON_CreateObject(), *v;

	if (!kv || !cJSON_AddItemToArray(arr, kv) || !cJSON_AddStringToObject(kv, "key", key) ||
	    !(v = cJSON_AddObjectToObject(kv, "value"))) {
		*err = 1;
		return NULL;
	}
	return v;
}

static void attr_str(cJSON *arr, const char *key, const char *s, int *err)
{
	cJSON *v = attr(arr, key, err);

	if (v && !cJSON_AddStringToObject(v, "stringValue", s))
		*err = 1;
}

/* int64 travels as a JSON string in the protobuf JSON mapping */
static void attr_int(cJSON *arr, const char *key, int64_t x, int *err)
{
	char buf[24];
	cJSON *v = attr(arr, key, err);

	snprintf(buf, sizeof(buf), "%lld", (long long)x);
	if (v && !cJSON_AddStringToObject(v, "intValue", buf))
		*err = 1;
}

static void attr_double(cJSON *arr, const char *key, double x, int *err)
{
	cJSON *v = attr(arr, key, err);

	if (v && !cJSON_AddNumberToObject(v, "doubleValue", x))
		*err = 1;
}

static void attr_str_array(cJSON *arr, const char *key, const char *const *s, int n, int *err)
{
	cJSON *v = attr(arr, key, err), *av, *vals;

	if (!v)
		return;
	if (!(av = cJSON_AddObjectToObject(v, "arrayValue")) ||
	    !(vals = cJSON_AddArrayToObject(av, "values"))) {
		*err = 1;
		return;
	}
	for (int i = 0; i < n; i++) {
		cJSON *o = cJSON_CreateObject();

		if (!o || !cJSON_AddItemToArray(vals, o) ||
		    !cJSON_AddStringToObject(o, "stringValue", s[i]))
			*err = 1;
	}
}

static void add_time(cJSON *o, const char *key, uint64_t mono_ns, int64_t offset, int *err)
{
	char buf[24];

	snprintf(buf, sizeof(buf), "%llu", (unsigned long long)((int64_t)mono_ns + offset));
	if (!cJSON_AddStringToObject(o, key, buf))
		*err = 1;
}

static cJSON *new_span(cJSON *spans, uint64_t seed, uint64_t req_id, int idx, int parent_idx,
		       const char *name, int kind, uint64_t start, uint64_t end, int64_t offset,
		       int *err)
{
	char trace[33], span[17], parent[17];
	cJSON *sp = cJSON_CreateObject();

	if (!sp || !cJSON_AddItemToArray(spans, sp)) {
		*err = 1;
		return NULL;
	}
	otlp__ids(seed, req_id, idx, trace, span);
	*err |= !cJSON_AddStringToObject(sp, "traceId", trace);
	*err |= !cJSON_AddStringToObject(sp, "spanId", span);
	if (parent_idx >= 0) {
		otlp__ids(seed, req_id, parent_idx, NULL, parent);
		*err |= !cJSON_AddStringToObject(sp, "parentSpanId", parent);
	}
	*err |= !cJSON_AddStringToObject(sp, "name", name);
	*err |= !cJSON_AddNumberToObject(sp, "kind", kind);
	add_time(sp, "startTimeUnixNano", start, offset, err);
	add_time(sp, "endTimeUnixNano", end, offset, err);
	return sp;
}

static void request_attrs(cJSON *at, const struct otlp_span_src *s, int *err)
{
	const char *flags[TTF_VF__MAX], *causes[OTLP_MAX_CAUSES];
	int nf = ttf_vocab__flag_names(s->vflags, flags, TTF_VF__MAX);

	if (s->api == TTF_API_CHAT)
		attr_str(at, "gen_ai.operation.name", "chat", err);
	else if (s->api == TTF_API_COMPLETION || s->api == TTF_API_LLAMACPP)
		attr_str(at, "gen_ai.operation.name", "text_completion", err);
	if (s->model[0])
		attr_str(at, "gen_ai.request.model", s->model, err);
	if (s->ttft_ns >= 0)
		attr_double(at, "gen_ai.server.time_to_first_token", s->ttft_ns / 1e9, err);
	if (s->tpot_ns >= 0)
		attr_double(at, "gen_ai.server.time_per_output_token", s->tpot_ns / 1e9, err);
	attr_int(at, "gen_ai.usage.output_tokens", s->n_tokens, err);
	if (s->prompt_tokens)
		attr_int(at, "gen_ai.usage.input_tokens", s->prompt_tokens, err);
	attr_str(at, "http.request.method", s->method[0] ? s->method : "_OTHER", err);
	attr_str(at, "url.path", s->path, err);
	if (s->status)
		attr_int(at, "http.response.status_code", s->status, err);
	attr_int(at, "server.port", s->server_port, err);
	attr_int(at, "ttftrace.request.id", (int64_t)s->req_id, err);
	attr_str_array(at, "ttftrace.flags", flags, nf, err);
	attr_int(at, "ttftrace.token_events", s->n_events, err);
	attr_str(at, "ttftrace.tokens.source", ttf_token_source_name(s->tokens_from_usage), err);
	if (s->ttft_ns >= 0)
		attr_str(at, "ttftrace.ttft_end", ttf_ttft_end_name(s->ttft_end_is_xmit), err);
	if (s->e2e_ns >= 0)
		attr_double(at, "ttftrace.e2e", s->e2e_ns / 1e9, err);
	if (s->itl_cv >= 0)
		attr_double(at, "ttftrace.itl.cv", s->itl_cv, err);
	if (s->grade != '-' && s->grade)
		attr_str(at, "ttftrace.grade", (char[]){ s->grade, 0 }, err);
	attr_int(at, "ttftrace.outliers", s->n_outliers, err);
	for (uint32_t i = 0; i < s->n_causes; i++)
		causes[i] = s->causes[i];
	if (s->n_causes)
		attr_str_array(at, "ttftrace.tail_causes", causes, s->n_causes, err);
	if (!s->have_stages)
		return;
	attr_str(at, "ttftrace.attribution", ttf_attrib_kind_name(s->kind), err);
	if (s->inferred_by[0])
		attr_str(at, "ttftrace.inferred_by", s->inferred_by, err);
	if (s->merged[0])
		attr_str(at, "ttftrace.merged", s->merged, err);
	attr_int(at, "ttftrace.prefill.steps", s->prefill_steps, err);
}

static void stage_span(cJSON *spans, const struct otlp_span_src *s, uint64_t seed, int64_t off,
		       enum ttf_stage st, int parent_idx, uint64_t start, int *err)
{
	char name[32];
	cJSON *sp, *at;

	snprintf(name, sizeof(name), "ttft.%s", ttf_stage_name(st));
	sp = new_span(spans, seed, s->req_id, 1 + st, parent_idx, name, SPAN_KIND_INTERNAL, start,
		      start + s->stage_ns[st], off, err);
	if (!sp)
		return;
	at = cJSON_AddArrayToObject(sp, "attributes");
	if (!at) {
		*err = 1;
		return;
	}
	attr_str(at, "ttftrace.stage", ttf_stage_name(st), err);
}

/* Engine steps of the prefill, children of the request span at their own times. */
static void step_spans(cJSON *spans, const struct otlp_span_src *s, uint64_t seed, int64_t off,
		       int *err)
{
	for (uint32_t i = 0; i < s->n_steps; i++) {
		const struct ttf_step_span *st = &s->steps[i];
		cJSON *sp, *at;

		sp = new_span(spans, seed, s->req_id, 1 + TTF_ST__ALL + (int)i, 0, "prefill.step",
			      SPAN_KIND_INTERNAL, st->start_ns,
			      st->end_ns > st->start_ns ? st->end_ns : st->start_ns, off, err);
		at = sp ? cJSON_AddArrayToObject(sp, "attributes") : NULL;
		if (!at) {
			*err = 1;
			return;
		}
		attr_int(at, "thread.id", st->tid, err);
		attr_int(at, "ttftrace.step.index", i + 1, err);
		if (st->n_tokens >= 0)
			attr_int(at, "ttftrace.step.tokens", st->n_tokens, err);
		if (!st->have_gpu)
			continue;
		attr_double(at, "ttftrace.gpu.compute", st->compute_ns / 1e9, err);
		attr_double(at, "ttftrace.gpu.copy", st->copy_ns / 1e9, err);
		attr_double(at, "ttftrace.gpu.host_gap", st->host_gap_ns / 1e9, err);
		attr_int(at, "ttftrace.gpu.kernels", st->kernels, err);
		attr_int(at, "ttftrace.gpu.copies", st->copies, err);
	}
}

/*
 * Through a gateway: "hop.gateway" over the TTFT (its process), with
 * "hop.upstream" inside it from the upstream request's write to the
 * upstream's first token (the upstream's process), both children of the
 * request span.
 */
static void hop_spans(cJSON *spans, const struct otlp_span_src *s, uint64_t seed, int64_t off,
		      int *err)
{
	static const char *const names[2] = { "hop.gateway", "hop.upstream" };
	int base = 1 + TTF_ST__ALL + TTF_MAX_STEP_SPANS;

	for (int i = 0; i < 2; i++) {
		const struct otlp_hop *h = &s->hops[i];
		cJSON *sp = new_span(spans, seed, s->req_id, base + i, i ? base : 0, names[i],
				     i ? SPAN_KIND_CLIENT : SPAN_KIND_INTERNAL, h->start_ns,
				     h->end_ns, off, err);
		cJSON *at = sp ? cJSON_AddArrayToObject(sp, "attributes") : NULL;

		if (!at) {
			*err = 1;
			return;
		}
		if (h->tgid) {
			attr_int(at, "process.pid", h->tgid, err);
			attr_str(at, "process.executable.name", h->comm, err);
		}
		if (i == 0) {
			attr_str(at, "ttftrace.hop.join", s->hop_exact ? "exact" : "inferred", err);
			attr_str(at, "ttftrace.hop.buffering", s->hop_buffering ? "true" : "false",
				 err);
			attr_double(at, "ttftrace.hop.held", s->hop_held_ns / 1e9, err);
		} else {
			attr_int(at, "server.port", s->hop_upstream_port, err);
		}
	}
}

static void request_spans(cJSON *spans, const struct otlp_span_src *s, uint64_t seed,
			  int64_t off, int *err)
{
	char name[112];
	uint64_t cursor = s->start_ns;
	cJSON *sp, *at;

	snprintf(name, sizeof(name), "%s %s", s->method[0] ? s->method : "HTTP", s->path);
	sp = new_span(spans, seed, s->req_id, 0, -1, name, SPAN_KIND_SERVER, s->start_ns,
		      s->end_ns, off, err);
	if (!sp)
		return;
	at = cJSON_AddArrayToObject(sp, "attributes");
	if (!at) {
		*err = 1;
		return;
	}
	request_attrs(at, s, err);
	if (s->status >= 500 || ((s->flags & TTF_REQ_ERROR) && s->status < 400)) {
		cJSON *st = cJSON_AddObjectToObject(sp, "status");

		*err |= !st || !cJSON_AddNumberToObject(st, "code", STATUS_CODE_ERROR) ||
			!cJSON_AddStringToObject(st, "message", s->status >= 500 ?
						 "HTTP server error" : "error in the stream");
	}
	if (!s->have_stages)
		return;
	/* time order (vocab.h); server (merged frontend..emit) takes their place */
	for (size_t i = 0; i < TTF_STAGE_ORDER_N; i++) {
		enum ttf_stage st = ttf_stage_time_order[i];

		/* tokenize is a child of frontend, at its start */
		if (st == TTF_ST_TOKENIZE || s->stage_ns[st] < 0)
			continue;
		stage_span(spans, s, seed, off, st, 0, cursor, err);
		if (st == TTF_ST_FRONTEND && s->stage_ns[TTF_ST_TOKENIZE] >= 0)
			stage_span(spans, s, seed, off, TTF_ST_TOKENIZE, 1 + TTF_ST_FRONTEND,
				   cursor, err);
		cursor += s->stage_ns[st];
	}
	step_spans(spans, s, seed, off, err);
	if (s->have_hops)
		hop_spans(spans, s, seed, off, err);
}

static cJSON *resource_spans(cJSON *rs_arr, const struct otlp_span_src *first, const char *host,
			     int *err)
{
	cJSON *rs = cJSON_CreateObject(), *res, *at, *ss_arr, *ss, *scope, *spans;

	if (!rs || !cJSON_AddItemToArray(rs_arr, rs) ||
	    !(res = cJSON_AddObjectToObject(rs, "resource")) ||
	    !(at = cJSON_AddArrayToObject(res, "attributes")) ||
	    !(ss_arr = cJSON_AddArrayToObject(rs, "scopeSpans")) ||
	    !(ss = cJSON_CreateObject()) || !cJSON_AddItemToArray(ss_arr, ss) ||
	    !(scope = cJSON_AddObjectToObject(ss, "scope")) ||
	    !cJSON_AddStringToObject(scope, "name", "ttftrace") ||
	    !cJSON_AddStringToObject(scope, "version", TTF_VERSION) ||
	    !cJSON_AddStringToObject(ss, "schemaUrl",
				     "https://opentelemetry.io/schemas/" OTLP_SEMCONV_VERSION) ||
	    !(spans = cJSON_AddArrayToObject(ss, "spans"))) {
		*err = 1;
		return NULL;
	}
	attr_str(at, "service.name", "ttftrace", err);
	if (host)
		attr_str(at, "host.name", host, err);
	attr_int(at, "process.pid", first->tgid, err);
	if (first->comm[0])
		attr_str(at, "process.executable.name", first->comm, err);
	return spans;
}

char *otlp__build_json(const struct otlp_span_src *s, int n, const char *host, uint64_t seed,
		       int64_t mono_to_unix_ns)
{
	cJSON *root = cJSON_CreateObject(), *rs_arr;
	char *out = NULL;
	int err = 0;

	if (!root || !(rs_arr = cJSON_AddArrayToObject(root, "resourceSpans")))
		goto cleanup;
	/* one resourceSpans per server process, in order of first appearance */
	for (int i = 0; i < n && !err; i++) {
		cJSON *spans;
		int seen = 0;

		for (int j = 0; j < i && !seen; j++)
			seen = s[j].tgid == s[i].tgid;
		if (seen)
			continue;
		spans = resource_spans(rs_arr, &s[i], host, &err);
		for (int j = i; j < n && spans && !err; j++)
			if (s[j].tgid == s[i].tgid)
				request_spans(spans, &s[j], seed, mono_to_unix_ns, &err);
	}
	if (!err)
		out = cJSON_PrintUnformatted(root);
cleanup:
	cJSON_Delete(root);
	if (!out)
		errno = ENOMEM;
	return out;
}

/* ---- the sink: bounded queue, sender thread ---- */

struct otlp_sink {
	char *url;
	CURL *curl;
	struct curl_slist *hdrs;
	char host[256];
	uint64_t seed;
	int64_t offset_ns;
	pthread_t thread;
	int started, joined;
	pthread_mutex_t lock;
	pthread_cond_t cond;
	/* under lock */
	struct otlp_span_src *q;	/* ring of OTLP_QUEUE_CAP */
	unsigned int head, len;
	uint64_t oldest_ns;		/* when the oldest queued entry came */
	int stopping;
	uint64_t deadline_ns;		/* stopping: give up sending at this time */
	uint64_t exported, dropped_full, dropped_send, dropped_exit, retried;
	struct otlp_span_src batch[OTLP_BATCH];	/* sender thread only */
};

static uint64_t mono_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1000000000ull + ts.tv_nsec;
}

/* Wait on the condition until the CLOCK_MONOTONIC time t_ns (the cond uses that clock). */
static void wait_until(struct otlp_sink *o, uint64_t t_ns)
{
	struct timespec ts = { .tv_sec = t_ns / 1000000000ull, .tv_nsec = t_ns % 1000000000ull };

	pthread_cond_timedwait(&o->cond, &o->lock, &ts);
}

static size_t discard(char *p, size_t size, size_t n, void *ctx)
{
	return size * n;
}

enum post_result { POST_OK, POST_RETRY, POST_REJECTED };

/* One POST; *retry_after_ms = the server's Retry-After (seconds) or 0. */
static enum post_result post(struct otlp_sink *o, const char *body, long timeout_ms,
			     long *retry_after_ms)
{
	struct curl_header *h;
	long code = 0;
	CURLcode rc;

	*retry_after_ms = 0;
	curl_easy_setopt(o->curl, CURLOPT_POSTFIELDS, body);
	curl_easy_setopt(o->curl, CURLOPT_POSTFIELDSIZE, (long)strlen(body));
	curl_easy_setopt(o->curl, CURLOPT_TIMEOUT_MS, timeout_ms);
	curl_easy_setopt(o->curl, CURLOPT_CONNECTTIMEOUT_MS, timeout_ms < 2000 ? timeout_ms : 2000);
	rc = curl_easy_perform(o->curl);
	if (rc != CURLE_OK) {
		ttf_debug("otlp: %s", curl_easy_strerror(rc));
		return POST_RETRY;
	}
	curl_easy_getinfo(o->curl, CURLINFO_RESPONSE_CODE, &code);
	if (code >= 200 && code < 300)
		return POST_OK;
	if (curl_easy_header(o->curl, "Retry-After", 0, CURLH_HEADER, -1, &h) == CURLHE_OK) {
		long s = strtol(h->value, NULL, 10);

		if (s > 0)
			*retry_after_ms = (s > 5 ? 5 : s) * 1000;
	}
	ttf_debug("otlp: collector answered HTTP %ld", code);
	return code == 408 || code == 429 || code >= 500 ? POST_RETRY : POST_REJECTED;
}

/* Send o->batch[0..n) with retries; called without the lock. */
static void send_batch(struct otlp_sink *o, int n)
{
	char *body = otlp__build_json(o->batch, n, o->host[0] ? o->host : NULL, o->seed,
				      o->offset_ns);
	long backoff_ms = 100, retry_after_ms, timeout_ms;
	enum post_result res = POST_RETRY;
	int tries = 0, at_exit = 0;

	if (!body) {
		pthread_mutex_lock(&o->lock);
		o->dropped_send += n;
		pthread_mutex_unlock(&o->lock);
		return;
	}
	for (;;) {
		uint64_t now = mono_ns(), deadline, until;

		pthread_mutex_lock(&o->lock);
		deadline = o->stopping ? o->deadline_ns : 0;
		pthread_mutex_unlock(&o->lock);
		if (deadline && now >= deadline) {
			at_exit = 1;
			break;
		}
		timeout_ms = deadline ? (long)((deadline - now) / 1000000) + 1 : 5000;
		if (timeout_ms > 5000)
			timeout_ms = 5000;
		res = post(o, body, timeout_ms, &retry_after_ms);
		if (res != POST_RETRY || ++tries == OTLP_MAX_TRIES)
			break;
		pthread_mutex_lock(&o->lock);
		o->retried++;
		until = mono_ns() + (retry_after_ms ? retry_after_ms : backoff_ms) * 1000000ull;
		/* new requests signal too: sleep the whole backoff, or until the exit deadline */
		while ((now = mono_ns()) < until && (!o->stopping || now < o->deadline_ns))
			wait_until(o, o->stopping && o->deadline_ns < until ? o->deadline_ns
									   : until);
		pthread_mutex_unlock(&o->lock);
		backoff_ms *= 2;
	}
	free(body);
	pthread_mutex_lock(&o->lock);
	if (res == POST_OK)
		o->exported += n;
	else if (at_exit)
		o->dropped_exit += n;
	else
		o->dropped_send += n;
	pthread_mutex_unlock(&o->lock);
}

static void *sender(void *arg)
{
	struct otlp_sink *o = arg;

	pthread_mutex_lock(&o->lock);
	for (;;) {
		uint64_t now = mono_ns();
		int n;

		if (!o->len) {
			if (o->stopping)
				break;
			pthread_cond_wait(&o->cond, &o->lock);
			continue;
		}
		if (o->stopping && now >= o->deadline_ns) {
			o->dropped_exit += o->len;
			o->len = 0;
			break;
		}
		if (!o->stopping && o->len < OTLP_BATCH &&
		    now < o->oldest_ns + OTLP_BATCH_WAIT_MS * 1000000ull) {
			wait_until(o, o->oldest_ns + OTLP_BATCH_WAIT_MS * 1000000ull);
			continue;
		}
		n = o->len < OTLP_BATCH ? (int)o->len : OTLP_BATCH;
		for (int i = 0; i < n; i++)
			o->batch[i] = o->q[(o->head + i) % OTLP_QUEUE_CAP];
		o->head = (o->head + n) % OTLP_QUEUE_CAP;
		o->len -= n;
		o->oldest_ns = now;	/* the rest waited at least this long already */
		pthread_mutex_unlock(&o->lock);
		send_batch(o, n);
		pthread_mutex_lock(&o->lock);
	}
	pthread_mutex_unlock(&o->lock);
	return NULL;
}

static void sink_request(void *ctx, const struct ttf_request *r, const struct ttf_req_metrics *m,
			 const struct ttf_attrib *a)
{
	struct otlp_sink *o = ctx;
	struct otlp_span_src s;

	otlp_span_src__fill(&s, r, m, a);
	pthread_mutex_lock(&o->lock);
	if (o->len == OTLP_QUEUE_CAP || o->stopping) {
		o->dropped_full++;
	} else {
		if (!o->len)
			o->oldest_ns = mono_ns();
		o->q[(o->head + o->len++) % OTLP_QUEUE_CAP] = s;
		if (o->len == OTLP_BATCH || o->len == 1)
			pthread_cond_signal(&o->cond);
	}
	pthread_mutex_unlock(&o->lock);
}

static void stop(struct otlp_sink *o, uint64_t flush_ns)
{
	if (!o->started || o->joined)
		return;
	pthread_mutex_lock(&o->lock);
	o->stopping = 1;
	o->deadline_ns = mono_ns() + flush_ns;
	pthread_cond_broadcast(&o->cond);
	pthread_mutex_unlock(&o->lock);
	pthread_join(o->thread, NULL);
	o->joined = 1;
}

static int sink_finish(void *ctx, const struct report_counter *c, int n)
{
	stop(ctx, OTLP_FLUSH_MS * 1000000ull);
	return 0;
}

static int sink_stats(void *ctx, struct report_counter *c, int cap)
{
	struct otlp_sink *o = ctx;
	int n = 0;

	if (cap < 5)
		return 0;
	pthread_mutex_lock(&o->lock);
	c[n++] = (struct report_counter){ "otlp_requests_exported", o->exported };
	c[n++] = (struct report_counter){ "otlp_requests_dropped_queue_full", o->dropped_full };
	c[n++] = (struct report_counter){ "otlp_requests_dropped_send_failed", o->dropped_send };
	c[n++] = (struct report_counter){ "otlp_requests_dropped_at_exit", o->dropped_exit };
	c[n++] = (struct report_counter){ "otlp_posts_retried", o->retried };
	pthread_mutex_unlock(&o->lock);
	return n;
}

static void sink_destroy(void *ctx)
{
	struct otlp_sink *o = ctx;

	stop(o, 0);
	if (o->curl)
		curl_easy_cleanup(o->curl);
	curl_slist_free_all(o->hdrs);
	pthread_cond_destroy(&o->cond);
	pthread_mutex_destroy(&o->lock);
	free(o->q);
	free(o->url);
	free(o);
}

static uint64_t random_seed(void)
{
	uint64_t seed = 0;
	int fd = open("/dev/urandom", O_RDONLY | O_CLOEXEC);

	if (fd < 0 || read(fd, &seed, sizeof(seed)) != sizeof(seed))
		seed = mono_ns() ^ ((uint64_t)getpid() << 32);
	if (fd >= 0)
		close(fd);
	return seed;
}

int otlp_sink__new(const char *url, struct ttf_sink *out)
{
	pthread_condattr_t ca;
	struct otlp_sink *o;
	int err;

	if (!url || (strncmp(url, "http://", 7) && strncmp(url, "https://", 8)))
		return -EINVAL;
	if (curl_global_init(CURL_GLOBAL_DEFAULT))
		return -ENOMEM;
	o = calloc(1, sizeof(*o));
	if (!o)
		return -ENOMEM;
	pthread_mutex_init(&o->lock, NULL);
	pthread_condattr_init(&ca);
	pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
	pthread_cond_init(&o->cond, &ca);
	pthread_condattr_destroy(&ca);
	o->url = strdup(url);
	o->q = malloc(OTLP_QUEUE_CAP * sizeof(*o->q));
	o->curl = curl_easy_init();
	o->hdrs = curl_slist_append(NULL, "Content-Type: application/json");
	if (!o->url || !o->q || !o->curl || !o->hdrs) {
		err = -ENOMEM;
		goto cleanup;
	}
	if (gethostname(o->host, sizeof(o->host) - 1))
		o->host[0] = '\0';
	o->seed = random_seed();
	o->offset_ns = otlp__clock_offset_ns();
	curl_easy_setopt(o->curl, CURLOPT_URL, o->url);
	curl_easy_setopt(o->curl, CURLOPT_HTTPHEADER, o->hdrs);
	curl_easy_setopt(o->curl, CURLOPT_NOSIGNAL, 1L);
	curl_easy_setopt(o->curl, CURLOPT_WRITEFUNCTION, discard);
	err = -pthread_create(&o->thread, NULL, sender, o);
	if (err)
		goto cleanup;
	o->started = 1;
	*out = (struct ttf_sink){
		.name = "otlp", .ctx = o, .request = sink_request, .finish = sink_finish,
		.stats = sink_stats, .destroy = sink_destroy,
	};
	return 0;
cleanup:
	sink_destroy(o);
	return err;
}
