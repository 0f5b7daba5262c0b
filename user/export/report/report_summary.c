// SPDX-License-Identifier: GPL-2.0-only
/* The summary at exit: percentiles, outcomes, grades, the stage and hop tails, counters. */
#include <errno.h>
#include <stdio.h>
#include "user/model/metrics.h"
#include "user/export/report/report_int.h"
#include "user/export/report/report_cost.h"
#include "user/export/report/report_hops.h"
#include "user/export/report/report_msg_hops.h"
#include "user/export/report/report_hop_split.h"
#include "user/export/report/report_stages.h"

static const struct {
	const char *text; /* summary row title */
	const char *json; /* summary key */
} stat_names[ST_NR] = {
	[ST_TTFT] = { "TTFT(ms)", "ttft_ms" },
	[ST_TTFV] = { "TTFV(ms)", "ttfv_ms" },
	[ST_TTFB] = { "TTFB(ms)", "ttfb_ms" },
	[ST_TTFE] = { "TTFE(ms)", "ttfe_ms" },
	[ST_TPOT] = { "TPOT(ms)", "tpot_ms" },
	[ST_ITL] = { "ITL(ms)", "itl_ms" },
	[ST_E2E] = { "E2E(ms)", "e2e_ms" },
	[ST_TOKENS] = { "tokens/req", "tokens" },
};

static const char *const pct_keys[] = { "p50", "p90", "p95", "p99" };
static const double pct_vals[] = { 50, 90, 95, 99 };

static void print_text_stat(FILE *out, const char *title, struct stats *s, int prec)
{
	size_t i;

	fprintf(out, "%-12s %8zu", title, stats__count(s));
	if (!stats__count(s)) {
		for (i = 0; i < 8; i++)
			fprintf(out, " %10s", "-");
		fputc('\n', out);
		return;
	}
	for (i = 0; i < 4; i++)
		fprintf(out, " %10.*f", prec, stats__percentile(s, pct_vals[i]));
	fprintf(out, " %10.*f %10.*f %10.*f %10.*f\n", prec, stats__mean(s), prec, stats__max(s),
		prec, stats__min(s), prec, stats__stddev(s));
}

/* From the first request byte in to the last response byte out, over all requests. */
static double duration_s(const struct report *rp)
{
	return rp->t_last_ns > rp->t_first_ns && rp->t_first_ns ?
	       (rp->t_last_ns - rp->t_first_ns) / 1e9 : 0;
}

static void summary_text(struct report *rp, const struct report_counter *counters, int n_counters)
{
	FILE *out = rp->opts.out;
	int i, any = 0;

	fprintf(out, "\nSummary: %" PRIu64 " requests\n", rp->n_requests);
	fprintf(out, "%-12s %8s %10s %10s %10s %10s %10s %10s %10s %10s\n", "", "n", "P50", "P90",
		"P95", "P99", "mean", "max", "min", "std");
	for (i = 0; i < ST_NR; i++)
		print_text_stat(out, stat_names[i].text, rp->st[i], i == ST_TOKENS ? 1 : 3);
	fprintf(out, "Percentiles over the %" PRIu64 " successful requests (2xx, not aborted, "
		"incomplete, error or unknown): %" PRIu64 " left out.\n",
		rp->n_requests - rp->left_out, rp->left_out);
	if (duration_s(rp) > 0)
		fprintf(out, "Duration %.3f s (first request in to last response out): %.3f "
			"successful requests/s, %.1f output tokens/s; output tokens %" PRIu64
			", input tokens %" PRIu64 " (usage reports of %" PRIu64 " requests).\n",
			duration_s(rp), (rp->n_requests - rp->left_out) / duration_s(rp),
			rp->out_tokens / duration_s(rp), rp->out_tokens, rp->in_tokens,
			rp->n_in_tokens);
	fprintf(out, "TTFT n=%zu of %" PRIu64 " requests (requests without a token have no TTFT).\n",
		stats__count(rp->st[ST_TTFT]), rp->n_requests);
	fprintf(out, "TTFT ends at device transmit (xmit) for %" PRIu64 " requests, at write for %"
		PRIu64 ".\n", rp->n_ttft_xmit, rp->n_ttft_write);
	fprintf(out, "ITL: every gap between token events, over all requests (%zu samples); "
		"TPOT counts tokens from usage when reported.\n", stats__count(rp->st[ST_ITL]));
	fprintf(out, "Outcomes:");
	for (i = 0; i < TTF_OC__MAX; i++)
		fprintf(out, " %s=%" PRIu64, ttf_outcome_name(i), rp->outcomes[i]);
	fprintf(out, "\nGrades (ITL CV: A < %.2f <= B < %.2f <= C): A=%" PRIu64 " B=%" PRIu64
		" C=%" PRIu64 " -=%" PRIu64 "\n", TTF_CV_GRADE_A, TTF_CV_GRADE_B, rp->grades[0],
		rp->grades[1], rp->grades[2], rp->grades[3]);

	report_stages__summary_text(out, rp->stages);
	report_hops__summary_text(out, rp->hops);
	report_msg_hops__summary_text(out, rp->msg_hops);
	hop_split__summary_text(out, rp->hop_split);
	fprintf(out, "Drops and health:\n");
	for (i = 0; i < n_counters; i++) {
		if (!counters[i].value || report_cost__is_cost(counters[i].name))
			continue;
		fprintf(out, "  %s = %" PRIu64 "\n", counters[i].name, counters[i].value);
		any = 1;
	}
	if (rp->samples_lost)
		fprintf(out, "  report_samples_lost = %" PRIu64 "\n", rp->samples_lost);
	if (rp->lines_lost)
		fprintf(out, "  report_lines_lost = %" PRIu64 "\n", rp->lines_lost);
	if (rp->invalid)
		fprintf(out, "  report_requests_invalid = %" PRIu64 "\n", rp->invalid);
	if (!any && !rp->samples_lost && !rp->lines_lost && !rp->invalid)
		fprintf(out, "  none\n");
	report_cost__text(out, counters, n_counters, rp->out_tokens);
}

static void j_stat(cJSON *o, const char *k, struct stats *s, int *err)
{
	cJSON *so = json_add__obj(o, k);
	size_t i, n = stats__count(s);

	if (!so) {
		*err = 1;
		return;
	}
	j_num(so, "n", n, err);
	for (i = 0; i < 4; i++) {
		if (n)
			j_num(so, pct_keys[i], round(stats__percentile(s, pct_vals[i]) * 1e3) / 1e3,
			      err);
		else
			*err |= !json_add__null(so, pct_keys[i]);
	}
	if (n) {
		j_num(so, "mean", round(stats__mean(s) * 1e3) / 1e3, err);
		j_num(so, "min", round(stats__min(s) * 1e3) / 1e3, err);
		j_num(so, "max", round(stats__max(s) * 1e3) / 1e3, err);
		j_num(so, "std", round(stats__stddev(s) * 1e3) / 1e3, err);
	} else {
		*err |= !json_add__null(so, "mean");
		*err |= !json_add__null(so, "min");
		*err |= !json_add__null(so, "max");
		*err |= !json_add__null(so, "std");
	}
}

static cJSON *summary_json(struct report *rp, const struct report_counter *counters,
			   int n_counters)
{
	static const char *const grade_keys[4] = { "A", "B", "C", "-" };
	cJSON *o = cJSON_CreateObject(), *sub;
	int i, err = 0;

	if (!o)
		return NULL;
	j_str(o, "type", "summary", &err);
	j_u64(o, "requests", rp->n_requests, 0, &err);
	/* the percentiles below are over the successful requests only */
	j_u64(o, "left_out_of_percentiles", rp->left_out, 0, &err);
	/* the run, as vllm bench reports it (null when no request ended) */
	{
		double d = duration_s(rp);

		if (d > 0) {
			j_num(o, "duration_s", round(d * 1e6) / 1e6, &err);
			j_num(o, "request_throughput", round((rp->n_requests - rp->left_out) / d *
							     1e3) / 1e3, &err);
			j_num(o, "output_token_throughput", round(rp->out_tokens / d * 1e3) / 1e3,
			      &err);
		} else {
			err |= !json_add__null(o, "duration_s");
			err |= !json_add__null(o, "request_throughput");
			err |= !json_add__null(o, "output_token_throughput");
		}
		j_u64(o, "total_output_tokens", rp->out_tokens, 0, &err);
		j_u64(o, "total_input_tokens", rp->in_tokens, 0, &err);
	}
	sub = json_add__obj(o, "outcomes");
	for (i = 0; sub && i < TTF_OC__MAX; i++)
		j_u64(sub, ttf_outcome_name(i), rp->outcomes[i], 0, &err);
	err |= !sub;
	for (i = 0; i < ST_NR; i++)
		j_stat(o, stat_names[i].json, rp->st[i], &err);
	sub = json_add__obj(o, "ttft_end");
	err |= !sub;
	if (sub) {
		j_u64(sub, ttf_ttft_end_name(1), rp->n_ttft_xmit, 0, &err);
		j_u64(sub, ttf_ttft_end_name(0), rp->n_ttft_write, 0, &err);
	}
	sub = json_add__obj(o, "grades");
	for (i = 0; sub && i < 4; i++)
		j_u64(sub, grade_keys[i], rp->grades[i], 0, &err);
	err |= !sub;
	report_stages__summary_json(o, rp->stages, &err);
	report_hops__summary_json(o, rp->hops, &err);
	report_msg_hops__summary_json(o, rp->msg_hops, &err);
	hop_split__summary_json(o, rp->hop_split, &err);
	report_cost__json(o, counters, n_counters, rp->out_tokens, &err);
	sub = json_add__obj(o, "counters");
	err |= !sub;
	for (i = 0; sub && i < n_counters; i++)
		j_u64(sub, counters[i].name, counters[i].value, 0, &err);
	if (sub) {
		j_u64(sub, "report_samples_lost", rp->samples_lost, 0, &err);
		j_u64(sub, "report_lines_lost", rp->lines_lost, 0, &err);
		j_u64(sub, "report_requests_invalid", rp->invalid, 0, &err);
	}
	if (err) {
		cJSON_Delete(o);
		return NULL;
	}
	return o;
}

int report__summary(struct report *rp, const struct report_counter *counters, int n_counters)
{
	FILE *out = rp->opts.out;

	if (n_counters < 0 || (n_counters && !counters))
		return -EINVAL;
	if (rp->opts.json) {
		cJSON *o = summary_json(rp, counters, n_counters);
		int err = report_json__print_line(rp, o);

		cJSON_Delete(o);
		if (err)
			return err;
	} else {
		summary_text(rp, counters, n_counters);
	}
	/* Any failed write since the start shows in the stream's error flag. */
	if (fflush(out))
		return errno ? -errno : -EIO;
	if (ferror(out))
		return -EIO;
	return 0;
}

