// SPDX-License-Identifier: GPL-2.0-only
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <sys/wait.h>
#include <bpf/libbpf.h>
#include "user/probe/caps.h"
#include "user/probe/engine_setup.h"
#include "user/probe/gpu_rx.h"
#include "user/model/gpu_store.h"
#include "user/hw/pcie.h"
#include "user/core/pipeline.h"
#include "user/model/sched.h"
#include "user/probe/sched_probe.h"
#include "user/cmd/sinks.h"
#include "user/cmd/live.h"
#include "user/lib/exit.h"
#include "user/lib/log.h"
#include "user/probe/net_probe.h"
#include "user/export/report.h"
#include "user/probe/target.h"
#include "user/probe/tp_check.h"
#include "user/cmd/trace.h"

#define POLL_MS 10
/*
 * An idle target: each drain that finds no record doubles the wait, up to
 * this; the first record brings it back to POLL_MS. Keeps an idle server's
 * tracer from waking 100 times a second. The rings are sized for far more
 * than this long a burst, and fill-level wakeups end the wait early.
 */
#define POLL_IDLE_MAX_MS 160
#define ALIVE_CHECK_NS 200000000ull
#define WATERMARK_SLACK_NS 2000000ull
#define COUNTERS_NS 1000000000ull	/* sinks get the counters this often */
#define GPU_KEEP_NS (120ull * 1000000000ull)	/* GPU spans kept for joins */

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
	struct gpu_store *gpu;
	uint64_t gpu_records;
	struct engine_setup *engine;	/* engine uprobes; NULL if none */
	struct sched_view *sched;	/* scheduler overlay; NULL if unavailable */
	struct sched_probe *sched_probe;
	struct btf *vmlinux_btf;	/* tracepoint checks while setting up; freed after */
	struct live *live;	/* progress line and --slo samples; NULL if neither */
	FILE *out;
	int port_waiting;	/* --port: the server exited, no new listener yet */
	pid_t child;		/* -c */
	int child_status;
	int child_done;
};

static int on_event(void *ctx, const struct ttf_net_event *e, size_t len)
{
	struct tracer *t = ctx;

	if (e->type == TTF_EV_FORK) {
		target_set__add(&t->targets, e->tid);
		engine_setup__attach(t->engine, e->tid);
	}
	if (e->type == TTF_EV_EXIT && t->sched)
		sched__forget_tgid(t->sched, e->tgid, e->ts_ns);
	pipeline__on_net_event(t->pipe, e, len);
	return 0;
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
		/* The owner's children too: engine/worker processes (case 5). */
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

static int load_probes(struct tracer *t)
{
	const struct ttf_opts *o = t->opts;
	struct net_probe_opts po = {
		.sz = sizeof(po),
		.capture_bytes = o->capture_bytes,
		.capture_send_bytes = o->capture_send_bytes,
		.ringbuf_bytes = o->ringbuf_bytes,
		.port_filter = o->target == TTF_TARGET_PORT ? o->port : 0,
		.follow_comm = o->target == TTF_TARGET_COMM ? o->comm : NULL,
		.skip_progs = getenv("TTFTRACE_SKIP_PROGS"),
		.on_event = on_event,
		.ctx = t,
	};
	char missing[64];
	int err;

	t->vmlinux_btf = tp_check__kernel_btf();
	if (!t->vmlinux_btf)
		ttf_warn("cannot read kernel BTF to check tracepoints (%s)", strerror(errno));
	po.vmlinux_btf = t->vmlinux_btf;
	t->probe = net_probe__open_load(&po, &err, missing, sizeof(missing));
	if (!t->probe && missing[0]) {
		ttf_error("sock_recv_length and sock_send_length arrived in Linux 6.3; "
			  "ttftrace needs them and sys_enter",
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
			ttf_error("ttftrace needs kernel >= 6.3 (sock_send_length/sock_recv_length "
				  "tracepoints) with BTF; run with -vvv for libbpf's log",
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
			  "nothing attached: the socket probes (sock_recv_length, "
			  "sock_send_length) are required (%d attached, %d failed)",
			  t->st.n_attached, t->st.n_failed);
		return TTF_EXIT_NOT_ATTACHED;
	}
	if (!t->st.xmit)
		ttf_warn("net_dev_start_xmit not attached: TTFT ends at the write, not at the device");
	if (!t->st.arrival)
		ttf_warn("sk_data_ready not attached: request arrival is taken at the read");
	for (size_t i = 0; i < t->targets.n; i++)
		net_probe__trace_tgid(t->probe, t->targets.tgids[i]);
	for (size_t i = 0; i < t->targets.n_ports; i++)
		net_probe__trace_port(t->probe, t->targets.ports[i]);
	return 0;
}

static int on_sched_event(void *ctx, const struct ttf_sched_event *e)
{
	struct tracer *t = ctx;

	if (t->pipe)
		pipeline__on_sched_event(t->pipe, e);
	return 0;
}

/* Scheduler view of the traced threads (sharing the net probe's tgid set). Optional. */
static void open_sched(struct tracer *t, struct pipeline_opts *po)
{
	struct sched_probe_opts so = { .sz = sizeof(so) };
	char missing[64];
	int err;

	if (t->opts->no_sched)
		return;
	t->sched = sched__new(NULL);
	if (!t->sched)
		return;
	so.tgid_map_fd = net_probe__tgids_fd(t->probe);
	so.view = t->sched;
	so.on_event = on_sched_event;
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
		sched__free(t->sched);
		t->sched = NULL;
		return;
	}
	po->overlay = sched__attrib_overlay;
	po->overlay_ctx = t->sched;
}

/* Engine uprobes from --profile/--probe, or the built-in profiles. */
static int open_engine(struct tracer *t)
{
	const struct ttf_opts *o = t->opts;
	struct engine_setup_opts eo = { .n_profiles = o->n_profiles, .n_probes = o->n_probes,
					.auto_profiles = !o->no_profile };
	int err;

	for (int i = 0; i < o->n_profiles; i++)
		eo.profiles[i] = o->profiles[i];
	for (int i = 0; i < o->n_probes; i++)
		eo.probes[i] = o->probes[i];
	eo.pipe = t->pipe;
	err = engine_setup__new(&eo, &t->engine);
	if (err == -EINVAL)
		return TTF_EXIT_USAGE;
	if (err && (o->n_profiles || o->n_probes)) {
		ttf_error("run with -vvv for libbpf's log", "engine uprobes: %s", strerror(-err));
		return TTF_EXIT_NOT_ATTACHED;
	}
	return 0;
}

/*
 * Listen for CUPTI collectors (servers started with CUDA_INJECTION64_PATH).
 * Optional: without it the stage split has no GPU part.
 */
static void open_gpu(struct tracer *t, struct pipeline_opts *po)
{
	struct gpu_rx_opts gro = { .sz = sizeof(gro) };
	struct pcie_gpu *gpus;
	int n;

	t->gpu = gpu_store__new();
	t->gpu_rx = t->gpu ? gpu_rx__new(&gro) : NULL;
	if (!t->gpu_rx) {
		ttf_warn("not listening for CUPTI collectors (%s): no GPU spans",
			 strerror(errno));
		gpu_store__free(t->gpu);
		t->gpu = NULL;
		return;
	}
	po->gpu = t->gpu;
	/* Copies are compared with the first NVIDIA GPU's PCIe path, when there is one. */
	gpus = calloc(PCIE_MAX_GPUS, sizeof(*gpus));
	n = gpus ? pcie__find_gpus(t->opts->sysfs_root, gpus, PCIE_MAX_GPUS) : 0;
	if (n > 0)
		po->link_gbps = pcie__path_gbps(t->opts->sysfs_root, gpus[0].bdf);
	if (n > 1)
		ttf_info("%d GPUs: copy bandwidth is compared with %s's link", n, gpus[0].bdf);
	free(gpus);
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
		fprintf(stderr, ", listening on port");
		for (size_t i = 0; i < t->targets.n_ports; i++)
			fprintf(stderr, "%s%u", i ? "," : " ", t->targets.ports[i]);
	}
	fprintf(stderr, "; TTFT ends at the %s. Hit Ctrl-C to end.\n",
		t->st.xmit ? "device transmit" : "write");
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
	struct target_set now = { 0 };
	int added = 0;

	if (target__by_port(&now, t->opts->port))
		goto out;
	for (size_t i = 0, n = now.n; i < n; i++)
		target__by_pid(&now, now.tgids[i]);
	for (size_t i = 0; i < now.n; i++) {
		uint32_t tgid = now.tgids[i];
		size_t before = t->targets.n;

		if (target_set__add(&t->targets, tgid) || t->targets.n == before)
			continue;
		net_probe__trace_tgid(t->probe, tgid);
		engine_setup__attach(t->engine, tgid);
		fprintf(stderr, "Tracing PID %u: it listens on port %u now.\n", tgid, t->opts->port);
		added++;
	}
out:
	target_set__free(&now);
	return added;
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
	if (follow_port(t))
		t->port_waiting = 0;
	return 0;
}

#define MAX_COUNTERS (TTF_CNT__MAX + 48)

/* Every drop and health counter of every source (probes, pipeline, GPU). */
static int source_counters(struct tracer *t, struct report_counter *c)
{
	const struct conn_stats *cs = pipeline__conn_stats(t->pipe);
	const struct timeline_stats *ts = pipeline__timeline_stats(t->pipe);
	uint64_t bpf_cnt[TTF_CNT__MAX];
	int n = 0;

	net_probe__counters(t->probe, bpf_cnt);
	for (int i = 0; i < TTF_CNT__MAX; i++)
		c[n++] = (struct report_counter){ net_probe__counter_name(i), bpf_cnt[i] };
	c[n++] = (struct report_counter){ "truncated_payloads", cs->truncated_events };
	c[n++] = (struct report_counter){ "lost_sync", cs->lost_sync };
	c[n++] = (struct report_counter){ "non_http_connections", cs->non_http };
	c[n++] = (struct report_counter){ "token_events_dropped_oom", cs->events_dropped_oom };
	c[n++] = (struct report_counter){ "malformed_records", cs->malformed };
	c[n++] = (struct report_counter){ "requests_not_deferred_oom", pipeline__dropped(t->pipe) };
	c[n++] = (struct report_counter){ "engine_unmatched_returns", ts->unmatched_returns };
	c[n++] = (struct report_counter){ "engine_orphan_prompt_steps", ts->orphan_prompt_steps };
	c[n++] = (struct report_counter){ "engine_steps_evicted", ts->dropped_old };
	c[n++] = (struct report_counter){ "aborted_requests_seen_by_engine", ts->aborted };
	c[n++] = (struct report_counter){ "orphaned_engine_steps", ts->orphaned_steps };
	c[n++] = (struct report_counter){ "orphaned_engine_us", ts->orphaned_ns / 1000 };
	c[n++] = (struct report_counter){ "requests_delayed_by_orphans", ts->delayed_by_orphans };
	c[n++] = (struct report_counter){ "delay_by_orphans_us", ts->delay_by_orphans_ns / 1000 };
	engine_setup__counters(t->engine, c, &n);
	if (t->sched) {
		uint64_t sc[TTF_SCHED_CNT__MAX];
		struct sched_stats ss;

		sched_probe__counters(t->sched_probe, sc);
		sched__stats(t->sched, &ss);
		c[n++] = (struct report_counter){ "sched_ringbuf_full", sc[TTF_SCHED_CNT_RINGBUF_FULL] };
		c[n++] = (struct report_counter){ "sched_events", sc[TTF_SCHED_CNT_EVENTS] };
		c[n++] = (struct report_counter){ "sched_switches", sc[TTF_SCHED_CNT_SWITCHES] };
		c[n++] = (struct report_counter){ "sched_switch_gaps",
						  sc[TTF_SCHED_CNT_SWITCH_GAPS] };
		c[n++] = (struct report_counter){ "sched_inconsistent", ss.inconsistent };
		c[n++] = (struct report_counter){ "sched_marks_dropped", ss.marks_horizon + ss.marks_cap };
		c[n++] = (struct report_counter){ "sched_threads_refused", ss.threads_refused };
		c[n++] = (struct report_counter){ "sched_alloc_failed", ss.alloc_failed };
	}
	if (t->gpu) {
		struct ttf_gpu_stats gs = { 0 };

		gpu_store__stats(t->gpu, 0, &gs);
		c[n++] = (struct report_counter){ "gpu_records", t->gpu_records };
		c[n++] = (struct report_counter){ "gpu_send_dropped", gs.send_dropped };
		c[n++] = (struct report_counter){ "gpu_cupti_dropped", gs.cupti_dropped };
		c[n++] = (struct report_counter){ "gpu_buffers_refused", gs.buffers_refused };
		c[n++] = (struct report_counter){ "gpu_buffers_discarded", gs.buffers_discarded };
		c[n++] = (struct report_counter){ "gpu_invalid_ts", gs.invalid_ts };
		c[n++] = (struct report_counter){ "gpu_duplicates", gs.duplicates };
		c[n++] = (struct report_counter){ "gpu_names_dropped", gs.names_dropped };
		c[n++] = (struct report_counter){ "gpu_bad_msgs", gpu_rx__bad_msgs(t->gpu_rx) };
	}
	return n;
}

/* The sources' counters and then the sinks' own, for the summary and the sinks. */
static int collect_counters(struct tracer *t, struct report_counter *c)
{
	int n = source_counters(t, c);

	return n + pipeline__sink_stats(t->pipe, c + n, MAX_COUNTERS - n);
}

/* Returns the main output's error; *sink_err gets the first sink's (each sink said which). */
static int summary(struct tracer *t, int *sink_err)
{
	struct report_counter c[MAX_COUNTERS];
	int n_src = source_counters(t, c), n, err;

	n = n_src + pipeline__sink_stats(t->pipe, c + n_src, MAX_COUNTERS - n_src);
	/* sinks flush first, so that their own drops reach the summary */
	*sink_err = pipeline__finish_sinks(t->pipe, c, n);
	/*
	 * The sources' counters as the sinks got them (a system-wide one such
	 * as sched_switches moves on meanwhile, and a replay of the recording
	 * must print this summary); the sinks' own as they are now.
	 */
	n = n_src + pipeline__sink_stats(t->pipe, c + n_src, MAX_COUNTERS - n_src);
	err = report__summary(t->report, c, n);
	/* the summary may be in a file: lost records are said on the terminal too */
	for (int i = 0; i < n; i++)
		if (c[i].value && strstr(c[i].name, "ringbuf_full"))
			ttf_warn("%" PRIu64 " records lost (%s): some requests are flagged "
				 "truncated/unknown; raise --ringbuf-mb", c[i].value, c[i].name);
	return err;
}

static int run_loop(struct tracer *t)
{
	const struct ttf_opts *o = t->opts;
	uint64_t start = now_ns(), next_check = start + ALIVE_CHECK_NS, next_counters = start;
	uint64_t deadline = o->duration_s > 0 ? start + (uint64_t)(o->duration_s * 1e9) : 0;
	int gone = 0, poll_ms = POLL_MS;

	while (!stop_requested) {
		uint64_t drain_start = now_ns();
		int err = net_probe__poll(t->probe, poll_ms), got = err > 0;
		uint64_t now;

		if (err < 0 && err != -EINTR) {
			ttf_error(NULL, "reading the ring buffer: %s", strerror(-err));
			return TTF_EXIT_INTERNAL;
		}
		if (t->sched_probe)
			got |= sched_probe__poll(t->sched_probe, 0) > 0;
		got |= engine_setup__poll(t->engine) > 0;
		if (t->gpu_rx) {
			int n = gpu_rx__poll(t->gpu_rx, t->gpu);

			if (n > 0)
				t->gpu_records += n;
			got |= n > 0;
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
			engine_setup__tick(t->engine, now);
			if (now >= next_counters) {
				struct report_counter c[MAX_COUNTERS];

				next_counters = now + COUNTERS_NS;
				pipeline__counters(t->pipe, c, collect_counters(t, c));
			}
			if (t->gpu && now > GPU_KEEP_NS)
				gpu_store__expire(t->gpu, now - GPU_KEEP_NS);
			if (t->child <= 0 && targets_gone(t)) {
				gone = 1;
				break;
			}
		}
	}
	/* Let records of the last moments reach the ring, then drain it. */
	net_probe__poll(t->probe, 0);
	if (t->sched_probe)
		sched_probe__poll(t->sched_probe, 0);
	engine_setup__poll(t->engine);
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

int trace__run(const struct ttf_opts *o)
{
	struct tracer t = { .opts = o, .out = stdout };
	int go_fd = -1, code, err, sink_err;

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
	struct pipeline_opts po = { .sz = sizeof(po), .report = t.report,
				    .xmit_expected = t.st.xmit, .attribution = 1 };

	open_gpu(&t, &po);
	open_sched(&t, &po);
	btf__free(t.vmlinux_btf);
	t.vmlinux_btf = NULL;
	t.pipe = t.report ? pipeline__new(&po) : NULL;
	if (!t.pipe || !t.report) {
		ttf_error(NULL, "out of memory");
		code = TTF_EXIT_INTERNAL;
		goto out;
	}
	code = open_engine(&t);
	if (!code)
		code = sinks__open(o, t.pipe);
	if (!code)
		code = live__open(o, t.pipe, &t.live);
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
	print_startup(&t);
	report__header(t.report);
	if (go_fd >= 0)
		target__spawn_release(go_fd);

	code = run_loop(&t);
	pipeline__finish(t.pipe, now_ns());
	err = summary(&t, &sink_err);
	engine_setup__summary(t.engine, o->json ? stderr : t.out);
	if (!err && fflush(t.out))
		err = -errno;
	if (err)
		ttf_error(err == -ENOSPC ? "free space on that file system" : "check permissions",
			  "writing %s: %s", o->output ? o->output : "standard output",
			  strerror(-err));
	if (err || sink_err)
		code = TTF_EXIT_OUTPUT;
	if (code == TTF_EXIT_OK)
		code = live__slo_verdict(t.live);
out:
	if (t.child > 0 && !t.child_done) {
		kill(t.child, SIGTERM);
		waitpid(t.child, NULL, 0);
	}
	pipeline__free(t.pipe);
	report__free(t.report);
	gpu_rx__free(t.gpu_rx);
	gpu_store__free(t.gpu);
	engine_setup__free(t.engine);
	sched_probe__destroy(t.sched_probe);
	sched__free(t.sched);
	net_probe__destroy(t.probe);
	btf__free(t.vmlinux_btf);
	target_set__free(&t.targets);
	if (t.out && t.out != stdout && fclose(t.out) && code == TTF_EXIT_OK) {
		ttf_error(NULL, "closing %s: %s", o->output, strerror(errno));
		code = TTF_EXIT_OUTPUT;
	}
	return code;
}
