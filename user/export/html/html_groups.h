/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * The report page's tables by route and by model (html_report.c): requests
 * grouped by one text key, each group with its request count, the requests
 * that were not successful (as ttf_vocab__success(): a 2xx status and none
 * of the aborted/incomplete/error/unknown flags), and TTFT and TPOT
 * percentiles (user/lib/stats.h) over the successful ones only.
 *
 * Keys are bounded: the first HTML_GROUPS_MAX distinct keys get a group of
 * their own, later new keys all count in one group named "other"; a missing
 * key counts as "(none)".
 */
#ifndef TTFTRACE_HTML_GROUPS_H
#define TTFTRACE_HTML_GROUPS_H

#include <cjson/cJSON.h>

#define HTML_GROUPS_MAX 24

struct html_groups;

/* Returns NULL on allocation failure. */
struct html_groups *html_groups__new(void);
void html_groups__free(struct html_groups *g);

/*
 * Count one request under @key (NULL: "(none)"). @ttft_ms / @tpot_ms are
 * NAN when unmeasured; they are used only when @success. Returns 0 or -ENOMEM.
 */
int html_groups__add(struct html_groups *g, const char *key, int success, double ttft_ms,
		     double tpot_ms);

/*
 * The groups, most requests first, as a JSON array:
 *   [{key, n, failed, ttft: {n, p50, p95, p99}, tpot: {n, p50, p95, p99}}]
 * (ms; a percentile is null when its group has no successful sample).
 * Returns NULL on allocation failure.
 */
cJSON *html_groups__json(struct html_groups *g);

#endif /* TTFTRACE_HTML_GROUPS_H */
