/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * OTLP export (`--otlp URL`): one trace per finished request, sent as
 * OTLP/HTTP JSON (the protobuf JSON mapping of ExportTraceServiceRequest,
 * https://opentelemetry.io/docs/specs/otlp/#json-protobuf-encoding) with
 * libcurl from a sender thread.
 *
 * Spans of one request (traceId 16 bytes, spanId 8 bytes, lower-case hex):
 *   "METHOD PATH"  kind SERVER, first request byte arrives -> last response
 *                  byte leaves (or the last moment seen: abort, last token);
 *   one INTERNAL child per TTFT stage (user/model/attrib.h), named "ttft.STAGE",
 *   laid out back to back from the parent's start in stage order, so that the
 *   children cover exactly [start, start + TTFT]. copy (host<->device copies
 *   that happen inside prefill) is placed right after prefill; tokenize is a
 *   child of frontend at its start;
 *   one INTERNAL child "prefill.step" per engine step of the prefill (up to
 *   TTF_MAX_STEP_SPANS), at the step's own times, with thread.id,
 *   ttftrace.step.index, ttftrace.step.tokens and, when a CUPTI collector
 *   reports, ttftrace.gpu.{compute,copy,host_gap} (s), .kernels, .copies.
 * Times: CLOCK_MONOTONIC + an offset to CLOCK_REALTIME measured once at start
 * (otlp__clock_offset_ns), as decimal strings of Unix ns.
 *
 * Attributes follow the OpenTelemetry semantic conventions v1.37.0 where a
 * name exists (GenAI conventions are of "Development" stability there):
 *   gen_ai.operation.name "chat" | "text_completion"; gen_ai.request.model (when
 *   the body named one); gen_ai.usage.output_tokens;
 *   gen_ai.usage.input_tokens (only when the server's usage report said);
 *   gen_ai.server.time_to_first_token, gen_ai.server.time_per_output_token
 *   (seconds; semconv names these metrics, we put the request's value on its span);
 *   http.request.method, url.path, http.response.status_code, server.port.
 * ttftrace's own under ttftrace.*: request.id, flags[] (the names NDJSON prints,
 * from user/model/vocab.h: stream, nonstream, buffered, aborted, incomplete,
 * trunc, unknown, error, usage, write-end, nagle), attribution,
 * inferred_by, merged, grade, itl.cv, outliers, tail_causes[], ttft_end,
 * e2e (s), prefill.steps, token_events. Resource: service.name "ttftrace",
 * host.name, process.pid and process.executable.name of the traced server
 * (one resourceSpans per server process). Stage children carry ttftrace.stage.
 */
#ifndef TTFTRACE_OTLP_H
#define TTFTRACE_OTLP_H

#include <stdint.h>
#include "user/export/sink.h"

#define OTLP_SEMCONV_VERSION "1.37.0"
#define OTLP_MAX_CAUSES 4

/* What one request's spans need, copied out of the request (which is freed after the hook). */
struct otlp_span_src {
	uint64_t req_id;
	uint32_t tgid;
	char comm[16];
	char method[8];
	char path[96];
	char model[64];		/* the request body's "model"; "" unknown */
	int status;		/* 0 unknown */
	enum ttf_api api;
	uint16_t server_port;
	uint32_t flags;		/* enum ttf_req_flags */
	uint32_t vflags;	/* printed flags, TTF_VF_BIT() mask (user/model/vocab.h) */
	uint64_t start_ns;	/* CLOCK_MONOTONIC */
	uint64_t end_ns;	/* >= start_ns */
	int64_t ttft_ns;	/* -1 none */
	int64_t e2e_ns;		/* -1 none */
	double tpot_ns;		/* -1 none */
	double itl_cv;		/* -1 none */
	char grade;
	int ttft_end_is_xmit;
	int tokens_from_usage;
	uint32_t n_tokens, n_events, n_outliers;
	uint32_t prompt_tokens;	/* 0 unknown */
	int have_stages;
	int64_t stage_ns[TTF_ST__ALL];	/* -1 absent */
	enum ttf_attrib_kind kind;
	char inferred_by[96];
	char merged[64];
	uint32_t prefill_steps;
	uint32_t n_causes;
	char causes[OTLP_MAX_CAUSES][80];	/* "itl #3 41.2 ms: prefill of request 12" */
	uint32_t n_steps;
	struct ttf_step_span steps[TTF_MAX_STEP_SPANS];
	/* through a gateway (user/model/hops.h): one child span per hop */
	int have_hops;
	struct otlp_hop {
		uint32_t tgid;		/* 0: the upstream's process was not traced */
		char comm[16];
		uint64_t start_ns, end_ns;
	} hops[2];		/* [0] the gateway (the request span's own process), [1] the upstream */
	int hop_exact;		/* the client request - upstream call join */
	int hop_buffering;
	int64_t hop_held_ns;
	uint16_t hop_upstream_port;
};

/* Copy what the spans need (a may be NULL). */
void otlp_span_src__fill(struct otlp_span_src *s, const struct ttf_request *r,
			 const struct ttf_req_metrics *m, const struct ttf_attrib *a);

/*
 * Ids of request req_id: trace_hex (32 hex digits + NUL) and the span id of
 * span idx (0 = the request's span, 1.. its children; 16 hex digits + NUL),
 * derived from seed (random per run) so that runs do not collide. Never 0.
 */
void otlp__ids(uint64_t seed, uint64_t req_id, int idx, char trace_hex[33], char span_hex[17]);

/* CLOCK_REALTIME - CLOCK_MONOTONIC in ns, from the tightest of a few brackets. */
int64_t otlp__clock_offset_ns(void);

/*
 * The JSON body of one export request for n requests (n >= 1). host may be
 * NULL (no host.name). Returns a malloc'ed string, NULL with errno = ENOMEM.
 */
char *otlp__build_json(const struct otlp_span_src *s, int n, const char *host, uint64_t seed,
		       int64_t mono_to_unix_ns);

/*
 * A sink that queues one entry per finished request (at most OTLP_QUEUE_CAP;
 * more are dropped and counted) and posts batches of up to OTLP_BATCH
 * requests, or whatever waited OTLP_BATCH_WAIT_MS, from its own thread.
 * A failed post (transport error, 408, 429, 5xx) is retried up to
 * OTLP_MAX_TRIES times with exponential backoff from 100 ms (Retry-After in
 * seconds is honoured, up to 5 s), then dropped and counted; another 4xx is
 * dropped at once. At the end, what is queued is sent for at most
 * OTLP_FLUSH_MS, the rest dropped and counted. Counters (sink stats hook):
 * otlp_requests_exported, otlp_requests_dropped_queue_full,
 * otlp_requests_dropped_send_failed, otlp_requests_dropped_at_exit,
 * otlp_posts_retried. Returns 0, -EINVAL (not an http(s) URL) or -ENOMEM.
 */
#define OTLP_QUEUE_CAP 2048
#define OTLP_BATCH 256
#define OTLP_BATCH_WAIT_MS 1000
#define OTLP_MAX_TRIES 5
#define OTLP_FLUSH_MS 3000
int otlp_sink__new(const char *url, struct ttf_sink *out);

#endif /* TTFTRACE_OTLP_H */
