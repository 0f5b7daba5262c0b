/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * Output of finished requests: a live line per request (text) or one NDJSON
 * object per request ({"type":"request",...}), and a summary at exit with
 * P50/P90/P95/P99 over requests (text table or {"type":"summary",...}).
 * Metric definitions: metrics.h; percentile definition: stats.h.
 *
 * Text line columns: TIME(s) = request arrival relative to opts.t0_ns, PID,
 * REQ (request id), PATH (first 20 bytes), ST (HTTP status, "-" unknown),
 * TTFT(ms), TPOT(ms), TOK (tokens), EV (token events), E2E(ms), GR (ITL CV
 * grade), FLAGS (stream, nonstream, buffered, aborted, incomplete, trunc,
 * unknown, error, usage = tokens counted from usage, write-end = TTFT ends at
 * the write because no device transmit was seen). "-" = not measured.
 * With opts.verbose > 0 a request with ITL outliers gets a second line
 * listing them ("#i" = index of the ITL sample, 0-based).
 *
 * NDJSON request object: ids, model (the body's "model", null unknown),
 * connection ("laddr:lport<-raddr:rport", IPv6 in brackets), ttft_ms/ttfv_ms/e2e_ms/tpot_ms/itl_mean_ms (ms, rounded to
 * 1 us), itl_ms[] (one per gap between token events), outliers[] {index,
 * itl_ms}, itl_cv, grade, tokens, token_events, tokens_per_event,
 * token_source ("usage"|"events"), flags[] (names above), t_*_ns and byte
 * counts as exact integers. Absent values are JSON null.
 *
 * Summary: only successful requests (ttf_vocab__success: 2xx, none of
 * aborted/incomplete/error/unknown) feed the percentiles, grades and stage
 * tail; the others are counted as outcomes and as left_out_of_percentiles.
 * Requests without a token are counted but have no TTFT.
 * Outcomes: ok = none of aborted/incomplete/error/unknown; the others
 * (nonstream, buffered, truncated included) may overlap. The report adds its
 * own counters report_samples_lost (ENOMEM in stats), report_lines_lost
 * (ENOMEM building JSON) and report_requests_invalid (metrics refused the
 * request) to the caller's.
 */
#ifndef TTFTRACE_REPORT_H
#define TTFTRACE_REPORT_H

#include <stdio.h>
#include <stdint.h>
#include "user/proto/request.h"
#include "user/lib/records.h"
#include "user/model/attrib.h"
#include "user/model/metrics.h"

struct report;

struct report_opts {
	size_t sz;         /* sizeof(struct report_opts) */
	FILE *out;         /* where lines go (stdout or -o FILE) */
	int json;          /* 1: NDJSON */
	int verbose;       /* >0: more columns / fields */
	uint64_t t0_ns;    /* CLOCK_MONOTONIC at start, for relative timestamps */
};


/* Returns NULL with errno = EINVAL (no opts, opts->out NULL, sz too small) or ENOMEM. */
struct report *report__new(const struct report_opts *opts);
void report__free(struct report *rp);

/* Print the column header (text mode only, once). */
void report__header(struct report *rp);
/*
 * Record one finished request, with the metrics the pipeline computed, and
 * print its live line / NDJSON object. With the TTFT stage split (a, may be
 * NULL) JSON gains stages_ms, stage_sum_ms, attribution, inferred_by,
 * merged, overlay, prefill_steps, prefill_tokens and a cause per outlier;
 * text gains a stages line. The summary then adds per-stage P50/P95/P99 and
 * the tail-dominating stage.
 */
void report__request(struct report *rp, const struct ttf_request *r,
		     const struct ttf_req_metrics *m, const struct ttf_attrib *a);
/* A request whose metrics were refused: counted (report_requests_invalid). */
void report__rejected(struct report *rp, const struct ttf_request *r);
/*
 * Print the summary: counts, percentiles of TTFT, TPOT, ITL, E2E, tokens,
 * grades and flags, followed by every counter (drops are printed even when 0
 * in JSON, and when non-zero in text). Returns 0, -EINVAL (counters NULL
 * with n_counters > 0), -ENOMEM (JSON not built), or the negative errno of a
 * failed write (fflush; -EIO when only the stream's error flag says so) --
 * any write since report__new, live lines included.
 */
int report__summary(struct report *rp, const struct report_counter *counters, int n_counters);

/*
 * The report as a pipeline sink (user/export/sink.h): requests and rejected
 * requests as above, and the summary from its finish hook with the
 * counters the pipeline hands it. rp stays the caller's (freed after the
 * pipeline); add it last, so that its summary has the other sinks' final
 * counters.
 */
struct ttf_sink;
void report__sink(struct report *rp, struct ttf_sink *out);
/* What the summary returned in the sink's finish (0 before it ran). */
int report__summary_error(const struct report *rp);

#endif /* TTFTRACE_REPORT_H */
