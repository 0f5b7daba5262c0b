// SPDX-License-Identifier: GPL-2.0-only
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <bpf/bpf.h>
#include <bpf/libbpf.h>
#include "user/probe/bpf_util.h"
#include "net.skel.h"
#include "net_syscall.skel.h"
#include "user/lib/log.h"
#include "user/probe/net_probe.h"
#include "user/probe/tp_check.h"
#include "user/probe/tracefs.h"

#define MAX_LINKS 48

struct net_probe {
	struct net_bpf *sock;		/* one of sock, sys is open */
	struct net_syscall_bpf *sys;
	struct bpf_object *obj;		/* its object */
	struct bpf_map *events, *tgids, *ports, *counters;
	struct ring_buffer *rb;
	struct bpf_link *links[MAX_LINKS];
	int n_links;
	net_event_cb on_event;
	void *ctx;
	struct net_probe_status st;	/* as attach found it */
	int tracefs_mounted;		/* attach mounted tracefs: unmount at destroy */
};

static const char *const counter_names[TTF_CNT__MAX] = {
	[TTF_CNT_RINGBUF_FULL] = "ringbuf_full",
	[TTF_CNT_ARGS_MISSING] = "payload_args_missing",
	[TTF_CNT_PEEK_SKIPPED] = "msg_peek_skipped",
	[TTF_CNT_ARRIVAL_MAP_FULL] = "arrival_map_full",
	[TTF_CNT_SOCK_MAP_FULL] = "sock_map_full",
	[TTF_CNT_TGID_MAP_FULL] = "tgid_map_full",
	[TTF_CNT_EVENTS] = "events",
	[TTF_CNT_URING_REPLACED] = "uring_payload_replaced",
	[TTF_CNT_TLS_PLAIN] = "tls_plaintext",
	[TTF_CNT_TLS_UNJOINED] = "tls_unjoined",
	[TTF_CNT_TLS_CALL_MAP_FULL] = "tls_call_map_full",
	[TTF_CNT_XMIT_FOLDED] = "xmit_folded",
	[TTF_CNT_HOP_MARKED] = "hop_kernel_marked",
	[TTF_CNT_HOP_FOLLOWED] = "hop_kernel_followed",
	[TTF_CNT_HOP_MAP_FULL] = "hop_kernel_map_full",
	[TTF_CNT_HOP_UNTRACED_CALLS] = "hop_kernel_untraced_reads",
};

static int ring_cb(void *ctx, void *data, size_t len)
{
	struct net_probe *np = ctx;

	if (len < sizeof(struct ttf_net_event))
		return 0;
	return np->on_event(np->ctx, data, len);
}

static int skipped(const char *list, const char *name)
{
	size_t n = strlen(name);

	if (!list)
		return 0;
	if (!strcmp(list, "all"))
		return 1;
	for (const char *p = list; (p = strstr(p, name)); p += n)
		if ((p == list || p[-1] == ',') && (p[n] == ',' || p[n] == '\0'))
			return 1;
	return 0;
}

/* Without these there is no request to see; the rest only add detail. */
static const char *const required_tps[] = {
	"sys_enter", "sock_recv_length", "sock_send_length", NULL,
};
/* syscall: sys_enter/sys_exit fall back to raw_tp, so no tp_btf one is required. */
static const char *const required_none[] = { NULL };

/* Both skeletons have the same configuration (bpf/net_common.bpf.h). */
#define CONFIGURE(skel, opts)                                                              \
	do {                                                                               \
		(skel)->rodata->targ_capture_bytes = (opts)->capture_bytes;                \
		(skel)->rodata->targ_capture_send_bytes = (opts)->capture_send_bytes ?     \
			(opts)->capture_send_bytes : TTF_CAPTURE_SEND_DEFAULT_BYTES;       \
		(skel)->rodata->targ_port = (opts)->port_filter;                           \
		(skel)->rodata->targ_follow_hops = (opts)->follow_hops;                    \
		if ((opts)->follow_comm) {                                                 \
			strncpy((char *)(skel)->rodata->targ_comm, (opts)->follow_comm,    \
				TTF_COMM_LEN - 1);                                         \
			(skel)->rodata->targ_follow_comm = true;                           \
		}                                                                          \
	} while (0)

static void set_wakeup(struct net_probe *np, uint64_t bytes)
{
	if (np->sock)
		np->sock->rodata->targ_wakeup_bytes = bytes;
	else
		np->sys->rodata->targ_wakeup_bytes = bytes;
}

static void no_autoload(struct bpf_object *obj, const char *name)
{
	struct bpf_program *prog = bpf_object__find_program_by_name(obj, name);

	if (prog)
		bpf_program__set_autoload(prog, false);
}

/*
 * io_uring_submit_req(req) since 6.4; io_uring_submit_sqe(req, force_nonblock)
 * in 6.0 to 6.3, other arguments before (docs/kernel.md B1.10): load the one
 * program whose tracepoint takes the request first, or none (then the
 * feature is reported missing).
 */
static void choose_uring_submit(struct bpf_object *obj, const struct btf *btf)
{
	int req = !btf || tp_check__nargs(btf, "io_uring_submit_req") == 1;
	int sqe = btf && !req && tp_check__nargs(btf, "io_uring_submit_sqe") == 2;

	if (!req)
		no_autoload(obj, "handle_uring_submit");
	if (!sqe)
		no_autoload(obj, "handle_uring_submit_sqe");
}

/*
 * Open the skeleton of source, find its maps, and leave out the programs
 * this kernel has no use for: one pair of syscall hooks, and tcp_probe
 * where sk_data_ready is there.
 */
static int open_source(struct net_probe *np, enum net_source source, const struct btf *btf)
{
	if (source == NET_SOURCE_SYSCALL) {
		np->sys = net_syscall_bpf__open();
		if (!np->sys)
			return -errno;
		np->obj = np->sys->obj;
		if (!btf || (tp_check__has(btf, "sys_enter") && tp_check__has(btf, "sys_exit"))) {
			no_autoload(np->obj, "handle_sys_enter_raw");
			no_autoload(np->obj, "handle_sys_exit_raw");
		} else {
			no_autoload(np->obj, "handle_sys_enter");
			no_autoload(np->obj, "handle_sys_exit");
			np->st.raw_tp = 1;
		}
	} else {
		np->sock = net_bpf__open();
		if (!np->sock)
			return -errno;
		np->obj = np->sock->obj;
	}
	np->st.source = source;
	if (!btf || tp_check__has(btf, "sk_data_ready"))
		no_autoload(np->obj, "handle_tcp_probe");
	/* sched_process_exit(p, group_dead) on 6.18; (p) alone on 6.1 */
	if (btf && tp_check__nargs(btf, "sched_process_exit") == 1)
		no_autoload(np->obj, "handle_exit");
	else
		no_autoload(np->obj, "handle_exit_live");
	if (np->sock)
		choose_uring_submit(np->obj, btf);
	np->events = bpf_object__find_map_by_name(np->obj, "events");
	np->tgids = bpf_object__find_map_by_name(np->obj, "traced_tgids");
	np->ports = bpf_object__find_map_by_name(np->obj, "listen_ports");
	np->counters = bpf_object__find_map_by_name(np->obj, "counters");
	if (!np->events || !np->tgids || !np->ports || !np->counters)
		return -ENOENT;
	return 0;
}

struct net_probe *net_probe__open_load(const struct net_probe_opts *opts, int *err,
				       char *missing_tp, size_t missing_len)
{
	struct net_probe *np = calloc(1, sizeof(*np));
	enum net_source source = net_source__choose(opts->source, opts->vmlinux_btf);
	struct bpf_program *prog;

	if (missing_len)
		missing_tp[0] = '\0';
	if (!np) {
		*err = -ENOMEM;
		return NULL;
	}
	np->on_event = opts->on_event;
	np->ctx = opts->ctx;
	*err = open_source(np, source, opts->vmlinux_btf);
	if (*err)
		goto fail;
	if (np->sock)
		CONFIGURE(np->sock, opts);
	else
		CONFIGURE(np->sys, opts);
	bpf_object__for_each_program(prog, np->obj) {
		if (skipped(opts->skip_progs, bpf_program__name(prog)) ||
		    (opts->no_tls && !strncmp(bpf_program__name(prog), "tls_", 4)))
			bpf_program__set_autoload(prog, false);
	}
	if (opts->vmlinux_btf) {
		*err = tp_check__prune(np->obj, opts->vmlinux_btf,
				       np->sock ? required_tps : required_none, missing_tp,
				       missing_len);
		if (*err < 0)
			goto fail;
	}
	*err = bpf_map__set_max_entries(np->events, opts->ringbuf_bytes);
	if (*err)
		goto fail;
	/* A fixed 4 MiB never triggered in rings of 4 MiB and less (--ringbuf-mb). */
	set_wakeup(np, bpf_map__max_entries(np->events) / 4);
	*err = np->sock ? net_bpf__load(np->sock) : net_syscall_bpf__load(np->sys);
	if (*err)
		goto fail;
	np->rb = ring_buffer__new(bpf_map__fd(np->events), ring_cb, np, NULL);
	if (!np->rb) {
		*err = -errno;
		goto fail;
	}
	return np;
fail:
	net_probe__destroy(np);
	return NULL;
}

/*
 * The syscalls whose syscalls:sys_enter_X tracepoint has a program enter_X
 * in bpf/net.bpf.c: the four write-like syscalls its handle_sys_enter takes
 * (a read's arguments come from the registers at sock_recv_length), and
 * close (a unix stream connection's end, docs/kernel.md B10).
 */
static const char *const enter_syscalls[] = {
	"write", "writev", "sendto", "sendmsg", "close",
};
#define N_ENTER (sizeof(enter_syscalls) / sizeof(enter_syscalls[0]))

static int is_sys_enter_prog(const char *name)
{
	return !strcmp(name, "handle_sys_enter") || !strncmp(name, "enter_", strlen("enter_"));
}

static void keep_link(struct net_probe *np, struct bpf_link *link)
{
	if (np->n_links < MAX_LINKS)
		np->links[np->n_links++] = link;
}

/*
 * Why the syscalls:sys_enter_X programs (enter_syscalls) cannot all attach, into why;
 * attaches them into links when they can. Returns 0 (all attached) or -1.
 */
static int attach_enter_tps(struct net_probe *np, struct bpf_link **links, char *why,
			    size_t why_len)
{
	size_t n = 0;
	int m = tracefs__ensure();

	if (m < 0) {
		snprintf(why, why_len, "tracefs is not mounted and mounting it failed (%s%s)",
			 strerror(-m), m == -EPERM ? ": needs CAP_SYS_ADMIN" : "");
		return -1;
	}
	np->tracefs_mounted = m == 1;
	for (; n < N_ENTER; n++) {
		char prog[32], ev[32];
		struct bpf_program *p;

		snprintf(prog, sizeof(prog), "enter_%s", enter_syscalls[n]);
		snprintf(ev, sizeof(ev), "sys_enter_%s", enter_syscalls[n]);
		p = net_probe__program(np, prog);
		if (!p) {
			snprintf(why, why_len, "%s is not loaded", prog);
			break;
		}
		if (!tracefs__has_event("syscalls", ev)) {
			snprintf(why, why_len, "tracefs has no syscalls/%s (CONFIG_FTRACE_SYSCALLS)",
				 ev);
			break;
		}
		links[n] = bpf_program__attach(p);
		if (!links[n]) {
			snprintf(why, why_len, "attaching %s failed (%s)", prog, strerror(errno));
			break;
		}
	}
	if (n == N_ENTER)
		return 0;
	while (n--)
		bpf_link__destroy(links[n]);
	return -1;
}

/*
 * sock: remember the syscall arguments with the per-syscall tracepoints
 * syscalls:sys_enter_X where all of them attach (only those syscalls run a
 * program), else with raw sys_enter, which runs for every syscall of the
 * machine (docs/kernel.md B1.5). Sets st->sys_enter_tps; returns 1 when one
 * of the two attached, else 0.
 */
static int attach_sys_enter(struct net_probe *np, struct net_probe_status *st)
{
	struct bpf_link *links[N_ENTER], *link;
	struct bpf_program *raw;
	char why[160];

	if (!attach_enter_tps(np, links, why, sizeof(why))) {
		for (size_t i = 0; i < N_ENTER; i++)
			keep_link(np, links[i]);
		st->n_attached += N_ENTER;
		st->sys_enter_tps = 1;
		return 1;
	}
	raw = net_probe__program(np, "handle_sys_enter");
	snprintf(st->sys_enter_why, sizeof(st->sys_enter_why), "%s", why);
	if (!raw)
		return 0;
	link = bpf_program__attach(raw);
	if (!link) {
		st->n_failed++;
		ttf_warn("could not attach handle_sys_enter (%s)", strerror(errno));
		return 0;
	}
	st->n_attached++;
	keep_link(np, link);
	return 1;
}

/* The two programs of a source without which there are no RECV/SEND records. */
static int must_have(const struct net_probe *np, const char *name)
{
	if (np->sock)
		return !strcmp(name, "handle_recv") || !strcmp(name, "handle_send");
	return !strncmp(name, "handle_sys_enter", strlen("handle_sys_enter")) ||
	       !strncmp(name, "handle_sys_exit", strlen("handle_sys_exit"));
}

int net_probe__attach(struct net_probe *np, struct net_probe_status *st)
{
	struct bpf_program *prog;

	memset(st, 0, sizeof(*st));
	st->source = np->st.source;
	st->raw_tp = np->st.raw_tp;
	bpf_object__for_each_program(prog, np->obj) {
		const char *name = bpf_program__name(prog);
		struct bpf_link *link;

		if (!bpf_program__autoload(prog))
			continue;
		/* the TLS library uprobes name no target: user/probe/tls_probe.c places them */
		if (!strncmp(name, "tls_", 4))
			continue;
		if (np->sock && is_sys_enter_prog(name))
			continue;	/* attach_sys_enter's, below */
		link = bpf_program__attach(prog);
		if (!link) {
			st->n_failed++;
			ttf_warn("could not attach %s (%s)", name, strerror(errno));
			continue;
		}
		st->n_attached++;
		ttf_debug("attached %s", name);
		keep_link(np, link);
		if (must_have(np, name))
			st->recv_send++;
		else if (!strcmp(name, "handle_tcp_probe"))
			st->arrival_tcp_probe = 1;
		else if (!strcmp(name, "handle_xmit"))
			st->xmit = 1;
		else if (!strcmp(name, "handle_data_ready"))
			st->arrival = 1;
		else if (!strncmp(name, "handle_uring_submit", strlen("handle_uring_submit")))
			st->uring = 1;
		else if (!strcmp(name, "handle_set_state"))
			st->close = 1;
		else if (!strcmp(name, "handle_fork") || !strcmp(name, "handle_exit") ||
			 !strcmp(name, "handle_exit_live"))
			st->follow++;
	}
	/* without its syscall arguments sock's records have no payload: a must-have too */
	if (np->sock && !attach_sys_enter(np, st))
		st->recv_send = 0;
	st->recv_send = st->recv_send == 2;
	st->follow = st->follow == 2;
	np->st = *st;
	return st->recv_send ? 0 : -ENOENT;
}

int net_probe__trace_tgid(struct net_probe *np, uint32_t tgid)
{
	volatile uint32_t *slot = np->sock ? &np->sock->bss->tgid_slot[tgid % TTF_TGID_FILTER_SLOTS] :
				    &np->sys->bss->tgid_slot[tgid % TTF_TGID_FILTER_SLOTS];
	uint8_t one = 1;
	int err;

	/* the filter's slot before the map entry, as trace_tgid() in BPF */
	if (!*slot)
		*slot = tgid;
	else if (*slot != tgid)
		*slot = TTF_TGID_SLOT_SHARED;
	err = bpf_map__update_elem(np->tgids, &tgid, sizeof(tgid), &one, sizeof(one), BPF_ANY);
	if (err && *slot == tgid)
		*slot = TTF_TGID_SLOT_SHARED;
	return err;
}

int net_probe__trace_port(struct net_probe *np, uint32_t netns_ino, uint16_t port)
{
	struct ttf_listen_key key = { .netns_ino = netns_ino, .port = port };
	volatile uint8_t *marks = np->sock ? np->sock->bss->port_marks : np->sys->bss->port_marks;
	uint8_t one = 1;

	/* the port's byte before the map entry, as port_mark() in BPF */
	marks[port] = 1;
	return bpf_map__update_elem(np->ports, &key, sizeof(key), &one,
				    sizeof(one), BPF_ANY);
}

int net_probe__tgids_fd(struct net_probe *np)
{
	return bpf_map__fd(np->tgids);
}

struct bpf_program *net_probe__program(struct net_probe *np, const char *name)
{
	struct bpf_program *prog = bpf_object__find_program_by_name(np->obj, name);

	return prog && bpf_program__autoload(prog) ? prog : NULL;
}

int net_probe__poll(struct net_probe *np, int timeout_ms)
{
	/* timeout 0: the tracer's own epoll already waited; no syscall for nothing */
	int n = timeout_ms > 0 ? ring_buffer__poll(np->rb, timeout_ms) : 0;

	if (n < 0)
		return n;
	/* Records submitted with BPF_RB_NO_WAKEUP raise no epoll event: drain them. */
	return ring_buffer__consume(np->rb);
}

void net_probe__counters(struct net_probe *np, uint64_t *out)
{
	bpf_util__sum_percpu(np->counters, TTF_CNT__MAX, out);
}

void net_probe__destroy(struct net_probe *np)
{
	if (!np)
		return;
	/* per-syscall tracepoints are faultable on 6.18: their detach waits (B13) */
	bpf_util__destroy_links(np->links, np->n_links);
	ring_buffer__free(np->rb);
	net_bpf__destroy(np->sock);
	net_syscall_bpf__destroy(np->sys);
	if (np->tracefs_mounted)
		tracefs__unmount();
	free(np);
}

/* ---- as a probe source (user/probe/source.h) ---- */

static int src_poll(void *ctx, int timeout_ms)
{
	return net_probe__poll(ctx, timeout_ms);
}

int net_probe__counter_list(void *ctx, struct report_counter *c, int cap)
{
	uint64_t v[TTF_CNT__MAX];
	int n = 0;

	net_probe__counters(ctx, v);
	for (int i = 0; i < TTF_CNT__MAX && n < cap; i++)
		c[n++] = (struct report_counter){ counter_names[i], v[i] };
	return n;
}

static int src_wait_fd(void *ctx)
{
	const struct net_probe *np = ctx;

	return ring_buffer__epoll_fd(np->rb);
}

static int src_features(void *ctx, struct ttf_probe_feature *f, int cap)
{
	const struct net_probe *np = ctx;
	const struct ttf_probe_feature all[] = {
		{ "net_dev_start_xmit", np->st.xmit, "TTFT ends at the write, not at the device" },
		{ "sk_data_ready", np->st.arrival,
		  np->st.arrival_tcp_probe ?
			  "request arrival is taken from tcp_probe (TCP receive of the segment, "
			  "before it is queued; bytes sent with the handshake's last ACK are "
			  "taken at the read)" :
			  "request arrival is taken at the read (net_in is 0)" },
		{ "sock_recv_length/sock_send_length", np->st.source == NET_SOURCE_SOCK,
		  "reads and writes are taken at the syscall's return (sys_exit) and their "
		  "socket through the fd: socket I/O not made by read/write/send/recv-family "
		  "syscalls (io_uring, in-kernel senders) is not seen" },
		{ "inet_sock_set_state", np->st.close,
		  "connection closes are seen only when the process exits" },
		{ "sched_process_fork/exit", np->st.follow,
		  "children and exits of traced processes are not followed" },
	};
	int n = 0;

	for (size_t i = 0; i < sizeof(all) / sizeof(all[0]) && n < cap; i++)
		f[n++] = all[i];
	/* The syscall source sees no io_uring I/O at all: its own line says so. */
	if (np->st.source == NET_SOURCE_SOCK && n < cap)
		f[n++] = (struct ttf_probe_feature){
			"io_uring_submit_req", np->st.uring,
			"socket I/O through io_uring is seen without its payload: its requests "
			"and tokens are not recognised (counted as payload_args_missing)" };
	return n;
}

void net_probe__source(struct net_probe *np, struct ttf_probe_source *out)
{
	*out = (struct ttf_probe_source){ .name = "net", .ctx = np, .poll = src_poll,
					  .wait_fd = src_wait_fd,
					  .counters = net_probe__counter_list,
					  .features = src_features };
}
