// SPDX-License-Identifier: GPL-2.0-only
/* OTLP spans of finished requests, and the resource they come from (otlp.h). */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include "user/lib/hash.h"
#include "user/model/hops/view.h"
#include "user/model/vocab.h"
#include "user/lib/version.h"
#include "user/export/otlp/otlp.h"

#define SPAN_KIND_INTERNAL 1
#define SPAN_KIND_SERVER 2
#define SPAN_KIND_CLIENT 3
#define SPAN_KIND_CONSUMER 5
#define STATUS_CODE_ERROR 2
/* Span.flags (trace.proto SpanFlags): W3C trace-flags in bits 0-7, then these */
#define SPAN_FLAGS_HAS_IS_REMOTE 0x100
#define SPAN_FLAGS_IS_REMOTE 0x200

/* Field numbers of opentelemetry-proto's trace.proto / common.proto */
enum {
	F_REQ_RESOURCE_SPANS = 1,		/* ExportTraceServiceRequest */
	F_RS_RESOURCE = 1, F_RS_SCOPE_SPANS = 2, F_RS_SCHEMA_URL = 3,	/* ResourceSpans */
	F_SS_SCOPE = 1, F_SS_SPANS = 2, F_SS_SCHEMA_URL = 3,		/* ScopeSpans */
	F_SCOPE_NAME = 1, F_SCOPE_VERSION = 2,				/* InstrumentationScope */
	F_RES_ATTRIBUTES = 1,						/* Resource */
	F_SPAN_TRACE_ID = 1, F_SPAN_SPAN_ID = 2, F_SPAN_TRACE_STATE = 3,
	F_SPAN_PARENT_SPAN_ID = 4, F_SPAN_NAME = 5,
	F_SPAN_KIND = 6, F_SPAN_START = 7, F_SPAN_END = 8, F_SPAN_ATTRIBUTES = 9,
	F_SPAN_STATUS = 15, F_SPAN_FLAGS = 16,				/* Span */
	F_STATUS_MESSAGE = 2, F_STATUS_CODE = 3,			/* Status */
};

/* The hops of a (user/model/hops/view.h): one per process, the first over the TTFT. */
static void fill_hops(struct otlp_span_src *s, const struct ttf_attrib *a)
{
	struct ttf_hop_view v;

	if (!ttf_hop_view__build(a, s->start_ns, &v) || !v.n_procs)
		return;
	s->have_hops = 1;
	s->hop_kind = v.kind;
	for (int i = 0; i < v.n_procs && i < OTLP_MAX_HOPS; i++) {
		struct otlp_hop *h = &s->hops[s->n_hops++];

		h->hop = v.procs[i].hop;
		h->tgid = v.procs[i].tgid;
		memcpy(h->comm, v.procs[i].comm, sizeof(h->comm) - 1);
		h->start_ns = v.procs[i].start_ns;
		h->end_ns = v.procs[i].end_ns;
		for (int k = 0; k < v.n_stages && h->n_stages < OTLP_MAX_HOP_STAGES; k++)
			if (v.stages[k].proc == i) {
				h->stages[h->n_stages].name = v.stages[k].name;
				h->stages[h->n_stages++].ns = v.stages[k].ns;
			}
	}
	/* the client-facing process holds the whole TTFT */
	s->hops[0].start_ns = s->start_ns;
	s->hops[0].end_ns = s->start_ns + (s->ttft_ns > 0 ? s->ttft_ns : 0);
	if (a->hops) {
		s->hop_exact = a->hops->exact;
		s->hop_buffering = a->hops->buffering;
		s->hop_held_ns = a->hops->held_ns;
		s->hop_upstream_port = a->hops->up_port;
		s->hop_up_addr = a->hops->up_addr;
	} else {
		s->hop_exact = 1;	/* a message hop: joined by its request id */
	}
}

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
	s->addr_family = r->addr.family;
	memcpy(s->server_addr, r->addr.laddr, sizeof(s->server_addr));
	s->peer_port = r->addr.rport;
	memcpy(s->peer_addr, r->addr.raddr, sizeof(s->peer_addr));
	s->parent = r->traceparent;
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
	fill_hops(s, a);
}

static void put_be64(uint8_t *p, uint64_t v)
{
	for (int i = 0; i < 8; i++)
		p[i] = (uint8_t)(v >> (56 - 8 * i));
}

void otlp__ids_bin(uint64_t seed, uint64_t req_id, int idx, uint8_t trace[16], uint8_t span[8])
{
	/* splitmix64 spreads sequential ids over the whole id space */
	uint64_t hi = ttf_mix64(seed), lo = ttf_mix64(seed ^ ttf_mix64(req_id)), sp;

	if (trace) {
		put_be64(trace, hi);
		put_be64(trace + 8, lo ? lo : 1);
	}
	sp = ttf_mix64(lo ^ ((uint64_t)idx << 56 | (uint64_t)idx));
	if (span)
		put_be64(span, sp ? sp : 1);
}

static void to_hex(const uint8_t *b, int n, char *out)
{
	for (int i = 0; i < n; i++)
		snprintf(out + 2 * i, 3, "%02x", b[i]);
}

void otlp__ids(uint64_t seed, uint64_t req_id, int idx, char trace_hex[33], char span_hex[17])
{
	uint8_t t[16], s[8];

	otlp__ids_bin(seed, req_id, idx, t, s);
	if (trace_hex)
		to_hex(t, 16, trace_hex);
	if (span_hex)
		to_hex(s, 8, span_hex);
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

/* ---- encoding ---- */

#define ATTR_STR(e, k, v) otlp_enc__attr_str(e, F_SPAN_ATTRIBUTES, k, v)
#define ATTR_INT(e, k, v) otlp_enc__attr_int(e, F_SPAN_ATTRIBUTES, k, v)
#define ATTR_DBL(e, k, v) otlp_enc__attr_double(e, F_SPAN_ATTRIBUTES, k, v)

/*
 * The connection as this host's socket has it (docs/otel.md O4):
 * network.transport, network.type, network.local.address/port,
 * network.peer.address/port. Nothing for a unix socket or an unknown family.
 */
static void conn_attrs(struct otlp_enc *e, uint8_t family, const uint8_t laddr[16],
		       uint16_t lport, const uint8_t raddr[16], uint16_t rport)
{
	char addr[64];

	if (family != 2 && family != 10)
		return;
	ATTR_STR(e, "network.transport", "tcp");
	ATTR_STR(e, "network.type", family == 2 ? "ipv4" : "ipv6");
	otlp__addr_str(family, laddr, addr, sizeof(addr));
	ATTR_STR(e, "network.local.address", addr);
	ATTR_INT(e, "network.local.port", lport);
	otlp__addr_str(family, raddr, addr, sizeof(addr));
	ATTR_STR(e, "network.peer.address", addr);
	ATTR_INT(e, "network.peer.port", rport);
}

static void begin_span(struct otlp_enc *e, const struct otlp_span_src *s, uint64_t seed,
		       int idx, int parent_idx, const char *name, int kind, uint64_t start,
		       uint64_t end, int64_t off)
{
	uint8_t trace[16], span[8], parent[8];

	otlp__ids_bin(seed, s->req_id, idx, trace, span);
	if (s->parent.valid)
		memcpy(trace, s->parent.trace_id, sizeof(trace));
	otlp_enc__begin(e, F_SS_SPANS, "spans", true);
	otlp_enc__id(e, F_SPAN_TRACE_ID, "traceId", trace, 16);
	otlp_enc__id(e, F_SPAN_SPAN_ID, "spanId", span, 8);
	/* the caller's tracestate, on each span of its trace (W3C: only with a valid traceparent) */
	if (s->parent.valid && s->parent.state[0])
		otlp_enc__str(e, F_SPAN_TRACE_STATE, "traceState", s->parent.state);
	if (parent_idx >= 0) {
		otlp__ids_bin(seed, s->req_id, parent_idx, NULL, parent);
		otlp_enc__id(e, F_SPAN_PARENT_SPAN_ID, "parentSpanId", parent, 8);
	} else if (s->parent.valid) {
		otlp_enc__id(e, F_SPAN_PARENT_SPAN_ID, "parentSpanId", s->parent.span_id, 8);
		otlp_enc__fixed32(e, F_SPAN_FLAGS, "flags", s->parent.flags |
				  SPAN_FLAGS_HAS_IS_REMOTE | SPAN_FLAGS_IS_REMOTE);
	}
	otlp_enc__str(e, F_SPAN_NAME, "name", name);
	otlp_enc__uint(e, F_SPAN_KIND, "kind", kind);
	otlp_enc__fixed64(e, F_SPAN_START, "startTimeUnixNano", (uint64_t)((int64_t)start + off));
	otlp_enc__fixed64(e, F_SPAN_END, "endTimeUnixNano", (uint64_t)((int64_t)end + off));
}

static void request_attrs(struct otlp_enc *e, const struct otlp_span_src *s,
			  const struct otlp_config *cfg)
{
	const char *flags[TTF_VF__MAX], *causes[OTLP_MAX_CAUSES];
	int nf = ttf_vocab__flag_names(s->vflags, flags, TTF_VF__MAX);
	const char *op = otlp__operation(s->api), *route = otlp__route(s->path), *et;
	const char *provider = otlp__provider(cfg, s->comm);
	char addr[64], ebuf[16];

	if (op)
		ATTR_STR(e, "gen_ai.operation.name", op);
	if (op && provider)
		ATTR_STR(e, "gen_ai.provider.name", provider);
	if (s->model[0])
		ATTR_STR(e, "gen_ai.request.model", s->model);
	ATTR_INT(e, "gen_ai.usage.output_tokens", s->n_tokens);
	if (s->prompt_tokens)
		ATTR_INT(e, "gen_ai.usage.input_tokens", s->prompt_tokens);
	ATTR_STR(e, "http.request.method", s->method[0] ? s->method : "_OTHER");
	if (route)
		ATTR_STR(e, "http.route", route);
	ATTR_STR(e, "url.path", s->path);
	ATTR_STR(e, "url.scheme", "http");
	if (s->status)
		ATTR_INT(e, "http.response.status_code", s->status);
	otlp__server_address(s, addr, sizeof(addr));
	if (addr[0])
		ATTR_STR(e, "server.address", addr);
	ATTR_INT(e, "server.port", s->server_port);
	/* no proxy headers are read: the client is the connection's peer */
	otlp__addr_str(s->addr_family, s->peer_addr, addr, sizeof(addr));
	if (addr[0]) {
		ATTR_STR(e, "client.address", addr);
		ATTR_INT(e, "client.port", s->peer_port);
	}
	conn_attrs(e, s->addr_family, s->server_addr, s->server_port, s->peer_addr,
		   s->peer_port);
	et = otlp__error_type(s, ebuf, sizeof(ebuf));
	if (et)
		ATTR_STR(e, "error.type", et);
	ATTR_INT(e, "ttftrace.request.id", (int64_t)s->req_id);
	otlp_enc__attr_strs(e, F_SPAN_ATTRIBUTES, "ttftrace.flags", flags, nf);
	ATTR_INT(e, "ttftrace.token_events", s->n_events);
	ATTR_STR(e, "ttftrace.tokens.source", ttf_token_source_name(s->tokens_from_usage));
	if (s->ttft_ns >= 0) {
		ATTR_DBL(e, "ttftrace.ttft", s->ttft_ns / 1e9);
		ATTR_STR(e, "ttftrace.ttft_end", ttf_ttft_end_name(s->ttft_end_is_xmit));
	}
	if (s->tpot_ns >= 0)
		ATTR_DBL(e, "ttftrace.tpot", s->tpot_ns / 1e9);
	if (s->e2e_ns >= 0)
		ATTR_DBL(e, "ttftrace.e2e", s->e2e_ns / 1e9);
	if (s->itl_cv >= 0)
		ATTR_DBL(e, "ttftrace.itl.cv", s->itl_cv);
	if (s->grade != '-' && s->grade)
		ATTR_STR(e, "ttftrace.grade", ((char[]){ s->grade, 0 }));
	ATTR_INT(e, "ttftrace.outliers", s->n_outliers);
	for (uint32_t i = 0; i < s->n_causes; i++)
		causes[i] = s->causes[i];
	if (s->n_causes)
		otlp_enc__attr_strs(e, F_SPAN_ATTRIBUTES, "ttftrace.tail_causes", causes,
				    s->n_causes);
	if (!s->have_stages)
		return;
	ATTR_STR(e, "ttftrace.attribution", ttf_attrib_kind_name(s->kind));
	if (s->inferred_by[0])
		ATTR_STR(e, "ttftrace.inferred_by", s->inferred_by);
	if (s->merged[0])
		ATTR_STR(e, "ttftrace.merged", s->merged);
	ATTR_INT(e, "ttftrace.prefill.steps", s->prefill_steps);
}

static void stage_span(struct otlp_enc *e, const struct otlp_span_src *s, uint64_t seed,
		       int64_t off, enum ttf_stage st, int parent_idx, uint64_t start)
{
	char name[32];

	snprintf(name, sizeof(name), "ttft.%s", ttf_stage_name(st));
	begin_span(e, s, seed, 1 + st, parent_idx, name, SPAN_KIND_INTERNAL, start,
		   start + s->stage_ns[st], off);
	ATTR_STR(e, "ttftrace.stage", ttf_stage_name(st));
	otlp_enc__end(e);
}

/* Engine steps of the prefill, children of the request span at their own times. */
static void step_spans(struct otlp_enc *e, const struct otlp_span_src *s, uint64_t seed,
		       int64_t off)
{
	for (uint32_t i = 0; i < s->n_steps; i++) {
		const struct ttf_step_span *st = &s->steps[i];

		begin_span(e, s, seed, 1 + TTF_ST__ALL + (int)i, 0, "prefill.step",
			   SPAN_KIND_INTERNAL, st->start_ns,
			   st->end_ns > st->start_ns ? st->end_ns : st->start_ns, off);
		ATTR_INT(e, "thread.id", st->tid);
		ATTR_INT(e, "ttftrace.step.index", i + 1);
		if (st->n_tokens >= 0)
			ATTR_INT(e, "ttftrace.step.tokens", st->n_tokens);
		if (st->have_gpu) {
			ATTR_DBL(e, "ttftrace.gpu.compute", st->compute_ns / 1e9);
			ATTR_DBL(e, "ttftrace.gpu.copy", st->copy_ns / 1e9);
			ATTR_DBL(e, "ttftrace.gpu.host_gap", st->host_gap_ns / 1e9);
			ATTR_INT(e, "ttftrace.gpu.kernels", st->kernels);
			ATTR_INT(e, "ttftrace.gpu.copies", st->copies);
		}
		otlp_enc__end(e);
	}
}

/* Hops of s as the spans read them: a source without n_hops is a gateway's two. */
static int n_hops(const struct otlp_span_src *s)
{
	return !s->have_hops ? 0 : s->n_hops ? s->n_hops : 2;
}

static const char *hop_name(const struct otlp_span_src *s, int i)
{
	return s->hops[i].hop ? s->hops[i].hop : i ? "upstream" : "gateway";
}

/* The process whose resource holds hop i's span. */
static uint32_t hop_tgid(const struct otlp_span_src *s, int i)
{
	return i && s->hops[i].tgid ? s->hops[i].tgid : s->tgid;
}

/*
 * Hop i's span "hop.NAME": [0] the request's own process (a gateway, a
 * frontend) over the TTFT, a child of the request span; the others children
 * of it, each from its process's first stage to its last (a gateway's
 * upstream call is a CLIENT span, an engine reached by a message a CONSUMER
 * one), with the process and its stages (seconds) as attributes.
 */
static void hop_span(struct otlp_enc *e, const struct otlp_span_src *s, int i, uint64_t seed,
		     int64_t off)
{
	const struct otlp_hop *h = &s->hops[i];
	int base = 1 + TTF_ST__ALL + TTF_MAX_STEP_SPANS, kind = SPAN_KIND_INTERNAL;
	char name[48];

	if (i)
		kind = s->hop_kind == TTF_HOPV_MSG ? SPAN_KIND_CONSUMER : SPAN_KIND_CLIENT;
	snprintf(name, sizeof(name), "hop.%s", hop_name(s, i));
	begin_span(e, s, seed, base + i, i ? base : 0, name, kind, h->start_ns,
		   h->end_ns > h->start_ns ? h->end_ns : h->start_ns, off);
	ATTR_STR(e, "ttftrace.hop", hop_name(s, i));
	if (h->tgid) {
		ATTR_INT(e, "process.pid", h->tgid);
		if (h->comm[0])
			ATTR_STR(e, "process.executable.name", h->comm);
	}
	for (int k = 0; k < h->n_stages; k++) {
		snprintf(name, sizeof(name), "ttftrace.hop.stage.%s", h->stages[k].name);
		ATTR_DBL(e, name, h->stages[k].ns / 1e9);
	}
	if (i == 0) {
		ATTR_STR(e, "ttftrace.hop.join", s->hop_exact ? "exact" : "inferred");
		if (s->hop_kind != TTF_HOPV_MSG) {
			ATTR_STR(e, "ttftrace.hop.buffering", s->hop_buffering ? "true" : "false");
			ATTR_DBL(e, "ttftrace.hop.held", s->hop_held_ns / 1e9);
		}
	} else if (s->hop_kind != TTF_HOPV_MSG && !strcmp(hop_name(s, i), "upstream")) {
		const struct ttf_conn_addr *a = &s->hop_up_addr;
		char addr[64];

		otlp__addr_str(a->family, a->raddr, addr, sizeof(addr));
		if (addr[0])
			ATTR_STR(e, "server.address", addr);
		ATTR_INT(e, "server.port", s->hop_upstream_port);
		conn_attrs(e, a->family, a->laddr, a->lport, a->raddr, a->rport);
	}
	otlp_enc__end(e);
}

/* The hop spans of s that live in process tgid's resource. */
static void hop_spans(struct otlp_enc *e, const struct otlp_span_src *s, uint32_t tgid,
		      uint64_t seed, int64_t off)
{
	for (int i = 0; i < n_hops(s); i++)
		if (hop_tgid(s, i) == tgid)
			hop_span(e, s, i, seed, off);
}

/*
 * Status ERROR (trace.proto Status, STATUS_CODE_ERROR) for a server error
 * (5xx), an error event inside a 2xx stream, and a request the client
 * aborted; a 4xx is the client's error and leaves a server span UNSET
 * (HTTP span conventions). error.type says which.
 */
static const char *error_status(const struct otlp_span_src *s)
{
	if (s->status >= 500)
		return "HTTP server error";
	if (s->status >= 400)
		return NULL;
	if (s->flags & TTF_REQ_ERROR)
		return "error in the stream";
	if (s->flags & TTF_REQ_ABORTED)
		return "aborted before the response ended";
	return NULL;
}

static void request_spans(struct otlp_enc *e, const struct otlp_span_src *s, uint64_t seed,
			  int64_t off, const struct otlp_config *cfg)
{
	const char *err_msg = error_status(s);
	const char *method = s->method[0] ? s->method : "HTTP", *route = otlp__route(s->path);
	uint64_t cursor = s->start_ns;
	char name[64];

	/* HTTP semconv: "{method} {http.route}", "{method}" without a route */
	snprintf(name, sizeof(name), route ? "%s %s" : "%s", method, route);
	begin_span(e, s, seed, 0, -1, name, SPAN_KIND_SERVER, s->start_ns, s->end_ns, off);
	request_attrs(e, s, cfg);
	if (err_msg) {
		otlp_enc__begin(e, F_SPAN_STATUS, "status", false);
		otlp_enc__str(e, F_STATUS_MESSAGE, "message", err_msg);
		otlp_enc__uint(e, F_STATUS_CODE, "code", STATUS_CODE_ERROR);
		otlp_enc__end(e);
	}
	otlp_enc__end(e);
	if (!s->have_stages)
		return;
	/* time order (vocab.h); server (merged frontend..emit) takes their place */
	for (size_t i = 0; i < TTF_STAGE_ORDER_N; i++) {
		enum ttf_stage st = ttf_stage_time_order[i];

		/* tokenize is a child of frontend, at its start */
		if (st == TTF_ST_TOKENIZE || s->stage_ns[st] < 0)
			continue;
		stage_span(e, s, seed, off, st, 0, cursor);
		if (st == TTF_ST_FRONTEND && s->stage_ns[TTF_ST_TOKENIZE] >= 0)
			stage_span(e, s, seed, off, TTF_ST_TOKENIZE, 1 + TTF_ST_FRONTEND, cursor);
		cursor += s->stage_ns[st];
	}
	step_spans(e, s, seed, off);
}

void otlp__resource(struct otlp_enc *e, uint32_t field, uint32_t tgid, const char *comm,
		    const char *host, const struct otlp_config *cfg)
{
	static const char *const ours[] = {
		"service.name", "telemetry.sdk.name", "telemetry.sdk.language",
		"telemetry.sdk.version", "host.name", "process.pid", "process.executable.name",
	};
	const char *service = cfg && cfg->service_name[0] ? cfg->service_name :
			      comm && comm[0] ? comm : "unknown_service";

	otlp_enc__begin(e, field, "resource", false);
	otlp_enc__attr_str(e, F_RES_ATTRIBUTES, "service.name", service);
	otlp_enc__attr_str(e, F_RES_ATTRIBUTES, "telemetry.sdk.name", "ttftrace");
	otlp_enc__attr_str(e, F_RES_ATTRIBUTES, "telemetry.sdk.language", "c");
	otlp_enc__attr_str(e, F_RES_ATTRIBUTES, "telemetry.sdk.version", TTF_VERSION);
	if (host)
		otlp_enc__attr_str(e, F_RES_ATTRIBUTES, "host.name", host);
	if (tgid)
		otlp_enc__attr_int(e, F_RES_ATTRIBUTES, "process.pid", tgid);
	if (comm && comm[0])
		otlp_enc__attr_str(e, F_RES_ATTRIBUTES, "process.executable.name", comm);
	for (int i = 0; cfg && i < cfg->n_res_attrs; i++) {
		bool taken = false;

		for (size_t j = 0; j < sizeof(ours) / sizeof(ours[0]) && !taken; j++)
			taken = !strcmp(cfg->res_key[i], ours[j]);
		if (!taken)
			otlp_enc__attr_str(e, F_RES_ATTRIBUTES, cfg->res_key[i], cfg->res_val[i]);
	}
	otlp_enc__end(e);
}

/* Did a request before s[i] (or s[i] itself, before hop h) name process tgid? */
static int seen_before(const struct otlp_span_src *s, int i, int h, uint32_t tgid)
{
	for (int j = 0; j <= i; j++)
		for (int k = -1; k < (j < i ? n_hops(&s[j]) : h); k++)
			if ((k < 0 ? s[j].tgid : hop_tgid(&s[j], k)) == tgid)
				return 1;
	return 0;
}

/* Process tgid's resourceSpans: its requests' spans and the hop spans it ran. */
static void resource_spans(struct otlp_enc *e, const struct otlp_span_src *s, int n,
			   uint32_t tgid, const char *comm, const char *host,
			   const struct otlp_config *cfg, uint64_t seed, int64_t off)
{
	otlp_enc__begin(e, F_REQ_RESOURCE_SPANS, "resourceSpans", true);
	otlp__resource(e, F_RS_RESOURCE, tgid, comm, host, cfg);
	otlp_enc__begin(e, F_RS_SCOPE_SPANS, "scopeSpans", true);
	otlp_enc__begin(e, F_SS_SCOPE, "scope", false);
	otlp_enc__str(e, F_SCOPE_NAME, "name", "ttftrace");
	otlp_enc__str(e, F_SCOPE_VERSION, "version", TTF_VERSION);
	otlp_enc__end(e);
	for (int j = 0; j < n; j++) {
		if (s[j].tgid == tgid)
			request_spans(e, &s[j], seed, off, cfg);
		hop_spans(e, &s[j], tgid, seed, off);
	}
	otlp_enc__str(e, F_SS_SCHEMA_URL, "schemaUrl",
		      "https://opentelemetry.io/schemas/" OTLP_SEMCONV_VERSION);
	otlp_enc__end(e);
	otlp_enc__end(e);
}

int otlp__build_traces(enum otlp_proto proto, const struct otlp_span_src *s, int n,
		       const char *host, const struct otlp_config *cfg, uint64_t seed,
		       int64_t mono_to_unix_ns, char **out, size_t *len)
{
	struct otlp_enc *e = otlp_enc__new(proto);

	*out = NULL;
	*len = 0;
	if (!e)
		return -ENOMEM;
	/*
	 * One resourceSpans per process, in order of first appearance: a
	 * server's request spans, and the hop spans of the processes a request
	 * crossed, each in its own process's resource.
	 */
	for (int i = 0; i < n; i++)
		for (int h = -1; h < n_hops(&s[i]); h++) {
			uint32_t tgid = h < 0 ? s[i].tgid : hop_tgid(&s[i], h);
			const char *comm = h < 0 || !s[i].hops[h].comm[0] ? s[i].comm :
					   s[i].hops[h].comm;

			if (!seen_before(s, i, h, tgid))
				resource_spans(e, s, n, tgid, comm, host, cfg, seed, mono_to_unix_ns);
		}
	return otlp_enc__finish(e, out, len);
}

char *otlp__build_json(const struct otlp_span_src *s, int n, const char *host, uint64_t seed,
		       int64_t mono_to_unix_ns)
{
	char *out;
	size_t len;

	if (otlp__build_traces(OTLP_PROTO_JSON, s, n, host, NULL, seed, mono_to_unix_ns, &out,
			       &len)) {
		errno = ENOMEM;
		return NULL;
	}
	return out;
}
