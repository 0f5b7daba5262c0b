/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * Attribution of one request's TTFT to disjoint stages (docs/metrics.md M14,
 * docs/design.md D3), from kernel timestamps (user/proto/request.h), the engine
 * timeline (user/model/timeline/timeline.h) and, as an overlay, the scheduler view.
 *
 *   net_in    first request byte arrives -> last request byte arrives
 *   read_wait last byte arrives           -> the server's read returns
 *   frontend  read returns                -> engine has it (tokenize returned)
 *             (tokenize: the part of frontend inside the tokenize call)
 *   queue     engine has it               -> its first prefill step starts
 *   prefill   first prefill step starts   -> its last prefill step ends
 *   emit      last prefill step ends      -> the first-token write begins
 *   net_out   the write begins            -> segment handed to the device
 *             (on a free connection the segment leaves inside the syscall)
 *
 * Boundaries are clamped to be non-decreasing, so the stages sum to TTFT
 * exactly (in ns). Missing sources merge adjacent stages visibly: without
 * engine probes frontend..emit are one `server` stage; without a tokenize
 * probe frontend merges into queue. With GPU spans (CUPTI), copy time on the
 * critical path inside prefill becomes its own `copy` stage, taken out of
 * prefill.
 */
#ifndef TTFTRACE_ATTRIB_H
#define TTFTRACE_ATTRIB_H

#include <stdint.h>
#include "user/proto/request.h"
#include "user/model/metrics.h"
#include "user/model/timeline/timeline.h"
#include "user/model/gpu_store.h"

enum ttf_stage {
	TTF_ST_NET_IN = 0,
	TTF_ST_READ_WAIT,
	TTF_ST_FRONTEND,
	TTF_ST_QUEUE,
	TTF_ST_PREFILL,
	TTF_ST_EMIT,
	TTF_ST_NET_OUT,
	TTF_ST__MAX,
	TTF_ST_TOKENIZE = TTF_ST__MAX,	/* sub-stage of frontend, reported aside */
	TTF_ST_SERVER,			/* merged frontend..emit */
	TTF_ST_COPY,			/* host<->device copies inside prefill (CUPTI), taken out of prefill */
	TTF_ST__ALL,
};

enum ttf_attrib_kind {
	TTF_ATTR_EXACT = 0,	/* step-to-request mapping observed unambiguously */
	TTF_ATTR_INFERRED,	/* deduced (FIFO among waiting requests, clamped order) */
	TTF_ATTR_MERGED,	/* sources missing: some stages merged */
};

/* Scheduler overlay of one stage, over the threads that served it. */
struct ttf_overlay {
	uint64_t on_cpu_ns;
	uint64_t runnable_ns;	/* runqueue: runnable but not running */
	uint64_t blocked_ns;	/* off-CPU, sleeping */
	uint64_t unknown_ns;	/* no scheduler data */
};

/* Scheduler view seam: fills *out for thread tid over [start, end]; 0 or -ENOENT. */
typedef int (*ttf_overlay_fn)(void *ctx, uint32_t tid, uint64_t start_ns, uint64_t end_ns,
			      struct ttf_overlay *out);

#define TTF_MAX_CAUSES 16

struct ttf_outlier_cause {
	uint32_t index;		/* ITL index (gap before token event index+1) */
	double itl_ns;
	char cause[64];		/* "prefill of requests 12, 15", "runqueue wait", ... */
};

#define TTF_MAX_COPIES 8

/* One host<->device copy inside the prefill window (docs/cases.md #23). */
struct ttf_copy {
	uint64_t bytes;
	uint64_t dur_ns;
	uint8_t copy_kind;	/* enum ttf_gpu_copy_kind (cupti/gpu_wire.h) */
	uint8_t pageable;	/* pageable host memory: slow by design, never link evidence */
	double gbps;		/* achieved, 1e9 bytes/s */
};

/* GPU activity (CUPTI) inside the prefill window, when the collector reports. */
struct ttf_gpu_part {
	int have;
	uint64_t compute_ns;	/* covered by a kernel */
	uint64_t copy_ns;	/* covered by a copy and no kernel: on the critical path */
	uint64_t host_gap_ns;	/* no GPU work: the GPU waited on the host */
	uint32_t kernels;
	uint32_t n_copies;	/* copies in the window (up to TTF_MAX_COPIES kept) */
	struct ttf_copy copies[TTF_MAX_COPIES];
	double link_gbps;	/* theoretical PCIe rate per direction of the GPU path; <= 0 unknown */
};

#define TTF_MAX_STEP_SPANS 16

/*
 * One engine step of a request's prefill (a prompt step the timeline gave
 * it), with the GPU split of that step when a CUPTI collector reports
 * (user/model/gpu_join.h: compute + copy + host_gap == end - start).
 */
struct ttf_step_span {
	uint64_t start_ns, end_ns;	/* CLOCK_MONOTONIC */
	int32_t n_tokens;		/* tokens in the batch; -1 unknown */
	uint32_t tid;			/* engine thread */
	int have_gpu;
	uint64_t compute_ns, copy_ns, host_gap_ns;
	uint32_t kernels, copies;
};

struct ttf_hop_chain;
struct ttf_msg_chain;
struct loop_busy;

struct ttf_attrib {
	int valid;			/* 0: no TTFT, nothing attributed */
	int64_t stage_ns[TTF_ST__ALL];	/* -1: not observed / merged away */
	uint64_t bound_ns[TTF_ST__MAX + 1];	/* valid: the stages' boundaries (ns), clamped monotonic */
	const struct ttf_hop_chain *hops;	/* NULL: not through a gateway (user/model/hops/gateway.h) */
	const struct ttf_msg_chain *msg;	/* NULL: no message hop to an engine (msg_hops.h) */
	int have_overlay[TTF_ST__MAX];
	struct ttf_overlay overlay[TTF_ST__MAX];
	enum ttf_attrib_kind kind;
	char inferred_by[96];		/* why not exact; "" when exact */
	char merged[64];		/* e.g. "frontend+queue" or "frontend+queue+prefill+emit" */
	uint32_t prefill_steps;
	uint64_t prefill_tokens;	/* prompt tokens computed for it (counted batches), else its steps' */
	int64_t cached_tokens;		/* prompt tokens served from the engine's prefix cache; -1 unknown */
	uint16_t prefill_shared_with;	/* most other requests prefilling in one of its prefill steps */
	double prefill_token_share;	/* its tokens / all tokens of its prefill steps; -1 unknown */
	uint64_t queued_behind_aborted_ns;	/* queue time spent while the engine served aborted requests */
	int64_t expect_wait_ns;		/* the part of net_in the client waited for 100-continue; -1 none */
	uint32_t n_causes;
	struct ttf_outlier_cause causes[TTF_MAX_CAUSES];
	struct ttf_gpu_part gpu;
	uint32_t engine_tgid;		/* process that ran its engine steps (the GPU owner); 0 unknown */
	/* the prefill's steps, oldest first (prefill_steps counts all; the first 16 kept) */
	uint32_t n_step_spans;
	struct ttf_step_span step_spans[TTF_MAX_STEP_SPANS];
};

struct attrib_sources {
	const struct timeline *tl;	/* NULL: no engine probes */
	ttf_overlay_fn overlay;		/* NULL: no scheduler view */
	void *overlay_ctx;
	struct gpu_store *gpu;		/* NULL: no CUPTI collector */
	const struct loop_busy *busy;	/* NULL: no request windows (loop_busy.h) */
	double link_gbps;		/* PCIe path rate for copy comparisons; <= 0 unknown */
};

/* Attribute one finished request. Returns 0 or -EINVAL. */
int ttf_attrib__compute(const struct ttf_request *r, const struct ttf_req_metrics *m,
			const struct attrib_sources *src, struct ttf_attrib *a);

/* "net_in", "read_wait", ..., "tokenize", "server": the table is in vocab.c (vocab.h). */
const char *ttf_stage_name(enum ttf_stage s);

#endif /* TTFTRACE_ATTRIB_H */
