/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * Lifecycle of the scheduler probes (bpf/sched.bpf.c): open, share the
 * traced-tgid map, load, attach, read the per-CPU flight recorder
 * (user/probe/sched_flight.h) into the on_event hook (the pipeline's sched
 * entry, user/lib/records.h), read the counters.
 *
 * Call sched_probe__poll(sp, 0) before a CPU fills its slots again (8,192
 * a CPU by default: a twelfth of a second at 100,000 traced switches a
 * second on one CPU); the source's wait_fd turns readable when a CPU's
 * slots are half unread. What is read later is counted in
 * sched_flight_overwritten.
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

typedef int (*sched_event_cb)(void *ctx, const struct ttf_sched_event *e);

struct sched_probe_opts {
	size_t sz;		/* sizeof(struct sched_probe_opts) */
	/*
	 * Spans each CPU's part of the flight recorder holds between two reads
	 * (sched_flight__log2 rounds it, and caps the whole); 0: 8,192.
	 */
	uint32_t flight_spans;
	/*
	 * > 0: fd of a traced_tgids map to share (the net probe's, so that its
	 * fork/exit tracking drives both); <= 0: the probe's own map, filled
	 * with sched_probe__trace_tgid().
	 */
	int tgid_map_fd;
	sched_event_cb on_event;	/* required: every event (each span is 1 to 3) */
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
 * The events one span (struct ttf_sched_span, bpf/sched.h) stands
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
 * Read what the flight recorder holds that is new into on_event; with
 * timeout_ms > 0 and nothing new, sleep that long and look again. Returns
 * the spans read or -errno.
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
