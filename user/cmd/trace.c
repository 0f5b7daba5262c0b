// SPDX-License-Identifier: GPL-2.0-only
/*
 * The live tracer's event loop (tracer.h): drain the sources, feed the
 * pipeline, follow forks and hops, watch the targets, end on a signal, -d,
 * -c's exit or the targets' end.
 */
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <sys/epoll.h>
#include <limits.h>
#include <sys/wait.h>
#include "user/cmd/self_cost.h"
#include "user/cmd/trace.h"
#include "user/cmd/tracer.h"
#include "user/lib/exit.h"
#include "user/lib/log.h"
#include "user/probe/engine_setup.h"
#include "user/probe/tls_probe.h"

/*
 * While records come: drain every --drain-ms (TTF_DEFAULT_DRAIN_MS,
 * cli.h). Each drain costs a wakeup, a handful of syscalls and cold caches
 * whatever it finds: on the demo engine (about 400 tokens a second) the
 * tracer took 8.88 us per streamed token draining every 50 ms, 5.87 to 7.82
 * every 200 ms and 2.97 every 1,000 ms (bench/README.md). A request's line
 * comes out within about that long of its end (twice that after an idle
 * spell; plus the watermark's slack), and the rings wake the loop early
 * when a quarter full (net; the scheduler's flight recorder, which holds a
 * drain interval, see trace_probes.c, when a CPU's slots are half unread),
 * and the net ring at each
 * traced fork or exit (a new process to look at for TLS and engine
 * libraries; perhaps the last target gone).
 *
 * An idle target: each drain that finds no record doubles the wait, up to
 * twice the drain interval; the first record brings it back. Keeps an idle
 * server's tracer from waking often. A busy one: records coming faster
 * than DRAIN_FAST_RECORDS_PER_S bring the next drain within DRAIN_FAST_MS,
 * so that a batch stays small in memory; there the records, not the
 * wakeups, are the tracer's cost.
 */
/* Sources' ticks, listen-port checks. */
#define ALIVE_CHECK_NS 200000000ull
/*
 * Whether the traced processes are gone: a pidfd per process per check
 * (target__alive), so not at every tick, but at once after an EXIT record
 * (a traced process's last thread ended; its record wakes the tracer).
 */
#define GONE_CHECK_NS 1000000000ull
#define WATERMARK_SLACK_NS 2000000ull

static volatile sig_atomic_t stop_requested;

static void on_signal(int sig)
{
	stop_requested = 1;
}

static void on_child(int sig)
{
}

void trace__catch_signals(void)
{
	struct sigaction sa = { .sa_handler = on_signal };

	sigaction(SIGINT, &sa, NULL);
	sigaction(SIGTERM, &sa, NULL);
}

/*
 * -c: the command's end interrupts the drain's wait, so that it is noticed
 * at once, not at the next drain. SIGCHLD stays blocked but for the wait
 * itself (epoll_pwait with t->wait_mask), so that an end between the
 * waitpid check and the wait is delivered when the wait begins: no
 * window. epoll_pwait is never restarted after a handler (signal(7));
 * SA_RESTART keeps other calls as they were.
 */
static void catch_child(struct tracer *t)
{
	struct sigaction sa = { .sa_handler = on_child, .sa_flags = SA_RESTART };
	sigset_t chld;

	sigemptyset(&chld);
	sigaddset(&chld, SIGCHLD);
	sigaction(SIGCHLD, &sa, NULL);
	if (sigprocmask(SIG_BLOCK, &chld, &t->wait_mask) == 0) {
		sigdelset(&t->wait_mask, SIGCHLD);
		t->have_wait_mask = 1;
	}
}

uint64_t tracer__now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + ts.tv_nsec;
}

/*
 * Trace the processes req found that are not traced yet (with the line
 * follow_req__say prints): net and scheduler filters, engine probes.
 * Returns the processes added.
 */
static int trace_found(struct tracer *t, const struct follow_req *req)
{
	int added = 0;

	for (size_t i = 0; i < req->found.n; i++) {
		uint32_t tgid = req->found.tgids[i];
		size_t before = t->targets.n;

		if (target_set__add(&t->targets, tgid) || t->targets.n == before)
			continue;
		net_probe__trace_tgid(t->probe, tgid);
		engine_setup__attach(t->engine, tgid);
		follow_req__say(req, tgid, stderr);
		added++;
	}
	return added;
}

/*
 * Hop discovery (user/probe/follow.h): each upstream call the pipeline saw
 * since the last look, as it saw them; its port is traced, then whoever
 * listens there.
 */
static void follow_upstreams(struct tracer *t)
{
	struct pipeline_upstream up[16];
	int n;

	while (t->follow && (n = pipeline__take_upstreams(t->pipe, up, 16)) > 0) {
		for (int i = 0; i < n; i++) {
			struct follow_upstream u = { .family = up[i].addr.family,
						     .rport = up[i].addr.rport,
						     .tgid = up[i].tgid,
						     .read_first_ns = up[i].read_first_ns };
			struct follow_req req;

			memcpy(u.laddr, up[i].addr.laddr, sizeof(u.laddr));
			memcpy(u.raddr, up[i].addr.raddr, sizeof(u.raddr));
			memcpy(u.comm, up[i].comm, sizeof(u.comm));
			if (!follow__upstream(t->follow, &u, &req))
				continue;
			if (req.trace_port)
				net_probe__trace_port(t->probe, req.netns, req.port);
			trace_found(t, &req);
			follow_req__free(&req);
		}
	}
}

/*
 * A FOLLOW record: the kernel traced a caller's new local upstream at its
 * first read (bpf/net_hop.bpf.h); trace it here too, with its descendants,
 * engine and scheduler, as hop discovery would.
 */
static void trace_followed(struct tracer *t, const struct ttf_net_event *e)
{
	struct follow_req req = { .caller_tgid = e->tgid, .what = "listens there" };

	if (!t->follow || target__by_pid(&req.found, e->tid)) {
		target_set__free(&req.found);
		return;
	}
	target__comm(e->tgid, req.caller_comm, sizeof(req.caller_comm));
	snprintf(req.where, sizeof(req.where), "port %u", e->lport);
	trace_found(t, &req);
	follow_req__free(&req);
}

/* Net records: the tracer follows forks (targets, engine uprobes), the pipeline gets them all. */
int tracer__on_net(void *ctx, const struct ttf_net_event *e, size_t len)
{
	struct tracer *t = ctx;

	if (e->type == TTF_EV_FORK) {
		target_set__add(&t->targets, e->tid);
		engine_setup__attach(t->engine, e->tid);
		fresh_procs__add(&t->fresh, e->tid, tracer__now_ns());
		listen_map__forked(&t->listen_map, e->tgid, e->tid, e->ts_ns);
	} else if (e->type == TTF_EV_FOLLOW) {
		trace_followed(t, e);
	} else if (e->type == TTF_EV_EXIT) {
		t->exit_seen = 1;
		self_cost__exited(t->cost, e->tgid, e->enter_ns);
	}
	pipeline__on_net(t->pipe, e, len);
	follow_upstreams(t);	/* at once, as the record that showed the call */
	return 0;
}

int tracer__on_sched(void *ctx, const struct ttf_sched_event *e)
{
	struct tracer *t = ctx;

	pipeline__on_sched(t->pipe, e);
	return 0;
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
	struct follow_req req;
	int added;

	if (!follow__listeners(t->opts->port, &req))
		return 0;
	added = trace_found(t, &req);
	follow_req__free(&req);
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
	if (follow_port(t)) {
		t->port_waiting = 0;
		listen_map__print(&t->listen_map, &t->targets, stderr);	/* the new server's */
	}
	return 0;
}

/* One epoll over every source that has a wait fd (rings that force a wakeup when filling). */
void tracer__open_wait(struct tracer *t)
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
 * -c and --comm: the targets' listening ports are not known at start (the
 * command has not listened yet). Look on every check (5 a second) until one
 * is found (after 30 s without one, every 5 s), then at most once a second
 * after the target set grew: a request whose bytes arrive before the
 * server accepts its connection is then timed from that arrival
 * (sock_wanted() in bpf/net_timing.bpf.h keys such sockets by their listening
 * port; without it net_in and read_wait start at the first read).
 */
static void scan_listen_ports(struct tracer *t, uint64_t now)
{
	size_t before = t->targets.n_ports;

	if (t->opts->target != TTF_TARGET_CMD && t->opts->target != TTF_TARGET_COMM)
		return;
	if (now < t->next_port_scan_ns || (before && t->targets.n == t->port_scan_targets))
		return;
	/* none yet: on every check for the first 30 s, then every 5 s (a process that never listens) */
	t->next_port_scan_ns = now + (before ? 1000000000ull :
				      now - t->t0_ns < 30000000000ull ? 0 : 5000000000ull);
	t->port_scan_targets = t->targets.n;
	target__collect_listen_ports(&t->targets);
	for (size_t i = before; i < t->targets.n_ports; i++)
		net_probe__trace_port(t->probe, t->targets.port_netns[i], t->targets.ports[i]);
}

/*
 * Wait up to poll_ms for a source to ask (or the first source alone, without
 * the epoll), then drain every source. Returns the records read; *read_ns
 * (if read_ns): when the reading began (what happened before it, less the
 * slack of a program still running on another CPU, has been read).
 */
static int drain_sources(struct tracer *t, int poll_ms, uint64_t *read_ns, int *err)
{
	struct epoll_event evs[TRACER_MAX_SOURCES];
	int got = 0, n_ready = 0;	/* got: records read, all sources */
	uint32_t ready = 0;

	*err = 0;
	if (t->wait_fd >= 0) {
		n_ready = epoll_pwait(t->wait_fd, evs, TRACER_MAX_SOURCES, poll_ms > 0 ? poll_ms : 0,
				      t->have_wait_mask ? &t->wait_mask : NULL);
		if (n_ready < 0 && errno != EINTR)
			*err = -errno;
	}
	for (int i = 0; i < n_ready; i++)
		ready |= 1u << evs[i].data.u32;
	if (read_ns)
		*read_ns = tracer__now_ns();
	for (int i = 0; !*err && i < t->n_sources; i++) {
		const struct ttf_probe_source *s = &t->sources[i];
		int n;

		if (s->ready_only && t->wait_fd >= 0 && !(ready & (1u << i)))
			continue;
		n = s->poll(s->ctx, i == 0 && t->wait_fd < 0 ? poll_ms : 0);

		if (n < 0 && n != -EINTR && i == 0)
			*err = n;
		if (n > 0)
			got = n > INT_MAX - got ? INT_MAX : got + n;
	}
	return got;
}

/* A fresh process exec'd or mapped libraries: its engine and TLS uprobes now. */
static void look_again(void *ctx, uint32_t tgid)
{
	struct tracer *t = ctx;

	engine_setup__look(t->engine, tgid);
	tls_probe__scan_pid(t->tls, tgid);
}

/*
 * The drain interval after a drain that read got records since_ns after the
 * one before: --drain-ms while records come, at most DRAIN_FAST_MS while
 * they come faster than DRAIN_FAST_RECORDS_PER_S (memory: a second of a
 * busy server's records at once put the tracer over its 64 MiB goal,
 * tests/root/memory), doubling up to twice --drain-ms while none do.
 */
static int next_poll_ms(int got, uint64_t since_ns, int poll_ms, int busy_ms)
{
	if (got && (uint64_t)got * 1000000000ull >= DRAIN_FAST_RECORDS_PER_S * since_ns)
		return busy_ms < DRAIN_FAST_MS ? busy_ms : DRAIN_FAST_MS;
	if (got)
		return busy_ms;
	return poll_ms * 2 > 2 * busy_ms ? 2 * busy_ms : poll_ms * 2;
}

/*
 * How long the next drain may wait: poll_ms, less while a process is fresh,
 * and never past -d's deadline (0: none).
 */
static int wait_ms(struct tracer *t, int poll_ms, uint64_t now, uint64_t deadline)
{
	uint64_t left_ms;

	if (fresh_procs__any(&t->fresh, now) && poll_ms > FRESH_DRAIN_MS)
		poll_ms = FRESH_DRAIN_MS;
	if (!deadline)
		return poll_ms;
	if (deadline <= now)
		return 0;
	left_ms = (deadline - now) / 1000000 + 1;
	return left_ms < (uint64_t)poll_ms ? (int)left_ms : poll_ms;
}

static int run_loop(struct tracer *t)
{
	const struct ttf_opts *o = t->opts;
	uint64_t start = tracer__now_ns(), next_check = start + ALIVE_CHECK_NS;
	uint64_t next_gone = start + GONE_CHECK_NS, last_drain = start;
	uint64_t deadline = o->duration_s > 0 ? start + (uint64_t)(o->duration_s * 1e9) : 0;
	int busy_ms = o->drain_ms ? o->drain_ms : TTF_DEFAULT_DRAIN_MS;
	int gone = 0, poll_ms = busy_ms;

	if (t->child > 0) {
		catch_child(t);
		fresh_procs__add(&t->fresh, t->child, start);	/* it execs the command now */
	}

	while (!stop_requested) {
		uint64_t drain_start, now = tracer__now_ns();
		int err, got = drain_sources(t, wait_ms(t, poll_ms, now, deadline), &drain_start, &err);

		if (err) {
			ttf_error(NULL, "reading the ring buffer: %s", strerror(-err));
			return TTF_EXIT_INTERNAL;
		}
		poll_ms = next_poll_ms(got, drain_start - last_drain, poll_ms, busy_ms);
		last_drain = drain_start;
		/* Everything that happened before the reading began has now been read. */
		pipeline__advance(t->pipe, drain_start - WATERMARK_SLACK_NS);
		now = tracer__now_ns();
		pipeline__tick(t->pipe, now);
		fflush(t->out);	/* the lines so far, to a file or pipe too: one write, none if none */
		if (t->fresh.n)
			fresh_procs__changed(&t->fresh, now, look_again, t);
		if (deadline && now >= deadline)
			break;
		if (t->child > 0 && !t->child_done &&
		    waitpid(t->child, &t->child_status, WNOHANG) == t->child) {
			t->child_done = 1;
			break;
		}
		if (now >= next_check) {
			next_check = now + ALIVE_CHECK_NS;
			self_cost__poll(t->cost, now);
			for (int i = 0; i < t->n_sources; i++)
				if (t->sources[i].tick)
					t->sources[i].tick(t->sources[i].ctx, now);
			listen_map__check(&t->listen_map, now, stderr);
			scan_listen_ports(t, now);
		}
		if (t->child <= 0 && (now >= next_gone || t->exit_seen)) {
			next_gone = now + GONE_CHECK_NS;
			t->exit_seen = 0;
			if (targets_gone(t)) {
				gone = 1;
				break;
			}
		}
	}
	/* Let records of the last moments reach the ring, then drain it. */
	{
		int err;

		drain_sources(t, 0, NULL, &err);
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

int trace__run(const struct ttf_opts *o)
{
	struct tracer t = { .opts = o, .out = stdout, .wait_fd = -1, .go_fd = -1 };
	int code;

	/* main() caught them already; again for callers that did not */
	trace__catch_signals();
	code = tracer__setup(&t);
	if (!code)
		code = tracer__start(&t);
	if (!code)
		code = tracer__finish(&t, run_loop(&t));
	return tracer__free(&t, code);
}
