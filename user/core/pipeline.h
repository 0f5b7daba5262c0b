/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * The user-side event pipeline, independent of where events come from (live
 * BPF rings or, later, a recording): network records -> connection tracker
 * -> finished requests; engine uprobe hits -> engine timeline; finished
 * requests wait until the timeline has seen everything before them
 * (watermark), then get their stage split and go to the report.
 */
#ifndef TTFTRACE_PIPELINE_H
#define TTFTRACE_PIPELINE_H

#include <stddef.h>
#include <stdint.h>
#include "bpf/net.h"
#include "user/model/attrib.h"
#include "user/proto/conn.h"
#include "user/export/report.h"
#include "user/core/sink.h"
#include "user/model/timeline.h"

struct pipeline;

struct pipeline_opts {
	size_t sz;		/* sizeof(struct pipeline_opts) */
	struct report *report;	/* where finished requests go (not owned) */
	int xmit_expected;	/* the XMIT probe attached */
	int attribution;	/* 1: keep an engine timeline and split TTFT into stages */
	ttf_overlay_fn overlay;	/* scheduler view, or NULL */
	void *overlay_ctx;
	struct gpu_store *gpu;	/* CUPTI spans, or NULL (not owned) */
	double link_gbps;	/* PCIe path rate to compare copies with; <= 0 unknown */
};

/* NULL with errno on failure. */
struct pipeline *pipeline__new(const struct pipeline_opts *opts);
void pipeline__free(struct pipeline *p);

int pipeline__on_net_event(struct pipeline *p, const struct ttf_net_event *e, size_t len);
int pipeline__on_engine_event(struct pipeline *p, const struct tl_event *ev);
/* Add a sink (copied; the pipeline calls its destroy hook when freed). -ENOSPC past 8. */
int pipeline__add_sink(struct pipeline *p, const struct ttf_sink *s);
/* A scheduler record, for the sinks' taps (the scheduler view is fed by its probe). */
void pipeline__on_sched_event(struct pipeline *p, const struct ttf_sched_event *e);
/* Periodic work of sinks (batched exports). */
void pipeline__tick(struct pipeline *p, uint64_t now_ns);
/* Current counters for the sinks (about once a second). */
void pipeline__counters(struct pipeline *p, const struct report_counter *c, int n);
/* End of run: every sink's finish hook; returns the first error (negative errno). */
int pipeline__finish_sinks(struct pipeline *p, const struct report_counter *c, int n);
/* The sinks' own counters (their stats hooks) into c[0..cap); returns how many. */
int pipeline__sink_stats(struct pipeline *p, struct report_counter *c, int cap);

/* Everything with a timestamp before watermark_ns has been fed: attribute and print what can be. */
void pipeline__advance(struct pipeline *p, uint64_t watermark_ns);
/* End of tracing: close open requests, flush everything. */
void pipeline__finish(struct pipeline *p, uint64_t now_ns);

const struct conn_stats *pipeline__conn_stats(const struct pipeline *p);
const struct timeline_stats *pipeline__timeline_stats(const struct pipeline *p);
/* The options the pipeline was made with (e.g. for a recording's header). */
const struct pipeline_opts *pipeline__opts(const struct pipeline *p);
/* Requests that could not be copied for deferred output (ENOMEM). */
uint64_t pipeline__dropped(const struct pipeline *p);

#endif /* TTFTRACE_PIPELINE_H */
