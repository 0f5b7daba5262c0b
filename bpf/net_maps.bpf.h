/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * The socket sources' configuration, records and maps (BPF side; part of
 * bpf/net_common.bpf.h): the same names and layout in net.bpf.c and
 * net_syscall.bpf.c, so user/probe/net_probe.c drives either object. Also
 * the shared helpers (common.bpf.h) bound to these maps: count(),
 * tgid_traced(), submit().
 *
 * The maps are declared here, in this order, and nowhere else in the common
 * part but tls.bpf.h (its own three, after these).
 */
#ifndef TTF_NET_MAPS_BPF_H
#define TTF_NET_MAPS_BPF_H

#include "vmlinux.h"
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_tracing.h>
#include <bpf/bpf_core_read.h>
#include <bpf/bpf_endian.h>
#include "bpf/net.h"
#include "bpf/common.bpf.h"

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
const volatile bool targ_follow_hops = false;	/* bpf/net_hop.bpf.h */

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

/* A local port a traced process connected to, its listener not traced yet (net_hop.bpf.h). */
struct follow_mark {
	__u64 marked_ns;
	__u32 caller_tgid;
	__u32 pad;
};

struct {
	__uint(type, BPF_MAP_TYPE_LRU_HASH);
	__uint(max_entries, 64);
	__type(key, struct ttf_listen_key);
	__type(value, struct follow_mark);
} follow_ports SEC(".maps");

/*
 * Byte port is 1 for the ports listen_ports or follow_ports may hold, in
 * any namespace: set before their entry (user space in net_probe.c,
 * follow_connect), never cleared (a stale 1 costs the lookups, never a
 * wrong answer). A byte, not a bit: a store needs no read-modify-write
 * that two CPUs could race on. sk_data_ready runs for every socket of the
 * machine; for the client's end of every loopback stream (a port no traced
 * process listens on) a 0 answers before the namespace and the two maps are
 * read (bench/README.md, "The listening-port bytes").
 */
volatile __u8 port_marks[65536];

static __always_inline bool port_maybe_wanted(__u16 port)
{
	return port_marks[port];
}

static __always_inline void port_mark(__u16 port)
{
	port_marks[port] = 1;
}

/* Until when untraced reads are looked at (the newest mark's end of life); 0: never. */
volatile __u64 follow_open_until_ns;

/*
 * A filter in front of traced_tgids, one word per slot tgid % SLOTS:
 *   0           no traced tgid maps here: not traced, without the hash map;
 *   tgid        the one traced tgid known here: traced, without the hash;
 *   anything    else (another tgid, TTF_TGID_SLOT_SHARED): the hash decides.
 * Most runs of the machine-wide hooks are for untraced tasks (a 0), and most
 * of the rest for the few traced ones (their own word): the hash's bucket
 * and element, cold after the engine's compute, are read only on a
 * collision (bench/README.md, "The traced-set filter"). A slot is set
 * before the map entry and made SHARED, never 0, when its tgid leaves or
 * its entry could not be added (trace_tgid, on_exit_group; user space in
 * net_probe.c): a stale SHARED costs the hash lookup, never a wrong answer.
 * Two CPUs racing on one slot leave one of their tgids or SHARED there;
 * the other tgid then goes to the hash, which has it.
 */
volatile __u32 tgid_slot[TTF_TGID_FILTER_SLOTS];

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
	__u32 slot = tgid_slot[tgid & (TTF_TGID_FILTER_SLOTS - 1)];

	if (slot == tgid && tgid)	/* the idle task (0) is never traced */
		return true;
	if (!slot)
		return false;
	return ttf_tgid_traced(&traced_tgids, tgid);
}

/* tgid is no longer (or could not be) in traced_tgids: its slot goes to the hash. */
static __always_inline void tgid_slot_leave(__u32 tgid)
{
	volatile __u32 *slot = &tgid_slot[tgid & (TTF_TGID_FILTER_SLOTS - 1)];

	if (*slot == tgid)
		*slot = TTF_TGID_SLOT_SHARED;
}

/* Add tgid to the traced set: its filter slot first, then the map (0 or -errno). */
static __always_inline long trace_tgid(__u32 tgid)
{
	volatile __u32 *slot = &tgid_slot[tgid & (TTF_TGID_FILTER_SLOTS - 1)];
	__u8 one = 1;
	long err;

	if (!*slot)
		*slot = tgid;
	else if (*slot != tgid)
		*slot = TTF_TGID_SLOT_SHARED;
	err = bpf_map_update_elem(&traced_tgids, &tgid, &one, BPF_ANY);
	if (err)
		tgid_slot_leave(tgid);
	return err;
}

/* Wake the consumer only when the ring is filling up; it drains on a timer. */
static __always_inline void submit_flags(void *data, __u64 size, __u64 flags)
{
	if (bpf_ringbuf_output(&events, data, size, flags))
		count(TTF_CNT_RINGBUF_FULL);
	else
		count(TTF_CNT_EVENTS);
}

static __always_inline void submit(void *data, __u64 size)
{
	submit_flags(data, size, ttf_rb_wakeup_flags(&events, targ_wakeup_bytes));
}

/*
 * A record the reader should see now, not at its next drain: a traced
 * process's fork (a new process to scan for TLS and engine libraries) or
 * exit (perhaps the last target). Rare.
 */
static __always_inline void submit_now(void *data, __u64 size)
{
	submit_flags(data, size, BPF_RB_FORCE_WAKEUP);
}

#endif /* TTF_NET_MAPS_BPF_H */
