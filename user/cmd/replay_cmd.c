// SPDX-License-Identifier: GPL-2.0-only
/* `ttftrace replay FILE [--json] [-o OUT] [-v]`: command line of user/cmd/replay.h. */
#include <argp.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>
#include "user/lib/log.h"
#include "user/cmd/replay.h"
#include "user/export/perfetto/perfetto.h"
#include "user/cmd/subcmd.h"
#include "user/lib/exit.h"

struct replay_args {
	const char *file;
	const char *output;
	int json;
	int verbose;
	int quiet;
	const char *grpc_profile;
	const char *perfetto;
	int perfetto_sched;
	const char *metrics_out;
	const char *otlp_out;
};

enum { OPT_JSON = 0x100, OPT_GRPC_PROFILE, OPT_PERFETTO, OPT_PERFETTO_SCHED, OPT_METRICS_OUT,
       OPT_OTLP_OUT };

static const struct argp_option options[] = {
	{ "json", OPT_JSON, NULL, 0, "NDJSON, as `ttftrace --json`", 0 },
	{ "output", 'o', "FILE", 0, "Write requests and summary to FILE instead of stdout", 0 },
	{ "verbose", 'v', NULL, 0, "More fields and diagnostics", 0 },
	{ "quiet", 'q', NULL, 0, "No replay statistics on stderr", 0 },
	{ "grpc-profile", OPT_GRPC_PROFILE, "FILE", 0,
	  "Where gRPC messages hold their tokens, as `ttftrace --grpc-profile`", 0 },
	{ "perfetto", OPT_PERFETTO, "FILE", 0,
	  "The timeline too, as `ttftrace --perfetto` (gzip when FILE ends in .gz)", 0 },
	{ "perfetto-sched", OPT_PERFETTO_SCHED, "MODE", 0,
	  "Scheduler slices in it: served (default), all or none, as `ttftrace --perfetto-sched`", 0 },
	{ "metrics-out", OPT_METRICS_OUT, "FILE", 0,
	  "Prometheus metrics of the run, as a scrape of `ttftrace --metrics` at its end", 0 },
	{ "otlp-out", OPT_OTLP_OUT, "FILE", 0,
	  "The OTLP spans of the run, as `ttftrace --otlp` sends them, in one OTLP/JSON body "
	  "(protobuf when FILE ends in .pb)", 0 },
	{},
};

static const char doc[] =
"Run the user-side pipeline on a recording made with `ttftrace --record FILE`, at full "
"speed and without root; the output is that of the live trace."
"\v"
"EXAMPLES:\n"
SUBCMD_EXAMPLE("sudo ttftrace --port 8080 --record run.rec -d 60",
	       "Trace once, as root")
SUBCMD_EXAMPLE("ttftrace replay run.rec",
	       "The same output again, without root")
SUBCMD_EXAMPLE("ttftrace replay run.rec --json -o run.ndjson && ttftrace report run.ndjson",
	       "NDJSON, then its HTML page")
"\n"
"EXIT STATUS:\n"
"  0   ok (also a recording cut short by a killed tracer; a warning says so)\n"
"  2   bad command line\n"
"  8   the output cannot be written\n"
"  9   internal error\n"
"  11  FILE is not a readable recording or is corrupt (requests before the\n"
"      corruption are still written)";

static error_t parse_opt(int key, char *arg, struct argp_state *state)
{
	struct replay_args *a = state->input;

	switch (key) {
	case OPT_JSON:
		a->json = 1;
		break;
	case 'o':
		a->output = arg;
		break;
	case 'v':
		a->verbose++;
		break;
	case 'q':
		a->quiet = 1;
		break;
	case OPT_GRPC_PROFILE:
		a->grpc_profile = arg;
		break;
	case OPT_PERFETTO:
		a->perfetto = arg;
		break;
	case OPT_METRICS_OUT:
		a->metrics_out = arg;
		break;
	case OPT_OTLP_OUT:
		a->otlp_out = arg;
		break;
	case OPT_PERFETTO_SCHED: {
		enum perfetto_sched ps;

		if (perfetto_sched__parse(arg, &ps))
			return subcmd__bad("--perfetto-sched must be served, all or none, not '%s'",
					   arg);
		a->perfetto_sched = ps;
		break;
	}
	case ARGP_KEY_ARG:
		if (a->file)
			return subcmd__bad("one recording at a time ('%s')", arg);
		a->file = arg;
		break;
	case ARGP_KEY_END:
		if (!a->file)
			return subcmd__bad("give the recording: ttftrace replay FILE");
		break;
	default:
		return ARGP_ERR_UNKNOWN;
	}
	return 0;
}

static void print_stats(const struct replay_stats *st)
{
	uint64_t events = st->frames[REC_NET] + st->frames[REC_SCHED] + st->frames[REC_ENGINE];

	fprintf(stderr, "Replayed %llu events (net %llu, sched %llu, engine %llu) in %.3f s "
		"(%.3f s CPU): %.0f events/s, %.0f per CPU second\n", (unsigned long long)events,
		(unsigned long long)st->frames[REC_NET], (unsigned long long)st->frames[REC_SCHED],
		(unsigned long long)st->frames[REC_ENGINE], st->wall_s, st->cpu_s,
		st->wall_s > 0 ? events / st->wall_s : 0, st->cpu_s > 0 ? events / st->cpu_s : 0);
}

/* The exit code of replay__run's err, with the error said on stderr. */
static int replay_exit(int err, const struct replay_stats *st, const struct replay_args *a)
{
	if (st->open_exit)
		return st->open_exit;
	if (err && st->sink_failed)	/* said by the sink */
		return TTF_EXIT_OUTPUT;
	if (err && st->output_failed) {
		ttf_error("check free space and permissions", "writing %s: %s",
			  a->output ? a->output : "standard output", strerror(-err));
		return TTF_EXIT_OUTPUT;
	}
	if (err == -EBADMSG) {
		ttf_error("was it written by `ttftrace --record` of this version?",
			  "%s is not a ttftrace recording or is corrupt", a->file);
		return TTF_EXIT_BAD_INPUT;
	}
	if (err == -ENOENT || err == -EACCES || err == -EIO || err == -EISDIR) {
		ttf_error("give a file written by `ttftrace --record FILE`", "cannot read %s: %s",
			  a->file, strerror(-err));
		return TTF_EXIT_BAD_INPUT;
	}
	if (err == -ENOMEM) {
		ttf_error(NULL, "out of memory");
		return TTF_EXIT_INTERNAL;
	}
	if (err) {
		ttf_error("check free space and permissions", "writing output: %s", strerror(-err));
		return TTF_EXIT_OUTPUT;
	}
	return TTF_EXIT_OK;
}

/*
 * -o FILE into o->out (left stdout without -o), once no output names the
 * recording or another output. Returns 0 or an exit code (said).
 */
static int open_output(const struct replay_args *a, struct replay_opts *o)
{
	int fd;

	const struct { const char *opt, *path; } outs[] = {
		{ "-o", a->output }, { "--perfetto", a->perfetto },
		{ "--metrics-out", a->metrics_out }, { "--otlp-out", a->otlp_out },
	};
	int n = sizeof(outs) / sizeof(outs[0]);

	for (int i = 0; i < n; i++) {
		if (subcmd__same_file(a->file, outs[i].path)) {
			ttf_error("give it another file: it would be truncated before it is read",
				  "%s %s is the recording itself", outs[i].opt, outs[i].path);
			return TTF_EXIT_USAGE;
		}
		for (int j = i + 1; j < n; j++)
			if (subcmd__same_output(outs[i].path, outs[j].path)) {
				ttf_error("give each output its own file",
					  "%s and %s name the same file '%s'", outs[i].opt,
					  outs[j].opt, outs[i].path);
				return TTF_EXIT_USAGE;
			}
	}
	if (!a->output)
		return 0;
	fd = open(a->output, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
	if (fd < 0 || !(o->out = fdopen(fd, "w"))) {
		ttf_error("check that the directory exists and is writable",
			  "cannot write %s: %s", a->output, strerror(errno));
		if (fd >= 0)
			close(fd);
		return TTF_EXIT_OUTPUT;
	}
	return 0;
}

int replay_main(int argc, char **argv)
{
	static const struct argp argp = { options, parse_opt, "FILE", doc, NULL, NULL, NULL };
	struct replay_args a = { 0 };
	struct replay_opts o = { .out = stdout };
	struct replay_stats st;
	struct grpc_profile gp = {};
	int err, code = TTF_EXIT_OK;

	code = subcmd__parse(&argp, "ttftrace replay", argc, argv, &a);
	if (code)
		return code < 0 ? TTF_EXIT_OK : code;
	ttf_verbosity = a.verbose;
	if (a.grpc_profile) {
		int bad = 0, gerr = grpc_profile__load(a.grpc_profile, &gp, &bad);

		if (gerr) {
			if (gerr == -EINVAL)
				ttf_error("lines: /package.Service/Method FIELD[.FIELD...][#]",
					  "--grpc-profile %s: line %d does not parse", a.grpc_profile,
					  bad);
			else
				ttf_error("check the path of the token profile (docs/protocols.md)",
					  "--grpc-profile %s: %s", a.grpc_profile, strerror(-gerr));
			return TTF_EXIT_USAGE;
		}
		o.grpc_profile = &gp;
	}
	o.json = a.json;
	o.verbose = a.verbose;
	o.perfetto = a.perfetto;
	o.perfetto_sched = a.perfetto_sched;
	o.metrics_out = a.metrics_out;
	o.otlp_out = a.otlp_out;
	code = open_output(&a, &o);
	if (code) {
		grpc_profile__free(&gp);
		return code;
	}
	err = replay__run(a.file, &o, &st);
	code = replay_exit(err, &st, &a);
	if (st.truncated)
		ttf_warn("%s ends without its END frame (the tracer was killed?): replayed what it "
			 "holds", a.file);
	if (st.bad_frames)
		ttf_warn("%llu frames of a wrong size skipped", (unsigned long long)st.bad_frames);
	if (!a.quiet && (!code || st.frames[REC_NET] + st.frames[REC_SCHED] + st.frames[REC_ENGINE]))
		print_stats(&st);
	if (o.out != stdout && fclose(o.out) && code == TTF_EXIT_OK) {
		ttf_error(NULL, "closing %s: %s", a.output, strerror(errno));
		code = TTF_EXIT_OUTPUT;
	}
	grpc_profile__free(&gp);
	return code;
}
