/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * Command line of `ttftrace` (the tracer; subcommands parse their own).
 * Exit codes are the TTF_EXIT_* values of user/lib/exit.h (README.md "Exit codes").
 */
#ifndef TTFTRACE_CLI_H
#define TTFTRACE_CLI_H

#include <stdint.h>
#include <sys/types.h>
#include "user/lib/exit.h"
#include "user/export/prom/prom.h"

enum ttf_target_kind {
	TTF_TARGET_NONE = 0,
	TTF_TARGET_PID,
	TTF_TARGET_COMM,
	TTF_TARGET_PORT,
	TTF_TARGET_CMD,
};

/*
 * The nice value the tracer's draining thread takes after starting -c's
 * command (which keeps its own): at nice 0, one reader among a saturated
 * host's hundreds of runnable threads gets too small a share to keep up
 * (bench/README.md, the high-rate target).
 */
#define TTF_DEFAULT_NICE -10
/*
 * How often the tracer drains the rings while records come (--drain-ms):
 * each drain's wakeup costs more than the records it reads at a few hundred
 * tokens a second (user/cmd/trace.c); a request's line comes out within
 * about this long of its end.
 */
#define TTF_DEFAULT_DRAIN_MS 1000

struct ttf_opts {
	enum ttf_target_kind target;
	pid_t pid;		/* -p */
	char comm[16];		/* --comm */
	uint16_t port;		/* --port: the server's listening port */
	const char *cmd;	/* -c */
	double duration_s;	/* -d; 0 = until Ctrl-C or the target exits */
	double interval_s;	/* -i: interval summaries every this many seconds; 0 = none */
	int json;		/* --json: NDJSON */
	const char *output;	/* -o FILE; NULL = stdout */
	int verbose;		/* -v count */
	uint32_t capture_bytes;	/* --capture-bytes: payload prefix per read */
	uint32_t capture_send_bytes; /* --capture-send-bytes: payload prefix per write */
	uint32_t ringbuf_bytes;	/* --ringbuf-mb * 2^20 */
	int no_sched;		/* --no-sched: no scheduler overlay */
	int cost;		/* --cost: BPF run-time statistics on (user/cmd/self_cost.h) */
	int nice;		/* --nice: of the draining thread (TTF_DEFAULT_NICE) */
	int drain_ms;		/* --drain-ms: drain interval while records come (TTF_DEFAULT_DRAIN_MS) */
	int no_hops;		/* --no-hops: no upstream discovery (user/model/hops/gateway.h) */
	int no_tls;		/* --no-tls: no TLS library uprobes (user/probe/tls_probe.h) */
	int net_source;		/* --net-source: enum net_source (user/probe/net_probe.h) */
	int no_profile;		/* --no-profile: no automatic engine profile */
	const char *profiles[4];	/* --profile NAME|PATH (repeatable) */
	int n_profiles;
	const char *probes[16];	/* --probe PATH:SYMBOL=ROLE[:ARGSPEC] (repeatable) */
	int n_probes;
	const char *slo_spec;	/* --slo SPEC (user/model/slo.h), checked at parse time; NULL none */
	const char *metrics;	/* --metrics [ADDR:]PORT: Prometheus endpoint (user/export/prom/prom.h) */
	struct prom_buckets buckets;	/* --buckets NAME=B1,B2,... (repeatable); n 0: defaults */
	int n_buckets_opts;	/* how many --buckets were given */
	const char *record;	/* --record FILE: raw events for `ttftrace replay` (user/export/record/record.h) */
	const char *otlp_url;	/* --otlp URL: OTLP/HTTP endpoint (user/export/otlp/otlp_config.h) */
	const char *perfetto;	/* --perfetto FILE: trace-event JSON timeline (user/export/perfetto/perfetto.h) */
	int perfetto_sched;	/* --perfetto-sched served|all|none: enum perfetto_sched */
	int perfetto_sched_given;
	const char *sysfs_root;	/* --sysfs-root DIR: PCIe links read under DIR, not /sys */
	int gpu_attach;		/* --gpu-attach: load the CUPTI collector into the targets first */
	const char *grpc_profile; /* --grpc-profile FILE: gRPC token locations (user/proto/http2/grpc.h) */
};

/* A subcommand: `ttftrace NAME ARGS...` runs main(argc - 1, argv + 1). */
struct ttf_subcmd {
	const char *name;
	int (*main)(int argc, char **argv);	/* returns a TTF_EXIT_* code */
	const char *args;			/* synopsis after the name, for --help */
	const char *summary;			/* one line, for --help */
};

/*
 * Parse argv into *o. cmds[n] are the subcommands (user/main.c), listed in
 * --help and named when an unknown word comes first. Exits with
 * TTF_EXIT_USAGE and a message on stderr for bad input (argp convention), and
 * 0 for --help/--version.
 */
void cli__parse(int argc, char **argv, struct ttf_opts *o, const struct ttf_subcmd *cmds,
		int n);

#endif /* TTFTRACE_CLI_H */
