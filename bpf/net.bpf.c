// SPDX-License-Identifier: GPL-2.0-only
/*
 * Network probes, socket-tracepoint source ("sock"): what traced processes
 * read from and write to TCP sockets, when those bytes arrived in the
 * kernel, and when written bytes reached the device. Only tracepoints
 * (tp_btf), so no tracefs and no kprobes are needed.
 *
 *   sys_enter           remember the user buffer of read/write-like syscalls
 *   sock_recv_length    RECV record + payload prefix (fires after the copy-out)
 *   sock_send_length    SEND record + payload prefix + tcp write_seq
 *   the rest            bpf/net_common.bpf.h (shared with net_syscall.bpf.c)
 *
 * Kernel facts (docs/kernel.md B1.1, docs/cases.md #11):
 * sock_{send,recv}_length exist since 6.3, fire in the calling task for every
 * send/recv variant; send flags are always 0; recv passes raw ret and flags,
 * so MSG_PEEK reads must be skipped here.
 */
#include "bpf/net_common.bpf.h"

char LICENSE[] SEC("license") = "GPL";

/*
 * Number of the syscall the current task is in (the kernel saves it in
 * pt_regs at entry: orig_ax on x86, syscallno on arm64, a7 on riscv);
 * bpf_task_pt_regs() needs Linux 5.15.
 */
static __always_inline long current_syscall_nr(void)
{
	struct pt_regs *regs = (struct pt_regs *)bpf_task_pt_regs(bpf_get_current_task_btf());

#if defined(__TARGET_ARCH_x86)
	return BPF_CORE_READ(regs, orig_ax);
#elif defined(__TARGET_ARCH_arm64)
	return BPF_CORE_READ((struct user_pt_regs *)regs, regs[8]);
#else
	return BPF_CORE_READ(regs, a7);
#endif
}

/* User r14 of the current task's syscall (Go's goroutine register on x86; 0 elsewhere). */
static __always_inline __u64 current_user_r14(void)
{
#if defined(__TARGET_ARCH_x86)
	struct pt_regs *regs = (struct pt_regs *)bpf_task_pt_regs(bpf_get_current_task_btf());

	return BPF_CORE_READ(regs, r14);
#else
	return 0;
#endif
}

/*
 * Remember the buffer of the syscalls that move socket payload. This runs for
 * every syscall of the machine, so the cheap test (the syscall number) comes
 * first and the rest return before any map lookup. A slot only ever holds the
 * arguments of its thread's last such syscall; handle_io uses it only when
 * the syscall it fires in has the slot's number, which then is that very
 * syscall (its entry overwrote the slot), never a stale buffer.
 */
SEC("tp_btf/sys_enter")
int BPF_PROG(handle_sys_enter, struct pt_regs *regs, long id)
{
	if (payload_syscall(id))
		remember_args(regs, id);
	return 0;
}

static __always_inline int handle_io(struct sock *sk, int ret, int flags, __u8 type)
{
	__u64 pid_tgid = bpf_get_current_pid_tgid();
	struct sys_args *a;
	__u64 cookie;
	__u32 tls;

	if (!tgid_traced(pid_tgid >> 32) || !io_wanted(sk, ret, flags, type))
		return 0;
	cookie = bpf_get_socket_cookie(sk);
	mark_traced(cookie);
	tls = tls_on_io(sk, cookie, type, current_user_r14());
	a = bpf_map_lookup_elem(&sys_args, &pid_tgid);
	if (a && (a->dir != (type == TTF_EV_RECV ? DIR_RECV : DIR_SEND) ||
		  a->nr != current_syscall_nr()))
		a = NULL;
	return emit_io(sk, cookie, ret, type, a, tls);
}

SEC("tp_btf/sock_recv_length")
int BPF_PROG(handle_recv, struct sock *sk, int ret, int flags)
{
	return handle_io(sk, ret, flags, TTF_EV_RECV);
}

SEC("tp_btf/sock_send_length")
int BPF_PROG(handle_send, struct sock *sk, int ret, int flags)
{
	return handle_io(sk, ret, flags, TTF_EV_SEND);
}
