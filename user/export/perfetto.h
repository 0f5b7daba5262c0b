/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * --perfetto FILE: a timeline in the Chrome trace-event JSON Object Format
 * ({"traceEvents":[...],"displayTimeUnit":"ms"}), which ui.perfetto.dev and
 * chrome://tracing open. Format reference: "Trace Event Format" (Google doc
 * linked from https://perfetto.dev/docs/getting-started/other-formats).
 *
 * Timestamps ("ts") and durations ("dur") are CLOCK_MONOTONIC microseconds
 * with ns precision (three decimals), the clock of every tap. Tracks, named
 * with "M" process_name/thread_name metadata events:
 *   - "Requests" (pid PERFETTO_PID_REQUESTS, tid = request id): a complete
 *     ("X") event for the whole request (args: ttft_ms, e2e_ms, tpot_ms,
 *     tokens, grade, conn_cookie and flags[], the names NDJSON prints,
 *     user/model/vocab.h), one per TTFT stage (cat "stage";
 *     they tile [start, first token] and sum to TTFT exactly), tokenize as
 *     a nested sub-stage (cat "substage"), an instant ("i") per token event;
 *   - each traced server thread (pid = tgid, tid = tid): running, runnable
 *     and blocked slices rebuilt from sched_switch/sched_wakeup records
 *     (bpf/sched.h): IN starts running, OUT_RUNNABLE starts runnable,
 *     OUT_BLOCKED starts blocked, WAKEUP turns blocked into runnable;
 *   - "Connections" (pid PERFETTO_PID_CONNS, tid = a number per socket):
 *     an X per read/write syscall (sys_enter to return) with its bytes, and
 *     a counter ("C") of cumulative bytes in and out per connection;
 *   - "GPU <device>" (pid PERFETTO_PID_GPU + device, tid = stream): kernels
 *     and copies from the CUPTI store, read PERFETTO_GPU_LAG_NS behind the
 *     clock (collectors deliver per-thread buffers late) and at the end.
 *
 * Events are streamed to FILE.tmp.XXXXXX as they come (memory bounded by the
 * per-thread and per-connection tables); finish writes the closing bracket,
 * the drop counts ("otherData") and renames the file into place, so FILE is
 * always either absent or complete, also after Ctrl-C.
 */
#ifndef TTFTRACE_PERFETTO_H
#define TTFTRACE_PERFETTO_H

#include "user/model/gpu_store.h"
#include "user/export/sink.h"

/* Synthetic pids, above the kernel's PID_MAX_LIMIT (2^22), for non-process tracks. */
#define PERFETTO_PID_REQUESTS 0x40000001u
#define PERFETTO_PID_CONNS 0x40000002u
#define PERFETTO_PID_GPU 0x40001000u	/* + CUDA device id */

#define PERFETTO_GPU_LAG_NS 3000000000ull
#define PERFETTO_MAX_THREADS 4096	/* thread-state table; more threads are counted, not drawn */
#define PERFETTO_MAX_CONNS 4096		/* connection table; likewise */

/*
 * A sink writing the timeline to @path (its directory must be writable);
 * @gpu may be NULL (no GPU tracks). Fills *out. Returns 0, or a negative
 * errno from creating the temporary file (-ENOMEM).
 */
int perfetto_sink__new(const char *path, struct gpu_store *gpu, struct ttf_sink *out);

#endif /* TTFTRACE_PERFETTO_H */
