// SPDX-License-Identifier: GPL-2.0-only
/*
 * Network probes, syscall-tracepoint source ("syscall"): the same records as
 * bpf/net.bpf.c on kernels without the socket tracepoints (before 6.3). It
 * needs only the raw syscall tracepoints, the ring buffer (5.8) and BTF for
 * CO-RE; every helper it calls is in Linux 5.8 (docs/kernel.md B8).
 *
 *   sys_enter   remember fd, user buffer, flags and entry time of the payload
 *               syscalls (read, write, readv, writev, recvfrom, sendto,
 *               recvmsg, sendmsg, sendfile)
 *   sys_exit    find the socket behind the fd, and when it is TCP submit the
 *               RECV/SEND record with the payload prefix read now from the
 *               remembered buffer (the bytes are there once the call returns);
 *               also unix stream sockets, whose end (EOF, close(2)) gives a
 *               CLOSE record (docs/kernel.md B10)
 *   the rest    bpf/net_common.bpf.h (shared with net.bpf.c)
 *
 * Each hook comes twice, as tp_btf (typed arguments, 5.5+) and raw_tp; user
 * space loads one pair: tp_btf where the kernel BTF has btf_trace_sys_enter
 * and btf_trace_sys_exit, raw_tp otherwise. Both read their arguments with
 * CO-RE, so the bodies are the same.
 *
 * What differs from the socket tracepoints (docs/kernel.md B1.9): the
 * record's time is the syscall's return, not the socket layer's; a socket
 * is found only through a descriptor of the calling task (io_uring and
 * in-kernel senders are not seen); socket ids are this source's own
 * (TTF_SK_ID_BY_PTR in net_common.bpf.h), not SO_COOKIE values.
 */
#define TTF_SK_ID_BY_PTR 1
/*
 * With 64 (net.bpf.c's) the 6.1 verifier gives up on handle_sys_exit
 * (E2BIG: over a million instructions processed; measured on 6.1.0-54 under
 * QEMU): the payload of a writev/sendmsg is taken from its first 16 iovecs.
 */
#define MAX_IOVS 16
#include "bpf/net_common.bpf.h"

char LICENSE[] SEC("license") = "GPL";

static __always_inline bool wanted_syscall(long id)
{
	return payload_syscall(id) || id == NR_sendfile;
}

static __always_inline void on_enter(struct pt_regs *regs, long id)
{
	if (wanted_syscall(id))
		remember_args(regs, id);
	else if (id == NR_close)
		on_close_fd(PT_REGS_PARM1_CORE_SYSCALL(regs));	/* a unix stream connection's end (B10) */
}

/*
 * The thread's remembered syscall returned ret. A slot is written at every
 * payload syscall's entry and deleted at its exit, and a thread is in one
 * syscall at a time, so the slot found here is this syscall's.
 */
static __always_inline void on_exit(struct pt_regs *regs, long ret)
{
	struct sys_args *a;
	struct sock *sk;
	__u64 pid_tgid;
	__u64 id, r14 = 0;
	__u32 tls = 0;
	__u8 type;

	/* Every syscall of the machine exits here: the number first, then maps. */
	if (!wanted_syscall(syscall_nr(regs)))
		return;
	pid_tgid = bpf_get_current_pid_tgid();
	a = bpf_map_lookup_elem(&sys_args, &pid_tgid);
	if (!a)
		return;
	type = a->dir == DIR_RECV ? TTF_EV_RECV : TTF_EV_SEND;
	/* an untraced thread's read, remembered while a hop is pending (net_hop.bpf.h) */
	if (!tgid_traced(pid_tgid >> 32) &&
	    !(ret > 0 && (sk = sock_from_fd(a->fd)) && follow_claim(sk, a))) {
		bpf_map_delete_elem(&sys_args, &pid_tgid);
		return;
	}
	if (ret > 0 && (sk = sock_from_fd(a->fd)) && io_wanted(sk, ret, a->flags, type)) {
		id = sk_id(sk, true);
		if (id) {
			if (!sk_closed(sk))	/* its id is its own (sk_id): nothing to remember */
				mark_traced(id);
			if (tls_tgid_marked(pid_tgid >> 32)) {
#if defined(__TARGET_ARCH_x86)
				r14 = BPF_CORE_READ(regs, r14);	/* Go's goroutine register */
#endif
				tls = tls_on_io(sk, id, type, r14);
			}
			/* a constant type in each call: the verifier walks each alone */
			if (type == TTF_EV_RECV)
				emit_io(sk, id, ret, TTF_EV_RECV, a, tls);
			else
				emit_io(sk, id, ret, TTF_EV_SEND, a, tls);
		}
	} else if (ret == 0 && type == TTF_EV_RECV && (sk = sock_from_fd(a->fd)) &&
		   sk_is_unix_stream(sk)) {
		unix_conn_end(sk, sk_id(sk, false));	/* EOF: the peer closed (B10) */
	}
	xmit_flush(a);	/* a transmit no SEND record carried (B1.12) */
	bpf_map_delete_elem(&sys_args, &pid_tgid);
}

SEC("tp_btf/sys_enter")
int BPF_PROG(handle_sys_enter, struct pt_regs *regs, long id)
{
	on_enter(regs, id);
	return 0;
}

SEC("tp_btf/sys_exit")
int BPF_PROG(handle_sys_exit, struct pt_regs *regs, long ret)
{
	on_exit(regs, ret);
	return 0;
}

SEC("raw_tp/sys_enter")
int BPF_PROG(handle_sys_enter_raw, struct pt_regs *regs, long id)
{
	on_enter(regs, id);
	return 0;
}

SEC("raw_tp/sys_exit")
int BPF_PROG(handle_sys_exit_raw, struct pt_regs *regs, long ret)
{
	on_exit(regs, ret);
	return 0;
}
