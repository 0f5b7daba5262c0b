// SPDX-License-Identifier: GPL-2.0-only
/*
 * Scheduler probes: one record per switch-out, switch-in and wakeup of a
 * thread whose process is in `traced_tgids`. User space (user/model/sched.c) turns
 * them into per-thread on-CPU / runnable / blocked intervals.
 *
 *   sched_switch      OUT_{RUNNABLE,BLOCKED,DEAD} for prev, IN for next
 *   sched_wakeup      WAKEUP
 *   sched_wakeup_new  WAKEUP_NEW
 *
 * Kernel facts (docs/kernel.md B1.6):
 * tp_btf prototypes on 6.18 are sched_switch(bool preempt, prev, next,
 * unsigned int prev_state) and sched_wakeup(_new)(struct task_struct *p);
 * prev is still runnable when preempt || prev_state == TASK_RUNNING (the
 * runqlat rule); sched_wakeup may run on another CPU than p's, so p, never
 * `current`, names the thread.
 */
#include "vmlinux.h"
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_tracing.h>
#include "bpf/sched.h"
#include "bpf/common.bpf.h"

char LICENSE[] SEC("license") = "GPL";

#define TASK_RUNNING 0
#define TASK_DEAD 0x80	/* include/linux/sched.h, unchanged since 4.14 */

/* Above this many unread bytes, wake the consumer (it drains on a timer). */
const volatile __u64 targ_wakeup_bytes = 2 << 20;

/*
 * Same definition as in net.bpf.c: user space replaces it with the net
 * probe's map (bpf_map__reuse_fd) so that fork/exit tracking drives both.
 */
struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 4096);
	__type(key, __u32);	/* tgid */
	__type(value, __u8);
} traced_tgids SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, TTF_SCHED_CNT__MAX);
	__type(key, __u32);
	__type(value, __u64);
} counters SEC(".maps");

/*
 * Per CPU: the task the last sched_switch this program saw put on the CPU.
 * The next switch on that CPU must switch that task out; when it does not,
 * the kernel ran switches without this program (seen on a Firecracker
 * guest, where bpftrace's sched_switch misses the same ones), and records
 * of traced threads may be missing too: counted, so user space's unknown
 * time has a visible cause.
 */
struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct ttf_sched_chain);
} chain SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_RINGBUF);
	__uint(max_entries, 4 << 20);	/* resized by user space before load */
} events SEC(".maps");

/* The shared helpers (common.bpf.h), bound to this program's maps. */
static __always_inline void count(__u32 idx)
{
	ttf_count(&counters, idx);
}

static __always_inline bool tgid_traced(__u32 tgid)
{
	return ttf_tgid_traced(&traced_tgids, tgid);
}

static __always_inline void emit(const struct task_struct *p, __u8 type, __u32 state, __u32 cpu)
{
	struct ttf_sched_event *e;

	e = ttf_rb_reserve(&events, sizeof(*e), &counters, TTF_SCHED_CNT_RINGBUF_FULL);
	if (!e)
		return;
	/* Read the clock after reserving, so ring order follows time closely. */
	e->ts_ns = bpf_ktime_get_ns();
	e->tid = p->pid;
	e->tgid = p->tgid;
	e->state = state;
	e->cpu = cpu;
	e->type = type;
	e->pad = 0;
	bpf_ringbuf_submit(e, ttf_rb_wakeup_flags(&events, targ_wakeup_bytes));
	count(TTF_SCHED_CNT_EVENTS);
}

SEC("tp_btf/sched_switch")
int BPF_PROG(handle_switch, bool preempt, struct task_struct *prev, struct task_struct *next,
	     unsigned int prev_state)
{
	__u32 cpu = bpf_get_smp_processor_id(), zero = 0;
	struct ttf_sched_chain *ch = bpf_map_lookup_elem(&chain, &zero);
	__u8 type;

	if (ch) {
		if (ch->next_plus1 && ch->next_plus1 != (__u32)prev->pid + 1)
			count(TTF_SCHED_CNT_SWITCH_GAPS);
		ch->next_plus1 = (__u32)next->pid + 1;
		ch->switches++;
	}
	if (tgid_traced(prev->tgid)) {
		if (preempt || prev_state == TASK_RUNNING)
			type = TTF_SCHED_OUT_RUNNABLE;
		else if (prev_state & TASK_DEAD)
			type = TTF_SCHED_OUT_DEAD;
		else
			type = TTF_SCHED_OUT_BLOCKED;
		emit(prev, type, prev_state, cpu);
	}
	if (tgid_traced(next->tgid))
		emit(next, TTF_SCHED_IN, 0, cpu);
	return 0;
}

SEC("tp_btf/sched_wakeup")
int BPF_PROG(handle_wakeup, struct task_struct *p)
{
	if (tgid_traced(p->tgid))
		emit(p, TTF_SCHED_WAKEUP, 0, p->wake_cpu);
	return 0;
}

SEC("tp_btf/sched_wakeup_new")
int BPF_PROG(handle_wakeup_new, struct task_struct *p)
{
	if (tgid_traced(p->tgid))
		emit(p, TTF_SCHED_WAKEUP_NEW, 0, p->wake_cpu);
	return 0;
}
