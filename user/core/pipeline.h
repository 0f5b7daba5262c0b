/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * The pipeline: the one door every record goes through, live or replayed.
 *
 *   net records     -> connection tracker (user/proto/conn.h) -> requests
 *   engine hits     -> engine timeline (user/model/timeline/timeline.h)
 *   sched records   -> scheduler view (user/model/sched.h), the stage overlay
 *   GPU items       -> GPU store (user/model/gpu_store.h), the GPU join
 *
 * It owns all four models and one registry of drop and health counters.
 * Finished requests wait until every record before them has been fed
 * (pipeline__advance: the watermark), then get their metrics and stage split
 * once, and go to every sink (user/export/sink.h): the text/NDJSON report is
 * one of them. Probe sources and the recording reader feed it through
 * pipeline__records() (user/lib/records.h); they never reach a model
 * directly, so the live tracer and replay share everything here.
 */
#ifndef TTFTRACE_PIPELINE_H
#define TTFTRACE_PIPELINE_H

#include <stddef.h>
#include <stdint.h>
#include "user/export/sink.h"
#include "user/core/upstreams.h"
#include "user/lib/records.h"
#include "user/model/gpu_store.h"
#include "user/model/timeline/timeline.h"
#include "user/proto/conn.h"

struct pipeline;
struct sched_view;

struct pipeline_opts {
	size_t sz;		/* sizeof(struct pipeline_opts) */
	int xmit_expected;	/* the XMIT probe attached */
	int attribution;	/* 1: keep an engine timeline and split TTFT into stages */
	int sched;		/* 1: keep a scheduler view: per-stage on-CPU/runqueue overlay */
	int gpu;		/* 1: keep a GPU store (CUPTI spans) for the GPU join */
	double link_gbps;	/* PCIe path rate to compare copies with; <= 0 unknown */
	/* where gRPC messages hold their tokens (user/proto/http2/grpc.h); NULL: chunks. Not copied. */
	const struct grpc_profile *grpc_profile;
	/*
	 * 1: keep the upstream calls traced processes write (TTF_REQ_UPSTREAM)
	 * until pipeline__take_upstreams(), so the tracer may trace those
	 * upstreams too (hop discovery). 0: none kept.
	 */
	int keep_upstreams;
};


/* NULL with errno on failure. */
struct pipeline *pipeline__new(const struct pipeline_opts *opts);
/* Frees the models and destroys every sink. */
void pipeline__free(struct pipeline *p);

/* The four entries, as hooks whose ctx is p (for probe sources and replay). */
struct ttf_records pipeline__records(struct pipeline *p);
int pipeline__on_net(struct pipeline *p, const struct ttf_net_event *e, size_t len);
int pipeline__on_sched(struct pipeline *p, const struct ttf_sched_event *e);
int pipeline__on_engine(struct pipeline *p, const struct ttf_engine_event *ev);
int pipeline__on_gpu(struct pipeline *p, uint32_t pid, uint32_t kind, const void *body,
		     size_t len);

/* Add a sink (copied; the pipeline calls its destroy hook when freed). -ENOSPC past 8. */
int pipeline__add_sink(struct pipeline *p, const struct ttf_sink *s);
/*
 * Add a group of source counters (a probe's BPF drops, ...) to the
 * registry, in front of the pipeline's own. -ENOSPC past 8 groups.
 */
int pipeline__add_counters(struct pipeline *p, ttf_counters_fn fn, void *ctx);
/*
 * Replay: the counters the live run ended with (names and values copied).
 * From then on the registry is that list in its order, with the values the
 * pipeline computes itself (connections, timeline, scheduler view, GPU
 * store) in place of the recorded ones. n == 0 keeps the pipeline's own.
 * 0 or -ENOMEM.
 */
int pipeline__set_recorded_counters(struct pipeline *p, const struct report_counter *c, int n);

/*
 * Every counter into c[0..cap): the sources', the pipeline's own, then the
 * sinks' own stats. Returns how many (names stay valid while p lives).
 */
int pipeline__counters(struct pipeline *p, struct report_counter *c, int cap);

/* Everything with a timestamp before watermark_ns has been fed: attribute and output what can be. */
void pipeline__advance(struct pipeline *p, uint64_t watermark_ns);
/* Periodic work of sinks (batched exports) and, about once a second, their counters. */
void pipeline__tick(struct pipeline *p, uint64_t now_ns);
/* End of tracing: close open requests (as incomplete at now_ns), flush everything. */
void pipeline__finish(struct pipeline *p, uint64_t now_ns);
/*
 * After pipeline__finish: every sink's finish hook in the order they were
 * added, each with the counters of that moment (the sources' and the
 * pipeline's taken once, first). Returns the first error (negative errno).
 */
int pipeline__finish_sinks(struct pipeline *p);

/*
 * The upstream calls seen since the last take, oldest first, into
 * out[0..cap) (opts.keep_upstreams). Returns how many; the rest wait for
 * the next take.
 */
int pipeline__take_upstreams(struct pipeline *p, struct pipeline_upstream *out, int cap);

/* The options the pipeline was made with (e.g. for a recording's header). */
const struct pipeline_opts *pipeline__opts(const struct pipeline *p);
/* The GPU store (NULL without opts.gpu), for sinks that draw GPU spans. */
struct gpu_store *pipeline__gpu(struct pipeline *p);
/* The scheduler view (NULL without opts.sched), for sinks that draw thread states. */
struct sched_view *pipeline__sched(struct pipeline *p);

#endif /* TTFTRACE_PIPELINE_H */
