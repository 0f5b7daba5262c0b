// SPDX-License-Identifier: GPL-2.0-only
/*
 * HTTP/1.1 recognizer (recognizer.h): one HTTP parser per direction (http.c),
 * requests and responses matched in order, text/event-stream bodies split
 * into events and classified (sse.c), a non-streamed body kept (bounded) to
 * read its usage report.
 *
 * A parser that lost sync skips records until one starts like a message of
 * its direction, and starts over there.
 */
#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "user/proto/stream/body_model.h"
#include "user/proto/http1/http.h"
#include "user/proto/recognizer.h"
#include "user/proto/stream/resp_body.h"

struct http1 {
	struct track_conn *tc;
	struct http_parser *reqp, *respp;
	struct track_req *rx;		/* request whose bytes are being parsed */
	struct track_req *tx;		/* request whose response is being parsed */
	struct resp_body body;		/* tx's body */
	struct body_model model;	/* rx's "model", from its body's first bytes */
	uint64_t n_feeds;		/* records fed so far */
	bool rx_expect;			/* rx said Expect: 100-continue, its body not begun */
	uint64_t rx_head_feed;		/* the record that ended rx's head */
	uint64_t rx_head_arrival_ns;	/* ... its newest data's arrival */
	uint64_t rx_body_bytes;		/* rx's body bytes so far, captured or not */
	uint32_t rx_hash;		/* FNV-1a of its first BODY_HASH_BYTES (hops.h join) */
	uint32_t rx_hash_n;		/* bytes hashed */
	bool rx_hash_gap;		/* a gap came before BODY_HASH_BYTES were hashed */
};

/* A request body is recognised again (a gateway forwards it) by its first bytes' hash. */
#define BODY_HASH_BYTES 128

/* The response ends where its last byte was seen. */
static void force_end(struct http1 *s, struct track_req *q)
{
	if (s->tx == q && http_parser__in_message(s->respp))
		track_resp_bytes(q, http_parser__msg_bytes(s->respp));
	http_parser__resync(s->respp);
	s->tx = NULL;
	resp_body__reset(&s->body);
	track_resp_cut(s->tc, q);
}

/* ---- request side ---- */

static void req_begin(void *ctx)
{
	struct http1 *s = ctx;
	struct track_req *q, *tx = s->tx;

	/*
	 * A new request while the previous response can only end at close, lost
	 * sync, or already said [DONE]: the client is done reading it.
	 */
	if (tx && (track_req_info(tx)->flags & TTF_REQ_DONE_MARKER ||
		   http_parser__lost(s->respp) ||
		   http_parser__body_mode(s->respp) == HTTP_BODY_CLOSE))
		force_end(s, tx);

	q = track_req_begin(s->tc);
	if (q)
		s->rx = q;
	body_model__reset(&s->model);
	s->rx_body_bytes = 0;
	s->rx_hash = 2166136261u;
	s->rx_hash_n = 0;
	s->rx_hash_gap = false;
}

static void req_head(void *ctx, struct http_head *h)
{
	struct http1 *s = ctx;

	const struct ttf_net_event *cur = track_cur(s->tc);

	s->rx_expect = false;
	if (!s->rx)
		return;
	track_req_head(s->rx, h->method, h->path, ttf_api_of_path(h->path));
	track_req_traceparent(s->tc, s->rx, h->n_traceparent, &h->traceparent);
	if (h->expect_continue && cur) {
		track_req_expect(s->rx, false, 0);
		s->rx_expect = true;
		s->rx_head_feed = s->n_feeds;
		s->rx_head_arrival_ns = cur->arrival_last_ns;
	}
}

/*
 * The first body byte of a request that said Expect: 100-continue: the
 * client waited from its head's arrival to here. Known only when the body
 * came in a later read than the head, both with arrival times.
 */
static void expect_body_begins(struct http1 *s)
{
	const struct ttf_net_event *cur = track_cur(s->tc);

	if (!s->rx_expect || !s->rx)
		return;
	s->rx_expect = false;
	if (cur && s->n_feeds != s->rx_head_feed && s->rx_head_arrival_ns &&
	    cur->arrival_first_ns >= s->rx_head_arrival_ns)
		track_req_expect(s->rx, true, cur->arrival_first_ns - s->rx_head_arrival_ns);
}

static void req_body(void *ctx, const char *data, size_t len)
{
	struct http1 *s = ctx;
	char model[BODY_MODEL_MAX];

	expect_body_begins(s);
	if (s->rx && body_model__feed(&s->model, data, len, model))
		track_req_model(s->rx, model);
	s->rx_body_bytes += len;
	for (size_t i = 0; !s->rx_hash_gap && i < len && s->rx_hash_n < BODY_HASH_BYTES; i++) {
		s->rx_hash = (s->rx_hash ^ (uint8_t)data[i]) * 16777619u;
		s->rx_hash_n++;
	}
}

static void req_body_gap(void *ctx, size_t len)
{
	struct http1 *s = ctx;

	expect_body_begins(s);
	s->model.done = 1;	/* bytes not captured: the body is no longer contiguous */
	s->rx_body_bytes += len;
	if (s->rx_hash_n < BODY_HASH_BYTES)
		s->rx_hash_gap = true;
}

static void req_end(void *ctx, uint64_t msg_bytes)
{
	struct http1 *s = ctx;
	struct track_req *q = s->rx;

	if (!q)
		return;
	s->rx = NULL;
	/* the hash names the body when it covers its start: 128 bytes, or all of a shorter one */
	track_req_body(q, s->rx_body_bytes,
		       s->rx_hash_n && !s->rx_hash_gap &&
		       (s->rx_hash_n == BODY_HASH_BYTES || s->rx_hash_n == s->rx_body_bytes) ?
		       s->rx_hash | 1 : 0);
	track_req_end(s->tc, q, msg_bytes);
}

/* ---- response side ---- */

static void resp_begin(void *ctx)
{
	struct http1 *s = ctx;

	s->tx = track_resp_begin(s->tc);
}

static void resp_head(void *ctx, struct http_head *h)
{
	struct http1 *s = ctx;
	struct track_req *q = s->tx;

	if (!q)
		return;
	if (h->status < 200) {
		/* interim (100 Continue): the real response is still to come */
		s->tx = NULL;
		resp_body__reset(&s->body);
		track_resp_interim(s->tc, q);
		return;
	}
	track_resp_head(q, h->status, h->event_stream || h->ndjson);
	if (h->status >= 400)
		track_req_flag(q, TTF_REQ_ERROR);
	if (!strcmp(track_req_info(q)->method, "HEAD"))
		h->no_body = true;
	resp_body__begin(&s->body, q, h->coding);
	if (h->event_stream || h->ndjson)
		resp_body__events(&s->body, h->ndjson && !h->event_stream);
}

static void resp_body(void *ctx, const char *data, size_t len)
{
	struct http1 *s = ctx;

	if (s->tx)
		resp_body__data(&s->body, data, len);
}

static void resp_body_gap(void *ctx, size_t len)
{
	struct http1 *s = ctx;

	if (s->tx)
		resp_body__gap(&s->body, len);
}

static void resp_end(void *ctx, uint64_t msg_bytes)
{
	struct http1 *s = ctx;
	struct track_req *q = s->tx;
	const struct ttf_request *r;

	if (!q)
		return;
	r = track_req_info(q);
	resp_body__end(&s->body);
	if ((r->flags & TTF_REQ_NONSTREAM) && r->status < 400 && r->status != 0)
		track_resp_whole(s->tc, q);
	resp_body__reset(&s->body);
	s->tx = NULL;
	track_resp_end(s->tc, q, msg_bytes);
}

static const struct http_parser_cbs req_cbs = {
	.on_begin = req_begin,
	.on_head = req_head,
	.on_body = req_body,
	.on_body_gap = req_body_gap,
	.on_end = req_end,
};

static const struct http_parser_cbs resp_cbs = {
	.on_begin = resp_begin,
	.on_head = resp_head,
	.on_body = resp_body,
	.on_body_gap = resp_body_gap,
	.on_end = resp_end,
};

/* ---- recognizer ---- */

static bool looks_binary(const uint8_t *p, size_t n)
{
	for (size_t i = 0; i < n && i < 16; i++)
		if (p[i] < 0x20 && p[i] != '\r' && p[i] != '\n' && p[i] != '\t')
			return true;
	return false;
}

static enum proto_verdict http1_detect(const char *buf, size_t len, bool is_read,
				       enum track_role *role)
{
	if (len && http_looks_like_request(buf, len)) {
		*role = is_read ? TRACK_ROLE_SERVER : TRACK_ROLE_CLIENT;
		return PROTO_YES;
	}
	if (len && looks_binary((const uint8_t *)buf, len))
		return PROTO_NO;
	return PROTO_MAYBE;
}

static void http1_free(void *st)
{
	struct http1 *s = st;

	if (!s)
		return;
	http_parser__free(s->reqp);
	http_parser__free(s->respp);
	resp_body__free(&s->body);
	free(s);
}

static void *http1_open(struct track_conn *tc, enum track_role role)
{
	struct http1 *s = calloc(1, sizeof(*s));

	if (!s)
		return NULL;
	s->tc = tc;
	resp_body__init(&s->body, tc);
	s->reqp = http_parser__new(true, &req_cbs, s);
	s->respp = http_parser__new(false, &resp_cbs, s);
	if (!s->reqp || !s->respp) {
		http1_free(s);
		return NULL;
	}
	return s;
}

static void http1_feed(void *st, enum track_side side, uint32_t gap_before, const char *buf,
		       size_t len, size_t gap_after)
{
	struct http1 *s = st;
	bool req_side = side == TRACK_SIDE_REQ;
	struct http_parser *p = req_side ? s->reqp : s->respp;
	struct track_req *victim;
	int err = 0;

	s->n_feeds++;
	if (http_parser__lost(p)) {
		if (req_side ? !http_looks_like_request(buf, len) :
			       !http_looks_like_response(buf, len))
			return;
		if (req_side)
			s->rx = NULL;
		else if (s->tx)
			force_end(s, s->tx);
		http_parser__resync(p);
		gap_before = 0;	/* the parser starts over at this record */
	}

	if (!req_side && s->tx)
		track_resp_touch(s->tc, s->tx);
	if (gap_before && !http_parser__lost(p)) {
		victim = req_side ? s->rx : s->tx;
		if (victim)
			track_req_flag(victim, TTF_REQ_TRUNCATED);
		err = http_parser__gap(p, gap_before);
	}
	if (!err)
		err = http_parser__feed(p, buf, len);
	if (!err && gap_after)
		err = http_parser__gap(p, gap_after);
	if (err) {
		track_lost_sync(s->tc);
		victim = req_side ? s->rx : s->tx;
		if (victim)
			track_req_flag(victim, TTF_REQ_UNKNOWN |
					       (gap_after ? TTF_REQ_TRUNCATED : 0));
	}
}

static void http1_forget(void *st, struct track_req *q)
{
	struct http1 *s = st;

	if (s->rx == q)
		s->rx = NULL;
	if (s->tx == q) {
		s->tx = NULL;
		resp_body__reset(&s->body);
	}
}

static void http1_close(void *st, bool until_close_ends)
{
	struct http1 *s = st;

	/* byte counts of the messages cut short, before eof forgets them */
	if (s->tx && http_parser__in_message(s->respp))
		track_resp_bytes(s->tx, http_parser__msg_bytes(s->respp));
	if (s->rx && http_parser__in_message(s->reqp))
		track_req_bytes(s->rx, http_parser__msg_bytes(s->reqp));
	if (!until_close_ends)
		http_parser__resync(s->respp);
	http_parser__eof(s->respp);	/* a body that lasts until close ends here */
}

const struct proto_recognizer proto_http1 = {
	.name = "http/1.1",
	.detect = http1_detect,
	.open = http1_open,
	.feed = http1_feed,
	.forget = http1_forget,
	.close = http1_close,
	.free = http1_free,
};
