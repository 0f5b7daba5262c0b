// SPDX-License-Identifier: GPL-2.0-only
#include <argp.h>
#include <errno.h>
#include <limits.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/utsname.h>
#include <bpf/libbpf.h>
#include "bpf/net.h"
#include "user/cmd/cli.h"
#include "user/cmd/gpu_attach.h"
#include "user/lib/version.h"
#include "user/export/perfetto/perfetto.h"
#include "user/export/prom/prom.h"
#include "user/model/slo.h"
#include "user/cmd/subcmd.h"
#include "user/probe/engine_setup.h"
#include "user/probe/net_probe.h"

const char *argp_program_version = "ttftrace " TTF_VERSION;
const char *argp_program_bug_address = "the project's issue tracker";

/* The subcommands (user/main.c's table), for --help and an unknown first word. */
static const struct ttf_subcmd *subcmds;
static int n_subcmds;

/* The COMMANDS list at the end of this text is made from subcmds (help_filter). */
static const char doc[] =
"Trace TTFT, TPOT and ITL of an LLM inference server's HTTP/SSE requests, "
"from the kernel, without changing or restarting the server.\n"
"\n"
"USAGE: ttftrace [-p PID | --comm NAME | --port PORT | -c CMD] [OPTIONS]\n"
"       ttftrace COMMAND [ARGS]   (each COMMAND has --help, with examples)\n"
"\n"
"COMMANDS:"
"\v"
"EXAMPLES:\n"
SUBCMD_EXAMPLE("ttftrace --port 8080",
	       "Trace the server listening on port 8080")
SUBCMD_EXAMPLE("ttftrace -p 1234 -d 60",
	       "Trace PID 1234 and its children for 60 s")
SUBCMD_EXAMPLE("ttftrace --comm llama-server",
	       "Trace every process named llama-server")
SUBCMD_EXAMPLE("ttftrace -c './server --port 8080'",
	       "Start a server, trace it until it exits")
SUBCMD_EXAMPLE("ttftrace --port 8080 --json -o run.ndjson",
	       "One JSON object per request, then the summary")
SUBCMD_EXAMPLE("ttftrace --port 8080 -i 10",
	       "A summary of the last 10 s every 10 s (bcc's interval), then the run's")
SUBCMD_EXAMPLE("ttftrace --port 8080 --metrics 9464",
	       "Serve Prometheus metrics on 127.0.0.1:9464/metrics")
SUBCMD_EXAMPLE("ttftrace -p 1234 --probe ./engine:engine_step=step:reg:1",
	       "Also time the engine's steps with a uprobe")
"\n"
"EXIT STATUS: (one table for all commands: README.md \"Exit codes\")\n"
"  0   ok (also: -c CMD ended, -d ended, Ctrl-C)\n"
"  2   bad command line (or a bad OTEL_* exporter variable)\n"
"  3   missing privileges (CAP_BPF, CAP_PERFMON)\n"
"  4   the kernel lacks BTF or a tracepoint\n"
"  5   no such process (or -p names a kernel thread), or nothing matches\n"
"      --comm/--port\n"
"  6   nothing attached\n"
"  7   target gone (the summary is printed first)\n"
"  8   output cannot be written\n"
"  9   internal error\n"
"  10  an --slo not met (after the summary)\n"
"  14  --gpu-attach refused (ptrace not allowed, collector loaded already, ...)";

/* Appends "  NAME  ARGS  SUMMARY" per subcommand to the text before \v. */
/* argp's state->next when it met an option it does not know or one missing its value */
static int error_next;

static char *help_filter(int key, const char *text, void *input)
{
	char *out = NULL;
	size_t len = 0;
	FILE *f;

	(void)input;
	if (key != ARGP_KEY_HELP_PRE_DOC || !text || !(f = open_memstream(&out, &len)))
		return (char *)text;
	fputs(text, f);
	for (int i = 0; i < n_subcmds; i++)
		fprintf(f, "\n  %-10s %-27s %s", subcmds[i].name, subcmds[i].args,
			subcmds[i].summary);
	if (fclose(f))
		return (char *)text;
	return out;
}

/* An unknown first word: name the commands. */
static void unknown_word(const char *arg)
{
	char names[128] = "";
	size_t len = 0;

	for (int i = 0; i < n_subcmds && len < sizeof(names); i++)
		len += snprintf(names + len, sizeof(names) - len, "%s%s", i ? ", " : "",
				subcmds[i].name);
	subcmd__usage_fail("ttftrace", "unexpected argument '%s' (the commands are: %s)", arg,
			   names);
}

enum { OPT_COMM = 0x100, OPT_PORT, OPT_JSON, OPT_CAPTURE, OPT_RINGBUF, OPT_NO_SCHED,
       OPT_PROFILE, OPT_PROBE, OPT_NO_PROFILE, OPT_CAPTURE_SEND, OPT_SLO,
       OPT_METRICS, OPT_OTLP, OPT_RECORD, OPT_PERFETTO, OPT_SYSFS_ROOT, OPT_USAGE,
       OPT_BUCKETS, OPT_GPU_ATTACH, OPT_NET_SOURCE, OPT_GRPC_PROFILE, OPT_NO_HOPS,
       OPT_PERFETTO_SCHED, OPT_NO_TLS, OPT_NICE, OPT_DRAIN, OPT_COST };

static const struct argp_option options[] = {
	{ NULL, 0, NULL, 0, "Target (one of):", 1 },
	{ "pid", 'p', "PID", 0, "Trace this process, its threads and the children it starts later", 1 },
	{ "comm", OPT_COMM, "NAME", 0, "Trace processes with this command name (now and later)", 1 },
	{ "port", OPT_PORT, "PORT", 0, "Trace the process listening on this TCP port, and the next one after it exits", 1 },
	{ "cmd", 'c', "CMD", 0, "Start CMD with /bin/sh -c and trace it until it exits", 1 },
	{ NULL, 0, NULL, 0, "Output:", 2 },
	{ "duration", 'd', "SECONDS", 0, "Stop after this many seconds", 2 },
	{ "interval", 'i', "SECONDS", 0,
	  "Every SECONDS, a summary line of the requests finished in those seconds "
	  "(with --json an object of type interval)", 2 },
	{ "json", OPT_JSON, NULL, 0, "NDJSON: one object per request, then a summary object", 2 },
	{ "output", 'o', "FILE", 0, "Write requests and summary to FILE instead of stdout", 2 },
	{ "verbose", 'v', NULL, 0, "More diagnostics (repeat: -vv debug, -vvv libbpf debug)", 2 },
	{ "slo", OPT_SLO, "SPEC", 0,
	  "Check e.g. ttft_p95=2s,tpot_p95=100ms on the summary; exit 10 if not met", 2 },
	{ "cost", OPT_COST, NULL, 0,
	  "Also count the BPF programs' run time in the summary's cost of tracing (turns the "
	  "kernel's BPF run-time statistics on for the run: two clock reads in every BPF "
	  "program run on the machine)", 2 },
	{ NULL, 0, NULL, 0, "Engine (uprobes):", 3 },
	{ "profile", OPT_PROFILE, "NAME|FILE", 0,
	  "Engine profile (profiles/NAME.ini); default: llamacpp where libllama is mapped", 3 },
	{ "probe", OPT_PROBE, "SPEC", 0,
	  "PATH:SYMBOL=ROLE[:ARGSPEC], ROLE step|tokenize|sample|sync|detokenize; repeatable", 3 },
	{ "no-profile", OPT_NO_PROFILE, NULL, 0, "No automatic engine profile", 3 },
	{ "gpu-attach", OPT_GPU_ATTACH, NULL, 0,
	  "First load the CUPTI collector into the running targets with ptrace (see "
	  "`ttftrace gpu-attach --help`)", 3 },
	{ "grpc-profile", OPT_GRPC_PROFILE, "FILE", 0,
	  "Where gRPC response messages hold their tokens (lines: /pkg.Service/Method FIELD[.FIELD][#]); "
	  "without it gRPC messages count as chunks", 3 },
	{ NULL, 0, NULL, 0, "Capture:", 4 },
	{ "capture-bytes", OPT_CAPTURE, "N", 0,
	  "Payload prefix captured per read (default 1024, max 8192)", 4 },
	{ "capture-send-bytes", OPT_CAPTURE_SEND, "N", 0,
	  "Payload prefix captured per write (default 8192, max 8192)", 4 },
	{ "ringbuf-mb", OPT_RINGBUF, "MB", 0, "Ring buffer size in MiB, a power of two (default 16)", 4 },
	{ "no-sched", OPT_NO_SCHED, NULL, 0, "No scheduler overlay (sched_switch/wakeup probes)", 4 },
	{ "nice", OPT_NICE, "N", 0,
	  "Nice value of the thread that drains the rings, -20..19 (default -10): on a host whose "
	  "CPUs are saturated a reader at the default share falls behind and records are lost", 4 },
	{ "drain-ms", OPT_DRAIN, "MS", 0,
	  "How often the rings are read while records come, 10..10000 (default 1000): a request's "
	  "line comes out within about this long of its end; each read wakes the tracer", 4 },
	{ "no-hops", OPT_NO_HOPS, NULL, 0,
	  "Do not trace the local upstreams a traced gateway calls (one process's view)", 4 },
	{ "no-tls", OPT_NO_TLS, NULL, 0,
	  "No TLS library uprobes (OpenSSL 3, Go crypto/tls): TLS connections stay opaque", 4 },
	{ "net-source", OPT_NET_SOURCE, "auto|sock|syscall", 0,
	  "Where reads and writes are taken: sock = socket tracepoints (Linux 6.3+), "
	  "syscall = raw syscall enter/exit (5.8+); auto (default) = sock when the kernel "
	  "has them. Printed at start-up", 4 },
	{ NULL, 0, NULL, 0, "Export:", 5 },
	{ "metrics", OPT_METRICS, "[ADDR:]PORT", 0,
	  "Serve Prometheus /metrics here (bare PORT: 127.0.0.1; 0.0.0.0:PORT: all IPv4)", 5 },
	{ "buckets", OPT_BUCKETS, "NAME=B1,B2,...", 0,
	  "--metrics histogram buckets in seconds, NAME ttft|stage|tokenize|tpot|itl|e2e; "
	  "repeatable", 5 },
	{ "otlp", OPT_OTLP, "URL", 0,
	  "OTLP/HTTP export: a trace per request and GenAI histograms, to a base URL "
	  "(http://127.0.0.1:4318) or a traces URL (.../v1/traces); the OTEL_EXPORTER_OTLP_* "
	  "variables turn it on too; OTEL_TRACES_SAMPLER[_ARG] choose the traces sent", 5 },
	{ "perfetto", OPT_PERFETTO, "FILE", 0,
	  "Timeline for ui.perfetto.dev / chrome://tracing (trace-event JSON; gzip when FILE ends in .gz)", 5 },
	{ "perfetto-sched", OPT_PERFETTO_SCHED, "MODE", 0,
	  "Scheduler slices in --perfetto: served (default: the threads that served a request, "
	  "while they did), all (every traced thread) or none", 5 },
	{ "record", OPT_RECORD, "FILE", 0,
	  "Record the raw events (gzip, mode 0600: holds payload bytes) for `ttftrace replay`", 5 },
	{ "sysfs-root", OPT_SYSFS_ROOT, "DIR", 0,
	  "Read PCIe links (copy GB/s, /metrics gauges) under DIR instead of /sys", 5 },
	/* argp's own --help, --usage and --version are off (ARGP_NO_HELP): these print to stdout */
	{ "help", '?', NULL, 0, "Give this help list", -1 },
	{ NULL, 'h', NULL, OPTION_HIDDEN, "Show this help", -1 },
	{ "usage", OPT_USAGE, NULL, 0, "Give a short usage message", -1 },
	{ "version", 'V', NULL, 0, "Print program version", -1 },
	{},
};

static const struct argp *cli_argp;

/* Two outputs in one file would overwrite each other: refuse before anything is written. */
static void check_distinct_outputs(const struct ttf_opts *o)
{
	const struct { const char *opt, *path; } outs[] = {
		{ "-o", o->output }, { "--record", o->record }, { "--perfetto", o->perfetto },
	};

	for (int i = 0; i < 3; i++)
		for (int j = i + 1; j < 3; j++)
			if (subcmd__same_output(outs[i].path, outs[j].path))
				subcmd__usage_fail("ttftrace", "%s and %s name the same file '%s'",
						   outs[i].opt, outs[j].opt, outs[i].path);
}

static long parse_long(const char *arg, long lo, long hi, struct argp_state *state,
		       const char *what)
{
	char *end;
	long v;

	errno = 0;
	v = strtol(arg, &end, 10);
	if (errno || end == arg || *end || v < lo || v > hi)
		subcmd__usage_fail("ttftrace", "invalid %s '%s' (expected %ld..%ld)", what, arg, lo, hi);
	return v;
}

static void set_target(struct argp_state *state, struct ttf_opts *o, enum ttf_target_kind k)
{
	if (o->target != TTF_TARGET_NONE && o->target != k)
		subcmd__usage_fail("ttftrace", "give only one of -p, --comm, --port, -c");
	o->target = k;
}

/*
 * The options of each --help group: each parser takes its group's keys and
 * returns ARGP_ERR_UNKNOWN for the others. A bad value ends the program
 * (subcmd__usage_fail).
 */
static error_t parse_target(int key, char *arg, struct argp_state *state)
{
	struct ttf_opts *o = state->input;

	switch (key) {
	case 'p':
		set_target(state, o, TTF_TARGET_PID);
		o->pid = parse_long(arg, 1, INT_MAX, state, "PID");
		break;
	case OPT_COMM:
		set_target(state, o, TTF_TARGET_COMM);
		if (!*arg || strlen(arg) >= sizeof(o->comm))
			subcmd__usage_fail("ttftrace", "--comm NAME must have 1..15 characters (the kernel's comm)");
		strcpy(o->comm, arg);
		break;
	case OPT_PORT:
		set_target(state, o, TTF_TARGET_PORT);
		o->port = parse_long(arg, 1, 65535, state, "port");
		break;
	case 'c':
		set_target(state, o, TTF_TARGET_CMD);
		if (!*arg)
			subcmd__usage_fail("ttftrace", "-c needs a command");
		o->cmd = arg;
		break;
	default:
		return ARGP_ERR_UNKNOWN;
	}
	return 0;
}

static error_t parse_output(int key, char *arg, struct argp_state *state)
{
	struct ttf_opts *o = state->input;
	char *end;

	switch (key) {
	case 'd':
		errno = 0;
		o->duration_s = strtod(arg, &end);
		/* !(x > 0): NaN fails every comparison */
		if (errno || end == arg || *end || !(o->duration_s > 0) || o->duration_s > 1e7)
			subcmd__usage_fail("ttftrace",
					   "invalid duration '%s' (seconds, over 0 and at most 1e7)",
					   arg);
		break;
	case 'i':
		errno = 0;
		o->interval_s = strtod(arg, &end);
		if (errno || end == arg || *end || !(o->interval_s >= 0.01) || o->interval_s > 1e6)
			subcmd__usage_fail("ttftrace", "invalid interval '%s' (seconds, 0.01 or more)",
					   arg);
		break;
	case OPT_JSON:
		o->json = 1;
		break;
	case 'o':
		o->output = arg;
		break;
	case 'v':
		o->verbose++;
		break;
	case OPT_SLO: {
		struct slo_set set;
		char err[160];

		if (slo__parse(arg, &set, err, sizeof(err))) {
			fprintf(stderr, "Error: --slo: %s\nHINT: %s\n", err, SLO_HINT);
			exit(TTF_EXIT_USAGE);
		}
		o->slo_spec = arg;
		break;
	}
	default:
		return ARGP_ERR_UNKNOWN;
	}
	return 0;
}

static error_t parse_engine(int key, char *arg, struct argp_state *state)
{
	struct ttf_opts *o = state->input;

	switch (key) {
	case OPT_PROFILE:
		if (o->n_profiles == 4)
			subcmd__usage_fail("ttftrace", "at most 4 --profile");
		o->profiles[o->n_profiles++] = arg;
		break;
	case OPT_PROBE:
		if (o->n_probes == 16)
			subcmd__usage_fail("ttftrace", "at most 16 --probe");
		o->probes[o->n_probes++] = arg;
		break;
	case OPT_NO_PROFILE:
		o->no_profile = 1;
		break;
	case OPT_GPU_ATTACH:
		o->gpu_attach = 1;
		break;
	case OPT_GRPC_PROFILE:
		o->grpc_profile = arg;
		break;
	default:
		return ARGP_ERR_UNKNOWN;
	}
	return 0;
}

static error_t parse_capture(int key, char *arg, struct argp_state *state)
{
	struct ttf_opts *o = state->input;
	long mb;

	switch (key) {
	case OPT_CAPTURE:
		o->capture_bytes = parse_long(arg, 64, TTF_CAPTURE_MAX_BYTES, state, "capture size");
		break;
	case OPT_CAPTURE_SEND:
		o->capture_send_bytes = parse_long(arg, 64, TTF_CAPTURE_MAX_BYTES, state,
						   "capture size");
		break;
	case OPT_RINGBUF:
		mb = parse_long(arg, 1, 1024, state, "ring buffer size");
		if (mb & (mb - 1))
			subcmd__usage_fail("ttftrace", "--ringbuf-mb must be a power of two");
		o->ringbuf_bytes = (uint32_t)mb << 20;
		break;
	case OPT_NO_SCHED:
		o->no_sched = 1;
		break;
	case OPT_COST:
		o->cost = 1;
		break;
	case OPT_NICE:
		o->nice = (int)parse_long(arg, -20, 19, state, "nice value");
		break;
	case OPT_DRAIN:
		o->drain_ms = (int)parse_long(arg, 10, 10000, state, "drain interval");
		break;
	case OPT_NO_HOPS:
		o->no_hops = 1;
		break;
	case OPT_NO_TLS:
		o->no_tls = 1;
		break;
	case OPT_NET_SOURCE: {
		enum net_source ns;

		if (net_source__parse(arg, &ns))
			subcmd__usage_fail("ttftrace", "--net-source must be auto, sock or syscall, "
					   "not '%s'", arg);
		o->net_source = ns;
		break;
	}
	default:
		return ARGP_ERR_UNKNOWN;
	}
	return 0;
}

static error_t parse_export(int key, char *arg, struct argp_state *state)
{
	struct ttf_opts *o = state->input;

	switch (key) {
	case OPT_OTLP:
		if (strncmp(arg, "http://", 7) && strncmp(arg, "https://", 8))
			subcmd__usage_fail("ttftrace", "invalid --otlp '%s' (an http:// or https:// URL)", arg);
		o->otlp_url = arg;
		break;
	case OPT_RECORD:
		if (!*arg)
			subcmd__usage_fail("ttftrace", "--record needs a file name");
		o->record = arg;
		break;
	case OPT_PERFETTO:
		o->perfetto = arg;
		break;
	case OPT_PERFETTO_SCHED: {
		enum perfetto_sched ps;

		if (perfetto_sched__parse(arg, &ps))
			subcmd__usage_fail("ttftrace", "--perfetto-sched must be served, all or none, "
					   "not '%s'", arg);
		o->perfetto_sched = ps;
		o->perfetto_sched_given = 1;
		break;
	}
	case OPT_METRICS: {
		struct sockaddr_storage sa;
		socklen_t sa_len;

		if (prom__parse_listen(arg, &sa, &sa_len))
			subcmd__usage_fail("ttftrace", "invalid --metrics '%s' (PORT, IPv4:PORT or [IPv6]:PORT)", arg);
		o->metrics = arg;
		break;
	}
	case OPT_BUCKETS: {
		char err[160];

		if (prom_buckets__parse(&o->buckets, arg, err, sizeof(err))) {
			fprintf(stderr, "Error: --buckets: %s\nHINT: %s\n", err, PROM_BUCKETS_HINT);
			exit(TTF_EXIT_USAGE);
		}
		o->n_buckets_opts++;
		break;
	}
	case OPT_SYSFS_ROOT:
		if (!*arg)
			subcmd__usage_fail("ttftrace", "--sysfs-root needs a directory");
		o->sysfs_root = arg;
		break;
	default:
		return ARGP_ERR_UNKNOWN;
	}
	return 0;
}

/* --help, --usage and --version: print on stdout and exit. */
static error_t parse_info(int key, char *arg, struct argp_state *state)
{
	struct utsname u;

	switch (key) {
	case 'h':
	case '?':
		subcmd__help(cli_argp, ARGP_HELP_STD_HELP & ~ARGP_HELP_EXIT_OK, "ttftrace");
		exit(TTF_EXIT_OK);
	case OPT_USAGE:
		subcmd__help(cli_argp, ARGP_HELP_USAGE, "ttftrace");
		exit(TTF_EXIT_OK);
	case 'V':
		printf("%s\ncommit %s\nlibbpf %s\nkernel %s\n", argp_program_version,
		       TTF_GIT_COMMIT, libbpf_version_string(), uname(&u) ? "?" : u.release);
		gpu_attach__build_line(stdout);
		exit(TTF_EXIT_OK);
	}
	return ARGP_ERR_UNKNOWN;
}

/* --profile and --probe read now: a bad one is a bad command line, whatever the privileges. */
static void check_engine_args(const struct ttf_opts *o)
{
	struct engine_setup_opts eo = { .n_profiles = o->n_profiles, .n_probes = o->n_probes };

	for (int i = 0; i < o->n_profiles; i++)
		eo.profiles[i] = o->profiles[i];
	for (int i = 0; i < o->n_probes; i++)
		eo.probes[i] = o->probes[i];
	if (engine_setup__check_args(&eo))
		exit(TTF_EXIT_USAGE);
}

/* path is a directory (errno set when it cannot be read at all). */
static bool dir_exists(const char *path)
{
	struct stat st;

	errno = 0;
	return !stat(path, &st) && S_ISDIR(st.st_mode);
}

/* Options that only make sense with others, once all are read. */
static void check_combinations(const struct ttf_opts *o)
{
	if (o->target == TTF_TARGET_NONE)
		subcmd__usage_fail("ttftrace", "give a target: -p PID, --comm NAME, --port PORT or -c CMD");
	if (o->gpu_attach && o->target == TTF_TARGET_CMD)
		subcmd__usage_fail("ttftrace", "--gpu-attach is for running processes: "
				   "start -c CMD with CUDA_INJECTION64_PATH instead");
	if (o->n_buckets_opts && !o->metrics)
		subcmd__usage_fail("ttftrace", "--buckets is for --metrics: give --metrics [ADDR:]PORT too");
	if (o->perfetto_sched_given && !o->perfetto)
		subcmd__usage_fail("ttftrace", "--perfetto-sched is for --perfetto: give --perfetto FILE too");
	if (o->no_profile && o->n_profiles)
		subcmd__usage_fail("ttftrace", "--profile and --no-profile contradict: give one");
	if (o->no_sched && o->perfetto_sched_given && o->perfetto_sched != PERFETTO_SCHED_NONE)
		subcmd__usage_fail("ttftrace", "--perfetto-sched %s needs the scheduler overlay, "
				   "which --no-sched turns off: give one",
				   o->perfetto_sched == PERFETTO_SCHED_ALL ? "all" : "served");
	if (o->sysfs_root && !dir_exists(o->sysfs_root))
		subcmd__usage_fail("ttftrace", "--sysfs-root %s: %s", o->sysfs_root,
				   errno ? strerror(errno) : "Not a directory");
	check_distinct_outputs(o);
	check_engine_args(o);
}

static error_t parse_opt(int key, char *arg, struct argp_state *state)
{
	static error_t (*const groups[])(int, char *, struct argp_state *) = {
		parse_target, parse_output, parse_engine, parse_capture, parse_export, parse_info,
	};

	for (size_t i = 0; i < sizeof(groups) / sizeof(groups[0]); i++) {
		error_t err = groups[i](key, arg, state);

		if (err != ARGP_ERR_UNKNOWN)
			return err;
	}
	switch (key) {
	case ARGP_KEY_ERROR:
		error_next = state->next;
		break;
	case ARGP_KEY_ARG:
		subcmd__usage_fail("ttftrace", "unexpected argument '%s'", arg);
		break;
	case ARGP_KEY_END:
		check_combinations(state->input);
		break;
	default:
		return ARGP_ERR_UNKNOWN;
	}
	return 0;
}

/* arg is "--NAME=VALUE" for a NAME that takes no value (--json=1): that option, else NULL. */
static const struct argp_option *flag_given_value(const char *arg)
{
	const char *eq = strchr(arg, '=');

	if (strncmp(arg, "--", 2) || !eq)
		return NULL;
	for (const struct argp_option *op = options; op->name || op->doc; op++)
		if (op->name && !op->arg && strlen(op->name) == (size_t)(eq - arg - 2) &&
		    !strncmp(op->name, arg + 2, (size_t)(eq - arg - 2)))
			return op;
	return NULL;
}

void cli__parse(int argc, char **argv, struct ttf_opts *o, const struct ttf_subcmd *cmds,
		int n)
{
	static const struct argp argp = { options, parse_opt, NULL, doc, NULL, help_filter, NULL };

	subcmds = cmds;
	n_subcmds = n;
	/* `ttftrace help`, `ttftrace pcei`: a word where a command would be (main
	 * dispatched the exact names; the tracer takes no argument that is not an option) */
	if (argc > 1 && argv[1][0] != '-')
		unknown_word(argv[1]);
	memset(o, 0, sizeof(*o));
	o->capture_bytes = TTF_CAPTURE_DEFAULT_BYTES;
	o->capture_send_bytes = TTF_CAPTURE_SEND_DEFAULT_BYTES;
	o->ringbuf_bytes = 16u << 20;
	o->nice = TTF_DEFAULT_NICE;
	o->drain_ms = TTF_DEFAULT_DRAIN_MS;
	cli_argp = &argp;
	/* argp's own messages are off: its errors read "Error: ..." like ours */
	if (argp_parse(&argp, argc, argv, ARGP_NO_ERRS | ARGP_NO_HELP, NULL, o)) {
		const char *bad = error_next > 0 && error_next <= argc ? argv[error_next - 1] : "?";
		const struct argp_option *flag = flag_given_value(bad);

		if (flag)
			subcmd__usage_fail("ttftrace", "option '--%s' takes no value (in '%s')",
					   flag->name, bad);
		subcmd__usage_fail("ttftrace", "unknown or incomplete option '%s'", bad);
	}
}
