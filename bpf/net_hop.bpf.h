/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * No hop lost at start (BPF side; part of bpf/net_common.bpf.h). A traced
 * process that connect()s to a TCP port on this host whose listener is not
 * traced marks the port (follow_connect, from inet_sock_set_state's
 * CLOSE -> SYN_SENT, which runs in the connecting task: docs/kernel.md
 * B1.14). While a mark is pending, the reads of untraced threads are looked
 * at too; the first one on a connection accepted at a marked port that
 * starts a call ttftrace follows (HTTP, HTTP/2, ZMTP) traces its process
 * from that read on (follow_claim): the read makes its RECV
 * record, and a FOLLOW record tells user space, which then traces the
 * process's descendants, engine and scheduler as for any hop. User space's
 * own discovery (user/probe/follow.c) sees a new upstream only after the
 * caller's first call came back, too late for that call's read.
 *
 * Only traced processes' connects mark, only local destinations (loopback
 * or the socket's own address), and a mark lives FOLLOW_MARK_TTL_NS. While
 * none is pending, an untraced read costs one load of follow_open_until_ns.
 */
#ifndef TTF_NET_HOP_BPF_H
#define TTF_NET_HOP_BPF_H

#include "bpf/net_sock.bpf.h"

#define FOLLOW_MARK_TTL_NS (10ull * 1000000000ull)

static __always_inline bool follow_open(void)
{
	return targ_follow_hops && follow_open_until_ns &&
	       bpf_ktime_get_ns() < follow_open_until_ns;
}

/* Does sk (connecting) go to this host: loopback, or its own local address? */
static __always_inline bool dst_local(const struct sock *sk)
{
	__u16 family = BPF_CORE_READ(sk, __sk_common.skc_family);
	__u32 d[4] = {}, l[4] = {};

	if (family == TTF_AF_INET) {
		bpf_core_read(&d[0], 4, &sk->__sk_common.skc_daddr);
		bpf_core_read(&l[0], 4, &sk->__sk_common.skc_rcv_saddr);
		return (d[0] & 0xff) == 127 || d[0] == l[0];
	}
	if (family != TTF_AF_INET6)
		return false;
	bpf_core_read(d, 16, &sk->__sk_common.skc_v6_daddr);
	bpf_core_read(l, 16, &sk->__sk_common.skc_v6_rcv_saddr);
	if (!d[0] && !d[1] && !d[2] && d[3] == bpf_htonl(1))
		return true;					/* ::1 */
	if (!d[0] && !d[1] && d[2] == bpf_htonl(0xffff) && (d[3] & 0xff) == 127)
		return true;					/* ::ffff:127.x.y.z */
	return d[0] == l[0] && d[1] == l[1] && d[2] == l[2] && d[3] == l[3];
}

/* A traced task's connect() reached SYN_SENT on sk: mark its port when no traced process listens there. */
static __always_inline void follow_connect(const struct sock *sk)
{
	__u32 tgid = bpf_get_current_pid_tgid() >> 32;
	struct ttf_listen_key key = {};
	struct follow_mark m = {};

	if (!targ_follow_hops || BPF_CORE_READ(sk, sk_protocol) != IPPROTO_TCP ||
	    !tgid_traced(tgid) || !dst_local(sk))
		return;
	key.netns_ino = sk_netns_ino(sk);
	key.port = bpf_ntohs(BPF_CORE_READ(sk, __sk_common.skc_dport));
	if (bpf_map_lookup_elem(&listen_ports, &key))
		return;
	m.marked_ns = bpf_ktime_get_ns();
	m.caller_tgid = tgid;
	port_mark(key.port);	/* before the entry: its arrivals are looked up */
	if (bpf_map_update_elem(&follow_ports, &key, &m, BPF_ANY)) {
		count(TTF_CNT_HOP_MAP_FULL);
		return;
	}
	follow_open_until_ns = m.marked_ns + FOLLOW_MARK_TTL_NS;
	count(TTF_CNT_HOP_MARKED);
}

/* The FOLLOW record: caller, the followed process (current), its socket's addresses. */
static __always_inline void follow_record(const struct sock *sk, __u32 caller_tgid)
{
	struct ttf_net_event *e;
	__u32 zero = 0;
	struct scratch *s;

	s = bpf_map_lookup_elem(&scratch, &zero);
	if (!s)
		return;
	e = &s->ev;
	__builtin_memset(e, 0, sizeof(*e));
	e->type = TTF_EV_FOLLOW;
	e->ts_ns = bpf_ktime_get_ns();
	e->tgid = caller_tgid;
	e->tid = bpf_get_current_pid_tgid() >> 32;
	bpf_get_current_comm(e->comm, sizeof(e->comm));
	fill_addr(e, sk);
	submit(e, sizeof(*e));
}

/* The first 4 bytes of a read's user buffer (flat, iovec or msghdr), little-endian; 0 unknown. */
static __always_inline __u32 first_word(const struct sys_args *a)
{
	struct user_msghdr msg;
	struct iovec iov;
	__u64 p = a->buf;
	__u32 w = 0;

	if (a->kind == BUF_MSG) {
		if (bpf_probe_read_user(&msg, sizeof(msg), (void *)p))
			return 0;
		p = (__u64)msg.msg_iov;
	}
	if (a->kind == BUF_MSG || a->kind == BUF_IOV) {
		if (bpf_probe_read_user(&iov, sizeof(iov), (void *)p))
			return 0;
		p = (__u64)iov.iov_base;
	}
	if (bpf_probe_read_user(&w, sizeof(w), (void *)p))
		return 0;
	return w;
}

#define WORD(a, b, c, d) ((__u32)(a) | (__u32)(b) << 8 | (__u32)(c) << 16 | (__u32)(d) << 24)

/*
 * Does a connection's first read start a call ttftrace follows: an HTTP/1.x
 * request, the HTTP/2 preface (gRPC too), or a ZMTP 3 greeting (0xff, then
 * the padding's zeros)? Other protocols (a database, a cache) leave the
 * listener untraced, as user space's discovery would.
 */
static __always_inline bool starts_call(const struct sys_args *a)
{
	switch (first_word(a)) {
	case WORD('G', 'E', 'T', ' '): case WORD('P', 'O', 'S', 'T'):
	case WORD('P', 'U', 'T', ' '): case WORD('H', 'E', 'A', 'D'):
	case WORD('P', 'A', 'T', 'C'): case WORD('D', 'E', 'L', 'E'):
	case WORD('O', 'P', 'T', 'I'): case WORD('P', 'R', 'I', ' '):
	case WORD(0xff, 0, 0, 0):
		return true;
	}
	return false;
}

/*
 * An untraced task read from sk (its call's arguments a): when sk was
 * accepted at a marked port and the read starts a call, trace the task's
 * process from now on (true). The port joins listen_ports (its arrivals are
 * timed, no connect marks it again).
 */
static __always_inline bool follow_claim(const struct sock *sk, const struct sys_args *a)
{
	__u32 tgid = bpf_get_current_pid_tgid() >> 32;
	struct ttf_listen_key key = {};
	struct follow_mark *m;
	__u32 caller;
	__u8 one = 1;

	if (!follow_open() || !sk_is_tcp(sk))
		return false;
	count(TTF_CNT_HOP_UNTRACED_CALLS);
	key.netns_ino = sk_netns_ino(sk);
	key.port = BPF_CORE_READ(sk, __sk_common.skc_num);
	m = bpf_map_lookup_elem(&follow_ports, &key);
	if (!m)
		return false;
	caller = m->caller_tgid;
	if (bpf_ktime_get_ns() > m->marked_ns + FOLLOW_MARK_TTL_NS) {
		bpf_map_delete_elem(&follow_ports, &key);
		return false;
	}
	if (!a || a->dir != DIR_RECV || !starts_call(a))
		return false;
	if (trace_tgid(tgid) ||
	    bpf_map_update_elem(&listen_ports, &key, &one, BPF_ANY)) {
		count(TTF_CNT_HOP_MAP_FULL);
		return false;
	}
	bpf_map_delete_elem(&follow_ports, &key);
	count(TTF_CNT_HOP_FOLLOWED);
	follow_record(sk, caller);
	return true;
}

/* Data arriving on sk while a mark is pending: is it a marked port's connection? */
static __always_inline bool follow_arrival(const struct ttf_listen_key *key)
{
	return follow_open() && bpf_map_lookup_elem(&follow_ports, key);
}

#endif /* TTF_NET_HOP_BPF_H */
