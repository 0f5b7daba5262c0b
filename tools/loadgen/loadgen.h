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
};

struct lg_req {
	unsigned idx;
	CURL *easy;
	struct curl_slist *hdrs;
	char *body;
	struct sse_splitter *splitter;
	const struct lg_opts *opts;

	uint64_t start_ns;       /* request headers handed to the socket (curl debug callback) */
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

/* Build request idx's body and easy handle. Returns 0 or negative errno. */
int lg_req__init(struct lg_req *r, unsigned idx, const struct lg_opts *o);
/* Record curl's final facts after the transfer ended with rc. */
void lg_req__finish(struct lg_req *r, CURLcode rc);
void lg_req__cleanup(struct lg_req *r);
/* Tokens: usage.completion_tokens when the server sent it, else tokens from events. */
uint32_t lg_req__tokens(const struct lg_req *r);
/* NULL when the request succeeded, else a short reason. */
const char *lg_req__failure(const struct lg_req *r);

/*
 * Write {"requests": [...], "summary": {...}} to path (NULL: stdout) and a
 * short human summary to stderr unless quiet. Returns 0 or negative errno.
 */
int lg_output(const struct lg_opts *o, struct lg_req *reqs, unsigned n, uint64_t wall_ns);

#endif /* TTFTRACE_LOADGEN_H */
