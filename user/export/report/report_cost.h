/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * The summary's cost of tracing: the cost_* counters (user/cmd/self_cost.h)
 * per output token, as text and as the summary object's "cost". A run
 * whose counters have none (a replay of a recording that predates them)
 * gets neither.
 */
#ifndef TTFTRACE_REPORT_COST_H
#define TTFTRACE_REPORT_COST_H

#include <stdint.h>
#include <stdio.h>
#include <cjson/cJSON.h>
#include "user/lib/records.h"

/* Is this counter one of the cost's (kept out of the text summary's drops and health)? */
int report_cost__is_cost(const char *name);
void report_cost__text(FILE *out, const struct report_counter *c, int n, uint64_t out_tokens);
/* Adds "cost" to o; sets *err on ENOMEM. */
void report_cost__json(cJSON *o, const struct report_counter *c, int n, uint64_t out_tokens,
		       int *err);

#endif /* TTFTRACE_REPORT_COST_H */
