/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * Scheduler view: per-thread state intervals built from the records of
 * bpf/sched.bpf.c, and overlay queries ("of the frontend's 12.1 ms, 8.0 ms
 * runnable but not running").
 *
 * State machine per thread (record types from bpf/sched.h):
 *   OUT_RUNNABLE          -> RUNNABLE  (preempted: waits on the runqueue)
 *   OUT_BLOCKED           -> BLOCKED   (sleeping until a wakeup)
 *   OUT_DEAD              -> EXITED    (reported as unknown afterwards)
 *   WAKEUP, WAKEUP_NEW    -> RUNNABLE  only from BLOCKED, UNKNOWN or EXITED; a
 *                            wakeup of a thread that is on a CPU or already
 *                            runnable changes nothing (the kernel traces
 *                            wakeups of tasks still on the runqueue too)
 *   IN                    -> ON_CPU
 * Before a thread's first record its state is unknown (a switch-out does not
 * say since when it ran). RUNNABLE time ended by IN is one runqueue-latency
 * sample (wakeup or preemption until switch-in, as libbpf-tools runqlat).
 * A record older than the thread's last one (ring order across CPUs differs
 * from time order by a few ns) is applied at the last one's time and counted.
 * A transition that implies a lost record (a switch-out of a thread that is
 * not on a CPU, a switch-in of a blocked one) is counted, and the thread's
 * current interval becomes unknown time instead of a state it was not
 * wholly in.
 *
 * Memory is bounded: a thread keeps the state changes of the last
 * horizon_ns of event time, at most max_marks_per_thread of them (8 bytes
 * each), and all threads together at most max_marks_total: a thread holds at
 * most its share, max_marks_total / threads (never under 16), so at 64 busy
 * threads each keeps 4096 by default. Older ones are dropped and counted
 * (marks_horizon, marks_cap), and queries see that time as unknown; a query
 * that reaches into time dropped by a cap (not by the horizon) is counted in
 * overlays_cut. Exited threads are freed horizon_ns after their exit. Live
 * threads that are not seen for longer (a worker blocked for minutes, a
 * busy-polling thread that never switches) are kept, trimmed to their one
 * current state. At most max_threads threads; records of more are dropped
 * and counted.
 *
 * Times are CLOCK_MONOTONIC ns (bpf_ktime_get_ns()). Not thread-safe.
 */
#ifndef TTFTRACE_SCHED_H
#define TTFTRACE_SCHED_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include "bpf/sched.h"

#define SCHED_COMM_LEN 16
/*
 * Runqueue-latency histogram: bucket 0 holds waits < 1 us, bucket i (1..30)
 * waits in [2^(i-1), 2^i) us, bucket 31 waits >= 2^30 us.
 */
#define SCHED_HIST_BUCKETS 32

enum sched_state {
	SCHED_UNKNOWN = 0,
	SCHED_ON_CPU,
	SCHED_RUNNABLE,
	SCHED_BLOCKED,
	SCHED_EXITED,
};

struct sched_view_opts {
	uint64_t horizon_ns;		/* 0: 60 s */
	uint32_t max_marks_per_thread;	/* 0: 65536 (512 KiB per thread) */
	uint32_t max_marks_total;	/* 0: 262144 (2 MiB for all threads) */
	uint32_t max_threads;		/* 0: 65536 */
};

/* Time of [start_ns, end_ns) by state; the four fields sum to end_ns - start_ns. */
struct sched_overlay {
	uint64_t on_cpu_ns;
	uint64_t runnable_ns;	/* runnable but not running: runqueue wait */
	uint64_t blocked_ns;	/* sleeping (off-CPU, not runnable) */
	uint64_t unknown_ns;	/* no data: before the first record, dropped, after exit or */
				/* after the newest record of the whole view */
};

/* Whole-run totals of one thread (not limited to the horizon). */
struct sched_thread_summary {
	uint32_t tid;
	uint32_t tgid;
	char comm[SCHED_COMM_LEN];	/* "" when unknown */
	uint64_t on_cpu_ns;
	uint64_t runnable_ns;
	uint64_t blocked_ns;
	uint64_t max_runq_ns;		/* longest single runqueue wait */
	uint64_t n_runq;		/* runqueue waits (histogram samples) */
	bool exited;
};

struct sched_stats {
	uint64_t events;		/* records applied */
	uint64_t threads;		/* threads in the view now */
	uint64_t threads_freed;		/* exited threads freed after the horizon */
	uint64_t threads_refused;	/* records dropped: max_threads reached */
	uint64_t marks_horizon;		/* state changes dropped: older than the horizon */
	uint64_t marks_cap;		/* state changes dropped: a per-thread cap or share */
	uint64_t marks;			/* state changes held now, all threads */
	uint64_t overlays_cut;		/* queries that began before a thread's capped-off time */
	uint64_t reordered;		/* records older than their thread's last record */
	uint64_t inconsistent;		/* transitions implying a lost record: interval unknown */
	uint64_t alloc_failed;		/* records dropped: out of memory */
};

struct sched_view;

/* opts may be NULL (defaults). Returns NULL (errno = ENOMEM) on failure. */
struct sched_view *sched__new(const struct sched_view_opts *opts);
void sched__free(struct sched_view *v);

/*
 * Apply one record. Returns 1 when it introduced a thread the view did not
 * know (the caller may then set its comm), 0 when applied, -EINVAL for an
 * unknown type, -ENOSPC (max_threads) or -ENOMEM; failures are counted.
 */
int sched__add(struct sched_view *v, const struct ttf_sched_event *e);

/*
 * Give a thread whose state is still unknown a starting state at ts_ns (e.g.
 * SCHED_BLOCKED for a thread that /proc shows sleeping when tracing starts).
 * Returns 0, -EEXIST when the thread's state is already known, -EINVAL for a
 * state other than ON_CPU/RUNNABLE/BLOCKED, -ENOSPC or -ENOMEM.
 */
int sched__seed(struct sched_view *v, uint32_t tid, uint32_t tgid, uint64_t ts_ns,
		enum sched_state st);
/* Returns 0 or -ENOENT. comm is copied (truncated to SCHED_COMM_LEN - 1). */
int sched__set_comm(struct sched_view *v, uint32_t tid, const char *comm);
/*
 * Mark every thread of tgid exited at ts_ns (the process exit record of the
 * net probe), for threads whose last switch-out record was lost.
 */
void sched__forget_tgid(struct sched_view *v, uint32_t tgid, uint64_t ts_ns);

/* Newest record time seen: the view's data are complete up to here. 0 before any. */
uint64_t sched__last_ns(const struct sched_view *v);

/*
 * Split [start_ns, end_ns) of thread tid by state. Returns 0; -ENOENT when
 * the view does not know tid (out is then all unknown); -EINVAL when
 * end_ns < start_ns (out zeroed). Drain the probe before querying: time after
 * sched__last_ns() is unknown.
 */
int sched__overlay(const struct sched_view *v, uint32_t tid, uint64_t start_ns, uint64_t end_ns,
		   struct sched_overlay *out);
/*
 * Call fn for each state interval of thread tid inside [start_ns, end_ns),
 * clipped to it and oldest first (unknown time is skipped; an exited thread
 * reports SCHED_EXITED), with *tgid the thread's process. Returns 0, the
 * first non-zero value fn returned, -ENOENT (tid not in the view) or -EINVAL
 * (end_ns < start_ns).
 */
typedef int (*sched_interval_fn)(void *ctx, uint32_t tgid, enum sched_state st,
				 uint64_t start_ns, uint64_t end_ns);
int sched__intervals(const struct sched_view *v, uint32_t tid, uint64_t start_ns,
		     uint64_t end_ns, sched_interval_fn fn, void *ctx);
/*
 * sched__overlay() in the attribution's shape: a ttf_overlay_fn
 * (user/model/attrib.h) with ctx = the struct sched_view, for the tracer and
 * replay alike.
 */
struct ttf_overlay;
int sched__attrib_overlay(void *view, uint32_t tid, uint64_t start_ns, uint64_t end_ns,
			  struct ttf_overlay *out);

/*
 * Up to max threads, the most runqueue wait first (ties: lower tid first),
 * including exited threads (freed ones: the 16 with the most wait). Open
 * intervals count up to sched__last_ns(). Returns the number written.
 */
size_t sched__top_runq(const struct sched_view *v, struct sched_thread_summary *out, size_t max);
/* Runqueue-latency histogram over all threads and the whole run (see SCHED_HIST_BUCKETS). */
void sched__runq_hist(const struct sched_view *v, uint64_t out[SCHED_HIST_BUCKETS]);
/* Lower bound of bucket i in us (0 for bucket 0). */
uint64_t sched__hist_lo_us(int i);
void sched__stats(const struct sched_view *v, struct sched_stats *out);

#endif /* TTFTRACE_SCHED_H */
