/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * Output of finished requests: a live line per request (text) or one NDJSON
 * object per request ({"type":"request",...}), and a summary at exit with
 * P50/P90/P95/P99 over requests (text table or {"type":"summary",...}).
 */
#ifndef TTFTRACE_REPORT_H
#define TTFTRACE_REPORT_H

#include <stdio.h>
#include <stdint.h>
#include "user/request.h"

struct report;

struct report_opts {
	size_t sz;         /* sizeof(struct report_opts) */
	FILE *out;         /* where lines go (stdout or -o FILE) */
	int json;          /* 1: NDJSON */
	int verbose;       /* >0: more columns / fields */
	uint64_t t0_ns;    /* CLOCK_MONOTONIC at start, for relative timestamps */
};

/* A name/value pair printed in the summary's drop/health block. */
struct report_counter {
	const char *name;
	uint64_t value;
};

struct report *report__new(const struct report_opts *opts);
void report__free(struct report *rp);

/* Print the column header (text mode only). */
void report__header(struct report *rp);
/* Record one finished request and print its live line / NDJSON object. */
void report__request(struct report *rp, const struct ttf_request *r);
/*
 * Print the summary: counts, percentiles of TTFT, TPOT, ITL, E2E, tokens,
 * grades and flags, followed by every counter (drops are printed even when 0
 * in JSON, and when non-zero in text). Returns 0 or a negative errno from
 * writing.
 */
int report__summary(struct report *rp, const struct report_counter *counters, int n_counters);

#endif /* TTFTRACE_REPORT_H */
