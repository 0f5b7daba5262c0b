/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * Kernel-side timing of traced sockets (BPF side; part of
 * bpf/net_common.bpf.h): when data arrived on them, and when written bytes
 * left through the device.
 *
 *   sk_data_ready       handle_data_ready: arrival time
 *   tcp_probe           handle_tcp_probe: the same from TCP receive, where
 *                       sk_data_ready is missing (user space loads one)
 *   net_dev_start_xmit  handle_xmit: XMIT record, or kept for the write's
 *                       SEND record (net_xmit.bpf.h)
 */
#ifndef TTF_NET_TIMING_BPF_H
#define TTF_NET_TIMING_BPF_H

#include "bpf/net_xmit.bpf.h"

/*
 * sk is a tp_btf argument here (a BTF pointer): its fields are read with
 * plain loads, which the verifier turns into guarded loads, instead of a
 * bpf_probe_read_kernel() call each (docs/kernel.md B1.16). These run for
 * every socket of the machine, traced or not.
 */
static __always_inline bool sock_wanted(const struct sock *sk, __u64 *cookie)
{
	__u16 family = sk->__sk_common.skc_family;
	bool unix_sk = false;

	if (family == TTF_AF_UNIX) {
		if (sk->sk_type != SOCK_STREAM)
			return false;
		unix_sk = true;
	} else if ((family != TTF_AF_INET && family != TTF_AF_INET6) ||
		   sk->sk_protocol != IPPROTO_TCP) {
		return false;
	}
#ifdef TTF_SK_ID_BY_PTR
	*cookie = sk_id(sk, false);
	if (*cookie)
		return true;
#else
	/*
	 * A socket without a cookie yet was never traced (mark_traced keys
	 * traced_socks by it): skip the lookup, and give it none here, so
	 * that handle_xmit also leaves its segments at cookie 0 (a client's
	 * ACKs, every untraced connection's data). One is made below when
	 * the socket is wanted.
	 */
	*cookie = sk->__sk_common.skc_cookie.counter;
	if (*cookie && bpf_map_lookup_elem(&traced_socks, cookie))
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
		__u16 port = sk->__sk_common.skc_num;
		struct ttf_listen_key key = {};

		if (!port_maybe_wanted(port))
			return false;	/* the client's end of a connection, most often */
		key.netns_ino = bpf_core_field_exists(sk->__sk_common.skc_net.net) ?
				sk->__sk_common.skc_net.net->ns.inum : 0;
		key.port = port;
		if (!bpf_map_lookup_elem(&listen_ports, &key) && !follow_arrival(&key))
			return false;
	}
#ifdef TTF_SK_ID_BY_PTR
	*cookie = sk_id(sk, true);
	return *cookie != 0;
#else
	*cookie = bpf_get_socket_cookie((void *)sk);
	return true;
#endif
}

#define TTF_EEXIST 17	/* include/uapi/asm-generic/errno-base.h; no libc headers in BPF */

/* Remember now as the newest (and, when none is pending, oldest) arrival on cookie. */
static __always_inline void note_arrival(__u64 cookie)
{
	struct arrival *arr, fresh;
	__u64 now = bpf_ktime_get_ns();
	long err;

	arr = bpf_map_lookup_elem(&arrivals, &cookie);
	if (arr) {
		if (!arr->first_ns)
			arr->first_ns = now;
		arr->last_ns = now;
		return;
	}
	fresh.first_ns = now;
	fresh.last_ns = now;
	err = bpf_map_update_elem(&arrivals, &cookie, &fresh, BPF_NOEXIST);
	if (err == -TTF_EEXIST) {
		/* another CPU noted this socket's arrival in between (softirq and
		 * backlog processing of one socket can run on two CPUs): not full */
		arr = bpf_map_lookup_elem(&arrivals, &cookie);
		if (arr)
			arr->last_ns = now;
		return;
	}
	if (err)
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
	struct sock *sk = skb->sk;	/* plain loads: see sock_wanted() */
	__u32 len, hdr_len, bytes, seq_end;
	__u16 mac_off, th_off, family;
	struct sys_args *a;
	struct tcphdr th;
	__u64 cookie, ts;
	__u8 state;
	void *head;

	if (!sk)
		return 0;
	state = sk->__sk_common.skc_state;
	if (state == TCP_TIME_WAIT || state == TCP_NEW_SYN_RECV)
		return 0;
	family = sk->__sk_common.skc_family;
	if ((family != TTF_AF_INET && family != TTF_AF_INET6) || sk->sk_protocol != IPPROTO_TCP)
		return 0;
	/*
	 * skb->sk is not a trusted pointer here, so read the cookie that
	 * bpf_get_socket_cookie() stored when the socket was first traced
	 * (sock_gen_cookie() caches it in skc_cookie); 0 = never traced.
	 */
#ifdef TTF_SK_ID_BY_PTR
	cookie = sk_id(sk, false);
#else
	cookie = sk->__sk_common.skc_cookie.counter;
#endif
	if (!cookie || !bpf_map_lookup_elem(&traced_socks, &cookie))
		return 0;
	head = skb->head;
	mac_off = skb->mac_header;
	th_off = skb->transport_header;
	len = skb->len;
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

#endif /* TTF_NET_TIMING_BPF_H */
