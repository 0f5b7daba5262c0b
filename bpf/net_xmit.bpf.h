/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * Device transmits of traced sockets as records (BPF side; part of
 * bpf/net_common.bpf.h; docs/kernel.md B1.3, B1.12): the XMIT record, and
 * the transmit a write keeps in its syscall slot until its SEND record,
 * which carries it (folded) when it is the write's last segment. The
 * program that sees the transmits, handle_xmit, is in net_timing.bpf.h.
 */
#ifndef TTF_NET_XMIT_BPF_H
#define TTF_NET_XMIT_BPF_H

#include "bpf/net_sock.bpf.h"

/* An XMIT record: bytes of TCP payload ending at seq_end left sk (id cookie) at ts_ns. */
static __always_inline void emit_xmit(const struct sock *sk, __u64 cookie, __u64 ts_ns,
				      __u32 seq_end, __u32 bytes)
{
	__u64 pid_tgid = bpf_get_current_pid_tgid();
	struct ttf_net_event *e;

	e = ttf_rb_reserve(&events, sizeof(*e), &counters, TTF_CNT_RINGBUF_FULL);
	if (!e)
		return;
	__builtin_memset(e, 0, sizeof(*e));
	e->type = TTF_EV_XMIT;
	e->ts_ns = ts_ns;
	e->sock_cookie = cookie;
	e->tgid = pid_tgid >> 32;
	e->tid = (__u32)pid_tgid;
	e->bytes = bytes;
	e->seq_end = seq_end;
	fill_addr(e, sk);
	bpf_ringbuf_submit(e, ttf_rb_wakeup_flags(&events, targ_wakeup_bytes));
	count(TTF_CNT_EVENTS);
}

/* The transmit kept in a (if any) as an XMIT record of its own; a keeps none after. */
static __always_inline void xmit_flush(struct sys_args *a)
{
	if (!a->xmit_cookie)
		return;
	emit_xmit((const struct sock *)a->xmit_sk, a->xmit_cookie, a->xmit_ns,
		  a->xmit_seq_end, a->xmit_bytes);
	a->xmit_cookie = 0;
}

/*
 * The number of the syscall that regs (its user registers) entered: the
 * kernel saves it in pt_regs at entry (orig_ax on x86, syscallno on arm64,
 * a7 on riscv).
 */
static __always_inline long syscall_nr(struct pt_regs *regs)
{
#if defined(__TARGET_ARCH_x86)
	return BPF_CORE_READ(regs, orig_ax);
#elif defined(__TARGET_ARCH_arm64)
	return BPF_CORE_READ((struct user_pt_regs *)regs, regs[8]);
#else
	return BPF_CORE_READ(regs, a7);
#endif
}

#ifndef TTF_SK_ID_BY_PTR
/*
 * Number of the syscall the current task is in; bpf_task_pt_regs() needs
 * Linux 5.15. It returns a BTF pointer: on x86 orig_ax is a plain load
 * (docs/kernel.md B1.16), no helper call.
 */
static __always_inline long current_syscall_nr(void)
{
#if defined(__TARGET_ARCH_x86)
	return ((struct pt_regs *)bpf_task_pt_regs(bpf_get_current_task_btf()))->orig_ax;
#else
	return syscall_nr((struct pt_regs *)bpf_task_pt_regs(bpf_get_current_task_btf()));
#endif
}
#endif

/*
 * The slot of thread pid_tgid while it is inside a write-like syscall, else
 * NULL. The syscall source deletes a slot at its syscall's exit; the sock
 * source keeps it until the thread's next payload syscall, so there the
 * syscall the thread is in must have the slot's number (see handle_io).
 */
static __always_inline struct sys_args *send_call_slot(__u64 pid_tgid)
{
	struct sys_args *a = bpf_map_lookup_elem(&sys_args, &pid_tgid);

	if (!a || a->dir != DIR_SEND)
		return NULL;
#ifndef TTF_SK_ID_BY_PTR
	if (a->nr != current_syscall_nr())
		return NULL;
#endif
	return a;
}

/*
 * A SEND record e of the write whose slot is a (cookie: its socket): fold
 * the transmit a kept into e when it is this write's last segment, else send
 * it as its own record first (B1.12).
 */
static __always_inline void xmit_settle(struct sys_args *a, __u64 cookie, struct ttf_net_event *e)
{
	__u64 before = e->ts_ns - a->xmit_ns;

	if (a->xmit_cookie == cookie && a->xmit_seq_end == e->seq_end && before <= 0xffffffffULL) {
		e->flags |= TTF_EVF_XMIT_FOLDED;
		e->xmit_before_ns = before;
		a->xmit_cookie = 0;
		count(TTF_CNT_XMIT_FOLDED);
		return;
	}
	xmit_flush(a);
}

#endif /* TTF_NET_XMIT_BPF_H */
