/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * Payload capture (BPF side; part of bpf/net_common.bpf.h): whether a
 * socket read or write becomes a record (io_wanted), the copy of its
 * payload prefix from the remembered user buffer (copy_payload), and its
 * RECV or SEND record (emit_io). The sources call these from their own
 * programs, at the socket tracepoints or at sys_exit.
 */
#ifndef TTF_NET_CAPTURE_BPF_H
#define TTF_NET_CAPTURE_BPF_H

#include "bpf/net_xmit.bpf.h"

#define MSG_PEEK 2
/* iovecs copied per call (a source may define fewer: net_syscall.bpf.c) */
#ifndef MAX_IOVS
#define MAX_IOVS 64
#endif

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
	if (ret <= 0 || !sk_io_stream(sk))
		return false;
	if (type == TTF_EV_RECV && (flags & MSG_PEEK)) {
		count(TTF_CNT_PEEK_SKIPPED);
		return false;
	}
	return !targ_port || SK_IO(sk, __sk_common.skc_num) == targ_port;
}

/*
 * A TCP write's sequence after it, and TCP_NAGLE_OFF (include/net/tcp.h:
 * set by setsockopt(TCP_NODELAY)). The sock source's BTF pointer becomes a
 * tcp_sock one through bpf_skc_to_tcp_sock() (5.9), whose fields are plain
 * loads (B1.16); the syscall source reads them through the helper.
 */
static __always_inline void tcp_send_state(struct ttf_net_event *e, struct sock *sk)
{
#ifdef TTF_SK_ID_BY_PTR
	struct tcp_sock *tp = (struct tcp_sock *)sk;

	e->seq_end = BPF_CORE_READ(tp, write_seq);
	if (BPF_CORE_READ_BITFIELD_PROBED(tp, nonagle) & 1)
		e->flags |= TTF_EVF_NODELAY;
#else
	struct tcp_sock *tp = bpf_skc_to_tcp_sock(sk);

	if (!tp)
		return;
	e->seq_end = tp->write_seq;
	if (BPF_CORE_READ_BITFIELD(tp, nonagle) & 1)
		e->flags |= TTF_EVF_NODELAY;
#endif
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
	if (sk_io_closed(sk))
		e->flags |= TTF_EVF_CLOSED;
	e->xmit_before_ns = 0;
	fill_addr_io(e, sk);
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
		tcp_send_state(e, sk);
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

#endif /* TTF_NET_CAPTURE_BPF_H */
