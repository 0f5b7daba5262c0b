/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * OTLP export (`--otlp URL`, or the OTEL_EXPORTER_OTLP_* variables:
 * otlp_config.h): one trace per finished request and three GenAI histograms
 * (otlp_metrics.h), over OTLP/HTTP as protobuf (default) or JSON
 * (https://opentelemetry.io/docs/specs/otlp/), optionally gzip'ed, with
 * libcurl from a sender thread. docs/otel.md lists the conventions used.
 *
 * Spans of one request (traceId 16 bytes, spanId 8 bytes):
 *   "METHOD ROUTE" kind SERVER (ROUTE: the API path matched, otlp__route;
 *                  just "METHOD" for any other path), first request byte
 *                  arrives -> last response byte leaves (or the last moment
 *                  seen: abort, last token). A valid traceparent header
 *                  (user/proto/traceparent.h) makes it a child of the
 *                  caller's span in the caller's trace (flags: its
 *                  trace-flags, remote parent), and its tracestate is
 *                  every span's trace_state; status ERROR for 5xx, an
 *                  error in the stream, an abort;
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
 * (otlp__clock_offset_ns), Unix ns.
 *
 * Attributes follow the OpenTelemetry semantic conventions v1.37.0 where a
 * name exists (GenAI conventions are of "Development" stability there):
 *   gen_ai.operation.name "chat" | "text_completion" (otlp__operation);
 *   gen_ai.provider.name (otlp__provider; left out when unknown);
 *   gen_ai.request.model (when the body named one); gen_ai.usage.output_tokens;
 *   gen_ai.usage.input_tokens (only when the server's usage report said);
 *   http.request.method, http.route, url.path, url.scheme "http",
 *   http.response.status_code, server.address, server.port, error.type
 *   (otlp__error_type: failed requests).
 * ttftrace's own under ttftrace.*: request.id, flags[] (the names NDJSON prints,
 * from user/model/vocab.h: stream, nonstream, buffered, aborted, incomplete,
 * trunc, unknown, error, usage, write-end, nagle), attribution,
 * inferred_by, merged, grade, itl.cv, outliers, tail_causes[], ttft_end,
 * ttft, tpot, e2e (s), prefill.steps, token_events. TTFT and TPOT are also
 * the metrics gen_ai.server.time_to_first_token / time_per_output_token.
 * Resource (one per server process): service.name (OTEL_SERVICE_NAME, else
 * service.name of OTEL_RESOURCE_ATTRIBUTES, else the process's comm),
 * telemetry.sdk.name "ttftrace", .language "c", .version, host.name,
 * process.pid, process.executable.name, then OTEL_RESOURCE_ATTRIBUTES'
 * other keys. Stage children carry ttftrace.stage.
 */
#ifndef TTFTRACE_OTLP_H
#define TTFTRACE_OTLP_H

#include <stdint.h>
#include "user/export/otlp/otlp_config.h"
#include "user/export/otlp/otlp_enc.h"
#include "user/export/sink.h"
#include "user/lib/version.h"
#include "user/proto/traceparent.h"

#define OTLP_SEMCONV_VERSION "1.37.0"
#define OTLP_MAX_CAUSES 4
#define OTLP_MAX_HOPS 4		/* processes a request crossed (3 at most today); more: no span */
#define OTLP_MAX_HOP_STAGES 5	/* a process hop's stages (4 at most today: a gateway's) */

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
	uint8_t addr_family;	/* 2 IPv4, 10 IPv6, 0 unknown */
	uint8_t server_addr[16];	/* the server's own (local) address, network order */
	uint16_t peer_port;	/* the client's end of the connection (its peer) */
	uint8_t peer_addr[16];
	struct ttf_trace_parent parent;	/* the request's traceparent, when valid */
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
	/*
	 * Its hops (user/model/hops/view.h): through a gateway, or a message hop
	 * to an engine. One child span per process hop, in that process's
	 * resource: [0] the request's own process (gateway, frontend) over the
	 * TTFT, a child of the request span; the others children of [0].
	 */
	int have_hops;
	int n_hops;		/* 0 with have_hops: [0] gateway, [1] upstream */
	int hop_kind;		/* enum ttf_hop_view_kind; 0: a gateway's */
	struct otlp_hop {
		const char *hop;	/* "gateway", "upstream", "engine", ...: a static name */
		uint32_t tgid;		/* 0: the upstream's process was not traced */
		char comm[16];
		uint64_t start_ns, end_ns;
		int n_stages;		/* its stages, as span attributes ttftrace.hop.stage.STAGE */
		struct { const char *name; int64_t ns; } stages[OTLP_MAX_HOP_STAGES];
	} hops[OTLP_MAX_HOPS];
	int hop_exact;		/* the client request - upstream call join */
	int hop_buffering;
	int64_t hop_held_ns;
	uint16_t hop_upstream_port;
	struct ttf_conn_addr hop_up_addr;	/* the upstream call's connection, the gateway's view */
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
/* The same ids as bytes (either may be NULL). */
void otlp__ids_bin(uint64_t seed, uint64_t req_id, int idx, uint8_t trace[16], uint8_t span[8]);

/* The route a span is named by: the request's path when it is an API path ttftrace knows, else NULL. */
const char *otlp__route(const char *path);
/*
 * gen_ai.provider.name of a server process: the configuration's (cfg may be
 * NULL), else the engine its comm names (llama-server: "llama.cpp", ollama,
 * vllm, sglang, text-generation*: "tgi"), else NULL (left out).
 */
const char *otlp__provider(const struct otlp_config *cfg, const char *comm);
/* gen_ai.operation.name of an API, NULL for none. */
const char *otlp__operation(enum ttf_api api);
/*
 * error.type of a failed request into buf: the HTTP status ("404", "503")
 * for >= 400, else "aborted" (the client closed first) or "stream_error" (an
 * error event in a 2xx stream). Returns NULL for a successful one.
 */
const char *otlp__error_type(const struct otlp_span_src *s, char *buf, size_t len);
/* server.address: the local address as text, "" when unknown. */
void otlp__server_address(const struct otlp_span_src *s, char *buf, size_t len);
/* An address of family (2 IPv4, 10 IPv6; network order) as text, "" for another family. */
void otlp__addr_str(uint8_t family, const uint8_t addr[16], char *buf, size_t len);

/*
 * A Resource message (field `field`) of process tgid/comm: service.name,
 * telemetry.sdk.*, host.name (host may be NULL), process.*, the
 * configuration's resource attributes (cfg may be NULL).
 */
void otlp__resource(struct otlp_enc *e, uint32_t field, uint32_t tgid, const char *comm,
		    const char *host, const struct otlp_config *cfg);

/* CLOCK_REALTIME - CLOCK_MONOTONIC in ns, from the tightest of a few brackets. */
int64_t otlp__clock_offset_ns(void);

/*
 * The body of one ExportTraceServiceRequest for n requests (n >= 1) in
 * encoding proto: *out malloc'ed, *len bytes. host and cfg may be NULL.
 * Returns 0 or -ENOMEM.
 */
int otlp__build_traces(enum otlp_proto proto, const struct otlp_span_src *s, int n,
		       const char *host, const struct otlp_config *cfg, uint64_t seed,
		       int64_t mono_to_unix_ns, char **out, size_t *len);
/* The JSON body (a NUL-terminated string), NULL with errno = ENOMEM. */
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
 * otlp_requests_exported, otlp_requests_sampled_out (the sampler said no:
 * otlp_sampler.h; their metrics still count), otlp_requests_dropped_queue_full,
 * otlp_requests_dropped_send_failed, otlp_requests_dropped_at_exit,
 * otlp_posts_retried; metrics (when on, every cfg->interval_ms and once
 * more at the end): otlp_metric_exports, otlp_metric_exports_failed,
 * otlp_metric_series_overflow (otlp_metrics.h). Returns 0, -EINVAL (no
 * signal on) or -ENOMEM.
 * On stderr: one start-up line per signal (URL, protocol, sampler), and
 * while posts fail a warning at most every OTLP_WARN_EVERY_NS with what
 * was lost since the last one, and a last one at exit if anything is left
 * unsaid.
 */
#define OTLP_QUEUE_CAP 2048
#define OTLP_WARN_EVERY_NS 10000000000ull	/* failure lines on stderr: at most one per 10 s */
#define OTLP_USER_AGENT "ttftrace/" TTF_VERSION
#define OTLP_BATCH 256
#define OTLP_BATCH_WAIT_MS 1000
#define OTLP_MAX_TRIES 5
#define OTLP_FLUSH_MS 3000
int otlp_sink__new(const struct otlp_config *cfg, struct ttf_sink *out);

#endif /* TTFTRACE_OTLP_H */
