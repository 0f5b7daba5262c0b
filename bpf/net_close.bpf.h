/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * The end of traced connections (BPF side; part of bpf/net_common.bpf.h):
 * a CLOSE record, and the socket forgotten in the sources' maps (and
 * tls.bpf.h's tls_socks).
 *
 *   inet_sock_set_state  handle_set_state: a TCP socket leaves ESTABLISHED
 *                        or is closed
 *   unix_conn_end        a unix stream connection's end, called by the
 *                        sources at close(2) (on_close_fd) and at EOF
 */
#ifndef TTF_NET_CLOSE_BPF_H
#define TTF_NET_CLOSE_BPF_H

#include "bpf/net_sock.bpf.h"
#include "bpf/tls.bpf.h"
#include "bpf/net_hop.bpf.h"

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

/*
 * What the socket received and its process has not read yet, at the peer's
 * FIN (CLOSE_WAIT: rcv_nxt already counts the FIN's sequence number) or a
 * reset (B1.13): the process may still read it, after this CLOSE record.
 */
static __always_inline void note_unread(struct ttf_net_event *e, struct tcp_sock *tp,
					int newstate)
{
	__u32 unread = BPF_CORE_READ(tp, rcv_nxt) - BPF_CORE_READ(tp, copied_seq);

	if (newstate == TCP_CLOSE_WAIT && unread)
		unread--;
	if (unread) {
		e->flags |= TTF_EVF_CLOSE_UNREAD;
		e->close_unread = unread;
	}
}

/*
 * Is the current task inside a read of sk (its syscall slot a RECV on a
 * descriptor naming sk)? Then this state change came from the socket's
 * backlog as that read released it, and the read's RECV record follows.
 */
static __always_inline bool in_own_read(const struct sock *sk)
{
	__u64 pid_tgid = bpf_get_current_pid_tgid();
	struct sys_args *a;

	if (!tgid_traced(pid_tgid >> 32))
		return false;
	a = bpf_map_lookup_elem(&sys_args, &pid_tgid);
	return a && a->dir == DIR_RECV && sock_from_fd(a->fd) == sk;
}

SEC("tp_btf/inet_sock_set_state")
int BPF_PROG(handle_set_state, const struct sock *sk, const int oldstate, const int newstate)
{
	struct ttf_net_event *e;
	__u32 zero = 0;
	struct scratch *s;
	__u64 cookie;

	if (newstate == TCP_SYN_SENT) {
		follow_connect(sk);	/* in the connecting task (B1.14) */
		return 0;
	}
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
		/*
		 * CLOSE already reported when it left ESTABLISHED; but after the
		 * peer's FIN (CLOSE_WAIT) the tracker waits for the responses in
		 * flight (user/proto/close_wait.c): the end is news to it
		 */
		if (oldstate != TCP_ESTABLISHED && oldstate != TCP_CLOSE_WAIT &&
		    oldstate != TCP_LAST_ACK)
			return 0;
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
	/* leaving ESTABLISHED: a later CLOSE (after CLOSE_WAIT) has read all it will */
	if (oldstate == TCP_ESTABLISHED && (newstate == TCP_CLOSE_WAIT || newstate == TCP_CLOSE)) {
		note_unread(e, (struct tcp_sock *)sk, newstate);
		if (in_own_read(sk))
			e->flags |= TTF_EVF_CLOSE_IN_READ;
	}
	fill_addr(e, sk);
	submit(e, sizeof(*e));
	return 0;
}

#endif /* TTF_NET_CLOSE_BPF_H */
