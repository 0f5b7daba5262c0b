/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * Follow traced processes (BPF side; part of bpf/net_common.bpf.h): a
 * traced process's fork joins the traced tgid set (FORK record), an exec
 * whose comm is --comm's joins it, and a traced thread group's exit leaves
 * it (EXIT record).
 *
 *   sched_process_fork  handle_fork
 *   sched_process_exec  handle_exec
 *   sched_process_exit  handle_exit or handle_exit_live (user space loads one)
 */
#ifndef TTF_NET_FOLLOW_BPF_H
#define TTF_NET_FOLLOW_BPF_H

#include "bpf/net_maps.bpf.h"

SEC("tp_btf/sched_process_fork")
int BPF_PROG(handle_fork, struct task_struct *parent, struct task_struct *child)
{
	__u32 ptgid = parent->tgid, ctgid = child->tgid;
	struct ttf_net_event *e;
	__u32 zero = 0;
	struct scratch *s;

	if (ptgid == ctgid || !tgid_traced(ptgid))
		return 0;
	if (trace_tgid(ctgid)) {
		count(TTF_CNT_TGID_MAP_FULL);
		return 0;
	}
	s = bpf_map_lookup_elem(&scratch, &zero);
	if (!s)
		return 0;
	e = &s->ev;
	__builtin_memset(e, 0, sizeof(*e));
	e->type = TTF_EV_FORK;
	e->ts_ns = bpf_ktime_get_ns();
	e->tgid = ptgid;
	e->tid = ctgid;
	bpf_probe_read_kernel_str(e->comm, sizeof(e->comm), child->comm);
	submit_now(e, sizeof(*e));
	return 0;
}

static __always_inline bool comm_matches(const char *comm)
{
	for (int i = 0; i < TTF_COMM_LEN; i++) {
		if (comm[i] != targ_comm[i])
			return false;
		if (!comm[i])
			return true;
	}
	return true;
}

SEC("tp_btf/sched_process_exec")
int BPF_PROG(handle_exec, struct task_struct *p, pid_t old_pid, struct linux_binprm *bprm)
{
	char comm[TTF_COMM_LEN];
	__u32 tgid = p->tgid;

	if (!targ_follow_comm)
		return 0;
	bpf_probe_read_kernel_str(comm, sizeof(comm), p->comm);
	if (!comm_matches(comm))
		return 0;
	if (trace_tgid(tgid))
		count(TTF_CNT_TGID_MAP_FULL);
	return 0;
}

/* An exiting thread group (its last thread): EXIT record, and stop tracing it. */
static __always_inline int on_exit_group(struct task_struct *p)
{
	__u32 tgid = BPF_CORE_READ(p, tgid), zero = 0;
	struct ttf_net_event *e;
	struct scratch *s;

	if (!tgid_traced(tgid))
		return 0;
	bpf_map_delete_elem(&traced_tgids, &tgid);
	tgid_slot_leave(tgid);	/* after the delete: until then the hash has it too */
	s = bpf_map_lookup_elem(&scratch, &zero);
	if (!s)
		return 0;
	e = &s->ev;
	__builtin_memset(e, 0, sizeof(*e));
	e->type = TTF_EV_EXIT;
	e->ts_ns = bpf_ktime_get_ns();
	e->tgid = tgid;
	e->tid = BPF_CORE_READ(p, pid);
	/*
	 * The group's CPU: its ended threads' in signal->sum_sched_runtime
	 * (__exit_signal adds each), and this last one's own so far, for the
	 * summary's cost (docs/metrics.md M23): its parent may reap it before
	 * the tracer reads /proc again.
	 */
	e->enter_ns = BPF_CORE_READ(p, signal, sum_sched_runtime) +
		      BPF_CORE_READ(p, se.sum_exec_runtime);
	bpf_probe_read_kernel_str(e->comm, sizeof(e->comm), p->comm);
	submit_now(e, sizeof(*e));	/* the tracer may be waiting for its last target */
	return 0;
}

/*
 * sched_process_exit has its group_dead argument on newer kernels only
 * (docs/kernel.md B1.7); user space loads handle_exit where the
 * tracepoint's prototype has it and handle_exit_live elsewhere, which tells
 * the last thread by the group's live count: do_exit() decrements
 * signal->live before the tracepoint fires.
 */
SEC("tp_btf/sched_process_exit")
int BPF_PROG(handle_exit, struct task_struct *p, bool group_dead)
{
	return group_dead ? on_exit_group(p) : 0;
}

SEC("tp_btf/sched_process_exit")
int BPF_PROG(handle_exit_live, struct task_struct *p)
{
	if (BPF_CORE_READ(p, signal, live.counter))
		return 0;
	return on_exit_group(p);
}

#endif /* TTF_NET_FOLLOW_BPF_H */
