/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * The CUPTI activity collector inside a CUDA process (docs/design.md D7).
 * One per process: CUPTI's buffer callbacks carry no user pointer, and
 * activity tracing has a single subscriber on CUDA <= 13.2 (docs/cupti.md
 * A1). inject.c drives it from InitializeInjection; tests drive it
 * with a fake struct cupti_api.
 *
 * Threads: CUPTI's buffer callbacks only allocate or queue buffers; records
 * are decoded and sent on the collector's own thread, started on the first
 * buffer request (a process that never produces activity pays for no thread,
 * no decoder tables, no socket). That thread also calls
 * cuptiActivityFlushAll(0) every flush period, because CUPTI's own periodic
 * flush only returns full buffers (docs/cupti.md A3).
 */
#ifndef TTFTRACE_CUPTI_COLLECTOR_H
#define TTFTRACE_CUPTI_COLLECTOR_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "cupti/cupti_api.h"
#include "cupti/gpu_wire.h"

/* Internal to libttftrace-cupti.so: keep out of the host process's symbol space. */
#pragma GCC visibility push(hidden)

struct cupti_collector;

struct cupti_collector_opts {
	size_t sz;                /* sizeof(struct cupti_collector_opts) */
	const char *sock_path;    /* NULL: $TTFTRACE_CUPTI_SOCK, else TTF_GPU_SOCK_DEFAULT */
	size_t buf_bytes;         /* host activity buffer size; 0: 2 MiB */
	uint32_t max_buffers;     /* buffers held at once (CUPTI's + queued); 0: 32 */
	uint32_t flush_period_ms; /* own-thread cuptiActivityFlushAll(0) period; 0: 200 ms */
	bool api_all;             /* keep every API record, not only launches/copies/syncs */
	int log_fd;               /* where the one-line notices go; 0: stderr */
};

/* enum ttf_collector_state, from cupti_collector__state() */
enum cupti_collector_state {
	CUPTI_COL_READY = 0,     /* created, not started */
	CUPTI_COL_RUNNING = 1,
	CUPTI_COL_INERT = 2,     /* CUPTI refused us (see the stderr line); nothing is traced */
	CUPTI_COL_STOPPED = 3,
	CUPTI_COL_CHILD = 4,     /* forked child of a traced process: silent, touches nothing */
};

/*
 * Create the process's collector around @api (copied). Returns 0 and sets
 * @out, -EBUSY if one exists, -EINVAL on bad opts, -ENOMEM.
 */
int cupti_collector__new(const struct cupti_api *api, const struct cupti_collector_opts *opts,
			 struct cupti_collector **out);

/*
 * Subscribe and enable tracing, in the order of docs/cupti.md A1:
 * subscribe(_v2) -> thread ids SYSTEM -> MONOTONIC timestamp callback ->
 * fatal-error callback -> buffer callbacks -> CONCURRENT_KERNEL, MEMCPY,
 * MEMSET, RUNTIME, DRIVER. Never KIND_KERNEL: it serialises kernels
 * (docs/cases.md #19). When CUPTI is held by another client or privileges
 * are missing (docs/cases.md #18)
 * it writes one line to the log fd, unsubscribes and goes inert.
 * Returns 0, -EBUSY (another subscriber), -EPERM (privileges), -EIO (other
 * CUPTI error; also inert), -EALREADY if not READY.
 */
int cupti_collector__start(struct cupti_collector *c);

/* Ask CUPTI for completed buffers now (0 = complete records only, 1 = forced) and decode them. */
int cupti_collector__flush(struct cupti_collector *c, bool forced);

/*
 * Forced flush, stop the thread, decode and send what is left, send the
 * final stats. Idempotent; a no-op in a forked child. Called at exit.
 */
void cupti_collector__stop(struct cupti_collector *c);

/* Stop, unsubscribe, free. The next cupti_collector__new() may follow. */
void cupti_collector__free(struct cupti_collector *c);

enum cupti_collector_state cupti_collector__state(const struct cupti_collector *c);
/* Snapshot of the cumulative counters (what STATS messages carry). */
void cupti_collector__stats(const struct cupti_collector *c, struct ttf_gpu_stats *out);

#pragma GCC visibility pop

#endif /* TTFTRACE_CUPTI_COLLECTOR_H */
