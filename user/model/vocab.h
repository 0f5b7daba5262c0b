/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * The one vocabulary of the outputs: every name a request, its outcome or
 * its TTFT stages is printed under, in text, NDJSON, Prometheus, OTLP,
 * Perfetto and the HTML report. NDJSON is the reference (recordings replay
 * to byte-identical NDJSON), so the names are those NDJSON prints; README.md
 * "Definitions" documents them. An exporter takes names from here and never
 * spells one itself.
 *
 *   request flags   (NDJSON "flags", text FLAGS column, OTLP ttftrace.flags[],
 *                   Perfetto request args "flags"), in this order:
 *     stream      response Content-Type: text/event-stream
 *     nonstream   non-streamed response: TTFT = E2E
 *     buffered    pseudo-streaming: >= 3 token events within 5 ms after >= 100 ms
 *                 of silence (metrics), or the tracker said so (TTF_REQ_BUFFERED)
 *     aborted     connection closed/reset before the response ended
 *     incomplete  tracing stopped before the response ended
 *     trunc       some payload was not captured
 *     unknown     lost sync with the byte stream: left out of percentiles
 *     error       status >= 400 or an error event in the stream
 *     usage       token count from the server's usage report
 *     write-end   TTFT ends at the write (no device transmit seen)
 *     nagle       a streamed first token written without TCP_NODELAY
 *     expect-100  the request said Expect: 100-continue: net_in holds the client's wait
 *     interim     1xx interim responses (100 Continue, 103 Early Hints) came first
 *     decoded     a gzip/deflate body, decoded to find its tokens
 *     opaque      a body ttftrace cannot read (br, zstd, or its start not captured):
 *                 TTFT from the first body write, no token counts
 *     hpack-unsynced HTTP/2 headers referenced HPACK table entries from before tracing:
 *                 method/path "unknown" unless a literal named them
 *     chunks      gRPC messages counted as chunks (no token profile for the method)
 *   outcomes        (summary "outcomes", Prometheus requests_total{outcome}):
 *                   ok aborted incomplete error unknown nonstream buffered truncated
 *                   (the summary counts the outcome `truncated` where the flag is `trunc`)
 *   attribution     exact | inferred | merged
 *   ttft_end        xmit | write
 *   token_source    usage | events
 *   api             chat | completion | llamacpp | responses | messages | unknown
 *   stages          net_in read_wait frontend queue prefill emit net_out tokenize server copy
 */
#ifndef TTFTRACE_VOCAB_H
#define TTFTRACE_VOCAB_H

#include <stdint.h>
#include "user/proto/request.h"
#include "user/model/metrics.h"
#include "user/model/attrib.h"

/* Request flags as printed; the enum order is the print order. */
enum ttf_vflag {
	TTF_VF_STREAM = 0,
	TTF_VF_NONSTREAM,
	TTF_VF_BUFFERED,
	TTF_VF_ABORTED,
	TTF_VF_INCOMPLETE,
	TTF_VF_TRUNC,
	TTF_VF_UNKNOWN,
	TTF_VF_ERROR,
	TTF_VF_USAGE,
	TTF_VF_WRITE_END,
	TTF_VF_NAGLE,
	TTF_VF_EXPECT_100,
	TTF_VF_INTERIM,
	TTF_VF_DECODED,
	TTF_VF_OPAQUE,
	TTF_VF_HPACK_UNKNOWN,
	TTF_VF_CHUNKS,
	TTF_VF_UPSTREAM,
	TTF_VF_TLS,
	TTF_VF__MAX,
};
#define TTF_VF_BIT(f) (1u << (f))

/* "stream", "nonstream", ..., "nagle"; "?" out of range. */
const char *ttf_vflag_name(enum ttf_vflag f);
/*
 * The printed flags of one request, a mask of TTF_VF_BIT(): the request's
 * own flags (r->flags) and what the metrics derived (buffered, usage,
 * write-end, nagle).
 */
uint32_t ttf_vocab__flags(const struct ttf_request *r, const struct ttf_req_metrics *m);
/*
 * Names of the flags in vflags, in print order, into names[0..cap).
 * Returns how many there are (at most TTF_VF__MAX).
 */
int ttf_vocab__flag_names(uint32_t vflags, const char **names, int cap);

/* Request outcomes the summary counts (they may overlap), in print order. */
enum ttf_outcome {
	TTF_OC_OK = 0,
	TTF_OC_ABORTED,
	TTF_OC_INCOMPLETE,
	TTF_OC_ERROR,
	TTF_OC_UNKNOWN,
	TTF_OC_NONSTREAM,
	TTF_OC_BUFFERED,
	TTF_OC_TRUNCATED,
	TTF_OC__MAX,
};
const char *ttf_outcome_name(enum ttf_outcome o);
/*
 * A successful response: outcome ok (none of aborted, incomplete, error,
 * unknown) and a 2xx status. Only these feed latency percentiles and
 * histograms (the OpenTelemetry GenAI metrics and vllm bench count
 * successful requests only); the others are counted by outcome.
 */
int ttf_vocab__success(const struct ttf_request *r);

/* "exact", "inferred", "merged". */
const char *ttf_attrib_kind_name(enum ttf_attrib_kind k);
/* ttft_end: "xmit" (device transmit) or "write". */
const char *ttf_ttft_end_name(int is_xmit);
/* token_source: "usage" or "events". */
const char *ttf_token_source_name(int from_usage);
/* api: "chat", "completion", "llamacpp", "unknown". */
const char *ttf_api_name(enum ttf_api api);

/*
 * Stage names: ttf_stage_name() (attrib.h). Two orders of all stages:
 * NDJSON order (stages_ms keys, summary and Prometheus series) and time
 * order (text line, HTML, OTLP and Perfetto tiles; tokenize sits inside
 * frontend, server stands for frontend..emit merged).
 */
#define TTF_STAGE_ORDER_N 10
extern const enum ttf_stage ttf_stage_order[TTF_STAGE_ORDER_N];
extern const enum ttf_stage ttf_stage_time_order[TTF_STAGE_ORDER_N];

#endif /* TTFTRACE_VOCAB_H */
