/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * loadgen: a streaming load generator that measures, on the client side,
 * what ttftrace measures on the server side, so that the two can be joined
 * per request (client local port = server-side remote port, plus the
 * request's position on its keep-alive connection).
 *
 * Times are CLOCK_MONOTONIC nanoseconds, the clock of bpf_ktime_get_ns(),
 * so they compare directly with ttftrace's; 0 means "not observed".
 */
#ifndef TTFTRACE_LOADGEN_H
#define TTFTRACE_LOADGEN_H

#include <stdbool.h>
#include <stdint.h>
#include <curl/curl.h>
#include "user/model/slo.h"

/* Exit codes (also in --help and README.md "SLO gates"). */
enum lg_exit {
	LG_EXIT_OK = 0,
	LG_EXIT_RUNTIME = 1,	/* libcurl, memory, files */
	LG_EXIT_USAGE = 2,	/* bad command line, bad --slo */
	LG_EXIT_FAILED = 3,	/* some requests failed */
	LG_EXIT_SLO = 4,	/* --slo not met (a sweep: at no step) */
};

#define LG_MAX_STEPS 32

enum lg_api {
	LG_API_CHAT,       /* OpenAI /v1/chat/completions */
	LG_API_COMPLETION, /* OpenAI /v1/completions */
	LG_API_LLAMACPP,   /* llama.cpp /completion */
};

struct lg_opts {
	const char *url;
	const char *output;    /* -o FILE; NULL: stdout */
	const char *model;     /* "model" field of OpenAI requests */
	enum lg_api api;
	bool api_set;
	unsigned n_requests;
	unsigned concurrency;
	unsigned prompt_tokens; /* prompt length in printable characters */
	unsigned max_tokens;
	unsigned seed;
	unsigned timeout_s;     /* per request */
	bool include_usage;
	bool ignore_eos;
	bool quiet;
	bool n_set;		/* -n given (sweeps default to max(16, 4 x C) per step) */
	unsigned steps[LG_MAX_STEPS];	/* --sweep: concurrency per step; n_steps 0 = no sweep */
	unsigned n_steps;
	unsigned warmup;	/* --warmup: requests per step before measuring */
	bool warmup_set;	/* else warmup = C */
	const char *slo_spec;	/* --slo SPEC; slo is its parse */
	struct slo_set slo;
	const char *sweep_result;	/* --sweep-result FILE: re-read a sweep, run nothing */
	const char *ttftrace_ndjson;	/* --ttftrace-ndjson FILE: server-side side by side */
	struct progress *progress;	/* live line on a terminal; NULL none */
	unsigned idx0;		/* index of the first request (prompts differ across steps) */
};

struct lg_req {
	unsigned idx;
	CURL *easy;
	struct curl_slist *hdrs;
	char *body;
	struct sse_splitter *splitter;
	const struct lg_opts *opts;

	uint64_t start_ns;       /* just before the request's write (libcurl's pre-request callback) */
	uint64_t sent_ns;        /* after the headers' write returned (curl debug callback) */
	uint64_t first_token_ns; /* receive time of the first token event */
	uint64_t last_token_ns;  /* receive time of the last token event */
	uint64_t end_ns;         /* last response byte received */
	uint32_t events;         /* token events */
	uint32_t event_tokens;   /* tokens the events carry (server-stated, else 1 each) */
	bool has_usage;
	uint32_t usage_completion_tokens;
	uint32_t usage_prompt_tokens;
	bool done_marker;        /* data: [DONE] seen */
	bool error_event;        /* {"error": ...} in the stream */

	long status;             /* HTTP status; 0 none */
	long local_port;
	bool new_conn;           /* false when the transfer reused a kept-alive connection */
	unsigned conn_seq;       /* requests before this one on the same local port */
	CURLcode curl_rc;
	bool finished;
	char errbuf[CURL_ERROR_SIZE];
};

uint64_t lg_now_ns(void);

/*
 * Send o->n_requests requests at o->concurrency into reqs[] (zeroed, n_requests
 * long); *wall_ns = the loop's duration. Returns 0 or negative errno.
 */
int lg_run(const struct lg_opts *o, struct lg_req *reqs, uint64_t *wall_ns);

/* Build request idx's body and easy handle. Returns 0 or negative errno. */
int lg_req__init(struct lg_req *r, unsigned idx, const struct lg_opts *o);
/* Record curl's final facts after the transfer ended with rc. */
void lg_req__finish(struct lg_req *r, CURLcode rc);
void lg_req__cleanup(struct lg_req *r);
/* Tokens: usage.completion_tokens when the server sent it, else tokens from events. */
uint32_t lg_req__tokens(const struct lg_req *r);
/* NULL when the request succeeded, else a short reason. */
const char *lg_req__failure(const struct lg_req *r);

/* Client-side metrics of one request in ms; NAN when not observed. */
double lg_req__ttft_ms(const struct lg_req *r);
double lg_req__tpot_ms(const struct lg_req *r);
double lg_req__e2e_ms(const struct lg_req *r);

/*
 * --sweep: warm-up and measured requests per step, the client table on
 * stderr, JSON {"sweep", "steps", "best_concurrency"} to -o / stdout.
 * --sweep-result: re-read that JSON, join --ttftrace-ndjson by time window,
 * print the side-by-side table. Both return an enum lg_exit.
 */
int lg_sweep(struct lg_opts *o);
/* o->slo on the client numbers of reqs[0..n): prints the verdict; LG_EXIT_OK or LG_EXIT_SLO. */
int lg_slo_check_run(const struct lg_opts *o, struct lg_req *reqs, unsigned n);
int lg_sweep_result(const struct lg_opts *o);

/*
 * Write {"requests": [...], "summary": {...}} to path (NULL: stdout) and a
 * short human summary to stderr unless quiet. Returns 0 or negative errno.
 */
int lg_output(const struct lg_opts *o, struct lg_req *reqs, unsigned n, uint64_t wall_ns);

#endif /* TTFTRACE_LOADGEN_H */
