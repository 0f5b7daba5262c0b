// SPDX-License-Identifier: GPL-2.0-only
/*
 * The live tracer before and after its loop (tracer.h): the targets, the
 * output file, the pipeline with its sources and sinks, the start-up
 * lines; at the end the summary and the exit code.
 */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/wait.h>
#include <sys/resource.h>
#include <bpf/btf.h>
#include <bpf/libbpf.h>
#include "user/cmd/live.h"
#include "user/cmd/self_cost.h"
#include "user/cmd/sinks.h"
#include "user/cmd/gpu_attach.h"
#include "user/cmd/tracer.h"
#include "user/export/report/report.h"
#include "user/lib/exit.h"
#include "user/lib/log.h"
#include "user/probe/engine_setup.h"
#include "user/probe/gpu_rx.h"
#include "user/probe/sched_probe.h"
#include "user/probe/tls_probe.h"

/* -o: the report's file; standard output without. */
static int open_output(struct tracer *t)
{
	const char *path = t->opts->output;
	int fd;

	if (!path)
		return 0;
	fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
	if (fd < 0 || !(t->out = fdopen(fd, "w"))) {
		ttf_error("check that the directory exists and is writable",
			  "cannot write %s: %s", path, strerror(errno));
		if (fd >= 0)
			close(fd);
		return TTF_EXIT_OUTPUT;
	}
	return 0;
}

/*
 * Is pid a kernel thread? The flags field of /proc/PID/stat (the ninth,
 * proc_pid_stat(5)) has PF_KTHREAD (0x00200000, include/linux/sched.h).
 * kthreadd's children are every kernel thread: never a server to trace.
 */
static bool kernel_thread(pid_t pid)
{
	char path[64], buf[512], *p;
	unsigned long flags;
	FILE *f;
	size_t n;

	snprintf(path, sizeof(path), "/proc/%d/stat", (int)pid);
	f = fopen(path, "re");
	if (!f)
		return false;
	n = fread(buf, 1, sizeof(buf) - 1, f);
	fclose(f);
	buf[n] = '\0';
	p = strrchr(buf, ')');	/* comm may hold spaces and parentheses */
	return p && sscanf(p + 1, " %*c %*d %*d %*d %*d %*d %lu", &flags) == 1 &&
	       (flags & 0x00200000UL);
}

static int resolve_targets(struct tracer *t)
{
	const struct ttf_opts *o = t->opts;
	int err = 0;

	switch (o->target) {
	case TTF_TARGET_PID:
		if (kernel_thread(o->pid)) {
			ttf_error("give the PID of the server process (`pgrep -f llama-server`), "
				  "or use --port PORT",
				  "PID %d is a kernel thread: no server to trace", o->pid);
			return TTF_EXIT_NO_TARGET;
		}
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

/* --grpc-profile: where gRPC messages hold their tokens. */
static int load_grpc_profile(struct tracer *t, struct pipeline_opts *po)
{
	const char *path = t->opts->grpc_profile;
	int bad = 0, err;

	if (!path)
		return 0;
	err = grpc_profile__load(path, &t->grpc_profile, &bad);
	if (err == -EINVAL) {
		ttf_error("lines: /package.Service/Method FIELD[.FIELD...][#]",
			  "--grpc-profile %s: line %d does not parse", path, bad);
		return TTF_EXIT_USAGE;
	}
	if (err) {
		ttf_error("check the path of the token profile (docs/protocols.md)",
			  "--grpc-profile %s: %s", path, strerror(-err));
		return TTF_EXIT_USAGE;
	}
	po->grpc_profile = &t->grpc_profile;
	return 0;
}

/*
 * The sources that need the pipeline (CUPTI collectors, engine uprobes),
 * the loop's wait, and every source's counters in the registry.
 */
static int open_sources(struct tracer *t)
{
	int code;

	if (t->gpu_rx) {
		struct ttf_records recs = pipeline__records(t->pipe);
		struct ttf_probe_source src;

		gpu_rx__source(t->gpu_rx, &recs, &src);
		tracer__add_source(t, &src);
	}
	/* before any sink starts a thread: the attach forks its ptrace holder */
	code = t->opts->gpu_attach ? tracer__attach_gpu(t) : 0;
	if (!code)
		code = tracer__open_engine(t);
	if (code)
		return code;
	tracer__open_wait(t);
	for (int i = 0; i < t->n_sources; i++) {
		probe_source__warn_missing(&t->sources[i]);
		if (t->sources[i].counters)
			pipeline__add_counters(t->pipe, t->sources[i].counters, t->sources[i].ctx);
	}
	pipeline__add_counters(t->pipe, self_cost__counters, t->cost);
	return 0;
}

/* Every output the options ask for, the report last (user/cmd/sinks.h). */
static int open_sinks(struct tracer *t)
{
	return sinks__open_live(t->opts, t->pipe, t->report, t->out, t->t0_ns, &t->live);
}

/* The net probe, the report, the optional probes and the pipeline they feed. */
static int open_pipeline(struct tracer *t)
{
	const struct ttf_opts *o = t->opts;
	struct report_opts ro = { .sz = sizeof(ro), .out = t->out, .json = o->json,
				  .verbose = o->verbose, .t0_ns = tracer__now_ns() };
	struct pipeline_opts po = { .sz = sizeof(po), .attribution = 1,
				    .keep_upstreams = !o->no_hops };
	int code;

	t->t0_ns = ro.t0_ns;
	code = tracer__load_net(t);
	if (code)
		return code;
	t->report = report__new(&ro);
	po.xmit_expected = t->st.xmit;
	code = load_grpc_profile(t, &po);
	if (code)
		return code;
	tracer__open_gpu(t, &po);
	tracer__open_sched(t, &po);
	tracer__open_tls(t);
	btf__free(t->vmlinux_btf);
	t->vmlinux_btf = NULL;
	t->pipe = t->report ? pipeline__new(&po) : NULL;
	if (!o->no_hops)
		t->follow = follow__new();
	if (!t->pipe || !t->report || (!o->no_hops && !t->follow)) {
		ttf_error(NULL, "out of memory");
		return TTF_EXIT_INTERNAL;
	}
	return 0;
}

int tracer__setup(struct tracer *t)
{
	int code;

	libbpf_set_print(ttf_libbpf_print);
	code = tracer__check_environment();
	if (!code) {
		/* before the programs load: --cost's statistics count their every run */
		t->cost = self_cost__new(t->opts->cost);
		if (!t->cost) {
			ttf_error(NULL, "out of memory");
			return TTF_EXIT_INTERNAL;
		}
		self_cost__set_targets(t->cost, &t->targets);
	}
	if (!code)
		code = open_output(t);
	if (!code)
		code = sinks__check_live(t->opts);
	if (!code)
		code = resolve_targets(t);
	if (code)
		return code;
	signal(SIGPIPE, SIG_IGN);
	code = open_pipeline(t);
	if (!code)
		code = open_sources(t);
	if (!code)
		code = open_sinks(t);
	return code;
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

/*
 * This thread drains the rings: give it more than a default share of the
 * CPU (setpriority(PRIO_PROCESS, 0) sets the calling thread's nice on
 * Linux; threads started before keep theirs). Without CAP_SYS_NICE it
 * stays as it was: said with -v.
 */
static void raise_priority(int nice)
{
	if (nice && setpriority(PRIO_PROCESS, 0, nice))
		ttf_debug("nice %d for the draining thread: %s; left at %d", nice,
			  strerror(errno), getpriority(PRIO_PROCESS, 0));
}

/* -c starts the command; every target gets the engine probes; the start-up lines. */
int tracer__start(struct tracer *t)
{
	const struct ttf_opts *o = t->opts;

	if (o->target == TTF_TARGET_CMD) {
		int err = target__spawn(o->cmd, &t->child, &t->go_fd);

		if (err) {
			ttf_error(NULL, "cannot start '%s': %s", o->cmd, strerror(-err));
			return TTF_EXIT_NO_TARGET;
		}
		target_set__add(&t->targets, t->child);
		net_probe__trace_tgid(t->probe, t->child);
	}
	raise_priority(o->nice);	/* after the fork: the command keeps its own */
	for (size_t i = 0; i < t->targets.n; i++)
		engine_setup__attach(t->engine, t->targets.tgids[i]);
	listen_map__print(&t->listen_map, &t->targets, stderr);
	/* before the line that says it is attached: a caller's own count starts after */
	self_cost__start(t->cost, tracer__now_ns());
	print_startup(t);
	report__header(t->report);
	if (t->go_fd >= 0)
		target__spawn_release(t->go_fd);
	return 0;
}

/* Ends every sink (the report last: its summary has the others' final counters). */
static int summary(struct tracer *t)
{
	struct report_counter c[TRACER_MAX_COUNTERS];
	int err = pipeline__finish_sinks(t->pipe), n;

	/* the summary may be in a file: lost records are said on the terminal too */
	n = pipeline__counters(t->pipe, c, TRACER_MAX_COUNTERS);
	for (int i = 0; i < n; i++) {
		if (c[i].value && strstr(c[i].name, "ringbuf_full"))
			ttf_warn("%" PRIu64 " records lost (%s): some requests are flagged "
				 "truncated/unknown; raise --ringbuf-mb", c[i].value, c[i].name);
		/* the recorder holds a drain interval at 8,000 spans a second a CPU (docs/usage.md) */
		if (c[i].value && !strcmp(c[i].name, "sched_flight_overwritten"))
			ttf_warn("%" PRIu64 " scheduler spans lost (%s): a CPU switched traced "
				 "threads faster than the recorder holds between two drains; the "
				 "scheduler view of requests in those bursts is incomplete",
				 c[i].value, c[i].name);
	}
	return err;
}

/* After the loop (code: its exit code): flush, the summaries, and the exit code. */
int tracer__finish(struct tracer *t, int code)
{
	const struct ttf_opts *o = t->opts;
	int err;

	self_cost__freeze(t->cost, tracer__now_ns());
	pipeline__finish(t->pipe, tracer__now_ns());
	code = summary(t) ? TTF_EXIT_OUTPUT : code;
	engine_setup__summary(t->engine, o->json ? stderr : t->out);
	tls_probe__summary(t->tls, stderr);
	err = report__summary_error(t->report);
	if (!err && fflush(t->out))
		err = -errno;
	if (err) {
		ttf_error(err == -ENOSPC ? "free space on that file system" : "check permissions",
			  "writing %s: %s", o->output ? o->output : "standard output",
			  strerror(-err));
		code = TTF_EXIT_OUTPUT;
	}
	if (code == TTF_EXIT_OK)
		code = live__slo_verdict(t->live);
	return code;
}

int tracer__free(struct tracer *t, int code)
{
	if (t->child > 0 && !t->child_done) {
		kill(-t->child, SIGTERM);	/* its process group: all cmd started (target.h) */
		waitpid(t->child, NULL, 0);
	}
	if (t->wait_fd >= 0)
		close(t->wait_fd);
	pipeline__free(t->pipe);
	report__free(t->report);
	gpu_rx__free(t->gpu_rx);
	engine_setup__free(t->engine);
	sched_probe__destroy(t->sched_probe);
	tls_probe__free(t->tls);
	net_probe__destroy(t->probe);
	btf__free(t->vmlinux_btf);
	target_set__free(&t->targets);
	grpc_profile__free(&t->grpc_profile);
	follow__free(t->follow);
	self_cost__free(t->cost);
	if (t->out && t->out != stdout && fclose(t->out) && code == TTF_EXIT_OK) {
		ttf_error(NULL, "closing %s: %s", t->opts->output, strerror(errno));
		code = TTF_EXIT_OUTPUT;
	}
	return code;
}
