/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * `ttftrace report`: one self-contained HTML page (inline CSS, JS and SVG;
 * nothing loaded at view time) from the NDJSON that `ttftrace --json`
 * writes (schema: user/export/report/report.c, user/export/report/report_stages.c).
 *
 * The page template is user/export/html/report_template.html, compiled in as a string
 * (the Makefile generates $(OUTPUT)/report_template.h from it). Its
 * TTF_DATA line is replaced with one JSON object:
 *   meta     {title, source, generated, requests, span_s, paths, bad_lines, no_summary,
 *             stage_keys: [stage...]}
 *   requests [{id, method, path, status, ttft, e2e, tpot, tokens, grade, cv,
 *              itl: [ms...], itl_mean, outliers: [{index, itl_ms, cause}], n_outliers,
 *              stages: [ms|null] (in stage_keys' order), attribution, inferred_by,
 *              flags: [...], model, ok, hops: {hop stage: ms} (only with hop_stages_ms),
 *              t_arrival, t_first}]      (t_*: ms since the earliest arrival; ok: as
 *              ttf_vocab__success())
 *   stats    [{name, label, group, n, p50, p90, p95, p99, mean, max}] in ms,
 *            from the request objects with user/lib/stats.h (the summary's definition)
 *   grades   {A, B, C, "-"} request counts
 *   slo      [{name, limit_ms, value_ms|null, pass}] (user/model/slo.h: unmeasured fails)
 *   outcomes {ok, aborted, incomplete, error, unknown, nonstream, buffered, truncated}
 *            the summary's; without one, counted from the requests' flags as the
 *            summary counts them; outcomes_from says which ("summary"|"requests")
 *   by_route, by_model   html_groups.h arrays (TTFT/TPOT of successful requests); the
 *            route is the NDJSON's "route" when it has one, else the path less its query
 *   counters, tail_stage                 copied from the summary object, when present
 * Prompts and outputs are never in the NDJSON, so never in the page.
 */
#ifndef TTFTRACE_HTML_REPORT_H
#define TTFTRACE_HTML_REPORT_H

#include <stddef.h>
#include <stdio.h>
#include "user/model/slo.h"

struct html_report_opts {
	const char *title;		/* NULL: "ttftrace report" */
	const char *source;		/* shown as the run's name (e.g. the input's basename) */
	const struct slo_set *slo;	/* NULL or empty: no SLO section */
	const char *generated;		/* timestamp text; NULL: now, UTC */
};

struct html_report_result {
	unsigned requests;		/* request objects read */
	unsigned bad_lines;		/* a truncated last line, skipped */
	int have_summary;
	struct slo_result slo;		/* valid when opts->slo has items */
};

/*
 * Read NDJSON from @in, write the page to @out. Returns 0; -EINVAL when the
 * input is not ttftrace NDJSON (a line that is not a JSON object, other
 * than a last line without its newline; or no request/summary object), with
 * the reason in @err; -ENOMEM; -EIO when writing failed.
 */
int html_report__render(FILE *in, FILE *out, const struct html_report_opts *o,
			struct html_report_result *res, char *err, size_t err_sz);

#endif /* TTFTRACE_HTML_REPORT_H */
