/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * --perfetto FILE: a timeline in the Chrome trace-event JSON Object Format
 * ({"displayTimeUnit":"ms","traceEvents":[...]}), which ui.perfetto.dev and
 * chrome://tracing open; gzip-compressed (zlib) when FILE ends in ".gz".
 * Format reference: "Trace Event Format" (Google doc linked from
 * https://perfetto.dev/docs/getting-started/other-formats).
 *
 * Timestamps ("ts") and durations ("dur") are CLOCK_MONOTONIC microseconds
 * with ns precision (three decimals), the clock of every tap. Tracks, named
 * with "M" process_name/thread_name metadata events:
 *   - "Requests" (pid PERFETTO_PID_REQUESTS, tid = lane 1..PERFETTO_MAX_LANES):
 *     a request takes the lowest lane whose last request ended before it
 *     began, so the number of tracks is the highest concurrency seen, at most
 *     PERFETTO_MAX_LANES (requests past that are counted, not drawn). On its
 *     lane: a complete ("X") event for the whole request (args: id, ttft_ms,
 *     e2e_ms, tpot_ms, tokens, grade, conn, conn_seq, conn_cookie and
 *     flags[], the names NDJSON prints, user/model/vocab.h), one per TTFT
 *     stage (cat "stage"; they tile [start, first token] and sum to TTFT
 *     exactly), tokenize as a nested sub-stage (cat "substage"), an instant
 *     ("i") per token event;
 *   - each thread that served a request (pid = tgid, tid = tid): a
 *     zero-length mark (cat "request") where it did its part: "read req N"
 *     (the read of the last request byte returned), "prefill step" (an engine
 *     step of the request began), "write req N" (the first token's write
 *     began); and flow arrows (ph s/f, cat "request", name "serve", bp "e")
 *     from the request's slice to each mark, and to a mark at the first GPU
 *     span (CUPTI) of each of its prefill steps on the GPU stream's track.
 *     Every flow event has the ts, pid, tid and cat of the event it binds to
 *     (DevTools binds on those; Perfetto on the slice open there);
 *   - scheduler slices (cat "sched": running, runnable, blocked) on the
 *     thread tracks, by mode (enum perfetto_sched): SERVED (default) draws,
 *     from the scheduler view (user/model/sched.h), the threads that served
 *     a request only while they served its TTFT (reader: arrival -> engine
 *     has it; engine: -> prefill end; writer: -> first token) and the token
 *     gaps named as ITL outliers, runs of intervals shorter than
 *     PERFETTO_SCHED_MERGE_NS merged into one slice named by its main state
 *     (args: on_cpu_us, runnable_us, blocked_us, n), at most
 *     PERFETTO_SCHED_SLICES_PER_REQ per request (past it, the merge quantum
 *     doubles until they fit: perfetto_served.c); ALL draws every traced
 *     thread's switches as they come; NONE draws none;
 *   - "Connections" (pid PERFETTO_PID_CONNS, tid = a number per socket): an
 *     X per read syscall, one per run of write syscalls (a response: its
 *     writes and bytes), a counter ("C") of cumulative bytes in and out
 *     after each, and an instant "req N" at each request's start (args:
 *     req, conn_seq, cookie: the request slice's conn, conn_seq and
 *     conn_cookie join them);
 *   - "GPU <device>" (pid PERFETTO_PID_GPU + device, tid = stream): kernels
 *     and copies from the CUPTI store, read PERFETTO_GPU_LAG_NS behind the
 *     clock (collectors deliver per-thread buffers late) and at the end;
 *   - across processes (user/model/hops/view.h: a gateway and its upstream,
 *     a frontend and its engine): on a "hops lane N" track of each process
 *     (tid PERFETTO_TID_HOPS + tgid + (N - 1) * 2^22) the client-facing
 *     process's slice over the TTFT and each other process's slice, and
 *     one flow (cat "hop") through them and back (perfetto_hops.c).
 *
 * Events are streamed to FILE.tmp.XXXXXX as they come (memory bounded by the
 * per-thread, per-connection and lane tables); finish writes the closing
 * bracket, the drop counts ("otherData") and renames the file into place,
 * so FILE is always either absent or complete, also after Ctrl-C.
 */
#ifndef TTFTRACE_PERFETTO_H
#define TTFTRACE_PERFETTO_H

#include "user/model/gpu_store.h"
#include "user/model/sched.h"
#include "user/export/sink.h"

/* Synthetic pids, above the kernel's PID_MAX_LIMIT (2^22), for non-process tracks. */
#define PERFETTO_PID_REQUESTS 0x40000001u
#define PERFETTO_PID_CONNS 0x40000002u
#define PERFETTO_PID_GPU 0x40001000u	/* + CUDA device id */
#define PERFETTO_TID_HOPS 0x40000000u	/* + tgid (+ lane * 2^22): a process's hop lanes */

#define PERFETTO_GPU_LAG_NS 3000000000ull
#define PERFETTO_MAX_THREADS 4096	/* thread-state table; more threads are counted, not drawn */
#define PERFETTO_MAX_CONNS 4096		/* connection table; likewise */
#define PERFETTO_MAX_LANES 256		/* request lanes; more concurrent requests are counted */
#define PERFETTO_SCHED_MERGE_NS 100000ull	/* SERVED: shorter intervals are merged */
#define PERFETTO_SCHED_SLICES_PER_REQ 32	/* SERVED: the most slices a request draws */

enum perfetto_sched {
	PERFETTO_SCHED_SERVED = 0,
	PERFETTO_SCHED_ALL,
	PERFETTO_SCHED_NONE,
};

/* "served", "all", "none" -> *out. 0 or -EINVAL. */
int perfetto_sched__parse(const char *s, enum perfetto_sched *out);

struct perfetto_opts {
	struct gpu_store *gpu;		/* NULL: no GPU tracks */
	const struct sched_view *sched;	/* SERVED reads it; NULL: no slices in that mode */
	enum perfetto_sched sched_mode;
};

/*
 * A sink writing the timeline to @path (its directory must be writable).
 * Fills *out. Returns 0, or a negative errno from creating the temporary
 * file (-ENOMEM).
 */
int perfetto_sink__new_opts(const char *path, const struct perfetto_opts *o,
			    struct ttf_sink *out);
/* The same with @gpu, mode SERVED and no scheduler view. */
int perfetto_sink__new(const char *path, struct gpu_store *gpu, struct ttf_sink *out);

#endif /* TTFTRACE_PERFETTO_H */
