/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * What the socket sources ask of a struct sock (BPF side; part of
 * bpf/net_common.bpf.h): its kind (TCP, unix stream), state and addresses,
 * the socket behind a descriptor, and its id in records: the socket cookie,
 * or with TTF_SK_ID_BY_PTR an id of the source's own (sk_id, sk_ids).
 */
#ifndef TTF_NET_SOCK_BPF_H
#define TTF_NET_SOCK_BPF_H

#include "bpf/net_maps.bpf.h"

#define IPPROTO_TCP 6
#define TCP_ESTABLISHED 1
#define TCP_TIME_WAIT 6
#define TCP_CLOSE 7
#define TCP_CLOSE_WAIT 8	/* include/net/tcp_states.h */
#define TCP_LAST_ACK 9
#define TCP_NEW_SYN_RECV 12

/*
 * sk is past TCP_CLOSE: reset, or closed under a reader that still takes
 * what was queued (docs/kernel.md B1.11).
 */
static __always_inline bool sk_closed(const struct sock *sk)
{
	return BPF_CORE_READ(sk, __sk_common.skc_state) == TCP_CLOSE;
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

/*
 * The socket of a read or write, as the source holds it. The sock source
 * has the tracepoint's argument, a BTF pointer: its fields are plain loads
 * (docs/kernel.md B1.16), a few instructions each. The syscall source's
 * comes from sock_from_fd(), a number: one bpf_probe_read_kernel() call a
 * field, as fill_addr() does. These run for every read and write of a
 * traced process (handle_send once per streamed token).
 */
#ifdef TTF_SK_ID_BY_PTR
#define SK_IO(sk, field) BPF_CORE_READ(sk, field)
#define fill_addr_io fill_addr
#else
#define SK_IO(sk, field) ((sk)->field)

static __always_inline void fill_addr_io(struct ttf_net_event *e, const struct sock *sk)
{
	__u32 v4;

	e->family = sk->__sk_common.skc_family;
	if (e->family == TTF_AF_UNIX) {
		FILL_UNIX_ADDR(e, sk);
		return;
	}
	e->lport = sk->__sk_common.skc_num;
	if (!e->lport)	/* zeroed at TCP_CLOSE (see FILL_ADDR); rare, not on the hot path */
		e->lport = bpf_ntohs(BPF_CORE_READ((struct inet_sock *)sk, inet_sport));
	e->rport = bpf_ntohs(sk->__sk_common.skc_dport);
	if (e->family == TTF_AF_INET) {
		__builtin_memset(e->laddr, 0, sizeof(e->laddr));
		__builtin_memset(e->raddr, 0, sizeof(e->raddr));
		v4 = sk->__sk_common.skc_rcv_saddr;
		__builtin_memcpy(e->laddr, &v4, 4);
		v4 = sk->__sk_common.skc_daddr;
		__builtin_memcpy(e->raddr, &v4, 4);
		return;
	}
#pragma unroll
	for (int i = 0; i < 4; i++) {
		v4 = sk->__sk_common.skc_v6_rcv_saddr.in6_u.u6_addr32[i];
		__builtin_memcpy(e->laddr + 4 * i, &v4, 4);
		v4 = sk->__sk_common.skc_v6_daddr.in6_u.u6_addr32[i];
		__builtin_memcpy(e->raddr + 4 * i, &v4, 4);
	}
}
#endif

/* sk_closed(), sk_is_stream() of a read's or write's socket (SK_IO). */
static __always_inline bool sk_io_closed(const struct sock *sk)
{
	return SK_IO(sk, __sk_common.skc_state) == TCP_CLOSE;
}

static __always_inline bool sk_io_stream(const struct sock *sk)
{
	__u16 family = SK_IO(sk, __sk_common.skc_family);

	if (family == TTF_AF_INET || family == TTF_AF_INET6)
		return SK_IO(sk, sk_protocol) == IPPROTO_TCP;
	return family == TTF_AF_UNIX && SK_IO(sk, sk_type) == SOCK_STREAM;
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

/* Remember socket cookie as traced (for the kernel-side programs). */
static __always_inline void mark_traced(__u64 cookie)
{
	__u8 one = 1;

	if (!bpf_map_lookup_elem(&traced_socks, &cookie) &&
	    bpf_map_update_elem(&traced_socks, &cookie, &one, BPF_ANY))
		count(TTF_CNT_SOCK_MAP_FULL);
}

#endif /* TTF_NET_SOCK_BPF_H */
