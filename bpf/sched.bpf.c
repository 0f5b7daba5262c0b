// SPDX-License-Identifier: GPL-2.0-only
/*
 * Scheduler probes: one record (struct ttf_sched_span) per switch-out of a
 * thread whose process is in `traced_tgids`, carrying the interval that
 * ends there. User space (user/probe/sched_probe.c) expands it into the
 * events user/model/sched.c turns into on-CPU / runnable / blocked time.
 *
 *   sched_switch      per CPU: when next began to run (map `chain`); for a
 *                     traced prev, its span: wakeup, switch-in, switch-out
 *   sched_wakeup      the first wakeup of a traced thread since its last
 *                     switch-out, kept in `wakes` for its next span; not
 *                     loaded where the run-queue wait is read at the
 *                     switch-in instead (targ_run_delay)
 *   sched_wakeup_new  a WAKEUP_NEW record
 *
 * One record per cycle instead of three, and the traced-set answers for
 * prev and next from a per-CPU cache: bench/sched_cost.sh and
 * bench/README.md have the numbers.
 * The price: a thread's current on-CPU interval reaches user space at its
 * switch-out, not at its switch-in.
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
#include <bpf/bpf_core_read.h>
#include "bpf/sched.h"
#include "bpf/common.bpf.h"

char LICENSE[] SEC("license") = "GPL";

#define TASK_RUNNING 0
#define TASK_DEAD 0x80	/* include/linux/sched.h, unchanged since 4.14 */

/*
 * 1: a span's wakeup time comes from the run-queue wait that ended at its
 * switch-in, from the task's own sched_info.run_delay, and handle_wakeup is
 * not loaded (user space sets it where the kernel keeps sched_info).
 */
const volatile bool targ_run_delay = false;

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
 * Per CPU: the task the last sched_switch this program saw put on the CPU,
 * and when (the in_ns of that task's span). The next switch on that CPU must switch that task out; when it does not,
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

/*
 * The per-CPU flight recorder: each CPU writes its spans into its own
 * 1 << targ_flight_log2 slots of `flight`, round and round, and counts them
 * in its word of `flight_head`; user space maps both and reads what is new
 * (user/probe/sched_flight.c). No lock, no helper call, nothing shared
 * between CPUs: a span costs a 40-byte store and a store (x86) or atomic
 * add (elsewhere) on the CPU's own cache line. What user space reads too
 * late is overwritten, and it counts that (sched_flight_overwritten).
 */
struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(map_flags, BPF_F_MMAPABLE);
	__uint(max_entries, 1);	/* CPUs x slots, set by user space before load */
	__type(key, __u32);
	__type(value, struct ttf_sched_span);
} flight SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(map_flags, BPF_F_MMAPABLE);
	__uint(max_entries, 1);	/* CPUs x TTF_SCHED_FLIGHT_HEAD_STRIDE */
	__type(key, __u32);
	__type(value, __u64);
} flight_head SEC(".maps");

/*
 * The recorder's only wakeup: a CPU whose unread spans reach half its slots
 * (checked each quarter round, against the count user space has read, word
 * 1 of its head line) sends one word here with BPF_RB_FORCE_WAKEUP, so
 * that a burst is drained before it overwrites (docs/kernel.md B4.1). A
 * full ring has a wakeup pending already: nothing is lost by its failing.
 */
struct {
	__uint(type, BPF_MAP_TYPE_RINGBUF);
	__uint(max_entries, 4096);
} flight_wake SEC(".maps");

/*
 * 1: bpf_jiffies64() is callable here (tracing programs since 5.9,
 * docs/kernel.md B1.17); else the cache ages by bpf_ktime_get_ns() in
 * 2^22 ns units, about a jiffy at HZ 250. User space sets it.
 */
const volatile bool targ_jiffies = false;

static __always_inline __u32 cache_clock(void)
{
	return targ_jiffies ? bpf_jiffies64() : bpf_ktime_get_ns() >> 22;
}

/* log2 of each CPU's slots in `flight` (user space sets it with the map's size). */
const volatile __u32 targ_flight_log2 = 0;

/*
 * Traced thread (tid) -> its first wakeup since its last switch-out (0:
 * none). A preallocated hash: an update in the scheduler's hooks allocates
 * nothing. Entries go at the thread's last switch-out (OUT_DEAD); a wakeup
 * that finds the map full is sent as its own record (counted).
 */
struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 16384);
	__type(key, __u32);	/* tid */
	__type(value, __u64);	/* wake_ns */
} wakes SEC(".maps");

/* The shared helpers (common.bpf.h), bound to this program's maps. */
static __always_inline void count(__u32 idx)
{
	ttf_count(&counters, idx);
}

/*
 * Is tgid traced? Most switches and wakeups name the same few processes, so
 * each CPU keeps the answer for its last TTF_SCHED_TGID_CACHE processes for
 * TTF_SCHED_TGID_CACHE_JIFFIES (100 ms at HZ 250, 250 ms at HZ 100): a hit
 * reads the line this CPU's switch writes anyway, a miss costs the hash
 * lookup. The clock is jiffies, a load, not bpf_ktime_get_ns (about 130 ns
 * on a kvm-clock guest): a switch between two untraced tasks reads no other
 * clock (docs/kernel.md B1.17). A process added to (or removed from)
 * traced_tgids is seen here within that time; the idle task (tgid 0) is
 * never traced. Not inlined: on_switch calls it twice, and one copy of the
 * unrolled loop keeps the program's code smaller, which the demo's cold
 * caches pay for (docs/kernel.md B1.17).
 */
static __noinline bool tgid_traced(struct ttf_sched_chain *ch, __u32 tgid, __u32 now_jiffies)
{
	__u32 slot;
	bool traced;

	if (!tgid)
		return false;
#pragma unroll
	for (int i = 0; i < TTF_SCHED_TGID_CACHE; i++)
		if (ch->tgid[i] == tgid && now_jiffies - ch->checked[i] < TTF_SCHED_TGID_CACHE_JIFFIES)
			return ch->traced[i];
	traced = ttf_tgid_traced(&traced_tgids, tgid);
	slot = ch->next_slot++ % TTF_SCHED_TGID_CACHE;
	ch->tgid[slot] = tgid;
	ch->checked[slot] = now_jiffies;
	ch->traced[slot] = traced;
	return traced;
}

static __always_inline struct ttf_sched_chain *this_chain(void)
{
	__u32 zero = 0;

	return bpf_map_lookup_elem(&chain, &zero);
}

/*
 * This CPU's next slot in the flight recorder, and its head word in *head;
 * NULL never (the index is masked into the map) but the verifier asks.
 */
static __always_inline struct ttf_sched_span *reserve(__u32 cpu, __u64 **head)
{
	__u32 hk = cpu * TTF_SCHED_FLIGHT_HEAD_STRIDE, k;

	*head = bpf_map_lookup_elem(&flight_head, &hk);
	if (!*head)
		return NULL;
	k = (cpu << targ_flight_log2) | (**head & ((1u << targ_flight_log2) - 1));
	return bpf_map_lookup_elem(&flight, &k);
}

/*
 * At a quarter round of CPU cpu's slots, n spans written: wake user space
 * if it has not read half of them.
 */
static __noinline void wake_reader(__u32 cpu, __u64 n)
{
	__u32 k = cpu * TTF_SCHED_FLIGHT_HEAD_STRIDE + TTF_SCHED_FLIGHT_READ_WORD;
	__u64 *read = bpf_map_lookup_elem(&flight_head, &k);

	if (read && n - *read >= 1u << (targ_flight_log2 - 1))
		bpf_ringbuf_output(&flight_wake, &n, sizeof(n), BPF_RB_FORCE_WAKEUP);
}

/*
 * The span is written: publish it (user space reads the head with acquire,
 * then the slots). Only this CPU writes its head, and never from two
 * programs at once: the scheduler's tracepoints run under the run-queue
 * lock with interrupts off (docs/kernel.md B4.1). On x86 stores become
 * visible in program order, so a store after a compiler barrier is enough;
 * elsewhere the fetching add is a full barrier (BPF_FETCH, 5.12).
 */
static __always_inline void submit(__u32 cpu, __u64 *head)
{
	__u64 n;
#ifdef __TARGET_ARCH_x86
	asm volatile("" ::: "memory");
	n = *head + 1;
	*(volatile __u64 *)head = n;
#else
	n = __sync_fetch_and_add(head, 1) + 1;	/* used: BPF_FETCH, not a plain add */
#endif
	if (!(n & ((1u << (targ_flight_log2 - 2)) - 1)))
		wake_reader(cpu, n);
}

/* A wakeup sent alone: WAKEUP_NEW, or a WAKEUP the map `wakes` had no room for. */
static __always_inline void emit_wakeup(const struct task_struct *p, __u8 type, __u64 ts_ns)
{
	__u32 cpu = bpf_get_smp_processor_id();
	__u64 *head;
	struct ttf_sched_span *e = reserve(cpu, &head);

	if (!e)
		return;
	*e = (struct ttf_sched_span){ .ts_ns = ts_ns, .tid = p->pid, .tgid = p->tgid,
				      .cpu = p->wake_cpu, .type = type };
	submit(cpu, head);
}

/*
 * next's sched_info.run_delay: the ns it has waited on run queues in all.
 * Read at this sched_switch it does not yet hold the wait that ends here:
 * sched_info_arrive() adds that after the tracepoint (docs/kernel.md
 * B1.15), so the difference at next's switch-out is that one wait.
 */
static __always_inline __u64 run_delay_ns(struct task_struct *t)
{
	if (!bpf_core_field_exists(t->sched_info))
		return 0;
	return t->sched_info.run_delay;
}

/*
 * Where next is not traced its switch-in time is not read (in_ns 0: the span
 * says it does not know): a switch between two untraced tasks costs the
 * chain check and one cache hit, no clock (docs/kernel.md B1.17). prev's
 * answer is the one looked up at its switch-in on this CPU, when the chain
 * holds: a process added to the traced set while a thread of it runs is
 * seen from that thread's next switch-in.
 */
static __always_inline int on_switch(bool preempt, struct task_struct *prev,
				     struct task_struct *next, unsigned int prev_state)
{
	__u32 prev_tid = prev->pid, j = cache_clock();
	struct ttf_sched_chain *ch = this_chain();
	__u64 now = 0, in_ns = 0, wait_ns = 0, wake_ns = 0, *w, *head;
	bool prev_traced, next_traced;
	struct ttf_sched_span *e;
	__u32 cpu;
	__u8 type;

	if (!ch)
		return 0;	/* never: a one-slot array */
	if (ch->next_plus1 == prev_tid + 1) {
		/* the answer this CPU had for prev at its switch-in */
		prev_traced = ch->next_traced;
		in_ns = ch->in_ns;
		if (targ_run_delay && prev_traced)
			wait_ns = run_delay_ns(prev) - ch->run_delay_ns;
	} else {
		if (ch->next_plus1)
			count(TTF_SCHED_CNT_SWITCH_GAPS);
		prev_traced = tgid_traced(ch, prev->tgid, j);
	}
	next_traced = tgid_traced(ch, next->tgid, j);
	ch->next_plus1 = (__u32)next->pid + 1;
	ch->next_traced = next_traced;
	ch->switches++;
	if (!prev_traced && !next_traced) {
		ch->in_ns = 0;
		return 0;
	}
	now = bpf_ktime_get_ns();
	ch->in_ns = next_traced ? now : 0;
	if (targ_run_delay && next_traced)
		ch->run_delay_ns = run_delay_ns(next);
	if (!prev_traced)
		return 0;
	if (preempt || prev_state == TASK_RUNNING)
		type = TTF_SCHED_OUT_RUNNABLE;
	else if (prev_state & TASK_DEAD)
		type = TTF_SCHED_OUT_DEAD;
	else
		type = TTF_SCHED_OUT_BLOCKED;
	if (targ_run_delay) {
		/*
		 * The wait that ended at the switch-in this program saw: when it
		 * began. 0 ns (woken onto an idle CPU, or a wakeup the kernel
		 * did not queue) is a wakeup at in_ns, so that a blocked thread
		 * is runnable before it runs.
		 */
		if (in_ns)
			wake_ns = in_ns - (wait_ns < in_ns ? wait_ns : 0);
	} else {
		w = bpf_map_lookup_elem(&wakes, &prev_tid);
		if (w) {
			wake_ns = *w;
			*w = 0;
			if (type == TTF_SCHED_OUT_DEAD)
				bpf_map_delete_elem(&wakes, &prev_tid);
		}
	}
	cpu = bpf_get_smp_processor_id();
	e = reserve(cpu, &head);
	if (!e)
		return 0;
	*e = (struct ttf_sched_span){ .ts_ns = now, .in_ns = in_ns, .wake_ns = wake_ns,
				      .tid = prev_tid, .tgid = prev->tgid, .state = prev_state,
				      .cpu = cpu, .type = type };
	submit(cpu, head);
	return 0;
}

SEC("tp_btf/sched_switch")
int BPF_PROG(handle_switch, bool preempt, struct task_struct *prev, struct task_struct *next,
	     unsigned int prev_state)
{
	return on_switch(preempt, prev, next, prev_state);
}

/* task_struct's state before 5.14 renamed it __state (and made it unsigned int) */
struct task_struct___pre514 {
	long state;
} __attribute__((preserve_access_index));

/*
 * Before 5.18 sched_switch has no prev_state argument (docs/kernel.md B1.6);
 * the tracepoint's own format took prev's state field then, as here. User space
 * loads this program or handle_switch by the prototype's argument count.
 */
SEC("tp_btf/sched_switch")
int BPF_PROG(handle_switch_3, bool preempt, struct task_struct *prev, struct task_struct *next)
{
	unsigned int state;

	/* __state since 5.14, state before */
	if (bpf_core_field_exists(prev->__state))
		state = BPF_CORE_READ(prev, __state);
	else
		state = BPF_CORE_READ((struct task_struct___pre514 *)prev, state);
	return on_switch(preempt, prev, next, state);
}

SEC("tp_btf/sched_wakeup")
int BPF_PROG(handle_wakeup, struct task_struct *p)
{
	struct ttf_sched_chain *ch = this_chain();
	__u32 tid = p->pid;
	__u64 now, *w;

	if (!ch || !tgid_traced(ch, p->tgid, cache_clock()))
		return 0;
	now = bpf_ktime_get_ns();
	w = bpf_map_lookup_elem(&wakes, &tid);
	if (w) {
		if (!*w)
			*w = now;
		return 0;
	}
	if (bpf_map_update_elem(&wakes, &tid, &now, BPF_NOEXIST)) {
		count(TTF_SCHED_CNT_WAKE_MAP_FULL);
		emit_wakeup(p, TTF_SCHED_WAKEUP, now);
	}
	return 0;
}

SEC("tp_btf/sched_wakeup_new")
int BPF_PROG(handle_wakeup_new, struct task_struct *p)
{
	/* not the cache: a new process is added to traced_tgids at its fork, just before */
	if (ttf_tgid_traced(&traced_tgids, p->tgid))
		emit_wakeup(p, TTF_SCHED_WAKEUP_NEW, bpf_ktime_get_ns());
	return 0;
}
