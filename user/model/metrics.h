/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * Per-request token metrics, from the definitions in docs/metrics.md (short
 * version in README.md "Definitions"):
 *   TTFT  = first token event leaves the server - first request byte arrives
 *   E2E   = last response byte leaves the server - first request byte arrives
 *   ITL   = each gap between consecutive token events
 *   TPOT  = (t_last_token - t_first_token) / (n_tokens - 1),
 *           n_tokens from usage when reported, else counted token events
 *   CV    = stddev / mean of ITL; grade A < 0.15 <= B < 0.30 <= C
 *   outlier: ITL > 3 x mean ITL
 * "leaves" = device transmit when the XMIT probe saw it, else the write.
 *
 * Details that the one-line definitions leave open:
 *   - the start is arrival_first_ns, or read_first_ns when arrival was not seen;
 *   - non-streamed responses (TTF_REQ_NONSTREAM): TTFT = TTFV = TTFE = E2E;
 *   - opaque bodies (TTF_REQ_OPAQUE): n_tokens 0 and no TPOT/ITL; TTFT ends at
 *     the first token seen before the body became unreadable, else at the
 *     first body write;
 *   - TTFB and TTFE end at the device transmit of the write that carried the
 *     first response byte / completed the first event, else at that write;
 *   - E2E ends at end_xmit_ns, else end_write_ns; it is -1 for aborted and
 *     incomplete requests (the response end was never seen);
 *   - TPOT needs n_tokens >= 2 *and* >= 2 token events: one event carrying
 *     several tokens has no time span to divide;
 *   - ITL samples are per event (n_events - 1 of them); a gap that comes out
 *     negative (xmit known for one event, only the write for the next) is 0;
 *   - CV is the population stddev over the ITLs divided by their mean; it
 *     needs >= 2 ITLs and a non-zero mean.
 */
#ifndef TTFTRACE_METRICS_H
#define TTFTRACE_METRICS_H

#include <stdint.h>
#include "user/proto/request.h"

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
	int64_t ttfb_ns;          /* time to the first response byte (interim 1xx excluded); -1 none */
	int64_t ttfe_ns;          /* time to the first stream event of any kind; -1 none */
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
	int tokens_from_usage;    /* 1: n_tokens is usage.completion_tokens */
	uint64_t t_start_ns;      /* arrival_first_ns, else read_first_ns; 0 none */
	uint64_t t_first_token_ns;/* event time of the first token event; 0 none */
	uint64_t t_last_token_ns; /* event time of the last token event; 0 none */
	uint64_t t_end_ns;        /* time E2E ends at; 0 when E2E is -1 */
};

/* Compute metrics of one finished request. Returns 0 or -EINVAL. */
int ttf_metrics__compute(const struct ttf_request *r, struct ttf_req_metrics *m);

/*
 * The time a token event left the server: xmit_ns when known, else write_ns.
 */
uint64_t ttf_metrics__event_time(const struct ttf_token_event *ev);

/*
 * ITL samples of r in ns, one per gap between consecutive token events:
 * itl_ns[i] = event_time(i + 1) - event_time(i) (0 when negative). Writes at
 * most cap of them and returns how many there are (n_events - 1, or 0), so
 * the caller can detect a short buffer.
 */
uint32_t ttf_metrics__itl(const struct ttf_request *r, uint64_t *itl_ns, uint32_t cap);
/*
 * Same, into a malloc'ed array the caller frees (*itl_ns = NULL when there
 * are none). Returns the count or -ENOMEM.
 */
int ttf_metrics__itl_alloc(const struct ttf_request *r, uint64_t **itl_ns);
/* ITL sample i (0 .. n_events - 2) into *itl_ns. Returns 0 or -ERANGE. */
int ttf_metrics__itl_one(const struct ttf_request *r, uint32_t i, uint64_t *itl_ns);
/* 1 when itl_ns is an outlier of the request m describes (> TTF_OUTLIER_FACTOR x mean). */
int ttf_metrics__is_outlier(const struct ttf_req_metrics *m, uint64_t itl_ns);

#endif /* TTFTRACE_METRICS_H */
