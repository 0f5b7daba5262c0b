/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * Joins of GPU spans (user/model/gpu_store.h) with host-side windows: engine steps
 * and request prefill windows. Pure functions of the store; all times are
 * CLOCK_MONOTONIC ns.
 *
 * Each window [start_ns, end_ns) is split exactly:
 *   compute_ns  = time covered by at least one kernel,
 *   copy_ns     = time covered by a copy/memset and by no kernel (copies
 *                 hidden behind compute are not on the critical path),
 *   host_gap_ns = time with no GPU work of the process: the GPU waited on the host,
 * so compute_ns + copy_ns + host_gap_ns == end_ns - start_ns. Spans are
 * clipped to the window. Under continuous batching a step serves several
 * requests, so a request's "prefill GPU time" is the busy time inside its
 * prefill window, not an exclusive share (docs/cupti.md A7).
 */
#ifndef TTFTRACE_GPU_JOIN_H
#define TTFTRACE_GPU_JOIN_H

#include <stdint.h>

#include "user/model/gpu_store.h"

/* An engine step: from the attribution uprobes, or gpu_join__infer_steps(). */
struct gpu_step {
	uint64_t start_ns, end_ns;
	uint32_t tid;            /* host thread that ran the step; 0 = any thread */
};

struct gpu_split {
	uint64_t window_ns;
	uint64_t compute_ns;
	uint64_t copy_ns;
	uint64_t host_gap_ns;
	uint32_t kernels;        /* kernels overlapping the window */
	uint32_t copies;         /* copies and memsets overlapping the window */
	uint32_t unjoined;       /* spans whose launching API record is unknown (kept) */
};

/*
 * Split @step of process @pid. With step->tid set, spans launched by other
 * threads are left out; spans whose launch record is unknown are kept and
 * counted in unjoined. Returns 0, -EINVAL (end < start), -ENOMEM.
 */
int gpu_join__step(struct gpu_store *s, uint32_t pid, const struct gpu_step *step,
		   struct gpu_split *out);

/*
 * Engine steps of thread @tid in [from_ns, to_ns) inferred from its API
 * records, for when no step uprobe is attached. A step begins at a launch,
 * copy or memset call and ends at the next synchronize call, or when the
 * thread stays idle longer than @idle_gap_ns; its end is extended to the
 * completion of the GPU work its calls launched (graph replays included).
 * Up to @max steps go to @out; returns how many were found, or -ENOMEM.
 */
int gpu_join__infer_steps(struct gpu_store *s, uint32_t pid, uint32_t tid, uint64_t from_ns,
			  uint64_t to_ns, uint64_t idle_gap_ns, struct gpu_step *out, size_t max);

/* One copy seen in a prefill window, with its achieved bandwidth (docs/cases.md #23). */
struct gpu_copy_bw {
	uint64_t start_ns, end_ns, bytes;
	uint8_t copy_kind;       /* enum ttf_gpu_copy_kind; 0 for a memset */
	uint8_t src_kind, dst_kind;
	bool pageable;           /* never evidence of a slow link */
	double gbps;             /* bytes / duration, GB/s (1e9 bytes/s) */
};

struct gpu_prefill {
	struct gpu_split split;  /* split.compute_ns = prefill GPU busy time */
	uint64_t gpu_busy_ns;    /* compute_ns + copy_ns */
	uint64_t copy_total_ns;  /* copy time including copies overlapped by kernels */
};

/*
 * GPU time of a request whose prefill ran in [start_ns, end_ns) in process
 * @pid (the engine/worker process). @tid != 0 keeps only the work that
 * thread launched (and work whose launching thread is unknown); 0 keeps the
 * whole process's. Copies overlapping the window go to @copies (up to @max);
 * returns how many there are, or -EINVAL/-ENOMEM.
 */
int gpu_join__prefill(struct gpu_store *s, uint32_t pid, uint32_t tid, uint64_t start_ns,
		      uint64_t end_ns, struct gpu_prefill *out, struct gpu_copy_bw *copies,
		      size_t max);

#endif /* TTFTRACE_GPU_JOIN_H */
