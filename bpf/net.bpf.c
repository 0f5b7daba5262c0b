// SPDX-License-Identifier: GPL-2.0-only
/*
 * Network probes: what traced processes read from and write to TCP sockets,
 * when those bytes arrived in the kernel, and when written bytes reached the
 * device. Only tracepoints (tp_btf), so no tracefs and no kprobes are needed.
 *
 *   sys_enter           remember the user buffer of read/write-like syscalls
 *   sock_recv_length    RECV record + payload prefix (fires after the copy-out)
 *   sock_send_length    SEND record + payload prefix + tcp write_seq
 *   sk_data_ready       kernel arrival time of data on a traced socket
 *   net_dev_start_xmit  XMIT record with the segment's end sequence number
 *   inet_sock_set_state CLOSE record when a traced socket leaves ESTABLISHED
 *   sched_process_*     follow fork/exec/exit of traced processes
 *
 * Kernel facts (docs/kernel.md B1.1, docs/cases.md #11):
 * sock_{send,recv}_length exist since 6.3, fire in the calling task for every
 * send/recv variant; send flags are always 0; recv passes raw ret and flags,
 * so MSG_PEEK reads must be skipped here.
 */
#include "vmlinux.h"
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_tracing.h>
#include <bpf/bpf_core_read.h>
#include <bpf/bpf_endian.h>
#include "bpf/net.h"
#include "bpf/common.bpf.h"

char LICENSE[] SEC("license") = "GPL";

#define MSG_PEEK 2
#define IPPROTO_TCP 6
#define TCP_ESTABLISHED 1
#define TCP_TIME_WAIT 6
#define TCP_CLOSE 7
#define TCP_NEW_SYN_RECV 12
#define MAX_IOVS 64
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

enum buf_kind { BUF_FLAT = 1, BUF_IOV = 2, BUF_MSG = 3 };
enum buf_dir { DIR_RECV = 1, DIR_SEND = 2 };

struct sys_args {
	__u64 enter_ns;	/* bpf_ktime_get_ns() at sys_enter */
	__u64 buf;	/* user pointer: buffer, iovec array or msghdr */
	__s64 nr;	/* syscall number */
	__u32 len;	/* buffer length or iovec count */
	__u8 kind;	/* enum buf_kind */
	__u8 dir;	/* enum buf_dir */
	__u16 pad;
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
	__type(key, __u16);	/* local listening port, host order */
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
	__type(key, __u64);	/* socket cookie */
	__type(value, __u8);
} traced_socks SEC(".maps");

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

static __always_inline void fill_addr(struct ttf_net_event *e, const struct sock *sk)
{
	e->family = BPF_CORE_READ(sk, __sk_common.skc_family);
	e->lport = BPF_CORE_READ(sk, __sk_common.skc_num);
	e->rport = bpf_ntohs(BPF_CORE_READ(sk, __sk_common.skc_dport));
	if (e->family == TTF_AF_INET) {
		__builtin_memset(e->laddr, 0, sizeof(e->laddr));
		__builtin_memset(e->raddr, 0, sizeof(e->raddr));
		bpf_core_read(e->laddr, 4, &sk->__sk_common.skc_rcv_saddr);
		bpf_core_read(e->raddr, 4, &sk->__sk_common.skc_daddr);
	} else {
		bpf_core_read(e->laddr, 16, &sk->__sk_common.skc_v6_rcv_saddr);
		bpf_core_read(e->raddr, 16, &sk->__sk_common.skc_v6_daddr);
	}
}

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

SEC("tp_btf/sched_process_exit")
int BPF_PROG(handle_exit, struct task_struct *p, bool group_dead)
{
	__u32 tgid = p->tgid, zero = 0;
	struct ttf_net_event *e;
	struct scratch *s;

	if (!group_dead || !tgid_traced(tgid))
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
	e->tid = p->pid;
	bpf_probe_read_kernel_str(e->comm, sizeof(e->comm), p->comm);
	submit(e, sizeof(*e));
	return 0;
}

/* ---- remember syscall buffers -------------------------------------------- */

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
#elif defined(__TARGET_ARCH_arm64) || defined(__TARGET_ARCH_riscv)
#define NR_read 63
#define NR_write 64
#define NR_readv 65
#define NR_writev 66
#define NR_sendto 206
#define NR_recvfrom 207
#define NR_sendmsg 211
#define NR_recvmsg 212
#else
#error "syscall numbers for this architecture are not known"
#endif

/* The syscalls whose buffer handle_sys_enter remembers: one test on x86. */
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
	struct sys_args a = {};
	__u64 pid_tgid;

	if (!payload_syscall(id))
		return 0;
	pid_tgid = bpf_get_current_pid_tgid();
	if (!tgid_traced(pid_tgid >> 32))
		return 0;
	switch (id) {
	case NR_read:
	case NR_recvfrom:
		a.kind = BUF_FLAT;
		a.dir = DIR_RECV;
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
		break;
	case NR_sendmsg:
		a.kind = BUF_MSG;
		a.dir = DIR_SEND;
		break;
	}
	a.nr = id;
	a.enter_ns = bpf_ktime_get_ns();
	a.buf = PT_REGS_PARM2_CORE_SYSCALL(regs);
	a.len = PT_REGS_PARM3_CORE_SYSCALL(regs);
	bpf_map_update_elem(&sys_args, &pid_tgid, &a, BPF_ANY);
	return 0;
}

/* ---- payload capture ----------------------------------------------------- */

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
		if (bpf_probe_read_user(dst + (off & OFF_MASK), n & LEN_MASK, iov.iov_base))
			break;
		off += n;
	}
	return off;
}

static __always_inline __u32 copy_payload(__u8 *dst, const struct sys_args *a, __u64 want)
{
	struct user_msghdr msg;

	if (want > TTF_CAPTURE_MAX_BYTES)
		want = TTF_CAPTURE_MAX_BYTES;
	switch (a->kind) {
	case BUF_FLAT:
		if (bpf_probe_read_user(dst, want & LEN_MASK, (void *)a->buf))
			return 0;
		return want;
	case BUF_IOV:
		return copy_iov(dst, a->buf, a->len, want);
	case BUF_MSG:
		if (bpf_probe_read_user(&msg, sizeof(msg), (void *)a->buf))
			return 0;
		return copy_iov(dst, (__u64)msg.msg_iov, msg.msg_iovlen, want);
	}
	return 0;
}

static __always_inline int handle_io(struct sock *sk, int ret, int flags, __u8 type)
{
	__u64 pid_tgid = bpf_get_current_pid_tgid();
	__u32 tgid = pid_tgid >> 32, zero = 0, want, got = 0;
	struct ttf_net_event *e;
	struct sys_args *a;
	struct arrival *arr;
	struct scratch *s;
	__u64 cookie;
	__u8 one = 1;

	if (ret <= 0 || !tgid_traced(tgid))
		return 0;
	if (!sk_is_tcp(sk))
		return 0;
	if (type == TTF_EV_RECV && (flags & MSG_PEEK)) {
		count(TTF_CNT_PEEK_SKIPPED);
		return 0;
	}
	if (targ_port && BPF_CORE_READ(sk, __sk_common.skc_num) != targ_port)
		return 0;
	s = bpf_map_lookup_elem(&scratch, &zero);
	if (!s)
		return 0;
	e = &s->ev;
	cookie = bpf_get_socket_cookie(sk);
	if (!bpf_map_lookup_elem(&traced_socks, &cookie) &&
	    bpf_map_update_elem(&traced_socks, &cookie, &one, BPF_ANY))
		count(TTF_CNT_SOCK_MAP_FULL);

	e->ts_ns = bpf_ktime_get_ns();
	e->sock_cookie = cookie;
	e->arrival_first_ns = 0;
	e->arrival_last_ns = 0;
	e->enter_ns = 0;
	e->tgid = tgid;
	e->tid = (__u32)pid_tgid;
	e->bytes = ret;
	e->seq_end = 0;
	e->type = type;
	e->flags = 0;
	e->pad = 0;
	fill_addr(e, sk);
	bpf_get_current_comm(e->comm, sizeof(e->comm));

	if (type == TTF_EV_RECV) {
		arr = bpf_map_lookup_elem(&arrivals, &cookie);
		if (arr) {
			e->arrival_first_ns = arr->first_ns;
			e->arrival_last_ns = arr->last_ns;
			bpf_map_delete_elem(&arrivals, &cookie);
		}
	} else {
		struct tcp_sock *tp = (struct tcp_sock *)sk;

		e->seq_end = BPF_CORE_READ(tp, write_seq);
		/* TCP_NAGLE_OFF (include/net/tcp.h): set by setsockopt(TCP_NODELAY) */
		if (BPF_CORE_READ_BITFIELD_PROBED(tp, nonagle) & 1)
			e->flags |= TTF_EVF_NODELAY;
	}

	want = type == TTF_EV_RECV ? targ_capture_bytes : targ_capture_send_bytes;
	if (want > (__u32)ret)
		want = ret;
	a = bpf_map_lookup_elem(&sys_args, &pid_tgid);
	if (a && a->dir == (type == TTF_EV_RECV ? DIR_RECV : DIR_SEND) &&
	    a->nr == current_syscall_nr()) {
		e->enter_ns = a->enter_ns;
		got = copy_payload(s->payload, a, want);
	} else {
		e->flags |= TTF_EVF_NO_BUF;
		count(TTF_CNT_ARGS_MISSING);
	}
	if (got < (__u32)ret)
		e->flags |= TTF_EVF_TRUNCATED;
	if (got > TTF_CAPTURE_MAX_BYTES)
		got = TTF_CAPTURE_MAX_BYTES;
	e->cap_len = got;
	submit(s, sizeof(*e) + got);
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

/* ---- kernel-side timing of traced sockets -------------------------------- */

static __always_inline bool sock_wanted(const struct sock *sk, __u64 *cookie)
{
	__u16 lport;

	if (!sk_is_tcp(sk))
		return false;
	*cookie = bpf_get_socket_cookie((void *)sk);
	if (bpf_map_lookup_elem(&traced_socks, cookie))
		return true;
	/* Data can arrive before the server ever reads the new connection. */
	lport = BPF_CORE_READ(sk, __sk_common.skc_num);
	return bpf_map_lookup_elem(&listen_ports, &lport) != NULL;
}

SEC("tp_btf/sk_data_ready")
int BPF_PROG(handle_data_ready, const struct sock *sk)
{
	struct arrival *arr, fresh;
	__u64 cookie, now;

	if (!sock_wanted(sk, &cookie))
		return 0;
	now = bpf_ktime_get_ns();
	arr = bpf_map_lookup_elem(&arrivals, &cookie);
	if (arr) {
		if (!arr->first_ns)
			arr->first_ns = now;
		arr->last_ns = now;
		return 0;
	}
	fresh.first_ns = now;
	fresh.last_ns = now;
	if (bpf_map_update_elem(&arrivals, &cookie, &fresh, BPF_NOEXIST))
		count(TTF_CNT_ARRIVAL_MAP_FULL);
	return 0;
}

SEC("tp_btf/net_dev_start_xmit")
int BPF_PROG(handle_xmit, const struct sk_buff *skb, const struct net_device *dev)
{
	struct sock *sk = BPF_CORE_READ(skb, sk);
	__u16 mac_off, th_off;
	__u32 len, hdr_len, zero = 0;
	struct ttf_net_event *e;
	struct scratch *s;
	struct tcphdr th;
	__u64 cookie;
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
	cookie = BPF_CORE_READ(sk, __sk_common.skc_cookie.counter);
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
	s = bpf_map_lookup_elem(&scratch, &zero);
	if (!s)
		return 0;
	e = &s->ev;
	__builtin_memset(e, 0, sizeof(*e));
	e->type = TTF_EV_XMIT;
	e->ts_ns = bpf_ktime_get_ns();
	e->sock_cookie = cookie;
	e->tgid = bpf_get_current_pid_tgid() >> 32;
	e->tid = (__u32)bpf_get_current_pid_tgid();
	e->bytes = len - hdr_len;
	e->seq_end = bpf_ntohl(th.seq) + e->bytes;
	fill_addr(e, sk);
	submit(e, sizeof(*e));
	return 0;
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
	cookie = bpf_get_socket_cookie((void *)sk);
	if (!bpf_map_lookup_elem(&traced_socks, &cookie))
		return 0;
	if (newstate == TCP_CLOSE) {
		bpf_map_delete_elem(&traced_socks, &cookie);
		bpf_map_delete_elem(&arrivals, &cookie);
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
	e->seq_end = oldstate;
	if (newstate == TCP_CLOSE)
		e->flags |= TTF_EVF_RESET;
	fill_addr(e, sk);
	submit(e, sizeof(*e));
	return 0;
}
