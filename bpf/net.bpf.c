// SPDX-License-Identifier: GPL-2.0-only
/*
 * Network probes, socket-tracepoint source ("sock"): what traced processes
 * read from and write to TCP and unix stream sockets, when those bytes arrived in the
 * kernel, and when written bytes reached the device. Only tracepoints
 * (tp_btf; the per-syscall sys_enter_X ones through tracefs where it has
 * them), so no kprobes are needed.
 *
 *   sys_enter           remember the user buffer and entry time of write-like
 *                       syscalls (syscalls:sys_enter_X per syscall, or raw
 *                       sys_enter); close(2) of a unix stream socket: CLOSE
 *                       record (B10)
 *   sock_recv_length    RECV record + payload prefix (fires after the copy-out);
 *                       the read's buffer from the task's user registers, so
 *                       no program runs at the entry of any read (B1.5)
 *   sock_send_length    SEND record + payload prefix + tcp write_seq
 *   io_uring_submit_req remember the buffer of an io_uring send/recv on a
 *                       socket, for the sock_*_length that its issue fires
 *                       (submitter, io-wq worker or SQPOLL thread)
 *   the rest            bpf/net_common.bpf.h (shared with net_syscall.bpf.c)
 *
 * Kernel facts (docs/kernel.md B1.1, docs/cases.md #11):
 * sock_{send,recv}_length exist since 6.3, fire in the calling task for every
 * send/recv variant; send flags are always 0; recv passes raw ret and flags,
 * so MSG_PEEK reads must be skipped here. io_uring requests (docs/kernel.md
 * B1.10) reach the same two tracepoints through sock_sendmsg/sock_recvmsg.
 */
#include "bpf/net_common.bpf.h"

char LICENSE[] SEC("license") = "GPL";

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
 * Remember the buffer of the syscalls that write socket payload. This runs for
 * every syscall of the machine, so the cheap test (the syscall number) comes
 * first and the rest return before any map lookup. A slot only ever holds the
 * arguments of its thread's last such syscall; handle_io uses it only when
 * the syscall it fires in has the slot's number, which then is that very
 * syscall (its entry overwrote the slot), never a stale buffer. Reads are
 * not remembered: handle_io takes their arguments from the registers.
 */
SEC("tp_btf/sys_enter")
int BPF_PROG(handle_sys_enter, struct pt_regs *regs, long id)
{
	if (send_syscall(id))
		remember_args(regs, id);
	else if (id == NR_close)
		on_close_fd(PT_REGS_PARM1_CORE_SYSCALL(regs));	/* a unix stream connection's end (B10) */
	return 0;
}

/*
 * The same per write-like syscall, on its own syscalls:sys_enter_X tracepoint
 * (tracefs event, CONFIG_FTRACE_SYSCALLS): only these four syscalls run a
 * program, the arguments come in the context (no probe reads). User space
 * loads either these four or handle_sys_enter (user/probe/net_probe.c),
 * never both; compat (32-bit) syscalls reach none of the four
 * (docs/kernel.md B1.5). Names fit the kernel's 15 characters.
 */
#define SYSCALL_ENTER_TP(name)                                                  \
	SEC("tracepoint/syscalls/sys_enter_" #name)                             \
	int enter_##name(struct trace_event_raw_sys_enter *ctx)                \
	{                                                                       \
		/* copied: the verifier refuses loads through ctx + 16 */   \
		unsigned long args[4] = { ctx->args[0], ctx->args[1],           \
					  ctx->args[2], ctx->args[3] };         \
									        \
		remember_call(NULL, args, NR_##name);                           \
		return 0;                                                       \
	}

SYSCALL_ENTER_TP(write)
SYSCALL_ENTER_TP(writev)
SYSCALL_ENTER_TP(sendto)
SYSCALL_ENTER_TP(sendmsg)

/* close(2): with the four, what handle_sys_enter does for it (a unix stream connection's end, B10) */
SEC("tracepoint/syscalls/sys_enter_close")
int enter_close(struct trace_event_raw_sys_enter *ctx)
{
	unsigned long fd = ctx->args[0];

	on_close_fd(fd);
	return 0;
}

/*
 * io_uring send/recv requests on sockets, remembered at submission until the
 * socket tracepoint of their issue: one per socket and direction, the newest
 * (a request issued at once consumes its slot before the next is submitted;
 * docs/kernel.md B1.10 says when an older one loses its payload).
 */
struct uring_key {
	__u64 sk;	/* struct sock address */
	__u32 dir;	/* enum buf_dir */
	__u32 pad;
};

struct {
	__uint(type, BPF_MAP_TYPE_LRU_HASH);
	__uint(max_entries, 16384);
	__type(key, struct uring_key);
	__type(value, struct sys_args);	/* nr = -1; enter_ns = submission */
} uring_args SEC(".maps");

/* sr->flags (include/uapi/linux/io_uring.h): a SEND whose buf is an iovec array */
#define IORING_SEND_VECTORIZED (1U << 5)

/*
 * At submission (io_submit_sqe, after the opcode's prep filled the request's
 * command data and before it is issued; docs/kernel.md B1.10): remember the
 * user buffer of a SEND/RECV/SENDMSG/RECVMSG (and the zero-copy sends) or a
 * READ/WRITE(V, _FIXED) whose fd is a TCP socket. The file is looked up from req->cqe.fd in the current
 * task's table (the submitter's or the SQPOLL thread's, which shares it):
 * req->file is assigned only at issue. Requests on registered files or with
 * kernel-selected buffers have no buffer here: their records go without
 * payload (payload_args_missing).
 */
static __always_inline int on_uring_submit(struct io_kiocb *req)
{
	struct io_sr_msg *sr = (void *)__builtin_preserve_access_index(&req->cmd);
	struct io_rw *rw = (void *)sr;	/* the read/write opcodes' command data */
	struct sys_args a = {};
	bool is_rw = false;
	struct uring_key key = {};
	struct sock *sk;
	__u64 flags;
	__u8 op;

	if (!tgid_traced(bpf_get_current_pid_tgid() >> 32))
		return 0;
	op = BPF_CORE_READ(req, opcode);
	switch (op) {
	case IORING_OP_SEND:
	case IORING_OP_SEND_ZC:
		a.dir = DIR_SEND;
		a.kind = BPF_CORE_READ(sr, flags) & IORING_SEND_VECTORIZED ? BUF_IOV : BUF_FLAT;
		break;
	case IORING_OP_RECV:
		a.dir = DIR_RECV;
		a.kind = BUF_FLAT;
		break;
	case IORING_OP_SENDMSG:
	case IORING_OP_SENDMSG_ZC:
		a.dir = DIR_SEND;
		a.kind = BUF_MSG;
		break;
	case IORING_OP_RECVMSG:
		a.dir = DIR_RECV;
		a.kind = BUF_MSG;
		break;
	/* read/write on a socket reach sock_recvmsg/sock_sendmsg through sock_read_iter/_write_iter */
	case IORING_OP_READ:
	case IORING_OP_READ_FIXED:
	case IORING_OP_READV:
		a.dir = DIR_RECV;
		a.kind = op == IORING_OP_READV ? BUF_IOV : BUF_FLAT;
		is_rw = true;
		break;
	case IORING_OP_WRITE:
	case IORING_OP_WRITE_FIXED:
	case IORING_OP_WRITEV:
		a.dir = DIR_SEND;
		a.kind = op == IORING_OP_WRITEV ? BUF_IOV : BUF_FLAT;
		is_rw = true;
		break;
	default:
		return 0;
	}
	/* 32 bits on older kernels, 64 (io_req_flags_t) on 6.18: the low bits read the same */
	flags = BPF_CORE_READ(req, flags);
	if (flags & (REQ_F_FIXED_FILE | REQ_F_BUFFER_SELECT))
		return 0;
	a.fd = BPF_CORE_READ(req, cqe.fd);
	sk = sock_from_fd(a.fd);
	if (!sk || !sk_is_stream(sk))
		return 0;
	if (is_rw) {
		a.buf = BPF_CORE_READ(rw, addr);
		a.len = BPF_CORE_READ(rw, len);
	} else {
		a.buf = (__u64)BPF_CORE_READ(sr, buf);
		a.len = BPF_CORE_READ(sr, len);
	}
	a.nr = -1;
	a.enter_ns = bpf_ktime_get_ns();
	key.sk = (__u64)(unsigned long)sk;
	key.dir = a.dir;
	/* an older request on this socket and direction not issued yet: its record would read this buffer */
	if (bpf_map_lookup_elem(&uring_args, &key))
		count(TTF_CNT_URING_REPLACED);
	bpf_map_update_elem(&uring_args, &key, &a, BPF_ANY);
	return 0;
}

SEC("tp_btf/io_uring_submit_req")
int BPF_PROG(handle_uring_submit, struct io_kiocb *req)
{
	return on_uring_submit(req);
}

/* The same tracepoint before 6.4 (user space loads one of the two). */
SEC("tp_btf/io_uring_submit_sqe")
int BPF_PROG(handle_uring_submit_sqe, struct io_kiocb *req, bool force_nonblock)
{
	return on_uring_submit(req);
}

/*
 * The arguments of the read-like syscall the current task is in, into *a
 * (zeroed by the caller), from the task's user registers: the kernel saved
 * them at the syscall's entry and the syscall has not returned yet
 * (bpf_task_pt_regs, 5.15; docs/kernel.md B1.5). NULL where it is in no
 * read-like payload syscall (an io_uring request's issue, recvmmsg, ...).
 * enter_ns stays 0: no program runs at a read's entry.
 */
static __always_inline struct sys_args *recv_call_args(struct sys_args *a)
{
	struct pt_regs *regs = (struct pt_regs *)bpf_task_pt_regs(bpf_get_current_task_btf());

	if (!regs)	/* never: lets the compiler drop syscall_arg's context path */
		return NULL;
#if defined(__TARGET_ARCH_x86)
	/* a BTF pointer: plain loads (B1.16); x86's syscall arguments di, si, dx, r10 */
	unsigned long args[4] = { regs->di, regs->si, regs->dx, regs->r10 };

	if (!call_args(a, NULL, args, regs->orig_ax) || a->dir != DIR_RECV)
		return NULL;
#else
	if (!call_args(a, regs, NULL, syscall_nr(regs)) || a->dir != DIR_RECV)
		return NULL;
#endif
	return a;
}

static __always_inline int handle_io(struct sock *sk, int ret, int flags, __u8 type)
{
	__u64 pid_tgid = bpf_get_current_pid_tgid();
	__u32 dir = type == TTF_EV_RECV ? DIR_RECV : DIR_SEND;
	struct uring_key key = {};
	struct sys_args call = {};
	bool from_uring = false;
	struct sys_args *a = NULL;
	__u64 cookie;
	__u32 tls;

	/* untraced: one load (follow_open) unless a hop is pending (net_hop.bpf.h) */
	if (!tgid_traced(pid_tgid >> 32)) {
		if (type != TTF_EV_RECV || ret <= 0 || !follow_open())
			return 0;
		a = recv_call_args(&call);
		if (!follow_claim(sk, a))
			return 0;
	}
	if (!io_wanted(sk, ret, flags, type)) {
		/* a transmit this write kept (B1.12): no SEND record will carry it */
		if (type == TTF_EV_SEND && (a = send_call_slot(pid_tgid)))
			xmit_flush(a);
		if (ret == 0) {
			/* EOF ends a pending io_uring RECV: its slot must not outlive the socket */
			key.sk = (__u64)(unsigned long)sk;
			key.dir = dir;
			bpf_map_delete_elem(&uring_args, &key);
			/* ... and, on a unix stream socket, the connection (B10) */
			if (type == TTF_EV_RECV && sk_is_unix_stream(sk))
				unix_conn_end(sk, bpf_get_socket_cookie(sk));
		}
		return 0;
	}
	cookie = bpf_get_socket_cookie(sk);
	if (!sk_io_closed(sk))	/* no CLOSE transition would take it out again */
		mark_traced(cookie);
	tls = tls_tgid_marked(pid_tgid >> 32) ? tls_on_io(sk, cookie, type, current_user_r14()) : 0;
	if (type == TTF_EV_RECV) {
		if (!a)
			a = recv_call_args(&call);
	} else {
		a = bpf_map_lookup_elem(&sys_args, &pid_tgid);
		if (a && (a->dir != dir || a->nr != current_syscall_nr()))
			a = NULL;
	}
	if (!a) {
		/* not in a payload syscall: an io_uring request's issue, or none */
		key.sk = (__u64)(unsigned long)sk;
		key.dir = dir;
		a = bpf_map_lookup_elem(&uring_args, &key);
		from_uring = a != NULL;
	}
	emit_io(sk, cookie, ret, type, a, tls);
	if (from_uring)
		bpf_map_delete_elem(&uring_args, &key);
	return 0;
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
