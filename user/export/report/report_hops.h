/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * The report's hop parts (user/model/hops/chain.h): a request's chain through a
 * gateway in NDJSON ("hops", "hop_stages_ms") and in the text line, and the
 * summary's per-hop-stage percentiles with the stage that dominates the
 * tail. Units: ms in the output, ns inside.
 */
#ifndef TTFTRACE_REPORT_HOPS_H
#define TTFTRACE_REPORT_HOPS_H

#include <stdio.h>
#include <cjson/cJSON.h>
#include "user/model/attrib.h"

struct hop_stats;

/* NULL on ENOMEM. */
struct hop_stats *hop_stats__new(void);
void hop_stats__free(struct hop_stats *hs);
/* Add a's chain (none: nothing). 0 or -ENOMEM. */
int hop_stats__add(struct hop_stats *hs, const struct ttf_attrib *a);

/* NDJSON: "hops" (array, gateway then upstream) and "hop_stages_ms"; nothing without a chain. */
void report_hops__json(cJSON *o, const struct ttf_attrib *a, int *err);
/* Text: one "    hops:" line under the stages; nothing without a chain. */
void report_hops__text_line(FILE *out, const struct ttf_attrib *a);
/* Summary: nothing when no request had a chain. */
void report_hops__summary_text(FILE *out, const struct hop_stats *hs);
void report_hops__summary_json(cJSON *o, const struct hop_stats *hs, int *err);

#endif /* TTFTRACE_REPORT_HOPS_H */
