// SPDX-License-Identifier: GPL-2.0-only
/*
 * HTTP/2 streams (h2.h): the table of a connection's streams, each one
 * request, and how a stream's response body is read: SSE or NDJSON events
 * and whole bodies through resp_body.h, gRPC messages (grpc.h), or, when the
 * content-type could not be read, judged from the body's first bytes.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include "user/proto/http2/h2.h"

struct h2_stream *h2_stream_find(struct h2 *s, uint32_t id)
{
	for (uint32_t i = 0; i < s->n; i++)
		if (s->streams[i]->id == id)
			return s->streams[i];
	return NULL;
}

void h2_stream_free(struct h2_stream *st)
{
	resp_body__free(&st->body);
	free(st->grpc_rd);
	free(st);
}

void h2_stream_drop(struct h2 *s, struct h2_stream *st)
{
	for (uint32_t i = 0; i < s->n; i++)
		if (s->streams[i] == st) {
			s->streams[i] = s->streams[--s->n];
			h2_stream_free(st);
			return;
		}
}

struct h2_stream *h2_stream_new(struct h2 *s, uint32_t id)
{
	struct h2_stream *st;

	if (s->n == s->cap) {
		uint32_t ncap = s->cap ? s->cap * 2 : 8;
		struct h2_stream **a = realloc(s->streams, ncap * sizeof(*a));

		if (!a)
			return NULL;
		s->streams = a;
		s->cap = ncap;
	}
	st = calloc(1, sizeof(*st));
	if (!st)
		return NULL;
	st->s = s;
	st->id = id;
	resp_body__init(&st->body, s->tc);
	s->streams[s->n++] = st;
	return st;
}

/* Both directions ended and the tracker has the request (or never had): forget it. */
void h2_stream_maybe_drop(struct h2 *s, struct h2_stream *st)
{
	if (!st->q && st->req_done && st->resp_done)
		h2_stream_drop(s, st);
}

/* A stream ends abnormally (RST_STREAM, GOAWAY): its request is aborted where it stands. */
void h2_stream_reset(struct h2 *s, struct h2_stream *st)
{
	struct track_req *q = st->q;

	st->req_done = st->resp_done = true;
	if (q) {
		track_req_flag(q, TTF_REQ_ABORTED);
		track_resp_bytes(q, st->resp_bytes);
		track_resp_cut(s->tc, q);	/* may emit now: forget() drops st */
		return;
	}
	h2_stream_drop(s, st);
}

/* One gRPC response message: one event, its tokens from the profile, else a chunk. */
static void grpc_message(void *ctx, const struct grpc_msg *m)
{
	struct h2_stream *st = ctx;
	struct h2 *s = st->s;
	const struct ttf_net_event *cur = track_cur(s->tc);
	struct ttf_token_event ev = { .n_tokens = 1, .flags = TTF_TOK_CONTENT };
	int64_t n;

	if (!st->q || st->body.opaque)
		return;
	if (st->rule) {
		n = m->whole && !m->compressed ?
			    grpc_count_tokens(st->rule, m->kept, m->kept_len) : -EPROTO;
		if (n < 0) {
			/* a message not read whole: no counts rather than wrong ones */
			st->body.opaque = true;
			track_resp_opaque(st->q, 0);
			return;
		}
		if (n == 0) {
			track_resp_event(s->tc, st->q, NULL);
			return;
		}
		ev.n_tokens = n > UINT32_MAX ? UINT32_MAX : (uint32_t)n;
	}
	ev.write_ns = cur ? cur->ts_ns : 0;
	ev.write_start_ns = cur ? cur->enter_ns : 0;
	track_resp_event(s->tc, st->q, &ev);
}

static void grpc_data(void *ctx, const char *data, size_t len)
{
	struct h2_stream *st = ctx;

	if (st->grpc_rd)
		grpc_reader__feed(st->grpc_rd, (const uint8_t *)data, len, grpc_message, st);
}

static void grpc_gap(void *ctx, size_t len)
{
	struct h2_stream *st = ctx;

	if (st->grpc_rd && grpc_reader__gap(st->grpc_rd, len, grpc_message, st))
		track_count(st->s->tc, &http2_counters, H2_CNT_GRPC_LOST, 1);
}

void h2_stream_grpc(struct h2_stream *st)
{
	struct h2 *s = st->s;
	struct resp_body_reader r = { .data = grpc_data, .gap = grpc_gap, .ctx = st };

	resp_body__read_with(&st->body, &r);
	st->grpc_rd = malloc(sizeof(*st->grpc_rd));
	if (st->grpc_rd)
		grpc_reader__init(st->grpc_rd);
	else
		track_oom(s->tc);
	st->rule = grpc_profile__find(track_grpc_profile(s->tc), st->path);
	if (!st->rule)
		track_req_flag(st->q, TTF_REQ_CHUNKS);
}

static bool starts(const uint8_t *p, size_t len, const char *w)
{
	size_t n = strlen(w);

	return len >= n && !memcmp(p, w, n);
}

/*
 * The body of a response whose content-type could not be read: an SSE
 * stream starts with a field or a comment; a gRPC one with a message
 * prefix (flag 0 or 1, a length that fits its DATA frame).
 */
static void sniff(struct h2_stream *st, const uint8_t *p, size_t len, uint32_t frame_len)
{
	st->sniff = false;
	if (starts(p, len, "data:") || starts(p, len, "event:") || starts(p, len, "id:") ||
	    starts(p, len, ":") || starts(p, len, "retry:")) {
		resp_body__events(&st->body, false);
		track_resp_head(st->q, track_req_info(st->q)->status, true);
	} else if (len >= 5 && p[0] <= 1 &&
		   ((uint32_t)p[1] << 24 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 8 | p[4]) + 5 <=
			   frame_len) {
		h2_stream_grpc(st);
		track_resp_head(st->q, track_req_info(st->q)->status, true);
	}
}

void h2_stream_body(struct h2_stream *st, const uint8_t *p, size_t len)
{
	struct h2 *s = st->s;

	if (st->sniff && st->q && !st->body_seen && !st->body.dec)
		sniff(st, p, len, s->dir[TRACK_SIDE_RESP].len);
	st->body_seen = true;
	resp_body__data(&st->body, (const char *)p, len);
}
