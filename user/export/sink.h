/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * A sink sees what the pipeline sees: raw records as they arrive (taps, for
 * recording and timelines) and every finished request with its metrics and
 * stage split, computed once by the pipeline (the text/NDJSON report,
 * Prometheus, OTLP, Perfetto, the live view). Every hook is optional. Hooks
 * run on the tracer's single thread; they must not block (an exporter that
 * talks to the network queues and sends from tick or its own thread,
 * bounded, counting drops).
 */
#ifndef TTFTRACE_SINK_H
#define TTFTRACE_SINK_H

#include <stddef.h>
#include <stdint.h>
#include "user/lib/records.h"
#include "user/model/attrib.h"
#include "user/model/metrics.h"
#include "user/proto/request.h"
#include "user/proto/zmtp/zmtp.h"

struct ttf_sink {
	const char *name;
	void *ctx;
	/* raw taps: every record the pipeline is given (user/lib/records.h) */
	void (*net_event)(void *ctx, const struct ttf_net_event *e, size_t len);
	void (*sched_event)(void *ctx, const struct ttf_sched_event *e);
	void (*engine_event)(void *ctx, const struct ttf_engine_event *e);
	void (*gpu_event)(void *ctx, uint32_t pid, uint32_t kind, const void *body, size_t len);
	/*
	 * a request was read completely, long before it finishes (its request or
	 * rejected hook follows, with TTF_REQ_READ set): for in-flight gauges
	 */
	void (*request_read)(void *ctx, const struct ttf_request *r);
	/* a finished request (a is NULL without attribution) */
	void (*request)(void *ctx, const struct ttf_request *r, const struct ttf_req_metrics *m,
			const struct ttf_attrib *a);
	/* a finished request whose metrics were refused (malformed): counted, not shown */
	void (*rejected)(void *ctx, const struct ttf_request *r);
	/*
	 * a ZMTP connection closed or tracing stopped: its summary
	 * (user/proto/zmtp/zmtp.h), with msgs_kept/msgs_dropped from the pipeline
	 */
	void (*zmtp_conn)(void *ctx, const struct ttf_zmtp_conn *z);
	/* about every 10 ms from the main loop (CLOCK_MONOTONIC ns) */
	void (*tick)(void *ctx, uint64_t now_ns);
	/* about every second: the current drop and health counters (cumulative) */
	void (*counters)(void *ctx, const struct report_counter *c, int n);
	/*
	 * End of the run, with every drop counter (the sinks finished before
	 * this one have their final stats in it); 0 or a negative errno (output
	 * failed; the sink has said so on stderr)
	 */
	int (*finish)(void *ctx, const struct report_counter *c, int n);
	void (*destroy)(void *ctx);
	/*
	 * the sink's own counters (exports sent, dropped, ...), for the summary and the
	 * other sinks: writes at most cap, names static; returns how many
	 */
	int (*stats)(void *ctx, struct report_counter *c, int cap);
	/* the pipeline advanced its watermark (pipeline__advance), e.g. for recordings */
	void (*advance)(void *ctx, uint64_t watermark_ns);
};

#endif /* TTFTRACE_SINK_H */
