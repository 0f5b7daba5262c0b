/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * TLS plaintext (BPF side), part of both socket sources: net_common.bpf.h
 * includes it (after payload capture, whose record and copy it reuses), so
 * the uprobes share the sources' maps and ring and their records are
 * ordered with the socket records (docs/tls.md).
 *
 *   entry uprobes   SSL_write, SSL_write_ex, SSL_read, SSL_read_ex,
 *                   SSL_do_handshake (OpenSSL 3, libssl or a static copy);
 *                   crypto/tls.(*Conn).Write, Read, handshakeContext (Go):
 *                   remember the call (connection object, buffer, length)
 *                   in tls_calls, keyed by thread (OpenSSL) or goroutine (Go)
 *   tls_on_io       called by the source's socket record of a read/write:
 *                   inside a remembered call, that socket is the call's
 *                   (its identity, write_seq and arrival go into the call),
 *                   the record is flagged ciphertext and the socket marked TLS
 *   return probes   uretprobe (OpenSSL), RET-site uprobes (Go): submit a
 *                   RECV/SEND record flagged TTF_EVF_TLS_PLAIN with the
 *                   plaintext prefix, on the socket the call did I/O on, or
 *                   the one its connection object did I/O on before
 *                   (tls_conns); with neither, counted as unjoined
 *
 * None of these programs is attached by the source's attach loop (their
 * sections name no target): user/probe/tls_probe.c attaches them.
 */
#ifndef TTF_TLS_BPF_H
#define TTF_TLS_BPF_H

#include "bpf/net_capture.bpf.h"

enum tls_op { TLS_OP_READ = 1, TLS_OP_WRITE = 2, TLS_OP_HANDSHAKE = 3 };

/* A call in progress: by thread (go 0, id pid_tgid) or goroutine (go 1, id its g). */
struct tls_key {
	__u64 id;
	__u32 tgid;
	__u32 go;
};

/* The socket a TLS connection object did its ciphertext I/O on. */
struct tls_sock {
	__u64 cookie;		/* the source's socket id (sock_cookie of its records) */
	__u8 family;
	__u8 nodelay;		/* TTF_EVF_NODELAY of its last ciphertext write */
	__u16 lport;
	__u16 rport;
	__u16 pad;
	__u8 laddr[16];
	__u8 raddr[16];
	/*
	 * Arrival of the newest ciphertext a handshake read: Go reads greedily,
	 * so a request sent right after the handshake may be read with it, and
	 * the first Read then makes no syscall; it takes this (then cleared).
	 */
	__u64 pending_arrival_ns;
};

struct tls_call {
	__u64 conn;		/* SSL * or *tls.Conn: the connection's identity */
	__u64 buf;		/* user buffer of the plaintext */
	__u64 out_len;		/* SSL_*_ex: size_t * that receives the bytes moved; 0 */
	__u64 enter_ns;
	__u64 arrival_first_ns;	/* of the first ciphertext read inside the call */
	__u64 arrival_last_ns;
	__u64 newest_arrival_ns;	/* arrival_last of the call's latest ciphertext read */
	__u32 len;
	__u32 seq_end;		/* write_seq after the call's last ciphertext write */
	__u8 op;		/* enum tls_op */
	__u8 joined;		/* sk is set */
	__u16 pad;
	__u32 pad2;
	struct tls_sock sk;
};

struct tls_conn_key {
	__u64 conn;
	__u32 tgid;
	__u32 pad;
};

struct {
	__uint(type, BPF_MAP_TYPE_LRU_HASH);
	__uint(max_entries, 16384);
	__type(key, struct tls_key);
	__type(value, struct tls_call);
} tls_calls SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_LRU_HASH);
	__uint(max_entries, 65536);
	__type(key, struct tls_conn_key);
	__type(value, struct tls_sock);
} tls_conns SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_LRU_HASH);
	__uint(max_entries, 65536);
	__type(key, __u64);	/* socket id: carries TLS */
	__type(value, __u8);
} tls_socks SEC(".maps");

/*
 * Byte tgid % TTF_TLS_TGID_MARKS is 1 once a traced thread of a process
 * mapping there entered a TLS call (tls_enter), never cleared. The socket
 * records look in tls_calls and tls_socks (three hash lookups and a read of
 * the user registers per read and write) only for such a process: until its
 * first call both maps hold nothing of it, since a socket is marked TLS
 * only inside a call. A process that links a TLS library but serves plain
 * HTTP (node, Python's ssl imported, a Go binary; an engine behind a
 * gateway that terminates TLS) pays one load. A collision or a reused tgid
 * costs the lookups, never a wrong answer (bench/README.md, "TLS lookups
 * only for processes that made a TLS call").
 */
#define TTF_TLS_TGID_MARKS 4096
volatile __u8 tls_tgid_marks[TTF_TLS_TGID_MARKS];

static __always_inline bool tls_tgid_marked(__u32 tgid)
{
	return tls_tgid_marks[tgid & (TTF_TLS_TGID_MARKS - 1)];
}

/* A store only while the byte is 0: TLS calls on other CPUs keep the line shared. */
static __always_inline void tls_tgid_mark(__u32 tgid)
{
	volatile __u8 *mark = &tls_tgid_marks[tgid & (TTF_TLS_TGID_MARKS - 1)];

	if (!*mark)
		*mark = 1;
}

/*
 * A socket read/write of ret bytes on sk (id cookie) by the current thread,
 * whose user registers had r14 (the goroutine in Go's register ABI; 0
 * unknown). Inside a remembered TLS call: note the socket in the call.
 * Returns TTF_EVF_TLS_CIPHER when the bytes are ciphertext (inside a call,
 * with TTF_EVF_TLS_IN_CALL, or on a socket marked TLS), else 0.
 */
static __always_inline __u32 tls_on_io(struct sock *sk, __u64 cookie, __u8 type, __u64 r14)
{
	struct tls_key k = { .id = bpf_get_current_pid_tgid() };
	struct tls_call *c;
	struct arrival *arr;
	__u8 one = 1;

	k.tgid = k.id >> 32;
	c = bpf_map_lookup_elem(&tls_calls, &k);
	if (!c && r14) {
		k.id = r14;
		k.go = 1;
		c = bpf_map_lookup_elem(&tls_calls, &k);
	}
	if (!c)
		return bpf_map_lookup_elem(&tls_socks, &cookie) ? TTF_EVF_TLS_CIPHER : 0;
	c->sk.cookie = cookie;
	FILL_ADDR(&c->sk, sk);
	c->joined = 1;
	if (type == TTF_EV_SEND) {
		struct tcp_sock *tp = (struct tcp_sock *)sk;

		c->seq_end = BPF_CORE_READ(tp, write_seq);
		c->sk.nodelay = BPF_CORE_READ_BITFIELD_PROBED(tp, nonagle) & 1;
	} else {
		arr = bpf_map_lookup_elem(&arrivals, &cookie);
		if (arr && !c->arrival_first_ns) {
			c->arrival_first_ns = arr->first_ns;
			c->arrival_last_ns = arr->last_ns;
		}
		if (arr)
			c->newest_arrival_ns = arr->last_ns;
	}
	if (!bpf_map_lookup_elem(&tls_socks, &cookie))
		bpf_map_update_elem(&tls_socks, &cookie, &one, BPF_ANY);
	return TTF_EVF_TLS_CIPHER | TTF_EVF_TLS_IN_CALL;
}

/* Remember a TLS call of a traced process at its entry. */
static __always_inline int tls_enter(__u64 id, __u32 go, __u8 op, __u64 conn, __u64 buf,
				     __u64 len, __u64 out_len)
{
	struct tls_call c = {};
	struct tls_key k = { .id = id, .go = go };

	k.tgid = bpf_get_current_pid_tgid() >> 32;
	if (!tgid_traced(k.tgid))
		return 0;
	tls_tgid_mark(k.tgid);	/* before the socket I/O the call does */
	/* Go's Read and Write begin with c.Handshake(): the outer call keeps its slot */
	if (op == TLS_OP_HANDSHAKE) {
		struct tls_call *outer = bpf_map_lookup_elem(&tls_calls, &k);

		if (outer && outer->op != TLS_OP_HANDSHAKE)
			return 0;
	}
	c.conn = conn;
	c.buf = buf;
	c.len = len > 0xffffffffull ? 0xffffffffu : (__u32)len;
	c.out_len = out_len;
	c.op = op;
	c.enter_ns = bpf_ktime_get_ns();
	if (bpf_map_update_elem(&tls_calls, &k, &c, BPF_ANY))
		count(TTF_CNT_TLS_CALL_MAP_FULL);
	return 0;
}

/* The plaintext record of call c that moved n bytes on socket s. */
static __always_inline void tls_emit(const struct tls_call *c, const struct tls_sock *s, __u32 n)
{
	__u64 pid_tgid = bpf_get_current_pid_tgid();
	struct sys_args a = { .kind = BUF_FLAT, .buf = c->buf };
	struct ttf_net_event *e;
	__u32 zero = 0, want, got;
	struct scratch *sc;

	sc = bpf_map_lookup_elem(&scratch, &zero);
	if (!sc)
		return;
	e = &sc->ev;
	__builtin_memset(e, 0, sizeof(*e));
	e->ts_ns = bpf_ktime_get_ns();
	e->enter_ns = c->enter_ns;
	e->sock_cookie = s->cookie;
	e->tgid = pid_tgid >> 32;
	e->tid = (__u32)pid_tgid;
	e->bytes = n;
	e->family = s->family;
	e->lport = s->lport;
	e->rport = s->rport;
	__builtin_memcpy(e->laddr, s->laddr, sizeof(e->laddr));
	__builtin_memcpy(e->raddr, s->raddr, sizeof(e->raddr));
	e->flags = TTF_EVF_TLS_PLAIN;
	bpf_get_current_comm(e->comm, sizeof(e->comm));
	if (c->op == TLS_OP_WRITE) {
		e->type = TTF_EV_SEND;
		e->seq_end = c->joined ? c->seq_end : 0;
		if (s->nodelay)
			e->flags |= TTF_EVF_NODELAY;
		want = targ_capture_send_bytes;
	} else {
		e->type = TTF_EV_RECV;
		e->arrival_first_ns = c->arrival_first_ns;
		e->arrival_last_ns = c->arrival_last_ns;
		want = targ_capture_bytes;
	}
	if (want > n)
		want = n;
	got = copy_payload(sc->payload, &a, want);
	if (got < n)
		e->flags |= TTF_EVF_TRUNCATED;
	if (got > TTF_CAPTURE_MAX_BYTES)
		got = TTF_CAPTURE_MAX_BYTES;
	opaque(got);
	got &= LEN_MASK;
	e->cap_len = got;
	count(TTF_CNT_TLS_PLAIN);
	submit(sc, sizeof(*e) + got);
}

/*
 * The call of (id, go) returned ret (bytes moved, or for SSL_*_ex 1 on
 * success with the count at out_len). A handshake only teaches its
 * connection's socket; a read/write submits its plaintext record.
 * handshake: this is a handshake function's return; a call of the other
 * kind in the slot is not its (a nested handshake left it alone).
 */
static __always_inline int tls_return(__u64 id, __u32 go, long ret, bool handshake)
{
	struct tls_key k = { .id = id, .go = go };
	struct tls_conn_key ck = {};
	struct tls_sock *s = NULL;
	struct tls_call *c;
	__u64 n = 0;

	k.tgid = bpf_get_current_pid_tgid() >> 32;
	c = bpf_map_lookup_elem(&tls_calls, &k);
	if (!c || (c->op == TLS_OP_HANDSHAKE) != handshake)
		return 0;
	ck.conn = c->conn;
	ck.tgid = k.tgid;
	if (c->joined) {
		if (c->op == TLS_OP_HANDSHAKE)
			c->sk.pending_arrival_ns = c->newest_arrival_ns;
		bpf_map_update_elem(&tls_conns, &ck, &c->sk, BPF_ANY);
		s = &c->sk;
	}
	if (c->op == TLS_OP_HANDSHAKE)
		goto out;
	if (c->out_len) {
		if (ret == 1 && bpf_probe_read_user(&n, sizeof(n), (void *)c->out_len))
			n = 0;
	} else if (ret > 0) {
		n = ret;
	}
	if (!n || n > 0x7fffffffull)
		goto out;
	if (!s) {
		s = bpf_map_lookup_elem(&tls_conns, &ck);
		/*
		 * The socket it names has closed: this connection object is a new
		 * one at a reused address (Go's allocator, a freed SSL *), whose
		 * own socket is not known yet.
		 */
		if (s && !bpf_map_lookup_elem(&traced_socks, &s->cookie)) {
			bpf_map_delete_elem(&tls_conns, &ck);
			s = NULL;
		}
		/* a read served from what the handshake read: that arrival is its */
		if (s && c->op == TLS_OP_READ && s->pending_arrival_ns) {
			c->arrival_first_ns = c->arrival_last_ns = s->pending_arrival_ns;
			s->pending_arrival_ns = 0;
		}
	}
	if (s)
		tls_emit(c, s, n);
	else
		count(TTF_CNT_TLS_UNJOINED);
out:
	bpf_map_delete_elem(&tls_calls, &k);
	return 0;
}

/* ---- OpenSSL 3 (int SSL_write(SSL *, const void *, int), ...: ssl(7)) ---- */

SEC("uprobe")
int BPF_KPROBE(tls_ossl_write, void *ssl, const void *buf, int num)
{
	return tls_enter(bpf_get_current_pid_tgid(), 0, TLS_OP_WRITE, (__u64)ssl, (__u64)buf,
			 num > 0 ? num : 0, 0);
}

SEC("uprobe")
int BPF_KPROBE(tls_ossl_write_ex, void *ssl, const void *buf, __u64 num, __u64 *written)
{
	return tls_enter(bpf_get_current_pid_tgid(), 0, TLS_OP_WRITE, (__u64)ssl, (__u64)buf,
			 num, (__u64)written);
}

SEC("uprobe")
int BPF_KPROBE(tls_ossl_read, void *ssl, void *buf, int num)
{
	return tls_enter(bpf_get_current_pid_tgid(), 0, TLS_OP_READ, (__u64)ssl, (__u64)buf,
			 num > 0 ? num : 0, 0);
}

SEC("uprobe")
int BPF_KPROBE(tls_ossl_read_ex, void *ssl, void *buf, __u64 num, __u64 *readbytes)
{
	return tls_enter(bpf_get_current_pid_tgid(), 0, TLS_OP_READ, (__u64)ssl, (__u64)buf,
			 num, (__u64)readbytes);
}

SEC("uprobe")
int BPF_KPROBE(tls_ossl_handshake, void *ssl)
{
	return tls_enter(bpf_get_current_pid_tgid(), 0, TLS_OP_HANDSHAKE, (__u64)ssl, 0, 0, 0);
}

/* One return probe for the reads and writes: the call remembered at entry says which. */
SEC("uretprobe")
int BPF_KRETPROBE(tls_ossl_ret, int ret)
{
	return tls_return(bpf_get_current_pid_tgid(), 0, ret, false);
}

SEC("uretprobe")
int BPF_KRETPROBE(tls_ossl_handshake_ret, int ret)
{
	return tls_return(bpf_get_current_pid_tgid(), 0, ret, true);
}

#if defined(__TARGET_ARCH_x86)
/*
 * ---- Go crypto/tls (register ABI, Go 1.17+ on amd64: docs/tls.md) ----
 * At entry: receiver in RAX, slice b as RBX (ptr), RCX (len), RDI (cap);
 * the current goroutine (g) in R14. At a RET site: the first result (n) in
 * RAX, R14 still g. Calls are keyed by goroutine: one may move to another
 * thread while it waits in the netpoller.
 */
SEC("uprobe")
int tls_go_write(struct pt_regs *ctx)
{
	return tls_enter(ctx->r14, 1, TLS_OP_WRITE, ctx->ax, ctx->bx, ctx->cx, 0);
}

SEC("uprobe")
int tls_go_read(struct pt_regs *ctx)
{
	return tls_enter(ctx->r14, 1, TLS_OP_READ, ctx->ax, ctx->bx, ctx->cx, 0);
}

SEC("uprobe")
int tls_go_handshake(struct pt_regs *ctx)
{
	return tls_enter(ctx->r14, 1, TLS_OP_HANDSHAKE, ctx->ax, 0, 0, 0);
}

/* A RET instruction of Read or Write: n is RAX (an int; the error is not read). */
SEC("uprobe")
int tls_go_ret(struct pt_regs *ctx)
{
	return tls_return(ctx->r14, 1, (long)ctx->ax, false);
}

SEC("uprobe")
int tls_go_handshake_ret(struct pt_regs *ctx)
{
	return tls_return(ctx->r14, 1, 0, true);
}
#endif

#endif /* TTF_TLS_BPF_H */
