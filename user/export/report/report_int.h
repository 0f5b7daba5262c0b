/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * Inside the report (report.h): the object report.c keeps, and what its
 * text line (report_text.c), NDJSON object (report_json.c) and summary
 * (report_summary.c) share.
 */
#ifndef TTFTRACE_REPORT_INT_H
#define TTFTRACE_REPORT_INT_H

#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <cjson/cJSON.h>
#include "user/model/vocab.h"
#include "user/export/report/report.h"
#include "user/lib/json_print.h"
#include "user/lib/stats.h"

/* The latency and token collectors, in the summary's row order (report_summary.c). */
enum { ST_TTFT, ST_TTFV, ST_TTFB, ST_TTFE, ST_TPOT, ST_ITL, ST_E2E, ST_TOKENS, ST_NR };

struct report {
	struct report_opts opts;
	struct stats *st[ST_NR];
	uint64_t n_requests;
	uint64_t outcomes[TTF_OC__MAX]; /* by enum ttf_outcome (vocab.h) */
	uint64_t grades[4];      /* A, B, C, '-' */
	uint64_t n_ttft_xmit;    /* TTFT ended at device transmit */
	uint64_t n_ttft_write;   /* ... at the write */
	uint64_t samples_lost;   /* stats__add failed (ENOMEM) */
	uint64_t lines_lost;     /* NDJSON objects not built (ENOMEM) */
	uint64_t invalid;        /* requests ttf_metrics__compute refused */
	int summary_err;         /* what report__summary returned from the sink's finish */
	uint64_t left_out;       /* requests kept out of the percentiles: not successful */
	/* the run as vllm bench reports it: over every request, from the first arrival */
	uint64_t t_first_ns, t_last_ns; /* first request byte in, last response byte out */
	uint64_t out_tokens;     /* output tokens of the successful requests */
	uint64_t in_tokens;      /* prompt tokens of the successful requests (usage reports) */
	uint64_t n_in_tokens;    /* ... of that many requests */
	struct stage_stats *stages; /* TTFT stage split, when attribution runs */
	struct hop_stats *hops;     /* through a gateway (report_hops.h) */
	struct msg_hop_stats *msg_hops; /* across a ZMQ hop to an engine (report_msg_hops.h) */
	struct hop_split *hop_split;	/* per hop, either chain (report_hop_split.h) */
	struct json_buf line;       /* NDJSON line being printed, kept between lines */
	int header_done;
};

#define MAX_FLAGS TTF_VF__MAX

/* Copy at most max bytes of a fixed-size, maybe unterminated field; non-printable -> '?'. */
void report_sanitize(char *dst, const char *src, size_t max);
/* Flag names in the vocabulary's order (vocab.h); the same names in text and JSON. */
int report_flag_names(const struct ttf_request *r, const struct ttf_req_metrics *m,
		      const char **names);

/* The live line of one request (report_text.c). */
void report_text__request(struct report *rp, const struct ttf_request *r,
			  const struct ttf_req_metrics *m);
/* The NDJSON object of one request (report_json.c); NULL when out of memory. */
cJSON *report_json__request(const struct ttf_request *r, const struct ttf_req_metrics *m);
/* Print o as one NDJSON line. Returns 0 or -ENOMEM (o NULL too: the line is counted as lost). */
int report_json__print_line(struct report *rp, cJSON *o);

static inline double ns_to_ms(double ns)
{
	/* microsecond precision: enough for network and token timing, shorter JSON */
	return round(ns / 1e3) / 1e3;
}

/* cJSON adders that remember an allocation failure instead of returning it. */
static inline void j_ms(cJSON *o, const char *k, double ns, int *err)
{
	cJSON *it = ns < 0 ? json_add__null(o, k) : json_add__num(o, k, ns_to_ms(ns));

	*err |= !it;
}

static inline void j_num(cJSON *o, const char *k, double v, int *err)
{
	*err |= !json_add__num(o, k, v);
}

/* Exact 64-bit integers (cookies, ns timestamps exceed a double's 53 bits); 0 -> null. */
static inline void j_u64(cJSON *o, const char *k, uint64_t v, int null_if_zero, int *err)
{
	char buf[24];

	if (null_if_zero && !v) {
		*err |= !json_add__null(o, k);
		return;
	}
	snprintf(buf, sizeof(buf), "%" PRIu64, v);
	*err |= !json_add__raw(o, k, buf);
}

static inline void j_str(cJSON *o, const char *k, const char *s, int *err)
{
	*err |= !(s ? json_add__str(o, k, s) : json_add__null(o, k));
}

#endif /* TTFTRACE_REPORT_INT_H */
