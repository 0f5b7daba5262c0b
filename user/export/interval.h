/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * Interval summaries (`ttftrace -i SECONDS`, like bcc's [interval]): a sink
 * (user/export/sink.h) that prints, every interval_ns of CLOCK_MONOTONIC time,
 * a compact summary of the requests that finished in that interval, and at
 * the end of the run one for the last, partial interval when a request
 * finished in it. Each finished request is counted in exactly one interval,
 * so the intervals' request counts add up to the summary's "requests".
 *
 * By the summary's rules (user/export/report/report.h): only successful requests
 * (ttf_vocab__success) feed TTFT/TPOT percentiles and output tokens; the
 * others are counted as errors. Percentiles: user/lib/stats.h.
 *
 * Text, one line per interval (t from opts.t0_ns, "-" = no sample):
 *   INTERVAL 3 2.000-3.000s: 12 requests, 1 errors; TTFT(ms) P50 120.3 P95
 *   121.0 P99 121.2; TPOT(ms) P50 12.0 P95 12.1 P99 12.2; 11.0 req/s, 55.0 tok/s
 * NDJSON: {"type":"interval","index":3,"t_start_s":2.0,"t_end_s":3.0,
 *   "duration_s":1.0,"requests":12,"successful":11,"errors":1,
 *   "ttft_ms":{"n","p50","p95","p99"},"tpot_ms":{...},"output_tokens":55,
 *   "request_throughput":11.0,"output_token_throughput":55.0} (null: no sample).
 * request_throughput counts successful requests, as the summary does.
 */
#ifndef TTFTRACE_INTERVAL_H
#define TTFTRACE_INTERVAL_H

#include <stdint.h>
#include <stdio.h>
#include "user/export/sink.h"

struct interval_opts {
	FILE *out;		/* the report's stream (stdout or -o FILE) */
	int json;		/* 1: NDJSON objects */
	uint64_t interval_ns;	/* > 0 */
	uint64_t t0_ns;		/* CLOCK_MONOTONIC start: t_start_s/t_end_s are relative to it */
};

/*
 * Fill *out with the interval sink. The first interval begins at o->t0_ns.
 * Returns 0, -EINVAL (o NULL, no out, interval_ns 0) or -ENOMEM. Its finish
 * hook returns the negative errno of a failed write.
 */
int interval_sink__new(const struct interval_opts *o, struct ttf_sink *out);

#endif /* TTFTRACE_INTERVAL_H */
