/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * Summary of host<->device copies seen inside prefill windows (CUPTI): per
 * direction and host memory kind (pinned or pageable), count, bytes and the
 * achieved GB/s percentiles, next to the PCIe path's theoretical rate
 * (docs/cases.md #23 and #25: pageable copies are slow by design and never
 * evidence of a bad link).
 */
#ifndef TTFTRACE_COPY_STATS_H
#define TTFTRACE_COPY_STATS_H

#include <stdio.h>
#include <cjson/cJSON.h>
#include "user/model/attrib.h"

struct copy_stats;

struct copy_stats *copy_stats__new(void);
void copy_stats__free(struct copy_stats *cs);
/* Add every copy of one request's GPU part. -ENOMEM. */
int copy_stats__add(struct copy_stats *cs, const struct ttf_gpu_part *g);
/* "Copies in prefill windows: ..." lines; nothing when no copy was seen. */
void copy_stats__text(FILE *out, const struct copy_stats *cs);
/* "copies": [{"dir","host","n","bytes","gbps_p50","gbps_p95","link_gbps","share_of_link_p50"}] */
void copy_stats__json(cJSON *o, const struct copy_stats *cs, int *err);

#endif /* TTFTRACE_COPY_STATS_H */
