/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * The probe source interface. A source attaches to the kernel or to the
 * traced processes and yields records through the hooks it was opened with
 * (struct ttf_records, user/lib/records.h; the pipeline's in the tracer).
 * The tracer's loop treats every source alike: poll, tick, counters, and
 * at start-up the kernel features each one lacks.
 *
 * Sources today (each loader's *__source() fills one in):
 *   net     bpf/net.bpf.c through user/probe/net_probe.c: socket
 *           tracepoints (sock_recv_length, sock_send_length, 6.3+), which
 *           io_uring sends/recvs fire too (payload: io_uring_submit_req,
 *           docs/kernel.md B1.10)
 *   sched   bpf/sched.bpf.c through user/probe/sched_probe.c
 *   engine  uprobes, user/probe/engine_setup.c
 *   gpu     the CUPTI collectors' socket, user/probe/gpu_rx.c
 *   tls     TLS library uprobes, user/probe/tls_probe.c (its records come
 *           through the net probe's ring: poll is empty, tick places probes)
 *
 * A new source (a new kernel's or library's hooks) is a loader in user/probe/ that yields the same
 * records and fills in a struct ttf_probe_source; the tracer adds it to its
 * list (user/cmd/trace.c, open_sources) and nothing downstream changes.
 */
#ifndef TTFTRACE_PROBE_SOURCE_H
#define TTFTRACE_PROBE_SOURCE_H

#include <stdint.h>
#include "user/lib/records.h"

/* An optional kernel feature (tracepoint, hook) a source uses, and what is lost without it. */
struct ttf_probe_feature {
	const char *name;	/* e.g. "net_dev_start_xmit" */
	int present;		/* attached */
	const char *lost;	/* e.g. "TTFT ends at the write, not at the device" */
};

#define TTF_PROBE_MAX_FEATURES 8

struct ttf_probe_source {
	const char *name;	/* "net", "sched", "engine", "gpu" */
	void *ctx;
	/*
	 * Drain what is pending into the records, first waiting up to
	 * timeout_ms for a wakeup when > 0. Returns records drained or -errno.
	 */
	int (*poll)(void *ctx, int timeout_ms);
	/*
	 * An fd that turns readable when the source asks to be drained early (a
	 * ring's epoll fd: its programs force a wakeup when the ring fills), for
	 * the tracer's one wait over every source; -1 or NULL: none. Optional.
	 */
	int (*wait_fd)(void *ctx);
	/*
	 * 1: poll only when wait_fd turned readable (a socket source, whose
	 * every message wakes it), so an idle source costs no syscall per drain.
	 * Rings keep 0: their programs mostly submit without a wakeup.
	 */
	int ready_only;
	/* About every 200 ms (CLOCK_MONOTONIC ns): rescans and the like. Optional. */
	void (*tick)(void *ctx, uint64_t now_ns);
	/* Drop and health counters (names static). Optional. */
	ttf_counters_fn counters;
	/* Optional features into f[0..cap); returns how many. Optional. */
	int (*features)(void *ctx, struct ttf_probe_feature *f, int cap);
};

/* Warn once per missing feature of s: "<name> not attached: <lost>". Returns how many. */
int probe_source__warn_missing(const struct ttf_probe_source *s);

#endif /* TTFTRACE_PROBE_SOURCE_H */
