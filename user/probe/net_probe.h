/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * Lifecycle of the network probes: open the skeleton of the chosen source,
 * configure, load, attach each program, drain the ring buffer, read the
 * drop counters. Ring buffer records are delivered to a callback as
 * (struct ttf_net_event header + payload), the same from either source:
 *   sock     bpf/net.bpf.c: socket tracepoints sock_{recv,send}_length (6.3+)
 *   syscall  bpf/net_syscall.bpf.c: raw syscall enter/exit (5.8+), tp_btf
 *            where the kernel BTF has the typedefs, raw_tp otherwise
 * (docs/kernel.md B1.1, B1.9).
 */
#ifndef TTFTRACE_NET_PROBE_H
#define TTFTRACE_NET_PROBE_H

#include <stddef.h>
#include <stdint.h>
#include "bpf/net.h"
#include "user/probe/source.h"

struct btf;
struct bpf_program;

struct net_probe;

typedef int (*net_event_cb)(void *ctx, const struct ttf_net_event *e, size_t len);

/* Which programs supply the RECV/SEND records (--net-source). */
enum net_source {
	NET_SOURCE_AUTO = 0,	/* sock when the kernel has its tracepoints, else syscall */
	NET_SOURCE_SOCK,
	NET_SOURCE_SYSCALL,
};

/* "auto", "sock", "syscall" -> *out. Returns 0, or -EINVAL for another name. */
int net_source__parse(const char *name, enum net_source *out);
/* "sock", "syscall" ("auto" for NET_SOURCE_AUTO). */
const char *net_source__name(enum net_source s);

/*
 * The source auto picks on the kernel whose BTF is vmlinux (NULL: unknown,
 * sock): sock when it has sys_enter, sock_recv_length and sock_send_length,
 * else syscall. forced other than AUTO is returned as it is.
 */
enum net_source net_source__choose(enum net_source forced, const struct btf *vmlinux);

struct net_probe_opts {
	size_t sz;			/* sizeof(struct net_probe_opts) */
	enum net_source source;		/* AUTO: net_source__choose() */
	uint32_t capture_bytes;		/* payload prefix per read, <= TTF_CAPTURE_MAX_BYTES */
	uint32_t capture_send_bytes;	/* payload prefix per write, <= TTF_CAPTURE_MAX_BYTES */
	uint32_t ringbuf_bytes;		/* power of two, >= page size */
	uint16_t port_filter;		/* trace only sockets with this local port; 0 = all */
	const char *follow_comm;	/* also trace processes exec'ing with this comm; NULL none */
	/* 1: a traced process's local upstream is traced at its first read (bpf/net_hop.bpf.h) */
	int follow_hops;
	/*
	 * Comma-separated program names not to load ("all" for every one):
	 * a fault-injection seam for tests (env TTFTRACE_SKIP_PROGS).
	 */
	const char *skip_progs;
	int no_tls;			/* 1: do not load the TLS uprobes (bpf/tls.bpf.h) */
	/*
	 * Kernel BTF for the tracepoint check (user/probe/tp_check.h); NULL skips
	 * it. Required by sock: sys_enter (its program is the fallback of the
	 * per-syscall syscalls:sys_enter_X ones, which need tracefs, not BTF;
	 * net_probe__attach picks), sock_recv_length, sock_send_length;
	 * by syscall: none (sys_enter/sys_exit go through raw_tp when their
	 * typedefs are missing). Any other missing tracepoint only leaves its
	 * program out; without sk_data_ready, tcp_probe stands in for it.
	 */
	const struct btf *vmlinux_btf;
	net_event_cb on_event;
	void *ctx;
};

/* Which optional programs attached (for "TTFT ends at xmit or write"). */
struct net_probe_status {
	enum net_source source;	/* SOCK or SYSCALL: what was loaded */
	int raw_tp;		/* syscall: the raw_tp pair of sys_enter/sys_exit attached */
	int sys_enter_tps;	/* sock: the syscall arguments come from the per-syscall
				 * tracepoints syscalls:sys_enter_X (tracefs), not from
				 * raw sys_enter (docs/kernel.md B1.5) */
	char sys_enter_why[160];	/* sock, raw sys_enter: why not the per-syscall ones */
	int n_attached;
	int n_failed;
	int recv_send;		/* the must-haves: sock_{recv,send}_length, or sys_enter/exit */
	int xmit;		/* net_dev_start_xmit */
	int arrival;		/* sk_data_ready */
	int arrival_tcp_probe;	/* tcp_probe standing in for a missing sk_data_ready */
	int close;		/* inet_sock_set_state */
	int follow;		/* sched_process_fork/exit */
	int uring;		/* sock: io_uring_submit_req (payload of io_uring sends/recvs) */
};

/*
 * Open and load. Returns NULL with *err = -EPERM (privileges), -ENOENT (a
 * needed kernel type/tracepoint is missing; missing_tp[missing_len] gets
 * the name of a required tracepoint the tp_check found absent, else "") or
 * another negative errno.
 */
struct net_probe *net_probe__open_load(const struct net_probe_opts *opts, int *err,
				       char *missing_tp, size_t missing_len);
/*
 * Attach every loaded program; fills *st. sock: the syscall arguments from
 * syscalls:sys_enter_X when tracefs has the eight events (mounting tracefs
 * at /sys/kernel/tracing when missing, unmounted by net_probe__destroy) and
 * all attach, else raw sys_enter (st->sys_enter_tps says which). Returns 0,
 * or -ENOENT when recv/send (or, for sock, both kinds of sys_enter) did not
 * attach.
 */
int net_probe__attach(struct net_probe *np, struct net_probe_status *st);
/*
 * Add a process / a listening TCP port (host order) in network namespace
 * netns_ino (target__netns) to the in-kernel filters (bpf/net.h
 * struct ttf_listen_key). 0 or a negative errno.
 */
int net_probe__trace_tgid(struct net_probe *np, uint32_t tgid);
int net_probe__trace_port(struct net_probe *np, uint32_t netns_ino, uint16_t port);
/* fd of the traced_tgids map, for other probes to share (bpf_map__reuse_fd). */
int net_probe__tgids_fd(struct net_probe *np);
/*
 * A loaded program of the probe by name (the TLS uprobes, bpf/tls.bpf.h,
 * which user/probe/tls_probe.c attaches), NULL when absent or not loaded.
 */
struct bpf_program *net_probe__program(struct net_probe *np, const char *name);

/* Wait up to timeout_ms for a wakeup, then drain everything. Returns records consumed or -errno. */
int net_probe__poll(struct net_probe *np, int timeout_ms);
/* Sum the per-CPU counters: out[TTF_CNT__MAX]. */
void net_probe__counters(struct net_probe *np, uint64_t *out);
void net_probe__destroy(struct net_probe *np);

/* The counters by name (a ttf_counters_fn; ctx is the probe). Returns how many. */
int net_probe__counter_list(void *np, struct report_counter *c, int cap);
/*
 * The probe as a source (user/probe/source.h): poll, counters, and the
 * optional tracepoints as features (after net_probe__attach).
 */
void net_probe__source(struct net_probe *np, struct ttf_probe_source *out);

#endif /* TTFTRACE_NET_PROBE_H */
