// SPDX-License-Identifier: GPL-2.0-only
/*
 * One HTTP response body, read the same way over HTTP/1.1 and HTTP/2
 * (resp_body.h): decoding, events, the whole body's usage report.
 */
#include <stdlib.h>
#include <string.h>
#include "user/proto/stream/content_coding.h"
#include "user/proto/stream/ndjson.h"
#include "user/proto/stream/resp_body.h"
#include "user/proto/stream/sse.h"

#define BODY_MAX_BYTES (64u * 1024) /* non-streamed body kept to read its usage */

static void usage_of(struct track_req *q, const struct sse_event_info *info)
{
	if (info->has_usage)
		track_req_usage(q, info->completion_tokens, info->prompt_tokens);
}

void resp_body__init(struct resp_body *b, struct track_conn *tc)
{
	memset(b, 0, sizeof(*b));
	b->tc = tc;
}

void resp_body__reset(struct resp_body *b)
{
	free(b->body);
	b->body = NULL;
	b->body_len = 0;
	b->body_incomplete = false;
	cc_decoder__free(b->dec);
	b->dec = NULL;
	b->coded = b->opaque = false;
	b->first_body_ns = 0;
	b->q = NULL;
	b->mode = RESP_BODY_WHOLE;
	b->reader = (struct resp_body_reader){};
	if (b->sse)
		sse_splitter__reset(b->sse);
}

void resp_body__free(struct resp_body *b)
{
	resp_body__reset(b);
	sse_splitter__free(b->sse);
	b->sse = NULL;
}

/* ---- events ---- */

static void on_event(void *ctx, const char *data, size_t len, uint64_t tag)
{
	resp_body__event(ctx, data, len, tag);
}

/* The response id, from the stream's first events only (message hops). */
static void response_id(struct track_req *q, const char *data, size_t len)
{
	char id[sizeof(track_req_info(q)->resp_id)];

	if (track_req_info(q)->resp_id[0] || track_req_info(q)->n_sse_events >= 2)
		return;
	if (!sse_response_id(data, len, id, sizeof(id)))
		track_resp_id(q, id, strlen(id));
}

void resp_body__event(struct resp_body *b, const char *data, size_t len, uint64_t tag)
{
	struct track_req *q = b->q;
	const struct ttf_net_event *cur;
	struct sse_event_info info;
	struct ttf_token_event ev = {};

	if (!q)
		return;
	if (b->lines)
		ndjson_classify(data, len, &info);
	else
		sse_classify(data, len, &info);
	usage_of(q, &info);
	if (!b->lines)
		response_id(q, data, len);
	switch (info.kind) {
	case SSE_EV_TOKEN:
		cur = track_cur(b->tc);
		ev.write_ns = tag;
		ev.write_start_ns = cur && cur->ts_ns == tag ? cur->enter_ns : 0;
		ev.n_tokens = info.n_tokens;
		ev.flags = info.token_flags;
		track_resp_event(b->tc, q, &ev);
		break;
	case SSE_EV_DONE:
		track_resp_event(b->tc, q, NULL);
		track_req_flag(q, TTF_REQ_DONE_MARKER);
		break;
	case SSE_EV_ERROR:
		track_resp_event(b->tc, q, NULL);
		track_req_flag(q, TTF_REQ_ERROR);
		break;
	default:
		track_resp_event(b->tc, q, NULL);
		break;
	}
}

/* ---- how the body is read ---- */

static void decoded(void *ctx, const char *data, size_t len);

void resp_body__begin(struct resp_body *b, struct track_req *q, enum http_coding coding)
{
	b->q = q;
	b->mode = RESP_BODY_WHOLE;
	if (coding == HTTP_CODING_NONE)
		return;
	b->coded = true;
	if (cc_decodable(coding)) {
		b->dec = cc_decoder__new(coding, decoded, b);
		if (!b->dec)
			track_oom(b->tc);
	}
	if (!b->dec) {
		/* br, zstd ...: not decoded, no counts (never wrong ones) */
		b->opaque = true;
		track_resp_opaque(q, 0);
	}
}

void resp_body__unreadable(struct resp_body *b, struct track_req *q)
{
	b->q = q;
	b->mode = RESP_BODY_WHOLE;
	b->opaque = true;
	track_resp_opaque(q, 0);
}

void resp_body__events(struct resp_body *b, bool lines)
{
	b->mode = RESP_BODY_EVENTS;
	b->lines = lines;
	if (!b->sse) {
		b->sse = sse_splitter__new(on_event, b);
		if (!b->sse)
			track_oom(b->tc);
	} else {
		sse_splitter__reset(b->sse);
	}
	if (b->sse)
		sse_splitter__set_lines(b->sse, lines);
}

void resp_body__read_with(struct resp_body *b, const struct resp_body_reader *r)
{
	b->mode = RESP_BODY_READER;
	b->reader = *r;
}

/* ---- bytes ---- */

static void keep(struct resp_body *b, const char *data, size_t len)
{
	char *n;

	if (b->body_incomplete)
		return;
	if (b->body_len + len > BODY_MAX_BYTES) {
		b->body_incomplete = true;
		return;
	}
	n = realloc(b->body, b->body_len + len);
	if (!n) {
		b->body_incomplete = true;
		return;
	}
	memcpy(n + b->body_len, data, len);
	b->body = n;
	b->body_len += len;
}

/* Body bytes as the server meant them (decoded when coded). */
static void plain(struct resp_body *b, const char *data, size_t len)
{
	if (!b->q || b->opaque)
		return;
	switch (b->mode) {
	case RESP_BODY_EVENTS:
		if (b->sse && sse_splitter__feed(b->sse, data, len, track_cur(b->tc)->ts_ns))
			track_oom(b->tc);
		break;
	case RESP_BODY_READER:
		if (b->reader.data)
			b->reader.data(b->reader.ctx, data, len);
		break;
	default:
		keep(b, data, len);
	}
}

static void decoded(void *ctx, const char *data, size_t len)
{
	plain(ctx, data, len);
}

/*
 * The coded body cannot be followed any more (a byte not captured, or data
 * the coding rejects): no token counts from here on, never wrong ones.
 */
static void go_opaque(struct resp_body *b)
{
	if (b->opaque)
		return;
	b->opaque = true;
	cc_decoder__free(b->dec);
	b->dec = NULL;
	if (b->sse)
		sse_splitter__reset(b->sse);
	/* a stream's TTFT falls back to its first body write; a whole body's is its end */
	track_resp_opaque(b->q, track_req_info(b->q)->flags & TTF_REQ_STREAM ?
				b->first_body_ns : 0);
}

void resp_body__data(struct resp_body *b, const char *data, size_t len)
{
	const struct ttf_net_event *cur = track_cur(b->tc);
	bool first = !b->first_body_ns;

	if (!b->q)
		return;
	if (first && cur)
		b->first_body_ns = cur->ts_ns;
	if (b->opaque) {
		if (first && track_req_info(b->q)->flags & TTF_REQ_STREAM)
			track_resp_opaque_first(b->tc, b->q);
		return;
	}
	if (b->dec) {
		if (cc_decoder__feed(b->dec, data, len))
			go_opaque(b);
		return;
	}
	plain(b, data, len);
}

void resp_body__gap(struct resp_body *b, size_t len)
{
	if (!b->q)
		return;
	track_req_flag(b->q, TTF_REQ_TRUNCATED);
	if (!b->first_body_ns && track_cur(b->tc))
		b->first_body_ns = track_cur(b->tc)->ts_ns;
	if (b->coded) {
		go_opaque(b);	/* a decoder cannot skip bytes: what follows is unreadable */
		return;
	}
	if (b->opaque)
		return;
	switch (b->mode) {
	case RESP_BODY_EVENTS:
		if (b->sse)
			sse_splitter__gap(b->sse, len);
		break;
	case RESP_BODY_READER:
		if (b->reader.gap)
			b->reader.gap(b->reader.ctx, len);
		break;
	default:
		b->body_incomplete = true;
	}
}

void resp_body__end(struct resp_body *b)
{
	struct sse_event_info info;

	if (!b->q)
		return;
	if (b->dec && !b->opaque)
		track_req_flag(b->q, TTF_REQ_DECODED);
	if (b->mode != RESP_BODY_WHOLE || b->body_incomplete || !b->body_len || b->opaque)
		return;
	sse_classify(b->body, b->body_len, &info);
	usage_of(b->q, &info);
	if (info.kind == SSE_EV_ERROR)
		track_req_flag(b->q, TTF_REQ_ERROR);
}
