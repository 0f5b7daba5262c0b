// SPDX-License-Identifier: GPL-2.0-only
/* `ttftrace report RUN.ndjson -o report.html`: the command line around html_report.c. */
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <libgen.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/stat.h>
#include "user/export/html_report.h"
#include "user/lib/log.h"

static const char report_usage[] =
"Usage: ttftrace report RUN.ndjson [-o report.html] [--slo SPEC] [--title TEXT]\n"
"Turn the NDJSON of `ttftrace --json -o RUN.ndjson` into one self-contained HTML page\n"
"(inline CSS, JS and SVG; nothing is loaded at view time): a TTFT waterfall per request\n"
"split into stages, percentile tables (TTFT, TPOT, ITL, E2E, each stage), an ITL timeline\n"
"with outliers and their causes, stability grades and SLO verdicts. Needs no root.\n"
"\n"
"  -o, --output FILE   the page (default: report.html); written whole or not at all\n"
"      --slo SPEC      SLOs to judge, e.g. ttft_p95=2s,tpot_p95=100ms (METRIC ttft|tpot|\n"
"                      itl|e2e|ttfv, PCT p50|p90|p95|p99, LIMIT with ns|us|ms|s)\n"
"      --title TEXT    page title (default: ttftrace report)\n"
"  -h, --help          this help\n"
"\n"
"EXIT STATUS: 0 ok, 2 bad command line or SLO spec, 8 the page cannot be written,\n"
"10 the page was written but an SLO is not met, 11 the input is missing, unreadable\n"
"or not ttftrace NDJSON.\n"
"\n"
"EXAMPLES:\n"
"  ttftrace --port 8080 --json -o run.ndjson -d 60 && ttftrace report run.ndjson\n"
"  ttftrace report run.ndjson -o run.html --slo ttft_p95=500ms,itl_p99=50ms\n";

enum { OPT_SLO = 0x100, OPT_TITLE };

static int usage_error(const char *msg, const char *arg)
{
	fprintf(stderr, "Error: %s%s%s\n", msg, arg ? ": " : "", arg ? arg : "");
	fprintf(stderr, "HINT: ttftrace report --help\n");
	return REPORT_EXIT_USAGE;
}

int report_main(int argc, char **argv)
{
	static const struct option opts[] = {
		{ "output", required_argument, NULL, 'o' },
		{ "slo", required_argument, NULL, OPT_SLO },
		{ "title", required_argument, NULL, OPT_TITLE },
		{ "help", no_argument, NULL, 'h' },
		{},
	};
	const char *out_path = "report.html", *in_path, *slo_spec = NULL;
	struct html_report_opts ro = { 0 };
	struct html_report_result res;
	struct slo_set slo = { 0 };
	char err[256], *tmp = NULL, *base = NULL;
	FILE *in = NULL, *out = NULL;
	int c, fd, ret, code, in_place;
	struct stat st;

	optind = 1;
	while ((c = getopt_long(argc, argv, "o:h", opts, NULL)) != -1) {
		switch (c) {
		case 'o':
			out_path = optarg;
			break;
		case OPT_SLO:
			slo_spec = optarg;
			break;
		case OPT_TITLE:
			ro.title = optarg;
			break;
		case 'h':
			fputs(report_usage, stdout);
			return REPORT_EXIT_OK;
		default:
			return usage_error("bad option", NULL);
		}
	}
	if (optind != argc - 1)
		return usage_error(optind < argc ? "give exactly one RUN.ndjson" :
				   "give the NDJSON of a run (ttftrace --json -o RUN.ndjson)", NULL);
	in_path = argv[optind];
	if (slo_spec && slo__parse(slo_spec, &slo, err, sizeof(err))) {
		ttf_error(SLO_HINT, "invalid --slo: %s", err);
		return REPORT_EXIT_USAGE;
	}
	ro.slo = &slo;
	in = fopen(in_path, "r");
	if (!in) {
		ttf_error("record a run with: ttftrace --port PORT --json -o RUN.ndjson",
			  "cannot read %s: %s", in_path, strerror(errno));
		return REPORT_EXIT_INPUT;
	}
	base = strdup(in_path);
	/* a device or FIFO is written in place: a rename would replace the node */
	in_place = !stat(out_path, &st) && !S_ISREG(st.st_mode);
	if (!base || (!in_place && asprintf(&tmp, "%s.tmp.XXXXXX", out_path) < 0)) {
		tmp = NULL;
		ttf_error(NULL, "out of memory");
		code = REPORT_EXIT_OUTPUT;
		goto cleanup;
	}
	ro.source = basename(base);
	fd = in_place ? open(out_path, O_WRONLY | O_CLOEXEC) : mkostemp(tmp, O_CLOEXEC);
	if (fd < 0 || !(out = fdopen(fd, "w"))) {
		ttf_error("check that the directory exists and is writable", "cannot write %s: %s",
			  out_path, strerror(errno));
		if (fd >= 0) {
			close(fd);
			if (tmp)
				unlink(tmp);
		}
		code = REPORT_EXIT_OUTPUT;
		goto cleanup;
	}
	if (!in_place)
		fchmod(fd, 0644);
	ret = html_report__render(in, out, &ro, &res, err, sizeof(err));
	if (fclose(out) && !ret)
		ret = -EIO;
	out = NULL;
	if (!ret && tmp && rename(tmp, out_path))
		ret = -EIO;
	if (ret) {
		if (tmp)
			unlink(tmp);
		if (ret == -EINVAL) {
			ttf_error("give the NDJSON of `ttftrace --json -o RUN.ndjson` (not the text "
				  "output)", "%s: %s", in_path, err);
			code = REPORT_EXIT_INPUT;
		} else {
			ttf_error("check free space and permissions", "cannot write %s: %s",
				  out_path, err[0] ? err : strerror(-ret));
			code = REPORT_EXIT_OUTPUT;
		}
		goto cleanup;
	}
	fprintf(stderr, "Wrote %s: %u requests%s%s.\n", out_path, res.requests,
		res.have_summary ? "" : ", no summary object (interrupted run?)",
		res.bad_lines ? ", a truncated last line skipped" : "");
	code = REPORT_EXIT_OK;
	if (slo.n) {
		slo__print(stderr, "report", &slo, &res.slo);
		if (res.slo.n_failed)
			code = REPORT_EXIT_SLO;
	}
cleanup:
	if (in)
		fclose(in);
	free(tmp);
	free(base);
	return code;
}
