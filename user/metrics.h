/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * Per-request token metrics, from the definitions in README.md (and
 * ../shared/design.md "Token-level metrics"):
 *   TTFT  = first token event leaves the server - first request byte arrives
 *   E2E   = last response byte leaves the server - first request byte arrives
 *   ITL   = each gap between consecutive token events
 *   TPOT  = (t_last_token - t_first_token) / (n_tokens - 1),
 *           n_tokens from usage when reported, else counted token events
 *   CV    = stddev / mean of ITL; grade A < 0.15 <= B < 0.30 <= C
 *   outlier: ITL > 3 x mean ITL
 * "leaves" = device transmit when the XMIT probe saw it, else the write.
 */
#ifndef TTFTRACE_METRICS_H
#define TTFTRACE_METRICS_H

#include <stdint.h>
#include "user/request.h"

#define TTF_CV_GRADE_A 0.15
#define TTF_CV_GRADE_B 0.30
#define TTF_OUTLIER_FACTOR 3.0
/* buffered: >= 3 token events, all within this span ... */
#define TTF_BUFFERED_SPAN_NS 5000000ull
/* ... after a silence (first request byte to first token) at least this long */
#define TTF_BUFFERED_SILENCE_NS 100000000ull

struct ttf_req_metrics {
	int64_t ttft_ns;          /* -1: no token was seen (TTFT is null, not 0) */
	int64_t ttfv_ns;          /* time to first visible content (content, not reasoning); -1 none */
	int64_t e2e_ns;           /* -1: response end not seen */
	double tpot_ns;           /* -1: fewer than 2 tokens */
	double itl_mean_ns;       /* -1: fewer than 2 events */
	double itl_cv;            /* -1: fewer than 3 events */
	char grade;               /* 'A', 'B', 'C', or '-' */
	uint32_t n_tokens;        /* usage count or counted tokens */
	uint32_t n_events;        /* token events */
	double tokens_per_event;
	uint32_t n_outliers;      /* ITLs > 3 x mean */
	int ttft_end_is_xmit;     /* 1: ended at device transmit; 0: at the write */
	int buffered;             /* pseudo-streaming detected */
};

/* Compute metrics of one finished request. Returns 0 or -EINVAL. */
int ttf_metrics__compute(const struct ttf_request *r, struct ttf_req_metrics *m);

/*
 * The time a token event left the server: xmit_ns when known, else write_ns.
 */
uint64_t ttf_metrics__event_time(const struct ttf_token_event *ev);

#endif /* TTFTRACE_METRICS_H */
