/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * The summary per hop (user/model/hops/view.h), for requests that crossed
 * processes (through a gateway, or a message hop to an engine): each hop's
 * time per request (its stages summed: a process's own, or a link's, "ipc"
 * and "net") as P50/P95/P99, and the hop that dominates the tail: the
 * largest share of TTFT among the requests at or above P95 TTFT.
 *
 * Bounded memory: percentiles through user/lib/stats.h; the tail from TTFT
 * buckets (64 per power of two of ns, as report_stages.h), each with its
 * per-hop sums, so the tail is the buckets from the one holding
 * nearest-rank P95 up (it may take in requests up to 1/64 below P95).
 */
#ifndef TTFTRACE_REPORT_HOP_SPLIT_H
#define TTFTRACE_REPORT_HOP_SPLIT_H

#include <stdio.h>
#include <cjson/cJSON.h>
#include "user/model/attrib.h"

struct hop_split;

/* NULL on ENOMEM. */
struct hop_split *hop_split__new(void);
void hop_split__free(struct hop_split *hs);
/* One request (a with a hop chain, t_start_ns its first byte, ttft_ns); 0 or -ENOMEM. */
int hop_split__add(struct hop_split *hs, const struct ttf_attrib *a, uint64_t t_start_ns,
		   int64_t ttft_ns);
/* "  per hop (ms): ..." lines; nothing without a request. */
void hop_split__summary_text(FILE *out, struct hop_split *hs);
/* "hop_split": {"requests", "hops_ms": {HOP: {p50, p95, p99}}, "tail_hop", "tail_hop_share"} */
void hop_split__summary_json(cJSON *o, struct hop_split *hs, int *err);

#endif /* TTFTRACE_REPORT_HOP_SPLIT_H */
