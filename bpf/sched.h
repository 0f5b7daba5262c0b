/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * Shared ABI between bpf/sched.bpf.c and user space: one flight-recorder record
 * per switch-out of a traced thread (struct ttf_sched_span). Only __uN types, so both
 * the BPF side (vmlinux.h) and user space can include it.
 *
 * Timestamps are bpf_ktime_get_ns(), i.e. CLOCK_MONOTONIC nanoseconds (see
 * docs/kernel.md B6), the clock of bpf/net.h.
 */
#ifndef TTFTRACE_BPF_SCHED_H
#define TTFTRACE_BPF_SCHED_H

#ifndef __VMLINUX_H__	/* user space: the BPF side gets __uN from vmlinux.h */
#include <linux/types.h>
#endif

/*
 * ttf_sched_event.type. A switch where both prev and next are traced gives
 * two events (OUT_* for prev, IN for next) with the same ts_ns and cpu.
 */
enum ttf_sched_type {
	TTF_SCHED_OUT_RUNNABLE = 1, /* switched out, still runnable: preempted or TASK_RUNNING */
	TTF_SCHED_OUT_BLOCKED = 2,  /* switched out to sleep (S, D, stopped, ...) */
	TTF_SCHED_OUT_DEAD = 3,     /* last switch-out of an exiting thread (TASK_DEAD) */
	TTF_SCHED_IN = 4,           /* switched in: starts running */
	TTF_SCHED_WAKEUP = 5,       /* sched_wakeup: made runnable (may already be) */
	TTF_SCHED_WAKEUP_NEW = 6,   /* sched_wakeup_new: a new thread made runnable */
};

/*
 * One scheduler event as user space (user/model/sched.c, recordings) sees
 * it. 24 bytes. The recorder does not hold these: user/probe/sched_probe.c
 * expands each struct ttf_sched_span into them.
 */
struct ttf_sched_event {
	__u64 ts_ns;
	__u32 tid;
	__u32 tgid;
	__u32 state;	/* OUT_*: the prev_state argument of sched_switch (task __state bits) */
	__u16 cpu;	/* OUT_*, IN: the CPU switching; WAKEUP*: the CPU it was queued on */
	__u8 type;	/* enum ttf_sched_type */
	__u8 pad;
};

/*
 * The span record: one per switch-out of a traced thread, carrying the
 * interval that ends there, so that a wake-run-sleep cycle costs one record
 * instead of three (WAKEUP, IN, OUT). type is an OUT_* type: the thread was
 * woken at wake_ns (0: no wakeup since its previous switch-out was seen;
 * with targ_run_delay, the start of the run-queue wait that ended at in_ns,
 * which after a preemption is that switch-out's time),
 * switched in on cpu at in_ns (0: unknown, a switch this program missed)
 * and switched out at ts_ns. type WAKEUP or WAKEUP_NEW: a wakeup at ts_ns
 * sent alone (a new thread, or the wake map was full); in_ns, wake_ns 0.
 * 40 bytes, one slot of the flight recorder.
 */
struct ttf_sched_span {
	__u64 ts_ns;
	__u64 in_ns;
	__u64 wake_ns;
	__u32 tid;
	__u32 tgid;
	__u32 state;	/* OUT_*: prev_state of sched_switch */
	__u16 cpu;	/* OUT_*: the CPU switching (and of in_ns); WAKEUP*: the CPU it was queued on */
	__u8 type;	/* enum ttf_sched_type: OUT_*, WAKEUP or WAKEUP_NEW */
	__u8 pad;
};

/*
 * The flight recorder (sched.bpf.c `flight`, user/probe/sched_flight.c):
 * CPU c's spans are slots c << log2 ... (c + 1) << log2 of `flight`, and
 * its count of spans written ever is word c * TTF_SCHED_FLIGHT_HEAD_STRIDE
 * of `flight_head` (one 64-byte line per CPU).
 */
#define TTF_SCHED_FLIGHT_HEAD_STRIDE 8
/* Word c * STRIDE + 1 of `flight_head`: the spans of CPU c user space has read. */
#define TTF_SCHED_FLIGHT_READ_WORD 1

/*
 * Counters. In the per-CPU array map `counters` (user space sums over
 * CPUs), except the two user space fills from the flight recorder.
 */
enum ttf_sched_counter {
	TTF_SCHED_CNT_OVERWRITTEN = 0, /* user space: spans overwritten before it read them */
	TTF_SCHED_CNT_EVENTS,           /* user space: spans written (the heads' sum) */
	/*
	 * sched_switch calls this program never saw: on some CPU, a switch-out
	 * of a task that the CPU's previous switch did not put on it. One gap
	 * may hide several switches; the wakeups in it are lost unseen.
	 */
	TTF_SCHED_CNT_SWITCH_GAPS,
	/*
	 * Wakeups sent as a record of their own: the map `wakes` (the wakeup
	 * time a traced thread's next span carries) was full or busy.
	 */
	TTF_SCHED_CNT_WAKE_MAP_FULL,
	TTF_SCHED_CNT_SWITCHES,		/* sched_switch calls seen, all tasks (from struct ttf_sched_chain) */
	TTF_SCHED_CNT__MAX,
};

/* Processes whose traced-set answer a CPU keeps (struct ttf_sched_chain.tgid). */
#define TTF_SCHED_TGID_CACHE 4
/* How long a kept answer holds, in jiffies (100 ms at HZ 250). */
#define TTF_SCHED_TGID_CACHE_JIFFIES 25

/*
 * Per-CPU value of the map `chain`: the switch chain check and the CPU's
 * cache of traced-set answers (see sched.bpf.c).
 */
struct ttf_sched_chain {
	__u64 switches;		/* sched_switch calls this program saw on this CPU */
	__u64 in_ns;		/* when next began to run; 0: not read (next untraced) */
	__u64 run_delay_ns;	/* targ_run_delay: next's sched_info.run_delay then */
	__u32 next_plus1;	/* next->pid + 1 of the last of them; 0: none yet */
	__u32 next_traced;	/* the traced-set answer for next's process then */
	__u32 tgid[TTF_SCHED_TGID_CACHE];	/* 0: empty slot */
	__u32 checked[TTF_SCHED_TGID_CACHE];	/* when, in jiffies (low 32 bits) */
	__u8 traced[TTF_SCHED_TGID_CACHE];	/* the answer: 1 in traced_tgids */
	__u32 next_slot;	/* the slot the next miss replaces */
};

#endif /* TTFTRACE_BPF_SCHED_H */
