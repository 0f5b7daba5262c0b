// SPDX-License-Identifier: GPL-2.0-only
/* One streamed request: its body, its curl handle and what it observed. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <cjson/cJSON.h>

#include "user/proto/stream/sse.h"
#include "tools/loadgen/loadgen.h"

uint64_t lg_now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + ts.tv_nsec;
}

/*
 * n printable characters, different for each request so that no server-side
 * prefix cache turns the prefill into a lookup. Words of lowercase letters:
 * with the demo model's single-character vocabulary this is n tokens; on
 * real tokenizers it is roughly n / 4 to n / 2.
 */
static char *make_prompt(unsigned n, uint64_t seed)
{
	uint64_t x = seed * 0x9e3779b97f4a7c15ull + 1;
	char *p = malloc(n + 1);

	if (!p)
		return NULL;
	for (unsigned i = 0; i < n; i++) {
		x ^= x << 13;
		x ^= x >> 7;
		x ^= x << 17;
		p[i] = (x % 6 == 0 && i > 0 && p[i - 1] != ' ') ? ' ' : 'a' + (x >> 8) % 26;
	}
	p[n] = '\0';
	return p;
}

static char *make_body(const struct lg_opts *o, unsigned idx)
{
	cJSON *root = cJSON_CreateObject(), *msgs, *msg, *so;
	char *prompt = make_prompt(o->prompt_tokens, (uint64_t)o->seed * 1000003ull + idx);
	char *out = NULL;

	if (!root || !prompt)
		goto cleanup;
	if (o->api == LG_API_LLAMACPP) {
		cJSON_AddStringToObject(root, "prompt", prompt);
		cJSON_AddNumberToObject(root, "n_predict", o->max_tokens);
	} else {
		cJSON_AddStringToObject(root, "model", o->model);
		if (o->api == LG_API_CHAT) {
			msgs = cJSON_AddArrayToObject(root, "messages");
			msg = cJSON_CreateObject();
			if (!msgs || !msg)
				goto cleanup;
			cJSON_AddItemToArray(msgs, msg);
			cJSON_AddStringToObject(msg, "role", "user");
			cJSON_AddStringToObject(msg, "content", prompt);
		} else {
			cJSON_AddStringToObject(root, "prompt", prompt);
		}
		cJSON_AddNumberToObject(root, "max_tokens", o->max_tokens);
		if (o->include_usage) {
			so = cJSON_AddObjectToObject(root, "stream_options");
			if (!so)
				goto cleanup;
			cJSON_AddBoolToObject(so, "include_usage", 1);
		}
	}
	cJSON_AddBoolToObject(root, "stream", 1);
	cJSON_AddNumberToObject(root, "seed", o->seed + idx);
	if (o->ignore_eos)
		cJSON_AddBoolToObject(root, "ignore_eos", 1);
	out = cJSON_PrintUnformatted(root);
cleanup:
	cJSON_Delete(root);
	free(prompt);
	return out;
}

static void on_event(void *ctx, const char *data, size_t len, uint64_t tag)
{
	struct lg_req *r = ctx;
	struct sse_event_info ev;

	sse_classify(data, len, &ev);
	switch (ev.kind) {
	case SSE_EV_TOKEN:
		if (!r->first_token_ns)
			r->first_token_ns = tag;
		r->last_token_ns = tag;
		r->events++;
		r->event_tokens += ev.n_tokens ? ev.n_tokens : 1;
		break;
	case SSE_EV_DONE:
		r->done_marker = true;
		break;
	case SSE_EV_ERROR:
		r->error_event = true;
		break;
	default:
		break;
	}
	if (ev.has_usage) {
		r->has_usage = true;
		r->usage_completion_tokens = ev.completion_tokens;
		r->usage_prompt_tokens = ev.prompt_tokens;
	}
}

static size_t on_data(char *buf, size_t size, size_t nmemb, void *ctx)
{
	struct lg_req *r = ctx;
	uint64_t now = lg_now_ns();
	size_t n = size * nmemb;

	r->end_ns = now;
	if (sse_splitter__feed(r->splitter, buf, n, now) < 0)
		return CURL_WRITEFUNC_ERROR;
	return n;
}

/*
 * The first HEADER_OUT: libcurl reports the headers after their write
 * returned, so the server has the request by then (sent_ns). Before
 * libcurl 7.80 it is the start too.
 */
static int on_debug(CURL *easy, curl_infotype type, char *data, size_t size, void *ctx)
{
	struct lg_req *r = ctx;

	if (type != CURLINFO_HEADER_OUT || r->sent_ns)
		return 0;
	r->sent_ns = lg_now_ns();
#if LIBCURL_VERSION_NUM < 0x075000
	r->start_ns = r->sent_ns;
#endif
	return 0;
}

#if LIBCURL_VERSION_NUM >= 0x075000
/*
 * The request's start: libcurl calls this once the connection is up, right
 * before it sends the request (CURLOPT_PREREQFUNCTION, 7.80). HEADER_OUT
 * comes after the write, late by however long the machine held this thread
 * there, and a TTFT from it short by as much.
 */
static int on_prereq(void *ctx, char *primary_ip, char *local_ip, int primary_port,
		     int local_port)
{
	struct lg_req *r = ctx;

	if (!r->start_ns)
		r->start_ns = lg_now_ns();
	return CURL_PREREQFUNC_OK;
}
#endif

int lg_req__init(struct lg_req *r, unsigned idx, const struct lg_opts *o)
{
	memset(r, 0, sizeof(*r));
	r->idx = idx;
	r->opts = o;
	r->body = make_body(o, idx);
	r->splitter = sse_splitter__new(on_event, r);
	r->easy = curl_easy_init();
	r->hdrs = curl_slist_append(NULL, "Content-Type: application/json");
	if (r->hdrs)
		r->hdrs = curl_slist_append(r->hdrs, "Accept: text/event-stream");
	/* No "Expect: 100-continue" round trip before the body. */
	if (r->hdrs)
		r->hdrs = curl_slist_append(r->hdrs, "Expect:");
	if (!r->body || !r->splitter || !r->easy || !r->hdrs)
		return -ENOMEM;

	curl_easy_setopt(r->easy, CURLOPT_URL, o->url);
	curl_easy_setopt(r->easy, CURLOPT_POSTFIELDS, r->body);
	curl_easy_setopt(r->easy, CURLOPT_HTTPHEADER, r->hdrs);
	curl_easy_setopt(r->easy, CURLOPT_WRITEFUNCTION, on_data);
	curl_easy_setopt(r->easy, CURLOPT_WRITEDATA, r);
	/* The debug callback only runs in verbose mode; it replaces curl's own
	 * verbose printing, so nothing reaches stderr. */
	curl_easy_setopt(r->easy, CURLOPT_VERBOSE, 1L);
	curl_easy_setopt(r->easy, CURLOPT_DEBUGFUNCTION, on_debug);
	curl_easy_setopt(r->easy, CURLOPT_DEBUGDATA, r);
#if LIBCURL_VERSION_NUM >= 0x075000
	curl_easy_setopt(r->easy, CURLOPT_PREREQFUNCTION, on_prereq);
	curl_easy_setopt(r->easy, CURLOPT_PREREQDATA, r);
#endif
	curl_easy_setopt(r->easy, CURLOPT_ERRORBUFFER, r->errbuf);
	curl_easy_setopt(r->easy, CURLOPT_PRIVATE, r);
	curl_easy_setopt(r->easy, CURLOPT_NOSIGNAL, 1L);
	curl_easy_setopt(r->easy, CURLOPT_TCP_NODELAY, 1L);
	curl_easy_setopt(r->easy, CURLOPT_TIMEOUT_MS, (long)o->timeout_s * 1000L);
	curl_easy_setopt(r->easy, CURLOPT_HTTP_VERSION, (long)CURL_HTTP_VERSION_1_1);
	return 0;
}

void lg_req__finish(struct lg_req *r, CURLcode rc)
{
	long nconn = 0;

	r->finished = true;
	r->curl_rc = rc;
	curl_easy_getinfo(r->easy, CURLINFO_RESPONSE_CODE, &r->status);
	curl_easy_getinfo(r->easy, CURLINFO_LOCAL_PORT, &r->local_port);
	curl_easy_getinfo(r->easy, CURLINFO_NUM_CONNECTS, &nconn);
	r->new_conn = nconn > 0;
	if (rc != CURLE_OK && !r->errbuf[0])
		snprintf(r->errbuf, sizeof(r->errbuf), "%s", curl_easy_strerror(rc));
}

void lg_req__cleanup(struct lg_req *r)
{
	if (r->easy)
		curl_easy_cleanup(r->easy);
	curl_slist_free_all(r->hdrs);
	sse_splitter__free(r->splitter);
	free(r->body);
	memset(r, 0, sizeof(*r));
}

uint32_t lg_req__tokens(const struct lg_req *r)
{
	return r->has_usage ? r->usage_completion_tokens : r->event_tokens;
}

const char *lg_req__failure(const struct lg_req *r)
{
	if (!r->finished)
		return "not finished";
	if (r->curl_rc != CURLE_OK)
		return r->errbuf;
	if (r->status >= 400 || r->status == 0)
		return "HTTP error status";
	if (r->error_event)
		return "error event in the stream";
	if (!r->events)
		return "no token events";
	return NULL;
}
