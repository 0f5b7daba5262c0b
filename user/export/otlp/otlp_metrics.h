/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * The GenAI model-server metrics of the semantic conventions (docs/otel.md),
 * aggregated from finished requests as cumulative explicit-bucket histograms
 * in seconds, with the conventions' advisory bucket boundaries:
 *   gen_ai.server.request.duration      every GenAI request (error.type on failures)
 *   gen_ai.server.time_to_first_token   successful requests with a first token
 *   gen_ai.server.time_per_output_token successful requests with 2+ tokens
 * A GenAI request: its API is one otlp__operation names. Requests still open
 * when tracing stopped (incomplete) or whose stream was not trusted (unknown)
 * are left out. A series per (process, gen_ai.operation.name,
 * gen_ai.request.model, server.address, server.port, error.type); past
 * OTLP_MAX_SERIES series, requests go to one series with only
 * otel.metric.overflow=true (the SDK's cardinality-limit rule), counted.
 */
#ifndef TTFTRACE_OTLP_METRICS_H
#define TTFTRACE_OTLP_METRICS_H

#include <stdint.h>
#include "user/export/otlp/otlp.h"

#define OTLP_MAX_SERIES 256

enum otlp_metric {
	OTLP_M_DURATION,
	OTLP_M_TTFT,
	OTLP_M_TPOT,
	OTLP_M__N,
};

struct otlp_metrics;

/* start_unix_ns: the cumulative series' start time. NULL with errno = ENOMEM. */
struct otlp_metrics *otlp_metrics__new(uint64_t start_unix_ns);
void otlp_metrics__free(struct otlp_metrics *m);
/* Record one finished request. */
void otlp_metrics__add(struct otlp_metrics *m, const struct otlp_span_src *s);
/* Series so far; requests that went to the overflow series. */
int otlp_metrics__n_series(const struct otlp_metrics *m);
uint64_t otlp_metrics__overflowed(const struct otlp_metrics *m);
/*
 * An ExportMetricsServiceRequest of every series at now_unix_ns (one
 * resourceMetrics per process): *out malloc'ed, *len bytes. host and cfg may
 * be NULL. Returns 0 or -ENOMEM.
 */
int otlp_metrics__build(const struct otlp_metrics *m, enum otlp_proto proto, const char *host,
			const struct otlp_config *cfg, uint64_t now_unix_ns, char **out,
			size_t *len);

#endif /* TTFTRACE_OTLP_METRICS_H */
