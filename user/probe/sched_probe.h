/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * Lifecycle of the scheduler probes (bpf/sched.bpf.c): open, share the
 * traced-tgid map, load, attach, drain the ring buffer into the on_event
 * hook (the pipeline's sched entry, user/lib/records.h), read the drop
 * counters.
 *
 * The records are submitted with BPF_RB_NO_WAKEUP (a forced wakeup only when
 * the ring is filling up), so epoll reports nothing for most of them: call
 * sched_probe__poll(sp, 0) about every 10 ms (docs/kernel.md B4: with
 * NO_WAKEUP only ring_buffer__consume() drains).
 */
#ifndef TTFTRACE_SCHED_PROBE_H
#define TTFTRACE_SCHED_PROBE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include "bpf/sched.h"
#include "user/lib/records.h"
#include "user/probe/source.h"

struct sched_probe;
struct btf;
struct ring_buffer;

typedef int (*sched_event_cb)(void *ctx, const struct ttf_sched_event *e);

struct sched_probe_opts {
	size_t sz;		/* sizeof(struct sched_probe_opts) */
	uint32_t ringbuf_bytes;	/* power of two, >= page size; 0: 4 MiB */
	/*
	 * > 0: fd of a traced_tgids map to share (the net probe's, so that its
	 * fork/exit tracking drives both); <= 0: the probe's own map, filled
	 * with sched_probe__trace_tgid().
	 */
	int tgid_map_fd;
	sched_event_cb on_event;	/* required: every event (each ring record is 1 to 3) */
	void *ctx;
	/*
	 * Kernel BTF for the tracepoint check (user/probe/tp_check.h); NULL skips
	 * it. Every scheduler tracepoint is required.
	 */
	const struct btf *vmlinux_btf;
};

/*
 * Open and load. Returns NULL with *err = -EPERM (privileges), -ENOENT (a
 * tracepoint or kernel type is missing; missing_tp[missing_len] gets the
 * tracepoint's name when the tp_check found it absent, else ""), -EINVAL (no
 * on_event) or another negative errno.
 */
struct sched_probe *sched_probe__open_load(const struct sched_probe_opts *opts, int *err,
					   char *missing_tp, size_t missing_len);
/*
 * The events one ring record (struct ttf_sched_span, bpf/sched.h) stands
 * for, oldest first, into ev: the thread's wakeup and switch-in when the
 * span has them, then its switch-out; a WAKEUP or WAKEUP_NEW record is one
 * event. Returns how many (1 to 3).
 */
int sched_probe__expand(const struct ttf_sched_span *s, struct ttf_sched_event ev[3]);
/*
 * Can sched_switch time each wait from the task's sched_info.run_delay (in
 * the kernel's BTF; 5.14+ or schedstats), so that sched_wakeup need not be
 * traced?
 * TTFTRACE_SCHED_WAKEUPS=1 in the environment says no.
 */
bool sched_probe__run_delay_usable(const struct btf *vmlinux_btf);
/* Attach sched_switch, sched_wakeup (unless run_delay_usable), sched_wakeup_new. Returns 0 or -errno of the first failure. */
int sched_probe__attach(struct sched_probe *sp);
/* Add a process to the probe's traced set (with a shared map: the net probe's set). */
int sched_probe__trace_tgid(struct sched_probe *sp, uint32_t tgid);
/*
 * Drain the ring buffer into on_event; with timeout_ms > 0 first wait up to
 * that long for a (rare) forced wakeup. Returns ring records consumed or -errno.
 */
int sched_probe__poll(struct sched_probe *sp, int timeout_ms);
/*
 * Sum the per-CPU counters into out[TTF_SCHED_CNT__MAX] (enum ttf_sched_counter;
 * TTF_SCHED_CNT_SWITCHES from the chain map). Unreadable ones read 0.
 */
void sched_probe__counters(struct sched_probe *sp, uint64_t *out);
const char *sched_probe__counter_name(int idx);
/* The counters by name (a ttf_counters_fn; ctx is the probe). Returns how many. */
int sched_probe__counter_list(void *sp, struct report_counter *c, int cap);
/* The probe as a source (user/probe/source.h). */
void sched_probe__source(struct sched_probe *sp, struct ttf_probe_source *out);
/* Per-program BPF run-time stats (needs kernel.bpf_stats_enabled=1). Returns entries written. */
int sched_probe__prog_stats(struct sched_probe *sp, const char **names, uint64_t *run_cnt,
			    uint64_t *run_time_ns, int max);
void sched_probe__destroy(struct sched_probe *sp);

#endif /* TTFTRACE_SCHED_PROBE_H */
