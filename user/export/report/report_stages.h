/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * Output of the TTFT stage split (user/model/attrib.h): per-request JSON fields and
 * text line, and the summary's per-stage percentiles with the stage that
 * dominates the tail (the largest share of TTFT among requests at or above
 * P95 TTFT).
 *
 * Memory is bounded: stage percentiles use user/lib/stats.h; the first
 * STATS_EXACT_MAX requests are kept for an exact tail; past that, requests
 * are summed into TTFT buckets (64 per power of two of ns), and the tail is
 * the buckets from the one holding nearest-rank P95 up: it may take in
 * requests up to 1/64 (1.6%) of P95 below it.
 */
#ifndef TTFTRACE_REPORT_STAGES_H
#define TTFTRACE_REPORT_STAGES_H

#include <stdio.h>
#include <cjson/cJSON.h>
#include "user/model/attrib.h"

struct stage_stats;

struct stage_stats *stage_stats__new(void);
void stage_stats__free(struct stage_stats *ss);
/* Record one attributed request (a->valid). -ENOMEM. */
int stage_stats__add(struct stage_stats *ss, const struct ttf_attrib *a, int64_t ttft_ns);
/* Index of the stage dominating P95 TTFT, or -1 when none recorded. */
int stage_stats__tail_stage(const struct stage_stats *ss);

/* Add "stages_ms", "stage_sum_ms", "attribution", ... to a request object; sets *err on ENOMEM. */
void report_stages__json(cJSON *o, const struct ttf_attrib *a, int *err);
/* Add "cause" to the request object's "outliers" entries. */
void report_stages__json_causes(cJSON *o, const struct ttf_attrib *a, int *err);
/* "  stages(ms): net_in 0.1 read_wait 0.0 ... [exact]" */
void report_stages__text_line(FILE *out, const struct ttf_attrib *a, int verbose);
/* Summary: text table / "stages_ms" + "tail_stage" JSON. */
void report_stages__summary_text(FILE *out, const struct stage_stats *ss);
void report_stages__summary_json(cJSON *o, const struct stage_stats *ss, int *err);

#endif /* TTFTRACE_REPORT_STAGES_H */
