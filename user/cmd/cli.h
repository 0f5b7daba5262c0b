/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * Command line of `ttftrace` (the tracer; subcommands parse their own).
 * Exit codes are the TTF_EXIT_* values, documented in README.md.
 */
#ifndef TTFTRACE_CLI_H
#define TTFTRACE_CLI_H

#include <stdint.h>
#include <sys/types.h>

enum ttf_exit {
	TTF_EXIT_OK = 0,
	TTF_EXIT_USAGE = 2,	  /* bad command line */
	TTF_EXIT_PRIV = 3,	  /* not root / missing CAP_BPF, CAP_PERFMON */
	TTF_EXIT_KERNEL = 4,	  /* no BTF, or a needed tracepoint is missing */
	TTF_EXIT_NO_TARGET = 5,	  /* no such PID, or nothing matches --comm/--port */
	TTF_EXIT_NOT_ATTACHED = 6, /* BPF programs failed to load or attach */
	TTF_EXIT_TARGET_GONE = 7, /* every traced process exited (-p; --port waits for the next) */
	TTF_EXIT_OUTPUT = 8,	  /* output file cannot be written */
	TTF_EXIT_INTERNAL = 9,	  /* anything else (out of memory, ...) */
	TTF_EXIT_SLO = 10,	  /* --slo not met (user/model/slo.h); the run itself succeeded */
	TTF_EXIT_BAD_RECORDING = 11, /* replay: not a recording, or corrupt (user/export/record.h) */
};

enum ttf_target_kind {
	TTF_TARGET_NONE = 0,
	TTF_TARGET_PID,
	TTF_TARGET_COMM,
	TTF_TARGET_PORT,
	TTF_TARGET_CMD,
};

struct ttf_opts {
	enum ttf_target_kind target;
	pid_t pid;		/* -p */
	char comm[16];		/* --comm */
	uint16_t port;		/* --port: the server's listening port */
	const char *cmd;	/* -c */
	double duration_s;	/* -d; 0 = until Ctrl-C or the target exits */
	int json;		/* --json: NDJSON */
	const char *output;	/* -o FILE; NULL = stdout */
	int verbose;		/* -v count */
	uint32_t capture_bytes;	/* --capture-bytes: payload prefix per read */
	uint32_t capture_send_bytes; /* --capture-send-bytes: payload prefix per write */
	uint32_t ringbuf_bytes;	/* --ringbuf-mb * 2^20 */
	int no_sched;		/* --no-sched: no scheduler overlay */
	int no_profile;		/* --no-profile: no automatic engine profile */
	const char *profiles[4];	/* --profile NAME|PATH (repeatable) */
	int n_profiles;
	const char *probes[16];	/* --probe PATH:SYMBOL=ROLE[:ARGSPEC] (repeatable) */
	int n_probes;
	const char *slo_spec;	/* --slo SPEC (user/model/slo.h), checked at parse time; NULL none */
	const char *metrics;	/* --metrics [ADDR:]PORT: Prometheus endpoint (user/export/prom.h) */
	const char *record;	/* --record FILE: raw events for `ttftrace replay` (user/export/record.h) */
	const char *otlp_url;	/* --otlp URL: OTLP/HTTP JSON traces endpoint (user/export/otlp.h) */
	const char *perfetto;	/* --perfetto FILE: trace-event JSON timeline (user/export/perfetto.h) */
	const char *sysfs_root;	/* --sysfs-root DIR: PCIe links read under DIR, not /sys */
};

/*
 * Parse argv into *o. Exits with TTF_EXIT_USAGE and a message on stderr for
 * bad input (argp convention), and 0 for --help/--version.
 */
void cli__parse(int argc, char **argv, struct ttf_opts *o);

#endif /* TTFTRACE_CLI_H */
