// SPDX-License-Identifier: GPL-2.0-only
/*
 * What HTTP/2 header blocks mean (h2.h): a block decoded with HPACK
 * (hpack.h), its fields read (pseudo-headers, content-type,
 * content-encoding, traceparent, grpc-status), then a request begun or a
 * response's head, interim response or trailers taken.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "user/proto/http2/h2.h"

/* What a header block said. */
struct h2_head {
	int status;			/* 0: none */
	bool have_method, have_path;
	bool unknown;			/* some field referenced an unknown entry */
	char method[8], path[96];
	bool sse, ndjson, grpc;		/* content-type: text/event-stream, x-ndjson, grpc */
	bool have_ctype;		/* a content-type field was read */
	enum http_coding coding;	/* content-encoding */
	int grpc_status;		/* -1: none */
	struct ttf_trace_parent traceparent;
	int n_traceparent;		/* traceparent fields seen */
};


static bool is(const struct hpack_field *f, const char *name)
{
	return f->name_known && f->name_len == strlen(name) && !memcmp(f->name, name, f->name_len);
}

static void copy_value(char *dst, size_t cap, const struct hpack_field *f)
{
	size_t n = f->value_len < cap - 1 ? f->value_len : cap - 1;

	memcpy(dst, f->value, n);
	dst[n] = '\0';
}

static void on_field(void *ctx, const struct hpack_field *f)
{
	struct h2_head *h = ctx;

	if (!f->name_known || !f->value_known) {
		h->unknown = true;
		return;
	}
	if (is(f, ":status")) {
		char v[8];

		copy_value(v, sizeof(v), f);
		h->status = atoi(v);
	} else if (is(f, ":method")) {
		copy_value(h->method, sizeof(h->method), f);
		h->have_method = true;
	} else if (is(f, ":path")) {
		char *q;

		copy_value(h->path, sizeof(h->path), f);
		q = strchr(h->path, '?');
		if (q)
			*q = '\0';
		h->have_path = true;
	} else if (is(f, "content-type")) {
		h->have_ctype = true;
		h->sse = f->value_len >= 17 && !strncmp(f->value, "text/event-stream", 17);
		h->ndjson = f->value_len >= 20 && !strncmp(f->value, "application/x-ndjson", 20);
		h->grpc = f->value_len >= 16 && !strncmp(f->value, "application/grpc", 16);
	} else if (is(f, "content-encoding")) {
		h->coding = http_coding_of(f->value, f->value_len, h->coding);
	} else if (is(f, "traceparent")) {
		if (h->n_traceparent++ ||
		    ttf_traceparent__parse(f->value, f->value_len, &h->traceparent))
			h->traceparent.valid = false;
	} else if (is(f, "tracestate")) {
		ttf_tracestate__add(&h->traceparent, f->value, f->value_len);
	} else if (is(f, "grpc-status")) {
		char v[12];

		copy_value(v, sizeof(v), f);
		h->grpc_status = atoi(v);
	}
}

static void req_headers(struct h2 *s, struct h2_stream *st, uint32_t sid,
			const struct h2_head *h, bool decoded, bool end_stream, uint32_t bytes)
{
	if (!st) {
		/* client streams are odd (section 5.1.1) */
		if (!(sid & 1))
			return;
		st = h2_stream_new(s, sid);
		if (!st) {
			track_oom(s->tc);
			return;
		}
		st->q = track_req_begin(s->tc);
		if (st->q) {
			const char *m = h->have_method ? h->method : "unknown";
			const char *p = h->have_path ? h->path : "unknown";

			snprintf(st->path, sizeof(st->path), "%s", p);
			track_req_head(st->q, m, p, h->have_path ? ttf_api_of_path(p) : TTF_API_UNKNOWN);
			track_req_traceparent(s->tc, st->q, h->n_traceparent, &h->traceparent);
			if (!decoded || h->unknown || !h->have_method || !h->have_path)
				track_req_flag(st->q, TTF_REQ_HPACK_UNKNOWN);
		}
	}
	st->req_bytes += bytes;
	if (end_stream && !st->req_done) {
		st->req_done = true;
		if (st->q)
			track_req_end(s->tc, st->q, st->req_bytes);
	}
}

void h2_resp_end(struct h2 *s, struct h2_stream *st)
{
	const struct ttf_request *r;

	st->resp_done = true;
	if (!st->q)
		return;
	track_resp_touch(s->tc, st->q);	/* an empty DATA frame may end it */
	r = track_req_info(st->q);
	resp_body__end(&st->body);
	/* a whole body is one token, unless it could not be read (no counts) */
	if (st->body.mode == RESP_BODY_WHOLE && !st->body.opaque && r->status && r->status < 400)
		track_resp_whole(s->tc, st->q);
	track_resp_end(s->tc, st->q, st->resp_bytes);
}

static void resp_headers(struct h2 *s, struct h2_stream *st, const struct h2_head *h,
			 bool decoded, bool end_stream, uint32_t bytes)
{
	st->resp_bytes += bytes;
	if (!st->q) {
		if (end_stream)
			st->resp_done = true;
		return;
	}
	track_resp_touch(s->tc, st->q);
	if (!st->resp_head_seen) {
		if (!decoded || !h->status) {
			/* a response head that could not be read */
			track_resp_begin_for(s->tc, st->q);
			track_req_flag(st->q, TTF_REQ_HPACK_UNKNOWN);
			track_resp_head(st->q, 0, false);
			resp_body__unreadable(&st->body, st->q);
			st->resp_head_seen = true;
		} else if (h->status < 200) {
			track_resp_begin_for(s->tc, st->q);
			track_resp_interim(s->tc, st->q);
			return;
		} else {
			track_resp_begin_for(s->tc, st->q);
			st->resp_head_seen = true;
			track_resp_head(st->q, h->status, h->sse || h->ndjson || h->grpc);
			if (h->status >= 400)
				track_req_flag(st->q, TTF_REQ_ERROR);
			if (h->unknown)
				track_req_flag(st->q, TTF_REQ_HPACK_UNKNOWN);
			resp_body__begin(&st->body, st->q, h->coding);
			if (st->body.opaque)
				;
			else if (h->sse || h->ndjson)
				resp_body__events(&st->body, h->ndjson);
			else if (h->grpc)
				h2_stream_grpc(st);
			else if (h->unknown && !h->have_ctype)
				st->sniff = true;
		}
	}
	/* gRPC status, in the trailers or a trailers-only response (section 8.1) */
	if (decoded && h->grpc_status > 0)
		track_req_flag(st->q, TTF_REQ_ERROR);
	if (end_stream)
		h2_resp_end(s, st);
}

void h2_block_done(struct h2 *s, struct h2_dir *d)
{
	struct h2_head h = { .grpc_status = -1 };
	struct h2_stream *st = h2_stream_find(s, d->hb_sid);
	bool decoded = false;
	int err;

	if (!d->hb_broken) {
		uint64_t before = hpack_dec__stats(d->hpack)->unknown_refs;

		err = hpack_dec__block(d->hpack, d->hb, d->hb_len, on_field, &h);
		decoded = !err;
		if (err)
			track_count(s->tc, &http2_counters, H2_CNT_HPACK_ERRORS, 1);
		if (hpack_dec__stats(d->hpack)->unknown_refs > before)
			track_count(s->tc, &http2_counters, H2_CNT_HPACK_UNKNOWN,
				    hpack_dec__stats(d->hpack)->unknown_refs - before);
	} else {
		hpack_dec__desync(d->hpack);
		track_count(s->tc, &http2_counters, H2_CNT_HPACK_ERRORS, 1);
	}
	if (d->side == TRACK_SIDE_REQ) {
		req_headers(s, st, d->hb_sid, &h, decoded, d->hb_end_stream, d->hb_len + FRAME_HDR);
	} else if (st) {
		resp_headers(s, st, &h, decoded, d->hb_end_stream, d->hb_len + FRAME_HDR);
		h2_stream_maybe_drop(s, st);
	} else {
		track_count(s->tc, &http2_counters, H2_CNT_STREAMS_UNSEEN, 1);
	}
	d->hb_active = false;
	d->hb_len = 0;
}
