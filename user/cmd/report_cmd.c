// SPDX-License-Identifier: GPL-2.0-only
/* `ttftrace report RUN.ndjson -o report.html`: the command line around html_report.c. */
#include <argp.h>
#include <errno.h>
#include <fcntl.h>
#include <libgen.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/stat.h>
#include "user/cmd/subcmd.h"
#include "user/export/html/html_report.h"
#include "user/lib/exit.h"
#include "user/lib/log.h"

static const char report_doc[] =
"Turn the NDJSON of `ttftrace --json -o RUN.ndjson` into one self-contained HTML page "
"(inline CSS, JS, SVG and canvas; nothing is loaded at view time): a TTFT waterfall split "
"into stages (past 60 requests the slowest one row each, the rest in bands; linear or log "
"axis, the tail clipped), CDFs of TTFT and TPOT, TTFT over arrival time, percentile tables "
"(TTFT, TPOT, ITL, E2E, each stage) and tables by route and model over successful requests "
"only, the failed ones listed apart, an ITL timeline with outliers and their causes, "
"stability grades and SLO verdicts. Needs no root."
"\v"
"EXAMPLES:\n"
SUBCMD_EXAMPLE("ttftrace --port 8080 --json -o run.ndjson -d 60",
	       "A run, as root")
SUBCMD_EXAMPLE("ttftrace report run.ndjson",
	       "Its page: report.html")
SUBCMD_EXAMPLE("ttftrace report run.ndjson -o run.html --slo ttft_p95=500ms,itl_p99=50ms",
	       "The page, with SLO verdicts (exit 10 when one is not met)")
"\n"
"EXIT STATUS:\n"
"  0   ok\n"
"  2   bad command line or --slo SPEC\n"
"  8   the page cannot be written\n"
"  9   internal error\n"
"  10  the page was written but an SLO is not met\n"
"  11  the input is missing, unreadable or not ttftrace NDJSON";

enum { OPT_SLO = 0x100, OPT_TITLE };

static const struct argp_option report_options[] = {
	{ "output", 'o', "FILE", 0, "The page (default: report.html); written whole or not at all", 0 },
	{ "slo", OPT_SLO, "SPEC", 0, "SLOs to judge, e.g. ttft_p95=2s,tpot_p95=100ms (METRIC "
	  "ttft|tpot|itl|e2e|ttfv, PCT p50|p90|p95|p99, LIMIT with ns|us|ms|s)", 0 },
	{ "title", OPT_TITLE, "TEXT", 0, "Page title (default: ttftrace report)", 0 },
	{},
};

struct report_args {
	const char *in_path;
	const char *out_path;
	const char *slo_spec;
	const char *title;
};

static error_t report_parse_opt(int key, char *arg, struct argp_state *state)
{
	struct report_args *a = state->input;

	switch (key) {
	case 'o':
		a->out_path = arg;
		break;
	case OPT_SLO:
		a->slo_spec = arg;
		break;
	case OPT_TITLE:
		a->title = arg;
		break;
	case ARGP_KEY_ARG:
		if (a->in_path)
			return subcmd__bad("give exactly one RUN.ndjson ('%s' and '%s')",
					   a->in_path, arg);
		a->in_path = arg;
		break;
	case ARGP_KEY_END:
		if (!a->in_path)
			return subcmd__bad("give the NDJSON of a run (ttftrace --json -o RUN.ndjson)");
		break;
	default:
		return ARGP_ERR_UNKNOWN;
	}
	return 0;
}

/* RUN.ndjson to read (not a directory), or NULL after saying why. */
static FILE *open_input(const char *path)
{
	FILE *in = fopen(path, "r");
	struct stat st;

	if (in && !fstat(fileno(in), &st) && S_ISDIR(st.st_mode)) {
		fclose(in);
		in = NULL;
		errno = EISDIR;
	}
	if (!in)
		ttf_error("record a run with: ttftrace --port PORT --json -o RUN.ndjson",
			  "cannot read %s: %s", path, strerror(errno));
	return in;
}

/* What html_report__render returned (not 0), said on stderr; returns the exit code. */
static int render_failed(int ret, const char *in_path, const char *out_path, const char *err)
{
	if (ret == -EINVAL) {
		ttf_error("give the NDJSON of `ttftrace --json -o RUN.ndjson` (not the text "
			  "output)", "%s: %s", in_path, err);
		return TTF_EXIT_BAD_INPUT;
	}
	ttf_error("check free space and permissions", "cannot write %s: %s",
		  out_path, err[0] ? err : strerror(-ret));
	return TTF_EXIT_OUTPUT;
}

/*
 * The page of in (read from in_path) into out_path: a temporary file renamed
 * over it, or the file itself when it is a device or FIFO (a rename would
 * replace the node). Returns an exit code, the error said on stderr.
 */
static int render_to(const char *in_path, FILE *in, const char *out_path,
		     struct html_report_opts *ro, struct html_report_result *res)
{
	char err[256] = "", *tmp = NULL, *base = strdup(in_path);
	int fd, ret, code = TTF_EXIT_OK, in_place;
	struct stat st;
	FILE *out;

	in_place = !stat(out_path, &st) && !S_ISREG(st.st_mode);
	if (!base || (!in_place && asprintf(&tmp, "%s.tmp.XXXXXX", out_path) < 0)) {
		free(base);
		ttf_error(NULL, "out of memory");
		return TTF_EXIT_INTERNAL;
	}
	ro->source = basename(base);
	fd = in_place ? open(out_path, O_WRONLY | O_CLOEXEC) : mkostemp(tmp, O_CLOEXEC);
	if (fd < 0 || !(out = fdopen(fd, "w"))) {
		ttf_error("check that the directory exists and is writable", "cannot write %s: %s",
			  out_path, strerror(errno));
		if (fd >= 0) {
			close(fd);
			if (tmp)
				unlink(tmp);
		}
		code = TTF_EXIT_OUTPUT;
		goto out;
	}
	if (!in_place)
		fchmod(fd, 0644);
	ret = html_report__render(in, out, ro, res, err, sizeof(err));
	if (fclose(out) && !ret)
		ret = -EIO;
	if (!ret && tmp && rename(tmp, out_path))
		ret = -EIO;
	if (ret) {
		if (tmp)
			unlink(tmp);
		code = render_failed(ret, in_path, out_path, err);
	}
out:
	free(tmp);
	free(base);
	return code;
}

int report_main(int argc, char **argv)
{
	static const struct argp argp = { report_options, report_parse_opt, "RUN.ndjson",
					  report_doc, NULL, NULL, NULL };
	struct report_args a = { .out_path = "report.html" };
	struct html_report_opts ro = { 0 };
	struct html_report_result res;
	struct slo_set slo = { 0 };
	char err[256];
	FILE *in;
	int code;

	code = subcmd__parse(&argp, "ttftrace report", argc, argv, &a);
	if (code)
		return code < 0 ? TTF_EXIT_OK : code;
	ro.title = a.title;
	if (a.slo_spec && slo__parse(a.slo_spec, &slo, err, sizeof(err))) {
		ttf_error(SLO_HINT, "invalid --slo: %s", err);
		return TTF_EXIT_USAGE;
	}
	ro.slo = &slo;
	if (subcmd__same_file(a.in_path, a.out_path)) {
		ttf_error("give -o another file", "-o %s is the input itself", a.out_path);
		return TTF_EXIT_USAGE;
	}
	in = open_input(a.in_path);
	if (!in)
		return TTF_EXIT_BAD_INPUT;
	code = render_to(a.in_path, in, a.out_path, &ro, &res);
	fclose(in);
	if (code)
		return code;
	fprintf(stderr, "Wrote %s: %u request%s%s%s.\n", a.out_path, res.requests,
		res.requests == 1 ? "" : "s",
		res.have_summary ? "" : ", no summary object (interrupted run?)",
		res.bad_lines ? ", a truncated last line skipped" : "");
	if (slo.n) {
		slo__print(stderr, "report", &slo, &res.slo);
		if (res.slo.n_failed)
			code = TTF_EXIT_SLO;
	}
	return code;
}
