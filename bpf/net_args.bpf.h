/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * The arguments of payload syscalls, remembered at sys_enter (BPF side; part
 * of bpf/net_common.bpf.h): the syscall numbers of the read/write family and
 * close(2), and remember_call(), which keeps a traced thread's fd, user
 * buffer, flags and entry time in its sys_args slot for the record its
 * syscall makes.
 */
#ifndef TTF_NET_ARGS_BPF_H
#define TTF_NET_ARGS_BPF_H

#include "bpf/net_xmit.bpf.h"
#include "bpf/net_hop.bpf.h"

/* close(2), which ends a unix stream connection (docs/kernel.md B10) */
#if defined(__TARGET_ARCH_x86)
#define NR_close 3
#else
#define NR_close 57
#endif

/* Syscall numbers of the read/write family (arch/<arch>/.../syscall tables). */
#if defined(__TARGET_ARCH_x86)
#define NR_read 0
#define NR_write 1
#define NR_readv 19
#define NR_writev 20
#define NR_sendto 44
#define NR_recvfrom 45
#define NR_sendmsg 46
#define NR_recvmsg 47
#define NR_sendfile 40
#elif defined(__TARGET_ARCH_arm64) || defined(__TARGET_ARCH_riscv)
#define NR_read 63
#define NR_write 64
#define NR_readv 65
#define NR_writev 66
#define NR_sendto 206
#define NR_recvfrom 207
#define NR_sendmsg 211
#define NR_recvmsg 212
#define NR_sendfile 71
#else
#error "syscall numbers for this architecture are not known"
#endif

/* The syscalls whose buffer the sources remember: one test on x86. */
static __always_inline bool payload_syscall(long id)
{
#if defined(__TARGET_ARCH_x86)
	const __u64 mask = (1ULL << NR_read) | (1ULL << NR_write) | (1ULL << NR_readv) |
			   (1ULL << NR_writev) | (1ULL << NR_sendto) | (1ULL << NR_recvfrom) |
			   (1ULL << NR_sendmsg) | (1ULL << NR_recvmsg);

	return (__u64)id < 64 && ((1ULL << id) & mask);
#else
	switch (id) {
	case NR_read: case NR_write: case NR_readv: case NR_writev:
	case NR_sendto: case NR_recvfrom: case NR_sendmsg: case NR_recvmsg:
		return true;
	}
	return false;
#endif
}

/*
 * The payload syscalls that write: the ones whose entry the socket source
 * remembers (a receive's arguments are read at its socket tracepoint, from
 * the task's registers: see net.bpf.c).
 */
static __always_inline bool send_syscall(long id)
{
	return id == NR_write || id == NR_writev || id == NR_sendto || id == NR_sendmsg;
}

/*
 * Argument i (0 to 3) of the current syscall: from regs, the task's user
 * registers (one probe read each), or with regs NULL from args, the argument
 * array of a syscalls:sys_enter_X tracepoint's context. The callers pass a
 * constant i and a constant NULL or not, so each inlined copy is one read.
 */
static __always_inline __u64 syscall_arg(struct pt_regs *regs, const unsigned long *args, int i)
{
	if (!regs)
		return args[i];
	switch (i) {
	case 0:
		return PT_REGS_PARM1_CORE_SYSCALL(regs);
	case 1:
		return PT_REGS_PARM2_CORE_SYSCALL(regs);
	case 2:
		return PT_REGS_PARM3_CORE_SYSCALL(regs);
	default:
		return PT_REGS_PARM4_CORE_SYSCALL(regs);
	}
}

/*
 * The arguments of payload syscall id into a (which the caller zeroed): its
 * buffer kind, direction, fd, user buffer (flat buffer, iovec array or
 * msghdr), length and receive flags, read from regs, or with regs NULL from
 * args (a syscalls:sys_enter_X context). false: id is not a payload syscall
 * (sendfile counts, with no buffer).
 */
static __always_inline bool call_args(struct sys_args *a, struct pt_regs *regs,
				      const unsigned long *args, long id)
{
	switch (id) {
	case NR_read:
		a->kind = BUF_FLAT;
		a->dir = DIR_RECV;
		break;
	case NR_recvfrom:
		a->kind = BUF_FLAT;
		a->dir = DIR_RECV;
		a->flags = syscall_arg(regs, args, 3);
		break;
	case NR_write:
	case NR_sendto:
		a->kind = BUF_FLAT;
		a->dir = DIR_SEND;
		break;
	case NR_readv:
		a->kind = BUF_IOV;
		a->dir = DIR_RECV;
		break;
	case NR_writev:
		a->kind = BUF_IOV;
		a->dir = DIR_SEND;
		break;
	case NR_recvmsg:
		a->kind = BUF_MSG;
		a->dir = DIR_RECV;
		a->flags = syscall_arg(regs, args, 2);
		break;
	case NR_sendmsg:
		a->kind = BUF_MSG;
		a->dir = DIR_SEND;
		break;
	case NR_sendfile:
		a->kind = BUF_NONE;	/* the payload comes from a file, not user memory */
		a->dir = DIR_SEND;
		break;
	default:
		return false;
	}
	a->nr = id;
	a->fd = syscall_arg(regs, args, 0);
	a->buf = syscall_arg(regs, args, 1);
	a->len = syscall_arg(regs, args, 2);
	return true;
}

/*
 * Remember the arguments of a payload syscall of a traced thread (see
 * call_args) and its entry time. A slot only ever holds its thread's last
 * such syscall (see the callers).
 */
static __always_inline void remember_call(struct pt_regs *regs, const unsigned long *args,
					  long id)
{
	struct sys_args a = {}, *old;
	__u64 pid_tgid;
	bool traced;

	pid_tgid = bpf_get_current_pid_tgid();
	traced = tgid_traced(pid_tgid >> 32);
	/* an untraced thread's read, while a hop is pending, may be its first (net_hop.bpf.h) */
	if (!traced && !follow_open())
		return;
	if (!call_args(&a, regs, args, id))
		return;
	if (!traced && a.dir != DIR_RECV)
		return;
	a.enter_ns = bpf_ktime_get_ns();
	old = bpf_map_lookup_elem(&sys_args, &pid_tgid);
	if (old) {
		xmit_flush(old);	/* kept by a write that made no SEND record */
		*old = a;
	} else {
		bpf_map_update_elem(&sys_args, &pid_tgid, &a, BPF_ANY);
	}
}

/* remember_call() from the task's user registers (raw sys_enter). */
static __always_inline void remember_args(struct pt_regs *regs, long id)
{
	remember_call(regs, NULL, id);
}

#endif /* TTF_NET_ARGS_BPF_H */
