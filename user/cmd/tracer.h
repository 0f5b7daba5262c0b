/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * The live tracer's state, shared by its parts (user/cmd/):
 *
 *   trace.c         the event loop: drain the sources, feed the pipeline,
 *                   follow forks and hops, watch the targets, end
 *   trace_probes.c  load and attach the probe sources (net, TLS,
 *                   scheduler, engine uprobes, CUPTI collectors)
 *   trace_setup.c   the run before and after the loop: targets, output
 *                   file, pipeline and its sinks, start-up lines, the end
 */
#ifndef TTFTRACE_TRACER_H
#define TTFTRACE_TRACER_H

#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <sys/types.h>
#include "user/cmd/fresh_procs.h"
#include "user/cmd/cli.h"
#include "user/cmd/listen_map.h"
#include "user/core/pipeline.h"
#include "user/probe/follow.h"
#include "user/probe/net_probe.h"
#include "user/probe/source.h"
#include "user/probe/target.h"
#include "user/proto/http2/grpc.h"

#define TRACER_MAX_SOURCES 6
/*
 * Records coming this fast (per second, all sources): the loop's next drain
 * within DRAIN_FAST_MS (user/cmd/trace.c), and what the scheduler's flight
 * recorder holds a CPU for one drain interval below that (trace_probes.c).
 */
#define DRAIN_FAST_RECORDS_PER_S 8000
#define DRAIN_FAST_MS 200
#define TRACER_MAX_COUNTERS 192

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
	struct ttf_probe_source sources[TRACER_MAX_SOURCES];
	int n_sources;
	int wait_fd;			/* epoll over the sources' wait fds; -1: poll the first */
	struct btf *vmlinux_btf;	/* tracepoint checks while setting up; freed after */
	struct live *live;	/* progress line and --slo samples; NULL if neither */
	struct self_cost *cost;	/* the tracer's own CPU and BPF run time (cost_* counters) */
	FILE *out;
	uint64_t t0_ns;		/* the report's time origin */
	int go_fd;		/* -c: releases the command once tracing runs; -1 none */
	int port_waiting;	/* --port: the server exited, no new listener yet */
	pid_t child;		/* -c */
	int child_status;
	int child_done;
	struct grpc_profile grpc_profile;	/* --grpc-profile; empty without */
	struct follow *follow;		/* hop discovery; NULL with --no-hops */
	struct listen_map listen_map;	/* the targets' listeners and who holds them */
	uint64_t next_port_scan_ns;	/* -c, --comm: the next look for listening ports */
	size_t port_scan_targets;	/* targets.n at the last look */
	struct fresh_procs fresh;	/* traced in the last seconds: looked at each drain */
	int exit_seen;			/* an EXIT record since the last look at the targets */
	sigset_t wait_mask;		/* -c: the mask during the drain's wait (SIGCHLD open) */
	int have_wait_mask;
};

/* trace.c: the net and scheduler records, as the probes deliver them. */
int tracer__on_net(void *ctx, const struct ttf_net_event *e, size_t len);
int tracer__on_sched(void *ctx, const struct ttf_sched_event *e);
/* trace.c: one epoll over every source that has a wait fd. */
void tracer__open_wait(struct tracer *t);
/* CLOCK_MONOTONIC, the records' clock. */
uint64_t tracer__now_ns(void);

/* trace_probes.c; each returns 0 or an enum ttf_exit code (the optional ones: nothing). */
int tracer__check_environment(void);
int tracer__load_net(struct tracer *t);
void tracer__open_tls(struct tracer *t);
void tracer__open_sched(struct tracer *t, struct pipeline_opts *po);
void tracer__open_gpu(struct tracer *t, struct pipeline_opts *po);
int tracer__attach_gpu(struct tracer *t);
int tracer__open_engine(struct tracer *t);
void tracer__add_source(struct tracer *t, const struct ttf_probe_source *s);

/* trace_setup.c: everything up to the loop, then its end (enum ttf_exit codes). */
int tracer__setup(struct tracer *t);
int tracer__start(struct tracer *t);
int tracer__finish(struct tracer *t, int code);
/* Ends -c's command, frees everything; code, or TTF_EXIT_OUTPUT when -o's file fails to close. */
int tracer__free(struct tracer *t, int code);

#endif /* TTFTRACE_TRACER_H */
