/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * What the two socket sources share (BPF side only): net.bpf.c (socket
 * tracepoints, 6.3+) and net_syscall.bpf.c (raw syscall enter/exit, 5.8+)
 * each include this once. Maps, configuration and records are the same in
 * both objects, so user/probe/net_probe.c drives either one.
 *
 *   sched_process_*     follow fork/exec/exit of traced processes
 *   sk_data_ready       kernel arrival time of data on a traced socket
 *   tcp_probe           the same from TCP receive, where sk_data_ready is missing
 *   net_dev_start_xmit  XMIT record with the segment's end sequence number
 *   inet_sock_set_state CLOSE record when a traced socket leaves ESTABLISHED
 *
 * Define TTF_SK_ID_BY_PTR before including it when the source finds its
 * sockets through file descriptors (see sk_ids).
 */
#ifndef TTF_NET_COMMON_BPF_H
#define TTF_NET_COMMON_BPF_H

#include "vmlinux.h"
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_tracing.h>
#include <bpf/bpf_core_read.h>
#include <bpf/bpf_endian.h>
#include "bpf/net.h"
#include "bpf/common.bpf.h"

#define MSG_PEEK 2
#define IPPROTO_TCP 6
#define TCP_ESTABLISHED 1
#define TCP_TIME_WAIT 6
#define TCP_CLOSE 7
#define TCP_NEW_SYN_RECV 12
/* close(2), which ends a unix stream connection (docs/kernel.md B10) */
#if defined(__TARGET_ARCH_x86)
#define NR_close 3
#else
#define NR_close 57
#endif
/* iovecs copied per call (a source may define fewer: net_syscall.bpf.c) */
#ifndef MAX_IOVS
#define MAX_IOVS 64
#endif
/*
 * Masks keep the verifier's bounds: offsets < MAX and sizes <= MAX (clamped,
 * then masked), so any copy ends inside a 2 * MAX buffer (per-CPU map values
 * are limited to 32 KiB).
 */
#define OFF_MASK (TTF_CAPTURE_MAX_BYTES - 1)
#define LEN_MASK (2 * TTF_CAPTURE_MAX_BYTES - 1)
#define SCRATCH_PAYLOAD (2 * TTF_CAPTURE_MAX_BYTES)

/* Configuration, set by user space between open and load. */
const volatile __u32 targ_capture_bytes = TTF_CAPTURE_DEFAULT_BYTES;	/* reads */
const volatile __u32 targ_capture_send_bytes = TTF_CAPTURE_SEND_DEFAULT_BYTES;
const volatile __u16 targ_port = 0;	/* 0: any local port */
/* Above this many unread bytes, wake the consumer (set to a quarter of the ring). */
const volatile __u64 targ_wakeup_bytes = 4 << 20;
const volatile char targ_comm[TTF_COMM_LEN] = {};
const volatile bool targ_follow_comm = false;

enum buf_kind { BUF_FLAT = 1, BUF_IOV = 2, BUF_MSG = 3, BUF_NONE = 4 /* sendfile */ };
enum buf_dir { DIR_RECV = 1, DIR_SEND = 2 };

struct sys_args {
	__u64 enter_ns;	/* bpf_ktime_get_ns() at sys_enter */
	__u64 buf;	/* user pointer: buffer, iovec array or msghdr */
	__s64 nr;	/* syscall number */
	__u32 len;	/* buffer length or iovec count */
	__u32 fd;	/* first argument: the file descriptor */
	__u32 flags;	/* recvfrom/recvmsg flags (MSG_PEEK), else 0 */
	__u8 kind;	/* enum buf_kind */
	__u8 dir;	/* enum buf_dir */
	__u16 pad;
	/*
	 * A send's device transmit, kept until its SEND record (B1.12):
	 * xmit_cookie 0 = none kept; xmit_sk the socket it was on.
	 */
	__u64 xmit_cookie;
	__u64 xmit_sk;
	__u64 xmit_ns;
	__u32 xmit_seq_end;
	__u32 xmit_bytes;
};

struct arrival {
	__u64 first_ns;
	__u64 last_ns;
};

/* The record header is followed by its payload in one contiguous buffer. */
#pragma clang diagnostic ignored "-Wgnu-variable-sized-type-not-at-end"
struct scratch {
	struct ttf_net_event ev;
	__u8 payload[SCRATCH_PAYLOAD];
};

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 4096);
	__type(key, __u32);	/* tgid */
	__type(value, __u8);
} traced_tgids SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 256);
	__type(key, struct ttf_listen_key);
	__type(value, __u8);
} listen_ports SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_LRU_HASH);
	__uint(max_entries, 16384);
	__type(key, __u64);	/* pid_tgid */
	__type(value, struct sys_args);
} sys_args SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_LRU_HASH);
	__uint(max_entries, 65536);
	__type(key, __u64);	/* socket cookie (TTF_SK_ID_BY_PTR: the id from sk_ids) */
	__type(value, __u8);
} traced_socks SEC(".maps");

/*
 * sk is past TCP_CLOSE: reset, or closed under a reader that still takes
 * what was queued (docs/kernel.md B1.11).
 */
static __always_inline bool sk_closed(const struct sock *sk)
{
	return BPF_CORE_READ(sk, __sk_common.skc_state) == TCP_CLOSE;
}

#ifdef TTF_SK_ID_BY_PTR
/*
 * Sockets found through a file descriptor are not pointers the verifier
 * trusts, so bpf_get_socket_cookie() cannot take them: such a source gives
 * each socket an id of its own at first sight (bpf_ktime_get_ns() with the
 * CPU in the top bits) and forgets it when the socket closes, so an address
 * reused by a later socket gets a new id.
 */
struct {
	__uint(type, BPF_MAP_TYPE_LRU_HASH);
	__uint(max_entries, 65536);
	__type(key, __u64);	/* struct sock address */
	__type(value, __u64);	/* id in records (sock_cookie) */
} sk_ids SEC(".maps");
#endif

struct {
	__uint(type, BPF_MAP_TYPE_LRU_HASH);
	__uint(max_entries, 65536);
	__type(key, __u64);	/* socket cookie */
	__type(value, struct arrival);
} arrivals SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct scratch);
} scratch SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, TTF_CNT__MAX);
	__type(key, __u32);
	__type(value, __u64);
} counters SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_RINGBUF);
	__uint(max_entries, 16 << 20);	/* resized by user space before load */
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

/* Wake the consumer only when the ring is filling up; it drains on a timer. */
static __always_inline void submit(void *data, __u64 size)
{
	if (bpf_ringbuf_output(&events, data, size,
			       ttf_rb_wakeup_flags(&events, targ_wakeup_bytes)))
		count(TTF_CNT_RINGBUF_FULL);
	else
		count(TTF_CNT_EVENTS);
}

static __always_inline bool sk_is_tcp(const struct sock *sk)
{
	__u16 family = BPF_CORE_READ(sk, __sk_common.skc_family);

	if (family != TTF_AF_INET && family != TTF_AF_INET6)
		return false;
	return BPF_CORE_READ(sk, sk_protocol) == IPPROTO_TCP;
}

/* An AF_UNIX SOCK_STREAM socket (docs/kernel.md B10). */
static __always_inline bool sk_is_unix_stream(const struct sock *sk)
{
	return BPF_CORE_READ(sk, __sk_common.skc_family) == TTF_AF_UNIX &&
	       BPF_CORE_READ(sk, sk_type) == SOCK_STREAM;
}

/* The sockets whose I/O the sources record: TCP and unix stream. */
static __always_inline bool sk_is_stream(const struct sock *sk)
{
	return sk_is_tcp(sk) || sk_is_unix_stream(sk);
}

/*
 * The inode number of sk's socket (what /proc/PID/fd shows as socket:[N]
 * and /proc/net/unix as Inode): sk->sk_socket->file->f_inode->i_ino. 0 once
 * the socket is orphaned (its file closed: sock_orphan() clears sk_socket).
 */
static __always_inline __u64 sk_ino(const struct sock *sk)
{
	return BPF_CORE_READ(sk, sk_socket, file, f_inode, i_ino);
}

/*
 * The inode of the file a unix socket's path names (unix_sk(sk)->path: the
 * bound listener's, copied to each socket it accepts, even before the
 * accept, B10); 0 for an unnamed or abstract socket.
 */
static __always_inline __u64 unix_path_ino(const struct sock *sk)
{
	return BPF_CORE_READ((struct unix_sock *)sk, path.dentry, d_inode, i_ino);
}

/* A unix stream socket's addresses: its inodes and its peer's (bpf/net.h layout). */
#define FILL_UNIX_ADDR(e, sk)                                                              \
	do {                                                                               \
		struct sock *peer_ = BPF_CORE_READ((struct unix_sock *)(sk), peer);        \
		__u64 a_[2] = { sk_ino(sk), unix_path_ino(sk) }, b_[2] = { 0, 0 };         \
		if (peer_) {                                                               \
			b_[0] = sk_ino(peer_);                                             \
			b_[1] = unix_path_ino(peer_);                                      \
		}                                                                          \
		(e)->lport = 0;                                                            \
		(e)->rport = 0;                                                            \
		__builtin_memcpy((e)->laddr, a_, sizeof(a_));                              \
		__builtin_memcpy((e)->raddr, b_, sizeof(b_));                              \
	} while (0)

/* The addresses of sk into any struct with family, lport, rport, laddr, raddr fields. */
#define FILL_ADDR(e, sk)                                                                   \
	do {                                                                               \
		(e)->family = BPF_CORE_READ(sk, __sk_common.skc_family);                   \
		if ((e)->family == TTF_AF_UNIX) {                                          \
			FILL_UNIX_ADDR(e, sk);                                             \
			break;                                                             \
		}                                                                          \
		/* inet_put_port() zeroes skc_num at TCP_CLOSE, inet_sport stays */    \
		(e)->lport = BPF_CORE_READ(sk, __sk_common.skc_num);                       \
		if (!(e)->lport)                                                           \
			(e)->lport = bpf_ntohs(BPF_CORE_READ((struct inet_sock *)(sk),     \
							     inet_sport));                 \
		(e)->rport = bpf_ntohs(BPF_CORE_READ(sk, __sk_common.skc_dport));          \
		if ((e)->family == TTF_AF_INET) {                                          \
			__builtin_memset((e)->laddr, 0, sizeof((e)->laddr));               \
			__builtin_memset((e)->raddr, 0, sizeof((e)->raddr));               \
			bpf_core_read((e)->laddr, 4, &(sk)->__sk_common.skc_rcv_saddr);    \
			bpf_core_read((e)->raddr, 4, &(sk)->__sk_common.skc_daddr);        \
		} else {                                                                   \
			bpf_core_read((e)->laddr, 16, &(sk)->__sk_common.skc_v6_rcv_saddr); \
			bpf_core_read((e)->raddr, 16, &(sk)->__sk_common.skc_v6_daddr);    \
		}                                                                          \
	} while (0)

static __always_inline void fill_addr(struct ttf_net_event *e, const struct sock *sk)
{
	FILL_ADDR(e, sk);
}

#ifdef TTF_SK_ID_BY_PTR
/* The id of socket sk (see sk_ids); create: give it one if it has none. 0: none. */
static __always_inline __u64 sk_id(const struct sock *sk, bool create)
{
	__u64 key = (__u64)(unsigned long)sk, id, *v;

	v = bpf_map_lookup_elem(&sk_ids, &key);
	if (v)
		return *v;
	if (!create)
		return 0;
	id = bpf_ktime_get_ns() ^ ((__u64)(bpf_get_smp_processor_id() & 0xff) << 56);
	/*
	 * A socket past TCP_CLOSE gets no CLOSE transition that would forget an
	 * id: the next socket at this address would inherit a stored one. Its
	 * I/O (what a reset left queued) gets an id of its own, not stored.
	 */
	if (sk_closed(sk))
		return id;
	if (bpf_map_update_elem(&sk_ids, &key, &id, BPF_NOEXIST)) {
		count(TTF_CNT_SOCK_MAP_FULL);
		return 0;
	}
	return id;
}

static __always_inline void sk_id_forget(const struct sock *sk)
{
	__u64 key = (__u64)(unsigned long)sk;

	bpf_map_delete_elem(&sk_ids, &key);
}
#endif

/* ---- follow processes ---------------------------------------------------- */

SEC("tp_btf/sched_process_fork")
int BPF_PROG(handle_fork, struct task_struct *parent, struct task_struct *child)
{
	__u32 ptgid = parent->tgid, ctgid = child->tgid;
	__u8 one = 1;
	struct ttf_net_event *e;
	__u32 zero = 0;
	struct scratch *s;

	if (ptgid == ctgid || !tgid_traced(ptgid))
		return 0;
	if (bpf_map_update_elem(&traced_tgids, &ctgid, &one, BPF_ANY)) {
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
	submit(e, sizeof(*e));
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
	__u8 one = 1;

	if (!targ_follow_comm)
		return 0;
	bpf_probe_read_kernel_str(comm, sizeof(comm), p->comm);
	if (!comm_matches(comm))
		return 0;
	if (bpf_map_update_elem(&traced_tgids, &tgid, &one, BPF_ANY))
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
	s = bpf_map_lookup_elem(&scratch, &zero);
	if (!s)
		return 0;
	e = &s->ev;
	__builtin_memset(e, 0, sizeof(*e));
	e->type = TTF_EV_EXIT;
	e->ts_ns = bpf_ktime_get_ns();
	e->tgid = tgid;
	e->tid = BPF_CORE_READ(p, pid);
	bpf_probe_read_kernel_str(e->comm, sizeof(e->comm), p->comm);
	submit(e, sizeof(*e));
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

/* ---- device transmits (B1.3, B1.12) -------------------------------------- */

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

#ifndef TTF_SK_ID_BY_PTR
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

/*
 * Remember the arguments of a payload syscall of a traced thread: its fd,
 * user buffer (flat buffer, iovec array or msghdr), flags and entry time,
 * read from regs, or with regs NULL from args (a syscalls:sys_enter_X
 * context).
 * A slot only ever holds its thread's last such syscall (see the callers).
 */
static __always_inline void remember_call(struct pt_regs *regs, const unsigned long *args,
					  long id)
{
	struct sys_args a = {}, *old;
	__u64 pid_tgid;

	pid_tgid = bpf_get_current_pid_tgid();
	if (!tgid_traced(pid_tgid >> 32))
		return;
	switch (id) {
	case NR_read:
		a.kind = BUF_FLAT;
		a.dir = DIR_RECV;
		break;
	case NR_recvfrom:
		a.kind = BUF_FLAT;
		a.dir = DIR_RECV;
		a.flags = syscall_arg(regs, args, 3);
		break;
	case NR_write:
	case NR_sendto:
		a.kind = BUF_FLAT;
		a.dir = DIR_SEND;
		break;
	case NR_readv:
		a.kind = BUF_IOV;
		a.dir = DIR_RECV;
		break;
	case NR_writev:
		a.kind = BUF_IOV;
		a.dir = DIR_SEND;
		break;
	case NR_recvmsg:
		a.kind = BUF_MSG;
		a.dir = DIR_RECV;
		a.flags = syscall_arg(regs, args, 2);
		break;
	case NR_sendmsg:
		a.kind = BUF_MSG;
		a.dir = DIR_SEND;
		break;
	case NR_sendfile:
		a.kind = BUF_NONE;	/* the payload comes from a file, not user memory */
		a.dir = DIR_SEND;
		break;
	default:
		return;
	}
	a.nr = id;
	a.enter_ns = bpf_ktime_get_ns();
	a.fd = syscall_arg(regs, args, 0);
	a.buf = syscall_arg(regs, args, 1);
	a.len = syscall_arg(regs, args, 2);
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

/* ---- payload capture ----------------------------------------------------- */

/*
 * Hide x's known range from clang, so that the mask applied next stays in
 * the code: clang drops a mask it can prove to be a no-op, and the 6.1
 * verifier then loses the bound (it does not carry a compare's bound to a
 * copy spilled before it; measured on 6.1.0-54 under QEMU).
 */
#define opaque(x) asm volatile("" : "+r"(x))

/* Copy up to `want` bytes from an iovec array; returns bytes copied. */
static __always_inline __u32 copy_iov(__u8 *dst, __u64 iov_ptr, __u32 iovcnt, __u32 want)
{
	__u64 off = 0;

	for (int i = 0; i < MAX_IOVS; i++) {
		struct iovec iov;
		__u64 n;

		if (i >= iovcnt || off >= want)
			break;
		if (bpf_probe_read_user(&iov, sizeof(iov), (void *)(iov_ptr + i * sizeof(iov))))
			break;
		n = iov.iov_len > want - off ? want - off : iov.iov_len;
		if (n > TTF_CAPTURE_MAX_BYTES)
			n = TTF_CAPTURE_MAX_BYTES;
		opaque(n);	/* keep the mask: clang may drop it after the clamp (6.1) */
		if (bpf_probe_read_user(dst + (off & OFF_MASK), n & LEN_MASK, iov.iov_base))
			break;
		off += n;
	}
	return off;
}

static __always_inline __u32 copy_payload(__u8 *dst, const struct sys_args *a, __u64 want)
{
	struct user_msghdr msg;
	__u64 iov;
	__u32 n;

	if (want > TTF_CAPTURE_MAX_BYTES)
		want = TTF_CAPTURE_MAX_BYTES;
	switch (a->kind) {
	case BUF_FLAT:
		opaque(want);
		if (bpf_probe_read_user(dst, want & LEN_MASK, (void *)a->buf))
			return 0;
		return want;
	case BUF_IOV:
		iov = a->buf;
		n = a->len;
		break;
	case BUF_MSG:
		if (bpf_probe_read_user(&msg, sizeof(msg), (void *)a->buf))
			return 0;
		iov = (__u64)msg.msg_iov;
		n = msg.msg_iovlen;
		break;
	default:
		return 0;
	}
	/* one copy of the loop for both kinds: half the verifier's work */
	return copy_iov(dst, iov, n, want);
}

/*
 * Should a read or write of ret bytes (recv flags in flags) on sk become a
 * record? TCP and unix stream only, no MSG_PEEK (counted), the --port
 * filter (a unix socket has no port: none passes it). The caller has
 * checked that the thread is traced.
 */
static __always_inline bool io_wanted(struct sock *sk, int ret, int flags, __u8 type)
{
	if (ret <= 0 || !sk_is_stream(sk))
		return false;
	if (type == TTF_EV_RECV && (flags & MSG_PEEK)) {
		count(TTF_CNT_PEEK_SKIPPED);
		return false;
	}
	return !targ_port || BPF_CORE_READ(sk, __sk_common.skc_num) == targ_port;
}

#define S_IFMT 00170000
#define S_IFSOCK 0140000

/*
 * The socket behind descriptor fd of the current task (net_syscall.bpf.c at
 * sys_exit; net.bpf.c at io_uring submission, where io-wq and SQPOLL threads
 * share the owner's table, docs/kernel.md B1.10):
 * task->files->fdt->fd[fd], a file whose inode is a socket, private_data is
 * its struct socket (net/socket.c sock_alloc_file). NULL when fd is not a
 * socket or is gone.
 */
static __always_inline struct sock *sock_from_fd(__u32 fd)
{
	struct task_struct *task = (struct task_struct *)bpf_get_current_task();
	struct fdtable *fdt = BPF_CORE_READ(task, files, fdt);
	struct file **fds, *f;
	struct socket *so;
	umode_t mode;

	if (!fdt || fd >= BPF_CORE_READ(fdt, max_fds))
		return NULL;
	fds = BPF_CORE_READ(fdt, fd);
	if (bpf_probe_read_kernel(&f, sizeof(f), &fds[fd]) || !f)
		return NULL;
	mode = BPF_CORE_READ(f, f_inode, i_mode);
	if ((mode & S_IFMT) != S_IFSOCK)
		return NULL;
	so = BPF_CORE_READ(f, private_data);
	return so ? BPF_CORE_READ(so, sk) : NULL;
}

/* Remember socket cookie as traced (for the kernel-side programs). */
static __always_inline void mark_traced(__u64 cookie)
{
	__u8 one = 1;

	if (!bpf_map_lookup_elem(&traced_socks, &cookie) &&
	    bpf_map_update_elem(&traced_socks, &cookie, &one, BPF_ANY))
		count(TTF_CNT_SOCK_MAP_FULL);
}

/*
 * Submit the RECV or SEND record of a read/write that returned ret bytes on
 * sk (id cookie), with the payload prefix from a's buffer; a NULL (or a
 * sendfile's): no payload, flagged and counted. tls: TTF_EVF_TLS_CIPHER
 * (from tls_on_io) for ciphertext, which gets no payload, or 0.
 */
static __always_inline int emit_io(struct sock *sk, __u64 cookie, int ret, __u8 type,
				   struct sys_args *a, __u32 tls)
{
	__u64 pid_tgid = bpf_get_current_pid_tgid();
	__u32 zero = 0, want, got = 0;
	struct ttf_net_event *e;
	struct arrival *arr;
	struct scratch *s;

	s = bpf_map_lookup_elem(&scratch, &zero);
	if (!s)
		return 0;
	e = &s->ev;
	e->ts_ns = bpf_ktime_get_ns();
	e->sock_cookie = cookie;
	e->arrival_first_ns = 0;
	e->arrival_last_ns = 0;
	e->enter_ns = 0;
	e->tgid = pid_tgid >> 32;
	e->tid = (__u32)pid_tgid;
	e->bytes = ret;
	e->seq_end = 0;
	e->type = type;
	e->flags = tls;
	if (sk_closed(sk))
		e->flags |= TTF_EVF_CLOSED;
	e->xmit_before_ns = 0;
	fill_addr(e, sk);
	bpf_get_current_comm(e->comm, sizeof(e->comm));

	if (type == TTF_EV_RECV) {
		arr = bpf_map_lookup_elem(&arrivals, &cookie);
		if (arr) {
			struct tcp_sock *tp = (struct tcp_sock *)sk;

			e->arrival_first_ns = arr->first_ns;
			e->arrival_last_ns = arr->last_ns;
			/*
			 * TLS reads records piecemeal (a 5-byte header, then the
			 * rest; a handshake's last record, then the request): bytes
			 * still unread keep the newest arrival, theirs at the latest.
			 */
			if (tls && e->family != TTF_AF_UNIX &&
			    BPF_CORE_READ(tp, rcv_nxt) != BPF_CORE_READ(tp, copied_seq))
				arr->first_ns = arr->last_ns;
			else
				bpf_map_delete_elem(&arrivals, &cookie);
		}
	} else if (e->family != TTF_AF_UNIX) {	/* unix: no sequence numbers, no Nagle */
		struct tcp_sock *tp = (struct tcp_sock *)sk;

		e->seq_end = BPF_CORE_READ(tp, write_seq);
		/* TCP_NAGLE_OFF (include/net/tcp.h): set by setsockopt(TCP_NODELAY) */
		if (BPF_CORE_READ_BITFIELD_PROBED(tp, nonagle) & 1)
			e->flags |= TTF_EVF_NODELAY;
		if (a && a->xmit_cookie)
			xmit_settle(a, cookie, e);
	}

	want = type == TTF_EV_RECV ? targ_capture_bytes : targ_capture_send_bytes;
	if (want > (__u32)ret)
		want = ret;
	if (tls) {
		if (a)
			e->enter_ns = a->enter_ns;	/* ciphertext: never captured */
	} else if (a && a->kind != BUF_NONE) {
		e->enter_ns = a->enter_ns;
		got = copy_payload(s->payload, a, want);
	} else {
		if (a)
			e->enter_ns = a->enter_ns;
		e->flags |= TTF_EVF_NO_BUF;
		count(TTF_CNT_ARGS_MISSING);
	}
	if (got < (__u32)ret && !tls)
		e->flags |= TTF_EVF_TRUNCATED;
	if (got > TTF_CAPTURE_MAX_BYTES)
		got = TTF_CAPTURE_MAX_BYTES;
	opaque(got);
	got &= LEN_MASK;	/* a no-op after the clamp, for the verifier */
	e->cap_len = got;
	submit(s, sizeof(*e) + got);
	return 0;
}

#include "bpf/tls.bpf.h"

/* ---- kernel-side timing of traced sockets -------------------------------- */

/*
 * The network namespace sk lives in, as its proc inode (net->ns.inum; the
 * st_ino of /proc/PID/ns/net, docs/kernel.md B14); 0 without CONFIG_NET_NS
 * (possible_net_t then has no net).
 */
static __always_inline __u32 sk_netns_ino(const struct sock *sk)
{
	if (!bpf_core_field_exists(sk->__sk_common.skc_net.net))
		return 0;
	return BPF_CORE_READ(sk, __sk_common.skc_net.net, ns.inum);
}

static __always_inline bool sock_wanted(const struct sock *sk, __u64 *cookie)
{
	bool unix_sk = false;

	if (!sk_is_tcp(sk)) {
		if (!sk_is_unix_stream(sk))
			return false;
		unix_sk = true;
	}
#ifdef TTF_SK_ID_BY_PTR
	*cookie = sk_id(sk, false);
	if (*cookie)
		return true;
#else
	*cookie = bpf_get_socket_cookie((void *)sk);
	if (bpf_map_lookup_elem(&traced_socks, cookie))
		return true;
#endif
	/*
	 * Data can arrive before the server ever reads the new connection. A
	 * unix socket has no port: its data counts when a traced process sent
	 * it (sk_data_ready runs in the sender's task for unix, B10).
	 */
	if (unix_sk) {
		if (!tgid_traced(bpf_get_current_pid_tgid() >> 32))
			return false;
	} else {
		struct ttf_listen_key key = {
			.netns_ino = sk_netns_ino(sk),
			.port = BPF_CORE_READ(sk, __sk_common.skc_num),
		};

		if (!bpf_map_lookup_elem(&listen_ports, &key))
			return false;
	}
#ifdef TTF_SK_ID_BY_PTR
	*cookie = sk_id(sk, true);
	return *cookie != 0;
#else
	return true;
#endif
}

/* Remember now as the newest (and, when none is pending, oldest) arrival on cookie. */
static __always_inline void note_arrival(__u64 cookie)
{
	struct arrival *arr, fresh;
	__u64 now = bpf_ktime_get_ns();

	arr = bpf_map_lookup_elem(&arrivals, &cookie);
	if (arr) {
		if (!arr->first_ns)
			arr->first_ns = now;
		arr->last_ns = now;
		return;
	}
	fresh.first_ns = now;
	fresh.last_ns = now;
	if (bpf_map_update_elem(&arrivals, &cookie, &fresh, BPF_NOEXIST))
		count(TTF_CNT_ARRIVAL_MAP_FULL);
}

SEC("tp_btf/sk_data_ready")
int BPF_PROG(handle_data_ready, const struct sock *sk)
{
	__u64 cookie;

	if (sock_wanted(sk, &cookie))
		note_arrival(cookie);
	return 0;
}

/*
 * Where sk_data_ready is missing (user space loads this program only then):
 * tcp_probe fires at the top of tcp_rcv_established() for every segment an
 * established socket receives, before it is queued (docs/kernel.md B1.2).
 * Segments without payload (pure ACKs) are not arrivals; data that came
 * with the handshake's last ACK never passes here.
 */
SEC("tp_btf/tcp_probe")
int BPF_PROG(handle_tcp_probe, struct sock *sk, struct sk_buff *skb)
{
	struct tcphdr th;
	__u64 cookie;
	void *data;
	__u32 len;

	data = BPF_CORE_READ(skb, data);
	len = BPF_CORE_READ(skb, len);
	if (bpf_probe_read_kernel(&th, sizeof(th), data))
		return 0;
	if (len <= th.doff * 4)
		return 0;
	if (sock_wanted(sk, &cookie))
		note_arrival(cookie);
	return 0;
}

SEC("tp_btf/net_dev_start_xmit")
int BPF_PROG(handle_xmit, const struct sk_buff *skb, const struct net_device *dev)
{
	struct sock *sk = BPF_CORE_READ(skb, sk);
	__u32 len, hdr_len, bytes, seq_end;
	__u16 mac_off, th_off;
	struct sys_args *a;
	struct tcphdr th;
	__u64 cookie, ts;
	__u8 state;
	void *head;

	if (!sk)
		return 0;
	state = BPF_CORE_READ(sk, __sk_common.skc_state);
	if (state == TCP_TIME_WAIT || state == TCP_NEW_SYN_RECV)
		return 0;
	if (!sk_is_tcp(sk))
		return 0;
	/*
	 * skb->sk is not a trusted pointer here, so read the cookie that
	 * bpf_get_socket_cookie() stored when the socket was first traced
	 * (sock_gen_cookie() caches it in skc_cookie); 0 = never traced.
	 */
#ifdef TTF_SK_ID_BY_PTR
	cookie = sk_id(sk, false);
#else
	cookie = BPF_CORE_READ(sk, __sk_common.skc_cookie.counter);
#endif
	if (!cookie || !bpf_map_lookup_elem(&traced_socks, &cookie))
		return 0;
	head = BPF_CORE_READ(skb, head);
	mac_off = BPF_CORE_READ(skb, mac_header);
	th_off = BPF_CORE_READ(skb, transport_header);
	len = BPF_CORE_READ(skb, len);
	if (bpf_probe_read_kernel(&th, sizeof(th), head + th_off))
		return 0;
	hdr_len = (th_off - mac_off) + th.doff * 4;
	if (len <= hdr_len)
		return 0;	/* pure ACK / control segment */
	ts = bpf_ktime_get_ns();
	bytes = len - hdr_len;
	seq_end = bpf_ntohl(th.seq) + bytes;
	/*
	 * Inside a write (loopback, and most devices, transmit at once): keep
	 * it for the write's SEND record, which carries it when it is the
	 * write's last segment (B1.12). An earlier segment kept by this write
	 * goes out as its own record.
	 */
	a = send_call_slot(bpf_get_current_pid_tgid());
	if (a) {
		xmit_flush(a);
		a->xmit_cookie = cookie;
		a->xmit_sk = (__u64)(unsigned long)sk;
		a->xmit_ns = ts;
		a->xmit_seq_end = seq_end;
		a->xmit_bytes = bytes;
		return 0;
	}
	emit_xmit(sk, cookie, ts, seq_end, bytes);
	return 0;
}

/*
 * The end of a traced unix stream connection, seen from one end (cookie is
 * its id): its process closed its descriptor, or it read EOF (the peer
 * closed). No tracepoint marks either in the kernel (B10); the sources call
 * this from close(2) at sys_enter and from a read that returned 0. A CLOSE
 * record (bytes, seq_end 0) when the socket was traced.
 */
static __always_inline void unix_conn_end(const struct sock *sk, __u64 cookie)
{
	struct ttf_net_event *e;
	__u32 zero = 0;
	struct scratch *s;

#ifdef TTF_SK_ID_BY_PTR
	sk_id_forget(sk);
#endif
	if (!cookie || !bpf_map_lookup_elem(&traced_socks, &cookie))
		return;
	bpf_map_delete_elem(&traced_socks, &cookie);
	bpf_map_delete_elem(&arrivals, &cookie);
	s = bpf_map_lookup_elem(&scratch, &zero);
	if (!s)
		return;
	e = &s->ev;
	__builtin_memset(e, 0, sizeof(*e));
	e->type = TTF_EV_CLOSE;
	e->ts_ns = bpf_ktime_get_ns();
	e->sock_cookie = cookie;
	e->tgid = bpf_get_current_pid_tgid() >> 32;
	e->tid = (__u32)bpf_get_current_pid_tgid();
	e->family = TTF_AF_UNIX;
	FILL_UNIX_ADDR(e, sk);
	submit(e, sizeof(*e));
}

/*
 * close(fd) by a traced process, at sys_enter (the descriptor still names
 * its file): a unix stream socket's connection ends here. A socket with
 * several descriptors (dup, fork) ends at the first close (B10).
 */
static __always_inline void on_close_fd(__u32 fd)
{
	struct sock *sk;
	__u64 cookie;

	if (!tgid_traced(bpf_get_current_pid_tgid() >> 32))
		return;
	sk = sock_from_fd(fd);
	if (!sk || !sk_is_unix_stream(sk))
		return;
#ifdef TTF_SK_ID_BY_PTR
	cookie = sk_id(sk, false);
#else
	/* not a trusted pointer: the cookie bpf_get_socket_cookie() cached (0: never traced) */
	cookie = BPF_CORE_READ(sk, __sk_common.skc_cookie.counter);
#endif
	unix_conn_end(sk, cookie);
}

SEC("tp_btf/inet_sock_set_state")
int BPF_PROG(handle_set_state, const struct sock *sk, const int oldstate, const int newstate)
{
	struct ttf_net_event *e;
	__u32 zero = 0;
	struct scratch *s;
	__u64 cookie;

	if (oldstate != TCP_ESTABLISHED && newstate != TCP_CLOSE)
		return 0;
	if (BPF_CORE_READ(sk, sk_protocol) != IPPROTO_TCP)
		return 0;
#ifdef TTF_SK_ID_BY_PTR
	cookie = sk_id(sk, false);
	if (!cookie)
		return 0;
	/* an id given at arrival (sock_wanted) to a socket never read is forgotten too */
	if (newstate == TCP_CLOSE)
		sk_id_forget(sk);
#else
	cookie = bpf_get_socket_cookie((void *)sk);
#endif
	if (!bpf_map_lookup_elem(&traced_socks, &cookie))
		return 0;
	if (newstate == TCP_CLOSE) {
		bpf_map_delete_elem(&traced_socks, &cookie);
		bpf_map_delete_elem(&arrivals, &cookie);
		bpf_map_delete_elem(&tls_socks, &cookie);
		if (oldstate != TCP_ESTABLISHED)
			return 0;	/* CLOSE already reported when it left ESTABLISHED */
	}
	s = bpf_map_lookup_elem(&scratch, &zero);
	if (!s)
		return 0;
	e = &s->ev;
	__builtin_memset(e, 0, sizeof(*e));
	e->type = TTF_EV_CLOSE;
	e->ts_ns = bpf_ktime_get_ns();
	e->sock_cookie = cookie;
	e->tgid = bpf_get_current_pid_tgid() >> 32;
	e->bytes = newstate;
	/* what it had written: a SEND record may still be on its way (B1.4) */
	e->seq_end = BPF_CORE_READ((struct tcp_sock *)sk, write_seq);
	e->flags = TTF_EVF_CLOSE_SEQ;
	if (newstate == TCP_CLOSE)
		e->flags |= TTF_EVF_RESET;
	fill_addr(e, sk);
	submit(e, sizeof(*e));
	return 0;
}

#endif /* TTF_NET_COMMON_BPF_H */
