// SPDX-License-Identifier: GPL-2.0-only
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <sys/epoll.h>
#include <sys/wait.h>
#include <bpf/libbpf.h>
#include "user/probe/caps.h"
#include "user/probe/engine_setup.h"
#include "user/probe/gpu_rx.h"
#include "user/cmd/gpu_attach.h"
#include "user/hw/pcie.h"
#include "user/core/pipeline.h"
#include "user/probe/sched_probe.h"
#include "user/probe/source.h"
#include "user/cmd/sinks.h"
#include "user/cmd/live.h"
#include "user/cmd/listen_map.h"
#include "user/lib/exit.h"
#include "user/lib/log.h"
#include "user/probe/net_probe.h"
#include "user/export/interval.h"
#include "user/export/report.h"
#include "user/probe/target.h"
#include "user/probe/tp_check.h"
#include "user/probe/tls_probe.h"
#include "user/cmd/trace.h"
#include "user/proto/grpc.h"

/*
 * While records come: drain every 50 ms. Each drain costs a wakeup and a
 * handful of syscalls whatever it finds, and at 10 ms these were a large
 * part of the tracer's CPU per streamed token (README, Cost); a request's
 * line still comes out within about 60 ms of its end (the drain, plus the
 * watermark's slack), and the rings wake the loop early when filling.
 */
#define POLL_MS 50
/*
 * An idle target: each drain that finds no record doubles the wait, up to
 * this; the first record brings it back to POLL_MS. Keeps an idle server's
 * tracer from waking 100 times a second. The rings are sized for far more
 * than this long a burst, and fill-level wakeups end the wait early.
 */
#define POLL_IDLE_MAX_MS 160
#define ALIVE_CHECK_NS 200000000ull
#define WATERMARK_SLACK_NS 2000000ull
#define MAX_SOURCES 6
#define MAX_COUNTERS 192

static volatile sig_atomic_t stop_requested;

static void on_signal(int sig)
{
	stop_requested = 1;
}

void trace__catch_signals(void)
{
	struct sigaction sa = { .sa_handler = on_signal };

	sigaction(SIGINT, &sa, NULL);
	sigaction(SIGTERM, &sa, NULL);
}

static uint64_t now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + ts.tv_nsec;
}

struct tracer {
	const struct ttf_opts *opts;
	struct target_set targets;
	struct net_probe *probe;
	struct net_probe_status st;
	struct pipeline *pipe;
	struct report *report;
	struct gpu_rx *gpu_rx;		/* CUPTI collectors connect here; NULL if unavailable */
	struct engine_setup *engine;	/* engine uprobes; NULL if none */
	struct sched_probe *sched_probe; /* scheduler overlay; NULL if unavailable */
	struct tls_probe *tls;		/* TLS library uprobes; NULL with --no-tls */
	/* every source the loop polls, the net probe first (user/probe/source.h) */
	struct ttf_probe_source sources[MAX_SOURCES];
	int n_sources;
	int wait_fd;			/* epoll over the sources' wait fds; -1: poll the first */
	struct btf *vmlinux_btf;	/* tracepoint checks while setting up; freed after */
	struct live *live;	/* progress line and --slo samples; NULL if neither */
	FILE *out;
	int port_waiting;	/* --port: the server exited, no new listener yet */
	pid_t child;		/* -c */
	int child_status;
	int child_done;
	struct grpc_profile grpc_profile;	/* --grpc-profile; empty without */
	struct {
		uint16_t port;		/* an upstream port looked up */
		uint32_t tgid;		/* one process found listening there; 0 none */
		uint64_t looked_ns;	/* when (event time): looked up at most once a second */
	} hops[64];
	int n_hops;
	struct {
		uint64_t key;		/* the inode of the listener's path file; 0: by peer */
		uint64_t peer;		/* by peer (no path): the peer socket's inode */
		uint32_t tgid;		/* one process found there; 0 none */
		uint64_t looked_ns;	/* when (event time): at most once a second per key */
	} unix_hops[64];
	int n_unix_hops;
	struct listen_map listen_map;	/* the targets' listeners and who holds them */
};

/* An address of this host's loopback, or the connection's own local address. */
static int local_peer(const struct ttf_conn_addr *a)
{
	static const uint8_t v6_loop[16] = { [15] = 1 };

	if (a->family == 2)
		return a->raddr[0] == 127 || !memcmp(a->raddr, a->laddr, 4);
	return !memcmp(a->raddr, v6_loop, 16) || !memcmp(a->raddr, a->laddr, 16);
}

/*
 * Trace the processes of now (and their descendants) too: net and scheduler
 * filters, engine probes. hop: the process that called them, at `where`
 * ("port P", "unix:PATH"), which they `what` ("listens there", ...); NULL:
 * --port's own listener came back. Returns the processes added.
 */
static int trace_found(struct tracer *t, struct target_set *now, const struct ttf_request *hop,
		       const char *where, const char *what)
{
	int added = 0;

	for (size_t i = 0, n = now->n; i < n; i++)
		target__by_pid(now, now->tgids[i]);
	for (size_t i = 0; i < now->n; i++) {
		uint32_t tgid = now->tgids[i];
		size_t before = t->targets.n;

		if (target_set__add(&t->targets, tgid) || t->targets.n == before)
			continue;
		net_probe__trace_tgid(t->probe, tgid);
		engine_setup__attach(t->engine, tgid);
		if (hop)
			fprintf(stderr, "Hop: PID %u (%s) calls %s: tracing PID %u, which %s, too.\n",
				hop->tgid, hop->comm, where, tgid, what);
		else
			fprintf(stderr, "Tracing PID %u: it listens on %s now.\n", tgid, where);
		added++;
	}
	return added;
}

/* trace_found for whoever listens on TCP port; *found: one of them (0 none). */
static int trace_listeners(struct tracer *t, uint16_t port, const struct ttf_request *hop,
			   uint32_t *found)
{
	struct target_set now = { 0 };
	char where[16], ns_pid[16] = "self";
	int added = 0;

	/* an upstream is in its caller's network namespace (a container's own loopback) */
	if (hop)
		snprintf(ns_pid, sizeof(ns_pid), "%u", hop->tgid);
	if (!target__by_port_in(&now, ns_pid, port)) {
		if (found)
			*found = now.tgids[0];
		snprintf(where, sizeof(where), "port %u", port);
		added = trace_found(t, &now, hop, where, "listens there");
	}
	target_set__free(&now);
	return added;
}

/*
 * Hop discovery over a unix stream socket (docs/design.md D11): who listens
 * on the path the gateway connected to (the record carries the inode of its
 * file, bpf/net.h) is traced too, like a TCP port's listener; a peer without
 * a path (a socketpair) by the process holding the peer socket (its inode
 * from the record, or from sock_diag when the write came before the
 * accept). Looked up at most once a second per path, and again only when
 * the process found there is gone.
 */
static void on_upstream_unix(struct tracer *t, const struct ttf_request *u)
{
	uint64_t peer = ttf_unix_ino(u->addr.raddr), key = ttf_unix_path_ino(u->addr.raddr);
	struct target_set now = { 0 };
	char path[108], where[160];
	int i, err;

	if (!key && !peer)
		target__unix_peer(ttf_unix_ino(u->addr.laddr), &peer);
	if (!key && !peer)
		return;	/* not accepted yet or gone: the next call looks again */
	for (i = 0; i < t->n_unix_hops; i++)
		if (key ? t->unix_hops[i].key == key : t->unix_hops[i].peer == peer)
			break;
	if (i < t->n_unix_hops) {
		if (u->read_first_ns < t->unix_hops[i].looked_ns + 1000000000ull)
			return;
		t->unix_hops[i].looked_ns = u->read_first_ns;
		if (t->unix_hops[i].tgid && target__alive(t->unix_hops[i].tgid))
			return;
	} else {
		if (t->n_unix_hops == (int)(sizeof(t->unix_hops) / sizeof(t->unix_hops[0])))
			return;
		t->n_unix_hops++;
	}
	t->unix_hops[i].key = key;
	t->unix_hops[i].peer = peer;
	t->unix_hops[i].tgid = 0;
	t->unix_hops[i].looked_ns = u->read_first_ns;
	if (key)
		err = target__by_unix_path_ino(&now, key, path, sizeof(path));
	else
		err = target__by_socket_inode(&now, peer);
	if (!err) {
		t->unix_hops[i].tgid = now.tgids[0];
		if (key)
			snprintf(where, sizeof(where), "unix:%s", path);
		else
			snprintf(where, sizeof(where), "unix:socket:[%llu]", (unsigned long long)peer);
		trace_found(t, &now, u, where, key ? "listens there" : "holds its peer socket");
	}
	target_set__free(&now);
}

/*
 * Hop discovery: a traced process wrote a request to an upstream on this
 * host; trace whoever listens on that port too, so the pipeline can join
 * the two (user/model/hops.h). Requests already in flight when it is added
 * merge at that hop.
 */
static void on_upstream(void *ctx, const struct ttf_request *u)
{
	struct tracer *t = ctx;
	uint16_t port = u->addr.rport;

	int i;

	if (!t->opts->no_hops && u->addr.family == TTF_AF_UNIX) {
		on_upstream_unix(t, u);
		return;
	}
	if (t->opts->no_hops || !local_peer(&u->addr))
		return;
	for (i = 0; i < t->n_hops; i++)
		if (t->hops[i].port == port)
			break;
	if (i < t->n_hops) {
		/* known: look again only when its process is gone (a restart) */
		if (u->read_first_ns < t->hops[i].looked_ns + 1000000000ull)
			return;
		t->hops[i].looked_ns = u->read_first_ns;
		if (t->hops[i].tgid && target__alive(t->hops[i].tgid))
			return;
	} else {
		if (t->n_hops == (int)(sizeof(t->hops) / sizeof(t->hops[0])))
			return;
		char caller[16];

		t->hops[t->n_hops++].port = port;
		snprintf(caller, sizeof(caller), "%u", u->tgid);
		net_probe__trace_port(t->probe, target__netns(caller), port);
	}
	t->hops[i].tgid = 0;
	t->hops[i].looked_ns = u->read_first_ns;
	trace_listeners(t, port, u, &t->hops[i].tgid);
}

/* Net records: the tracer follows forks (targets, engine uprobes), the pipeline gets them all. */
static int on_net(void *ctx, const struct ttf_net_event *e, size_t len)
{
	struct tracer *t = ctx;

	if (e->type == TTF_EV_FORK) {
		target_set__add(&t->targets, e->tid);
		engine_setup__attach(t->engine, e->tid);
		listen_map__forked(&t->listen_map, e->tgid, e->tid, e->ts_ns);
	}
	pipeline__on_net(t->pipe, e, len);
	return 0;
}

static int on_sched(void *ctx, const struct ttf_sched_event *e)
{
	struct tracer *t = ctx;

	pipeline__on_sched(t->pipe, e);
	return 0;
}

static void add_source(struct tracer *t, const struct ttf_probe_source *s)
{
	if (t->n_sources < MAX_SOURCES)
		t->sources[t->n_sources++] = *s;
}

static int check_environment(void)
{
	const char *btf = getenv("TTFTRACE_SYS_BTF");

	if (!btf)
		btf = "/sys/kernel/btf/vmlinux";
	uint64_t caps = 0;
	char missing[64];
	int err = caps__effective(&caps);

	if (err) {
		ttf_error("mount /proc", "cannot read this process's capabilities: %s",
			  strerror(-err));
		return TTF_EXIT_PRIV;
	}
	if (caps__check_bpf(caps, missing, sizeof(missing))) {
		ttf_error("run as root, or grant them: `setcap cap_bpf,cap_perfmon,cap_sys_ptrace+ep "
			  "ttftrace`; in a container add them to the securityContext",
			  "ttftrace needs %s to load its BPF programs", missing);
		return TTF_EXIT_PRIV;
	}
	if (!caps__has(caps, TTF_CAP_SYS_PTRACE))
		ttf_warn("no CAP_SYS_PTRACE: processes of other users cannot be inspected "
			 "(/proc/PID/fd for --port, /proc/PID/maps for uprobes)");
	if (access(btf, R_OK)) {
		ttf_error("ttftrace uses CO-RE and tp_btf programs: it needs a kernel built with "
			  "CONFIG_DEBUG_INFO_BTF=y",
			  "kernel BTF not found at %s", btf);
		return TTF_EXIT_KERNEL;
	}
	return 0;
}

static int resolve_targets(struct tracer *t)
{
	const struct ttf_opts *o = t->opts;
	int err = 0;

	switch (o->target) {
	case TTF_TARGET_PID:
		err = target__by_pid(&t->targets, o->pid);
		if (err == -ESRCH)
			ttf_error("check the PID with `ps -p PID`", "no such process: %d", o->pid);
		break;
	case TTF_TARGET_COMM:
		err = target__by_comm(&t->targets, o->comm);
		if (err == -ESRCH)
			ttf_error("check the name with `ps -eo comm`; to trace a server from its "
				  "start use -c CMD",
				  "no process is named '%s'", o->comm);
		break;
	case TTF_TARGET_PORT:
		err = target__by_port(&t->targets, o->port);
		if (err == -ESRCH)
			ttf_error("check the port with `ss -ltnp`",
				  "no process listens on TCP port %u", o->port);
		/* The owner's children too: engine/worker processes (docs/cases.md #5). */
		for (size_t i = 0, n = t->targets.n; !err && i < n; i++)
			if (target__by_pid(&t->targets, t->targets.tgids[i]) == -ENOMEM)
				err = -ENOMEM;
		break;
	case TTF_TARGET_CMD:
	case TTF_TARGET_NONE:
		break;
	}
	if (err == -ESRCH)
		return TTF_EXIT_NO_TARGET;
	if (err) {
		ttf_error(NULL, "finding targets: %s", strerror(-err));
		return TTF_EXIT_INTERNAL;
	}
	if (o->target != TTF_TARGET_CMD && o->target != TTF_TARGET_COMM)
		target__collect_listen_ports(&t->targets);
	return 0;
}

/* The start-up line that says which network source runs, and why. */
static void print_net_source(const struct tracer *t, enum net_source asked)
{
	const char *how = t->st.source == NET_SOURCE_SOCK ?
		t->st.sys_enter_tps ?
		"socket tracepoints sock_recv_length/sock_send_length, syscall arguments from "
		"the per-syscall tracepoints syscalls:sys_enter_X" :
		"socket tracepoints sock_recv_length/sock_send_length, syscall arguments from "
		"raw sys_enter" :
		t->st.raw_tp ? "raw syscall tracepoints sys_enter/sys_exit (raw_tp)" :
			       "raw syscall tracepoints sys_enter/sys_exit (tp_btf)";
	const char *why = asked != NET_SOURCE_AUTO ? "--net-source" :
		t->st.source == NET_SOURCE_SOCK ? "auto" :
		"auto: this kernel has no sock_recv_length/sock_send_length";

	fprintf(stderr, "Net source: %s, %s (%s)\n", net_source__name(t->st.source), how, why);
}

static int load_probes(struct tracer *t)
{
	const struct ttf_opts *o = t->opts;
	struct net_probe_opts po = {
		.sz = sizeof(po),
		.capture_bytes = o->capture_bytes,
		.capture_send_bytes = o->capture_send_bytes,
		.ringbuf_bytes = o->ringbuf_bytes,
		.port_filter = o->target == TTF_TARGET_PORT && o->no_hops ? o->port : 0,
		.follow_comm = o->target == TTF_TARGET_COMM ? o->comm : NULL,
		.skip_progs = getenv("TTFTRACE_SKIP_PROGS"),
		.source = o->net_source,
		.no_tls = o->no_tls,
		.on_event = on_net,
		.ctx = t,
	};
	struct ttf_probe_source src;
	char missing[64];
	int err;

	t->vmlinux_btf = tp_check__kernel_btf();
	if (!t->vmlinux_btf)
		ttf_warn("cannot read kernel BTF to check tracepoints (%s)", strerror(errno));
	po.vmlinux_btf = t->vmlinux_btf;
	t->probe = net_probe__open_load(&po, &err, missing, sizeof(missing));
	if (!t->probe && missing[0]) {
		ttf_error("sock_recv_length and sock_send_length arrived in Linux 6.3; the sock "
			  "source needs them and sys_enter: use --net-source auto or syscall",
			  "this kernel has no %s tracepoint (no btf_trace_%s in its BTF)",
			  missing, missing);
		return TTF_EXIT_KERNEL;
	}
	if (!t->probe) {
		if (err == -EPERM) {
			ttf_error("run as root; in a container add CAP_BPF, CAP_PERFMON",
				  "not permitted to load BPF programs (%s)", strerror(-err));
			return TTF_EXIT_PRIV;
		}
		if (err == -ENOENT || err == -ESRCH) {
			ttf_error("ttftrace needs a kernel with BTF, 6.3+ for the sock source and "
				  "5.8+ for the syscall source; run with -vvv for libbpf's log",
				  "the kernel lacks a type or tracepoint the probes need (%s)",
				  strerror(-err));
			return TTF_EXIT_KERNEL;
		}
		ttf_error("run with -vvv for libbpf's log", "loading BPF programs failed: %s",
			  strerror(-err));
		return TTF_EXIT_NOT_ATTACHED;
	}
	err = net_probe__attach(t->probe, &t->st);
	if (err) {
		ttf_error("run with -v to see which programs failed, -vvv for libbpf's log",
			  t->st.source == NET_SOURCE_SOCK ?
			  "nothing attached: the socket probes (sock_recv_length, "
			  "sock_send_length) are required (%d attached, %d failed)" :
			  "nothing attached: the syscall probes (sys_enter, sys_exit) are "
			  "required (%d attached, %d failed)",
			  t->st.n_attached, t->st.n_failed);
		return TTF_EXIT_NOT_ATTACHED;
	}
	print_net_source(t, po.source);
	net_probe__source(t->probe, &src);
	add_source(t, &src);
	for (size_t i = 0; i < t->targets.n; i++)
		net_probe__trace_tgid(t->probe, t->targets.tgids[i]);
	for (size_t i = 0; i < t->targets.n_ports; i++)
		net_probe__trace_port(t->probe, t->targets.port_netns[i], t->targets.ports[i]);
	return 0;
}

/*
 * TLS plaintext (user/probe/tls_probe.h): the libraries the targets map now,
 * and on every tick those of processes traced or files mapped since.
 * Optional: without it TLS connections stay opaque.
 */
static void open_tls(struct tracer *t)
{
	struct ttf_probe_source src;

	if (t->opts->no_tls)
		return;
	t->tls = tls_probe__new(t->probe);
	if (!t->tls) {
		ttf_warn("TLS uprobes unavailable (%s): TLS connections are not parsed",
			 strerror(errno));
		return;
	}
	if (!tls_probe__scan(t->tls))
		ttf_info("tls: no TLS library (libssl, a static OpenSSL, Go crypto/tls) in the "
			 "traced processes yet");
	tls_probe__source(t->tls, &src);
	add_source(t, &src);
}

/* Scheduler records of the traced threads (sharing the net probe's tgid set). Optional. */
static void open_sched(struct tracer *t, struct pipeline_opts *po)
{
	struct sched_probe_opts so = { .sz = sizeof(so) };
	struct ttf_probe_source src;
	char missing[64];
	int err;

	if (t->opts->no_sched)
		return;
	so.tgid_map_fd = net_probe__tgids_fd(t->probe);
	so.on_event = on_sched;
	so.ctx = t;
	so.vmlinux_btf = t->vmlinux_btf;
	t->sched_probe = sched_probe__open_load(&so, &err, missing, sizeof(missing));
	if (!t->sched_probe || (err = sched_probe__attach(t->sched_probe))) {
		if (missing[0])
			ttf_warn("scheduler probes unavailable (this kernel has no %s tracepoint): "
				 "no runqueue/off-CPU overlay", missing);
		else
			ttf_warn("scheduler probes unavailable (%s): no runqueue/off-CPU overlay",
				 strerror(-err));
		sched_probe__destroy(t->sched_probe);
		t->sched_probe = NULL;
		return;
	}
	po->sched = 1;
	sched_probe__source(t->sched_probe, &src);
	add_source(t, &src);
}

/* Engine uprobes from --profile/--probe, or the built-in profiles. */
static int open_engine(struct tracer *t)
{
	const struct ttf_opts *o = t->opts;
	struct engine_setup_opts eo = { .n_profiles = o->n_profiles, .n_probes = o->n_probes,
					.auto_profiles = !o->no_profile };
	struct ttf_probe_source src;
	int err;

	for (int i = 0; i < o->n_profiles; i++)
		eo.profiles[i] = o->profiles[i];
	for (int i = 0; i < o->n_probes; i++)
		eo.probes[i] = o->probes[i];
	eo.out = pipeline__records(t->pipe);
	err = engine_setup__new(&eo, &t->engine);
	if (err == -EINVAL)
		return TTF_EXIT_USAGE;
	if (err && (o->n_profiles || o->n_probes)) {
		ttf_error("run with -vvv for libbpf's log", "engine uprobes: %s", strerror(-err));
		return TTF_EXIT_NOT_ATTACHED;
	}
	if (t->engine) {
		engine_setup__source(t->engine, &src);
		add_source(t, &src);
	}
	return 0;
}

/*
 * Listen for CUPTI collectors (servers started with CUDA_INJECTION64_PATH).
 * Optional: without it the stage split has no GPU part.
 */
/* What a collector loaded into a running process found there (gpu-attach). */
static void on_gpu_notice(void *ctx, uint32_t pid, uint32_t code, const char *text)
{
	fprintf(stderr, "PID %u: GPU: %s\n", pid, text);
}

static void open_gpu(struct tracer *t, struct pipeline_opts *po)
{
	struct gpu_rx_opts gro = { .sz = sizeof(gro), .notice = on_gpu_notice };
	struct pcie_gpu *gpus;
	int n;

	t->gpu_rx = gpu_rx__new(&gro);
	if (!t->gpu_rx) {
		ttf_warn("not listening for CUPTI collectors (%s): no GPU spans",
			 strerror(errno));
		return;
	}
	po->gpu = 1;
	/* Copies are compared with the first NVIDIA GPU's PCIe path, when there is one. */
	gpus = calloc(PCIE_MAX_GPUS, sizeof(*gpus));
	n = gpus ? pcie__find_gpus(t->opts->sysfs_root, gpus, PCIE_MAX_GPUS) : 0;
	if (n > 0)
		po->link_gbps = pcie__path_gbps(t->opts->sysfs_root, gpus[0].bdf);
	if (n > 1)
		ttf_info("%d GPUs: copy bandwidth is compared with %s's link", n, gpus[0].bdf);
	free(gpus);
}

/* --gpu-attach: the collector into every target found at start (docs/cupti.md A9). */
static int attach_gpu(struct tracer *t)
{
	struct gpu_attach_opts ga = { .sock = gpu_attach__sock(NULL), .out = stderr };
	char lib[PATH_MAX];
	int code;

	if (gpu_attach__find_lib(NULL, lib, sizeof(lib)))
		return TTF_EXIT_USAGE;
	ga.lib = lib;
	if (!t->gpu_rx)
		ttf_warn("--gpu-attach: not listening for collectors; they report to the ttftrace "
			 "that listens on %s", ga.sock);
	for (size_t i = 0; i < t->targets.n; i++) {
		code = gpu_attach__run((pid_t)t->targets.tgids[i], &ga);
		if (code)
			return code;
	}
	return 0;
}

static void print_startup(struct tracer *t)
{
	const struct ttf_opts *o = t->opts;
	char who[256] = "";
	size_t len = 0;

	for (size_t i = 0; i < t->targets.n && i < 8; i++)
		len += snprintf(who + len, sizeof(who) - len, "%s%u", i ? "," : "",
				t->targets.tgids[i]);
	if (t->targets.n > 8)
		snprintf(who + len, sizeof(who) - len, ",...");
	if (o->target == TTF_TARGET_COMM)
		fprintf(stderr, "Tracing processes named '%s' (now: %s)", o->comm,
			t->targets.n ? who : "none");
	else
		fprintf(stderr, "Tracing PID %s", who);
	if (t->targets.n_ports) {
		uint32_t own = target__netns("self");

		fprintf(stderr, ", listening on port");
		for (size_t i = 0; i < t->targets.n_ports; i++) {
			fprintf(stderr, "%s%u", i ? "," : " ", t->targets.ports[i]);
			/* a container's port: in its own namespace, not this one's */
			if (t->targets.port_netns[i] != own)
				fprintf(stderr, " (net:[%u])", t->targets.port_netns[i]);
		}
	}
	fprintf(stderr, "; TTFT ends at the %s. Hit Ctrl-C to end.\n",
		t->st.xmit ? "device transmit" : "write");
	gpu_attach__build_note(stderr);
}

static int any_alive(const struct target_set *ts)
{
	for (size_t i = 0; i < ts->n; i++)
		if (target__alive(ts->tgids[i]))
			return 1;
	return 0;
}

/*
 * --port names a service, not a process: once its processes are gone, trace
 * whoever listens on the port next (a restart or a redeploy), with its
 * descendants. Returns the number of processes added.
 */
static int follow_port(struct tracer *t)
{
	return trace_listeners(t, t->opts->port, NULL, NULL);
}

/* 1 when every traced process is gone and none can come back. */
static int targets_gone(struct tracer *t)
{
	if (t->opts->target == TTF_TARGET_COMM)
		return 0;	/* a new process with that name may start */
	if (any_alive(&t->targets))
		return 0;
	if (t->opts->target != TTF_TARGET_PORT)
		return 1;
	if (!t->port_waiting) {
		fprintf(stderr, "The server on port %u exited; waiting for the next one "
			"(Ctrl-C to end).\n", t->opts->port);
		t->port_waiting = 1;
	}
	if (follow_port(t)) {
		t->port_waiting = 0;
		listen_map__print(&t->listen_map, &t->targets, stderr);	/* the new server's */
	}
	return 0;
}

/* Ends every sink (the report last: its summary has the others' final counters). */
static int summary(struct tracer *t)
{
	struct report_counter c[MAX_COUNTERS];
	int err = pipeline__finish_sinks(t->pipe), n;

	/* the summary may be in a file: lost records are said on the terminal too */
	n = pipeline__counters(t->pipe, c, MAX_COUNTERS);
	for (int i = 0; i < n; i++)
		if (c[i].value && strstr(c[i].name, "ringbuf_full"))
			ttf_warn("%" PRIu64 " records lost (%s): some requests are flagged "
				 "truncated/unknown; raise --ringbuf-mb", c[i].value, c[i].name);
	return err;
}

/* One epoll over every source that has a wait fd (rings that force a wakeup when filling). */
static void open_wait(struct tracer *t)
{
	t->wait_fd = epoll_create1(EPOLL_CLOEXEC);
	for (int i = 0; t->wait_fd >= 0 && i < t->n_sources; i++) {
		const struct ttf_probe_source *s = &t->sources[i];
		struct epoll_event ev = { .events = EPOLLIN, .data.u32 = i };
		int fd = s->wait_fd ? s->wait_fd(s->ctx) : -1;

		if (fd >= 0 && epoll_ctl(t->wait_fd, EPOLL_CTL_ADD, fd, &ev)) {
			ttf_debug("epoll over the sources: %s; polling the net ring", strerror(errno));
			close(t->wait_fd);
			t->wait_fd = -1;
		}
	}
}

/*
 * Wait up to poll_ms for a source to ask (or the first source alone, without
 * the epoll), then drain every source. Returns 1 if any had records.
 */
static int drain_sources(struct tracer *t, int poll_ms, int *err)
{
	struct epoll_event evs[MAX_SOURCES];
	int got = 0;

	*err = 0;
	if (t->wait_fd >= 0 && poll_ms > 0 &&
	    epoll_wait(t->wait_fd, evs, MAX_SOURCES, poll_ms) < 0 && errno != EINTR)
		*err = -errno;
	for (int i = 0; !*err && i < t->n_sources; i++) {
		const struct ttf_probe_source *s = &t->sources[i];
		int n = s->poll(s->ctx, i == 0 && t->wait_fd < 0 ? poll_ms : 0);

		if (n < 0 && n != -EINTR && i == 0)
			*err = n;
		got |= n > 0;
	}
	return got;
}

static int run_loop(struct tracer *t)
{
	const struct ttf_opts *o = t->opts;
	uint64_t start = now_ns(), next_check = start + ALIVE_CHECK_NS;
	uint64_t deadline = o->duration_s > 0 ? start + (uint64_t)(o->duration_s * 1e9) : 0;
	int gone = 0, poll_ms = POLL_MS;

	while (!stop_requested) {
		uint64_t drain_start = now_ns();
		/* -d: an idle poll does not wait past the deadline */
		int wait_ms = deadline && deadline <= drain_start ? 0 :
			      deadline && (deadline - drain_start) / 1000000 + 1 < (uint64_t)poll_ms ?
			      (int)((deadline - drain_start) / 1000000 + 1) : poll_ms;
		int err, got = drain_sources(t, wait_ms, &err);
		uint64_t now;

		if (err) {
			ttf_error(NULL, "reading the ring buffer: %s", strerror(-err));
			return TTF_EXIT_INTERNAL;
		}
		poll_ms = got ? POLL_MS : poll_ms * 2 > POLL_IDLE_MAX_MS ? POLL_IDLE_MAX_MS : poll_ms * 2;
		/* Everything that happened before this drain began has now been read. */
		pipeline__advance(t->pipe, drain_start - WATERMARK_SLACK_NS);
		now = now_ns();
		pipeline__tick(t->pipe, now);
		if (deadline && now >= deadline)
			break;
		if (t->child > 0 && !t->child_done &&
		    waitpid(t->child, &t->child_status, WNOHANG) == t->child) {
			t->child_done = 1;
			break;
		}
		if (now >= next_check) {
			next_check = now + ALIVE_CHECK_NS;
			for (int i = 0; i < t->n_sources; i++)
				if (t->sources[i].tick)
					t->sources[i].tick(t->sources[i].ctx, now);
			listen_map__check(&t->listen_map, now, stderr);
			if (t->child <= 0 && targets_gone(t)) {
				gone = 1;
				break;
			}
		}
	}
	/* Let records of the last moments reach the ring, then drain it. */
	{
		int err;

		drain_sources(t, 0, &err);
	}
	if (gone)
		fprintf(stderr, "All traced processes exited.\n");
	/* -c: a command that failed (a typo gives 127) must not look like a clean run */
	if (t->child_done && WIFEXITED(t->child_status) && WEXITSTATUS(t->child_status))
		ttf_warn("the command exited with status %d%s", WEXITSTATUS(t->child_status),
			 WEXITSTATUS(t->child_status) == 127 ? " (command not found?)" : "");
	else if (t->child_done && WIFSIGNALED(t->child_status))
		ttf_warn("the command was killed by signal %d (%s)", WTERMSIG(t->child_status),
			 strsignal(WTERMSIG(t->child_status)));
	return gone ? TTF_EXIT_TARGET_GONE : TTF_EXIT_OK;
}

/* -i: interval summaries on the report's stream, before the report's final summary. */
static int open_interval(struct tracer *t, uint64_t t0_ns)
{
	struct interval_opts io = { .out = t->out, .json = t->opts->json,
				    .interval_ns = (uint64_t)(t->opts->interval_s * 1e9),
				    .t0_ns = t0_ns };
	struct ttf_sink s;

	if (interval_sink__new(&io, &s)) {
		ttf_error(NULL, "out of memory");
		return TTF_EXIT_INTERNAL;
	}
	if (pipeline__add_sink(t->pipe, &s)) {
		s.destroy(s.ctx);
		ttf_error(NULL, "too many outputs");
		return TTF_EXIT_USAGE;
	}
	return 0;
}

int trace__run(const struct ttf_opts *o)
{
	struct tracer t = { .opts = o, .out = stdout, .wait_fd = -1 };
	int go_fd = -1, code, err;

	/* main() caught them already; again for callers that did not */
	trace__catch_signals();
	libbpf_set_print(ttf_libbpf_print);
	code = check_environment();
	if (code)
		return code;
	if (o->output) {
		int fd = open(o->output, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);

		if (fd < 0 || !(t.out = fdopen(fd, "w"))) {
			ttf_error("check that the directory exists and is writable",
				  "cannot write %s: %s", o->output, strerror(errno));
			if (fd >= 0)
				close(fd);
			return TTF_EXIT_OUTPUT;
		}
	}
	code = resolve_targets(&t);
	if (code)
		goto out;
	signal(SIGPIPE, SIG_IGN);

	struct report_opts ro = { .sz = sizeof(ro), .out = t.out, .json = o->json,
				  .verbose = o->verbose, .t0_ns = now_ns() };

	code = load_probes(&t);
	if (code)
		goto out;
	t.report = report__new(&ro);
	struct pipeline_opts po = { .sz = sizeof(po), .xmit_expected = t.st.xmit,
				    .attribution = 1, .on_upstream = on_upstream,
				    .on_upstream_ctx = &t };
	if (o->grpc_profile) {
		int bad = 0, gerr = grpc_profile__load(o->grpc_profile, &t.grpc_profile, &bad);

		if (gerr) {
			if (gerr == -EINVAL)
				ttf_error("lines: /package.Service/Method FIELD[.FIELD...][#]",
					  "--grpc-profile %s: line %d does not parse", o->grpc_profile,
					  bad);
			else
				ttf_error(NULL, "--grpc-profile %s: %s", o->grpc_profile,
					  strerror(-gerr));
			code = TTF_EXIT_USAGE;
			goto out;
		}
		po.grpc_profile = &t.grpc_profile;
	}

	open_gpu(&t, &po);
	open_sched(&t, &po);
	open_tls(&t);
	btf__free(t.vmlinux_btf);
	t.vmlinux_btf = NULL;
	t.pipe = t.report ? pipeline__new(&po) : NULL;
	if (!t.pipe || !t.report) {
		ttf_error(NULL, "out of memory");
		code = TTF_EXIT_INTERNAL;
		goto out;
	}
	if (t.gpu_rx) {
		struct ttf_records recs = pipeline__records(t.pipe);
		struct ttf_probe_source src;

		gpu_rx__source(t.gpu_rx, &recs, &src);
		add_source(&t, &src);
	}
	/* before any sink starts a thread: the attach forks its ptrace holder */
	code = o->gpu_attach ? attach_gpu(&t) : 0;
	if (!code)
		code = open_engine(&t);
	if (!code)
		open_wait(&t);
	for (int i = 0; !code && i < t.n_sources; i++) {
		probe_source__warn_missing(&t.sources[i]);
		if (t.sources[i].counters)
			pipeline__add_counters(t.pipe, t.sources[i].counters, t.sources[i].ctx);
	}
	if (!code)
		code = sinks__open(o, t.pipe);
	if (!code)
		code = live__open(o, t.pipe, &t.live);
	if (!code && o->interval_s > 0)
		code = open_interval(&t, ro.t0_ns);
	if (!code) {
		struct ttf_sink rs;

		/* last: its summary gets the other sinks' final counters */
		report__sink(t.report, &rs);
		if (pipeline__add_sink(t.pipe, &rs)) {
			ttf_error(NULL, "too many outputs");
			code = TTF_EXIT_USAGE;
		}
	}
	if (code)
		goto out;
	if (o->target == TTF_TARGET_CMD) {
		err = target__spawn(o->cmd, &t.child, &go_fd);
		if (err) {
			ttf_error(NULL, "cannot start '%s': %s", o->cmd, strerror(-err));
			code = TTF_EXIT_NO_TARGET;
			goto out;
		}
		target_set__add(&t.targets, t.child);
		net_probe__trace_tgid(t.probe, t.child);
	}
	for (size_t i = 0; i < t.targets.n; i++)
		engine_setup__attach(t.engine, t.targets.tgids[i]);
	listen_map__print(&t.listen_map, &t.targets, stderr);
	print_startup(&t);
	report__header(t.report);
	if (go_fd >= 0)
		target__spawn_release(go_fd);

	code = run_loop(&t);
	pipeline__finish(t.pipe, now_ns());
	code = summary(&t) ? TTF_EXIT_OUTPUT : code;
	engine_setup__summary(t.engine, o->json ? stderr : t.out);
	tls_probe__summary(t.tls, stderr);
	err = report__summary_error(t.report);
	if (!err && fflush(t.out))
		err = -errno;
	if (err) {
		ttf_error(err == -ENOSPC ? "free space on that file system" : "check permissions",
			  "writing %s: %s", o->output ? o->output : "standard output",
			  strerror(-err));
		code = TTF_EXIT_OUTPUT;
	}
	if (code == TTF_EXIT_OK)
		code = live__slo_verdict(t.live);
out:
	if (t.child > 0 && !t.child_done) {
		kill(-t.child, SIGTERM);	/* its process group: all cmd started (target.h) */
		waitpid(t.child, NULL, 0);
	}
	if (t.wait_fd >= 0)
		close(t.wait_fd);
	pipeline__free(t.pipe);
	report__free(t.report);
	gpu_rx__free(t.gpu_rx);
	engine_setup__free(t.engine);
	sched_probe__destroy(t.sched_probe);
	tls_probe__free(t.tls);
	net_probe__destroy(t.probe);
	btf__free(t.vmlinux_btf);
	target_set__free(&t.targets);
	grpc_profile__free(&t.grpc_profile);
	if (t.out && t.out != stdout && fclose(t.out) && code == TTF_EXIT_OK) {
		ttf_error(NULL, "closing %s: %s", o->output, strerror(errno));
		code = TTF_EXIT_OUTPUT;
	}
	return code;
}
