/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * Shared ABI between bpf/net.bpf.c and user space: the records that the
 * network probes push through the ring buffer. Only __uN types and fixed
 * arrays, so both the BPF side (vmlinux.h) and user space can include it.
 *
 * All timestamps are bpf_ktime_get_ns(), i.e. CLOCK_MONOTONIC nanoseconds
 * (see docs/kernel.md B6).
 */
#ifndef TTFTRACE_BPF_NET_H
#define TTFTRACE_BPF_NET_H

#ifndef __VMLINUX_H__	/* user space: the BPF side gets __uN from vmlinux.h */
#include <linux/types.h>
#endif

/* Largest payload prefix one record can carry (--capture-*-bytes upper bound). */
#define TTF_CAPTURE_MAX_BYTES 8192
/* Default payload prefix captured per read: request line and headers. */
#define TTF_CAPTURE_DEFAULT_BYTES 1024
/*
 * Default per write: servers coalesce many SSE chunks (4 iovecs each in
 * Node) into one writev when the socket is busy; every chunk header must be
 * seen to keep the chunked framing in sync.
 */
#define TTF_CAPTURE_SEND_DEFAULT_BYTES 8192
#define TTF_COMM_LEN 16
/* Slots of the traced-process filter (bpf/net_maps.bpf.h): word tgid % this. */
#define TTF_TGID_FILTER_SLOTS 4096
/* A filter slot that several traced tgids (or a gone one) map to: ask the hash. */
#define TTF_TGID_SLOT_SHARED 0xffffffffu

enum ttf_event_type {
	TTF_EV_RECV = 1,  /* the application read bytes from a traced socket */
	TTF_EV_SEND = 2,  /* the application wrote bytes to a traced socket */
	TTF_EV_XMIT = 3,  /* a TCP segment of a traced socket reached the device */
	TTF_EV_CLOSE = 4, /* a traced TCP socket left ESTABLISHED (FIN/RST/close; bytes: the new state),
			   * or ended after the peer's FIN; a unix one ended (EOF, close(2)) */
	TTF_EV_EXIT = 5,  /* a traced process (thread group) exited */
	TTF_EV_FORK = 6,  /* a traced process forked a new traced process */
	/*
	 * An untraced process read a traced process's call on a local TCP
	 * listener's connection and is traced from that read on, in the kernel
	 * (bpf/net_hop.bpf.h): tgid the caller, tid the listener's process,
	 * comm its name, the addresses its socket's.
	 */
	TTF_EV_FOLLOW = 7,
};

/* ttf_net_event.flags */
enum ttf_event_flags {
	TTF_EVF_TRUNCATED = 1 << 0, /* payload prefix shorter than bytes */
	TTF_EVF_NO_BUF = 1 << 1,    /* syscall buffer not found: no payload */
	TTF_EVF_PEEK = 1 << 2,      /* never set: MSG_PEEK reads are dropped in BPF */
	TTF_EVF_RESET = 1 << 3,     /* CLOSE: the state change came from a reset */
	TTF_EVF_NODELAY = 1 << 4,   /* SEND: the socket has TCP_NODELAY (tcp_sock.nonagle & TCP_NAGLE_OFF) */
	/*
	 * RECV/SEND of TLS ciphertext (seen inside a TLS library call, or on a
	 * socket that carried such a call): no payload, never parsed; SEND
	 * seq_end still pairs with XMIT.
	 */
	TTF_EVF_TLS_CIPHER = 1 << 5,
	/*
	 * RECV/SEND of plaintext from a TLS library's read/write (uprobe at its
	 * return, docs/tls.md): ts_ns is the call's return, enter_ns its entry;
	 * the socket and addresses are those of the ciphertext I/O; SEND seq_end
	 * is the socket's write_seq after the call's last ciphertext write (0:
	 * none seen), RECV arrival_* that of the ciphertext it read.
	 */
	TTF_EVF_TLS_PLAIN = 1 << 6,
	/* with TLS_CIPHER: inside a TLS call, whose plaintext record follows at its return */
	TTF_EVF_TLS_IN_CALL = 1 << 7,
	/*
	 * RECV/SEND on a socket already in TCP_CLOSE (a reset, then the reader
	 * took what was queued): no CLOSE record follows for it, the
	 * connection ends with this record (docs/kernel.md B1.11).
	 */
	TTF_EVF_CLOSED = 1 << 8,
	/*
	 * SEND: the device transmit of the write's last segment happened inside
	 * the write (loopback and most NICs send at once), so no XMIT record
	 * came for it: it was at ts_ns - xmit_before_ns and ended at seq_end.
	 * User space reads it as that XMIT, just before this SEND (B1.12).
	 */
	TTF_EVF_XMIT_FOLDED = 1 << 9,
	/*
	 * CLOSE of a TCP socket: seq_end is its write_seq at the state change,
	 * the end of what the process had written by then. A peer that reads
	 * the last bytes and closes at once can make the CLOSE reach the ring
	 * before the SEND record of that write (B1.4).
	 */
	TTF_EVF_CLOSE_SEQ = 1 << 10,
	/*
	 * CLOSE of a TCP socket that still held bytes its process had not read
	 * (close_unread of them): the peer's FIN or reset came behind its last
	 * data, and the process reads that data after the state change (an
	 * upstream answering `Connection: close`; a client that half-closes
	 * after its request; B1.13).
	 */
	TTF_EVF_CLOSE_UNREAD = 1 << 11,
	/*
	 * CLOSE that ran inside the process's own read of the socket: the
	 * peer's FIN came while the reader held the socket and was taken from
	 * the backlog as the read released it, after the read had copied the
	 * data. That read's RECV record follows this CLOSE (B1.13).
	 */
	TTF_EVF_CLOSE_IN_READ = 1 << 12,
};

/* struct sock_common::skc_family values the probes keep */
#define TTF_AF_UNIX 1
#define TTF_AF_INET 2
#define TTF_AF_INET6 10

/*
 * TTF_AF_UNIX (SOCK_STREAM only, docs/kernel.md B10): a unix socket has no
 * address that names a connection, so a record carries inode numbers (the
 * N of socket:[N] in /proc/PID/fd and the Inode column of /proc/net/unix):
 * laddr[0..7] the socket's own, raddr[0..7] its peer's (unix_sk(sk)->peer;
 * 0 before the server accepted, and once the peer's file is closed);
 * laddr[8..15] and raddr[8..15] the inode of the file their path names
 * (the listener's socket file, stat(2) st_ino; 0 unnamed or abstract: the
 * connecting end's own). All native-endian __u64; lport and rport 0. The
 * two ends of one connection carry the same pairs swapped. ttf_unix_ino()
 * reads the socket inode back, ttf_unix_path_ino() the path's.
 */
#ifndef __VMLINUX_H__
#include <string.h>
static inline __u64 ttf_unix_ino(const __u8 addr[16])
{
	__u64 ino;

	memcpy(&ino, addr, sizeof(ino));
	return ino;
}

static inline __u64 ttf_unix_path_ino(const __u8 addr[16])
{
	__u64 ino;

	memcpy(&ino, addr + 8, sizeof(ino));
	return ino;
}
#endif

/*
 * Key of the map listen_ports: a listening TCP port of a traced process, in
 * the network namespace it listens in. Two containers (or a container and
 * the host) can each listen on one port number; only the traced one's
 * connections are wanted. netns_ino: the namespace's proc inode
 * (net->ns.inum in the kernel, st_ino of /proc/PID/ns/net from user space;
 * docs/kernel.md B14); 0 on a kernel without network namespaces.
 */
struct ttf_listen_key {
	__u32 netns_ino;
	__u16 port;             /* host order */
	__u16 pad;
};

/*
 * One ring-buffer record. For RECV/SEND, cap_len bytes of payload follow the
 * fixed header (the first bytes the application read or wrote). XMIT, CLOSE,
 * EXIT and FORK carry no payload.
 */
struct ttf_net_event {
	__u64 ts_ns;            /* RECV/SEND: read or write returned; XMIT: handed to the device */
	__u64 sock_cookie;      /* bpf_get_socket_cookie(sk): unique per socket lifetime */
	__u64 arrival_first_ns; /* RECV: kernel arrival (sk_data_ready) of the oldest unread data; 0 unknown */
	__u64 arrival_last_ns;  /* RECV: kernel arrival of the newest data before this read; 0 unknown */
	__u64 enter_ns;         /* RECV/SEND: the read/write syscall began (sys_enter); 0 unknown;
				   EXIT: the group's CPU time, ns, every thread's (docs/metrics.md M23) */
	__u32 tgid;             /* process; for FORK the parent */
	__u32 tid;              /* thread; for FORK the child tgid */
	__u32 bytes;            /* RECV/SEND: syscall return value (bytes moved); XMIT: TCP payload bytes */
	__u32 seq_end;          /* SEND: tcp write_seq after the write (unix: 0); XMIT: end seq of the segment; CLOSE: see TTF_EVF_CLOSE_SEQ */
	__u16 cap_len;          /* payload bytes that follow this header */
	__u8 type;              /* enum ttf_event_type */
	__u8 family;            /* TTF_AF_INET, TTF_AF_INET6 or TTF_AF_UNIX (addresses: see above) */
	__u16 lport;            /* local port, host order */
	__u16 rport;            /* remote port, host order */
	__u8 laddr[16];         /* local address: IPv4 in the first 4 bytes, network order */
	__u8 raddr[16];         /* remote address */
	__u32 flags;            /* enum ttf_event_flags */
	union {
		__u32 xmit_before_ns;	/* SEND with TTF_EVF_XMIT_FOLDED: ts_ns minus its XMIT's time; else 0 */
		__u32 close_unread;	/* CLOSE with TTF_EVF_CLOSE_UNREAD: bytes received, not yet read */
	};
	char comm[TTF_COMM_LEN]; /* task comm of the reader/writer */
	__u8 payload[];
};

/*
 * Drop and health counters, one slot each in the per-CPU array map
 * `counters` (user space sums over CPUs).
 */
enum ttf_counter {
	TTF_CNT_RINGBUF_FULL = 0,   /* bpf_ringbuf_output failed: event lost */
	TTF_CNT_ARGS_MISSING,       /* sock_*_length without a saved syscall: no payload */
	TTF_CNT_PEEK_SKIPPED,       /* MSG_PEEK reads skipped (counted once on the real read) */
	TTF_CNT_ARRIVAL_MAP_FULL,   /* could not remember an arrival timestamp */
	TTF_CNT_SOCK_MAP_FULL,      /* could not remember a traced socket */
	TTF_CNT_TGID_MAP_FULL,      /* could not follow a fork */
	TTF_CNT_EVENTS,             /* records submitted */
	TTF_CNT_URING_REPLACED,     /* an io_uring request's buffer replaced before its I/O was seen */
	TTF_CNT_TLS_PLAIN,          /* TLS plaintext reads/writes joined to their socket */
	TTF_CNT_TLS_UNJOINED,       /* TLS plaintext reads/writes with no socket known: dropped */
	TTF_CNT_TLS_CALL_MAP_FULL,  /* could not remember a TLS call's arguments */
	TTF_CNT_XMIT_FOLDED,        /* transmits carried by their write's SEND record, not sent alone (B1.12) */
	TTF_CNT_HOP_MARKED,         /* a traced process connected to an untraced local port */
	TTF_CNT_HOP_FOLLOWED,       /* its listener's first read traced it, in the kernel */
	TTF_CNT_HOP_MAP_FULL,       /* could not remember such a port, or trace its listener */
	TTF_CNT_HOP_UNTRACED_CALLS, /* untraced reads looked at while a hop was pending */
	TTF_CNT__MAX,
};

#endif /* TTFTRACE_BPF_NET_H */
