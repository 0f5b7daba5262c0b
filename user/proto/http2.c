// SPDX-License-Identifier: GPL-2.0-only
/*
 * HTTP/2 recognizer (recognizer.h), cleartext (h2c) with prior knowledge:
 * RFC 9113. The client's connection preface (section 3.4), then frames
 * (section 4.1: 24-bit length, type, flags, 31-bit stream id) in each
 * direction: HEADERS and CONTINUATION carry HPACK header blocks (hpack.h),
 * DATA a stream's body, RST_STREAM and GOAWAY end streams, SETTINGS may
 * change the header table size; WINDOW_UPDATE, PING and PRIORITY are
 * framing only. Each stream is one request, many in flight on a
 * connection; its response body is read as SSE (text/event-stream), gRPC
 * messages (application/grpc*, grpc.h) or a whole body.
 *
 * A connection that began before tracing is recognised from frames that
 * tile a record exactly; its HPACK tables are then unknown ("unsynced"),
 * so a stream's method or path that only an old table entry names is
 * "unknown" (flag hpack-unsynced), and streams begun before tracing are
 * counted, not timed. Frame payloads are skipped by count over capture
 * gaps; a gap over a frame header loses the framing until a record starts
 * with a plausible frame.
 */
#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include "user/proto/grpc.h"
#include "user/proto/http.h"
#include "user/proto/hpack.h"
#include "user/proto/recognizer.h"
#include "user/proto/resp_body.h"

#define PREFACE "PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n"
#define PREFACE_LEN 24
#define FRAME_HDR 9
#define HB_MAX_BYTES (256u * 1024)	/* a header block larger than this is not decoded */
#define CTRL_KEEP 64			/* bytes kept of a control frame's payload */
#define MAX_FRAME_LEN ((1u << 24) - 1)

/* section 6: frame types */
enum { F_DATA, F_HEADERS, F_PRIORITY, F_RST_STREAM, F_SETTINGS, F_PUSH_PROMISE, F_PING,
       F_GOAWAY, F_WINDOW_UPDATE, F_CONTINUATION, F__N };
/* flags */
#define FL_END_STREAM 0x1
#define FL_END_HEADERS 0x4
#define FL_PADDED 0x8
#define FL_PRIORITY 0x20
/* section 6.5.2 */
#define SETTINGS_HEADER_TABLE_SIZE 1

/* The family's counters (http2_counters), in the order they are printed. */
enum h2_counter {
	H2_CNT_FRAMES_SKIPPED,	/* frames not parsed: sync lost, or a gap inside */
	H2_CNT_STREAMS_UNSEEN,	/* streams that began before tracing: not timed */
	H2_CNT_HPACK_UNKNOWN,	/* header fields that referenced unknown table entries */
	H2_CNT_HPACK_ERRORS,	/* header blocks that could not be decoded */
	H2_CNT_GRPC_LOST,	/* gRPC messages whose framing was lost */
	H2_CNT__N,
};

static const char *const h2_counter_names[H2_CNT__N] = {
	[H2_CNT_FRAMES_SKIPPED] = "h2_frames_skipped",
	[H2_CNT_STREAMS_UNSEEN] = "h2_streams_unseen",
	[H2_CNT_HPACK_UNKNOWN] = "hpack_unknown_refs",
	[H2_CNT_HPACK_ERRORS] = "hpack_errors",
	[H2_CNT_GRPC_LOST] = "grpc_messages_lost",
};

const struct proto_counters http2_counters = { .names = h2_counter_names, .n = H2_CNT__N };

struct h2;

struct h2_stream {
	struct h2 *s;
	uint32_t id;
	struct track_req *q;		/* NULL: begun before tracing, or emitted */
	bool resp_head_seen;
	bool req_done, resp_done;
	bool body_seen;			/* a response DATA byte was seen */
	bool sniff;			/* content-type unknown (HPACK unsynced): judge the body */
	uint64_t req_bytes, resp_bytes;
	char path[96];
	struct resp_body body;		/* the response body (resp_body.h) */
	struct grpc_reader *grpc_rd;	/* a gRPC body's messages */
	const struct grpc_rule *rule;
};

/* One direction's frame parser. */
struct h2_dir {
	enum track_side side;
	uint32_t preface_left;		/* preface bytes still to come (client side, from the start) */
	uint8_t hdr[FRAME_HDR];
	uint8_t hdr_got;
	bool in_frame;
	uint8_t type, flags;
	uint32_t sid, len;
	uint32_t prefix_left;		/* pad length (PADDED) and priority (HEADERS) bytes to read */
	bool pad_pending;		/* the pad length byte is next */
	uint32_t pad;			/* padding bytes after the data */
	uint32_t data_left;		/* payload bytes proper left */
	uint8_t ctrl[CTRL_KEEP];
	uint32_t ctrl_got;
	/* header block being gathered (HEADERS + CONTINUATION) */
	uint8_t *hb;
	size_t hb_len, hb_cap;
	uint32_t hb_sid;
	bool hb_active, hb_end_stream, hb_broken;
	bool lost;
	struct hpack_dec *hpack;	/* decodes this direction's blocks */
};

struct h2 {
	struct track_conn *tc;
	bool started;			/* the first record was fed */
	bool mid;			/* the connection began before tracing */
	struct h2_dir dir[2];		/* by enum track_side */
	struct h2_stream **streams;
	uint32_t n, cap;
};

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

/* ---- streams ---- */

static struct h2_stream *stream_find(struct h2 *s, uint32_t id)
{
	for (uint32_t i = 0; i < s->n; i++)
		if (s->streams[i]->id == id)
			return s->streams[i];
	return NULL;
}

static void stream_free(struct h2_stream *st)
{
	resp_body__free(&st->body);
	free(st->grpc_rd);
	free(st);
}

static void stream_drop(struct h2 *s, struct h2_stream *st)
{
	for (uint32_t i = 0; i < s->n; i++)
		if (s->streams[i] == st) {
			s->streams[i] = s->streams[--s->n];
			stream_free(st);
			return;
		}
}

static struct h2_stream *stream_new(struct h2 *s, uint32_t id)
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
static void stream_maybe_drop(struct h2 *s, struct h2_stream *st)
{
	if (!st->q && st->req_done && st->resp_done)
		stream_drop(s, st);
}

/* ---- header blocks ---- */

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
	} else if (is(f, "grpc-status")) {
		char v[12];

		copy_value(v, sizeof(v), f);
		h->grpc_status = atoi(v);
	}
}

/* ---- response bodies ---- */

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

static void start_grpc(struct h2_stream *st)
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
		start_grpc(st);
		track_resp_head(st->q, track_req_info(st->q)->status, true);
	}
}

static void body_data(struct h2_stream *st, const uint8_t *p, size_t len)
{
	struct h2 *s = st->s;

	if (st->sniff && st->q && !st->body_seen && !st->body.dec)
		sniff(st, p, len, s->dir[TRACK_SIDE_RESP].len);
	st->body_seen = true;
	resp_body__data(&st->body, (const char *)p, len);
}

/* ---- stream events ---- */

static void req_headers(struct h2 *s, struct h2_stream *st, uint32_t sid,
			const struct h2_head *h, bool decoded, bool end_stream, uint32_t bytes)
{
	if (!st) {
		/* client streams are odd (section 5.1.1) */
		if (!(sid & 1))
			return;
		st = stream_new(s, sid);
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

static void resp_end(struct h2 *s, struct h2_stream *st)
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
				start_grpc(st);
			else if (h->unknown && !h->have_ctype)
				st->sniff = true;
		}
	}
	/* gRPC status, in the trailers or a trailers-only response (section 8.1) */
	if (decoded && h->grpc_status > 0)
		track_req_flag(st->q, TTF_REQ_ERROR);
	if (end_stream)
		resp_end(s, st);
}

static void on_block_done(struct h2 *s, struct h2_dir *d)
{
	struct h2_head h = { .grpc_status = -1 };
	struct h2_stream *st = stream_find(s, d->hb_sid);
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
		stream_maybe_drop(s, st);
	} else {
		track_count(s->tc, &http2_counters, H2_CNT_STREAMS_UNSEEN, 1);
	}
	d->hb_active = false;
	d->hb_len = 0;
}

static void hb_append(struct h2_dir *d, const uint8_t *p, size_t n)
{
	if (d->hb_broken)
		return;
	if (d->hb_len + n > d->hb_cap) {
		size_t cap = d->hb_cap ? d->hb_cap : 1024;
		uint8_t *b;

		while (cap < d->hb_len + n)
			cap *= 2;
		if (cap > HB_MAX_BYTES || !(b = realloc(d->hb, cap))) {
			d->hb_broken = true;
			return;
		}
		d->hb = b;
		d->hb_cap = cap;
	}
	memcpy(d->hb + d->hb_len, p, n);
	d->hb_len += n;
}

static uint32_t be32(const uint8_t *p)
{
	return (uint32_t)p[0] << 24 | (uint32_t)p[1] << 16 | (uint32_t)p[2] << 8 | p[3];
}

/* A stream ends abnormally (RST_STREAM, GOAWAY): its request is aborted where it stands. */
static void stream_reset(struct h2 *s, struct h2_stream *st)
{
	struct track_req *q = st->q;

	st->req_done = st->resp_done = true;
	if (q) {
		track_req_flag(q, TTF_REQ_ABORTED);
		track_resp_bytes(q, st->resp_bytes);
		track_resp_cut(s->tc, q);	/* may emit now: forget() drops st */
		return;
	}
	stream_drop(s, st);
}

/* The end of a frame that is not DATA or part of a header block. */
static void ctrl_done(struct h2 *s, struct h2_dir *d)
{
	struct h2_stream *st;

	switch (d->type) {
	case F_RST_STREAM:
		st = stream_find(s, d->sid);
		if (st)
			stream_reset(s, st);
		break;
	case F_SETTINGS:
		if (d->flags & 0x1)	/* ACK */
			break;
		for (uint32_t i = 0; i + 6 <= d->ctrl_got; i += 6) {
			uint16_t id = (uint16_t)d->ctrl[i] << 8 | d->ctrl[i + 1];

			/* the sender decodes with this limit: the other direction's blocks */
			if (id == SETTINGS_HEADER_TABLE_SIZE)
				hpack_dec__settings_max(s->dir[!d->side].hpack, be32(d->ctrl + i + 2));
		}
		break;
	case F_GOAWAY:
		if (d->ctrl_got >= 4) {
			uint32_t last = be32(d->ctrl) & 0x7fffffff;

			/* streams above last_stream_id were not processed (section 6.8) */
			for (uint32_t i = 0; i < s->n;) {
				st = s->streams[i];
				if (st->id > last && s->n) {
					uint32_t n = s->n;

					stream_reset(s, st);
					if (s->n == n)
						i++;
				} else {
					i++;
				}
			}
		}
		break;
	default:
		break;	/* PRIORITY, PING, WINDOW_UPDATE, PUSH_PROMISE: framing only */
	}
}

static void frame_begin(struct h2 *s, struct h2_dir *d)
{
	d->len = (uint32_t)d->hdr[0] << 16 | (uint32_t)d->hdr[1] << 8 | d->hdr[2];
	d->type = d->hdr[3];
	d->flags = d->hdr[4];
	d->sid = be32(d->hdr + 5) & 0x7fffffff;
	d->in_frame = true;
	d->pad = 0;
	d->ctrl_got = 0;
	d->pad_pending = (d->type == F_DATA || d->type == F_HEADERS) && (d->flags & FL_PADDED);
	d->prefix_left = (d->pad_pending ? 1 : 0) +
			 (d->type == F_HEADERS && (d->flags & FL_PRIORITY) ? 5 : 0);
	d->data_left = d->len >= d->prefix_left ? d->len - d->prefix_left : 0;
	if (d->type == F_HEADERS) {
		d->hb_active = true;
		d->hb_sid = d->sid;
		d->hb_len = 0;
		d->hb_broken = false;
		d->hb_end_stream = d->flags & FL_END_STREAM;
	} else if (d->type == F_CONTINUATION && (!d->hb_active || d->sid != d->hb_sid)) {
		d->hb_active = true;	/* a block whose start was not seen */
		d->hb_sid = d->sid;
		d->hb_len = 0;
		d->hb_broken = true;
		d->hb_end_stream = false;
	}
}

static void frame_end(struct h2 *s, struct h2_dir *d)
{
	struct h2_stream *st;

	d->in_frame = false;
	d->hdr_got = 0;
	switch (d->type) {
	case F_DATA:
		st = stream_find(s, d->sid);
		if (!st)
			break;	/* a stream begun before tracing (counted at its HEADERS) */
		if (d->side == TRACK_SIDE_REQ) {
			st->req_bytes += d->len + FRAME_HDR;
			if ((d->flags & FL_END_STREAM) && !st->req_done) {
				st->req_done = true;
				if (st->q)
					track_req_end(s->tc, st->q, st->req_bytes);
			}
		} else {
			st->resp_bytes += d->len + FRAME_HDR;
			if (d->flags & FL_END_STREAM) {
				resp_end(s, st);
				stream_maybe_drop(s, st);
			}
		}
		break;
	case F_HEADERS:
	case F_CONTINUATION:
		if (d->flags & FL_END_HEADERS)
			on_block_done(s, d);
		break;
	default:
		ctrl_done(s, d);
	}
}

/* Payload bytes proper of the current frame (prefix and padding removed). */
static void payload(struct h2 *s, struct h2_dir *d, const uint8_t *p, size_t n)
{
	struct h2_stream *st;

	switch (d->type) {
	case F_DATA:
		if (d->side != TRACK_SIDE_RESP)
			return;
		st = stream_find(s, d->sid);
		if (st && st->q) {
			track_resp_touch(s->tc, st->q);
			body_data(st, p, n);
		}
		return;
	case F_HEADERS:
	case F_CONTINUATION:
		hb_append(d, p, n);
		return;
	default:
		if (d->ctrl_got < CTRL_KEEP) {
			size_t k = n < CTRL_KEEP - d->ctrl_got ? n : CTRL_KEEP - d->ctrl_got;

			memcpy(d->ctrl + d->ctrl_got, p, k);
			d->ctrl_got += k;
		}
	}
}

/* Captured bytes of one direction, in order. */
static void dir_feed(struct h2 *s, struct h2_dir *d, const uint8_t *p, size_t len)
{
	while (len && !d->lost) {
		if (d->preface_left) {
			size_t k = len < d->preface_left ? len : d->preface_left;

			if (memcmp(p, &PREFACE[PREFACE_LEN - d->preface_left], k)) {
				d->lost = true;
				track_lost_sync(s->tc);
				return;
			}
			d->preface_left -= k;
			p += k;
			len -= k;
			continue;
		}
		if (!d->in_frame) {
			d->hdr[d->hdr_got++] = *p++;
			len--;
			if (d->hdr_got == FRAME_HDR) {
				frame_begin(s, d);
				if (!d->len)
					frame_end(s, d);
			}
			continue;
		}
		if (d->prefix_left) {
			if (d->pad_pending) {
				d->pad = *p;
				d->pad_pending = false;
				if (d->pad > d->data_left) {
					/* padding longer than the frame: a protocol error (6.1) */
					d->lost = true;
					track_lost_sync(s->tc);
					return;
				}
				d->data_left -= d->pad;
			}
			d->prefix_left--;
			p++;
			len--;
		} else if (d->data_left) {
			size_t k = len < d->data_left ? len : d->data_left;

			payload(s, d, p, k);
			d->data_left -= k;
			p += k;
			len -= k;
		} else {
			size_t k = len < d->pad ? len : d->pad;

			d->pad -= k;
			p += k;
			len -= k;
		}
		if (!d->prefix_left && !d->data_left && !d->pad)
			frame_end(s, d);
	}
}

/* n bytes of one direction were not captured. */
static void dir_gap(struct h2 *s, struct h2_dir *d, size_t n)
{
	while (n && !d->lost) {
		size_t k;

		if (d->preface_left || !d->in_frame || d->prefix_left) {
			/* a frame header (or the preface) not seen: framing lost */
			d->lost = true;
			track_lost_sync(s->tc);
			hpack_dec__desync(d->hpack);
			return;
		}
		if (d->data_left) {
			k = n < d->data_left ? n : d->data_left;
			if (d->type == F_DATA && d->side == TRACK_SIDE_RESP) {
				struct h2_stream *st = stream_find(s, d->sid);

				if (st && st->q) {
					track_resp_touch(s->tc, st->q);
					resp_body__gap(&st->body, k);
				}
			} else if (d->type == F_HEADERS || d->type == F_CONTINUATION) {
				d->hb_broken = true;
			}
			d->data_left -= k;
		} else {
			k = n < d->pad ? n : d->pad;
			d->pad -= k;
		}
		n -= k;
		if (!d->prefix_left && !d->data_left && !d->pad)
			frame_end(s, d);
	}
}

/*
 * Captured bytes that are whole frames, back to back, ending exactly at the
 * record's end: how a connection seen mid-way (or after lost framing) is
 * recognised. *headers_first: the first byte of the first HEADERS block
 * (-1 none); *n_frames: frames seen.
 */
static bool frames_tile(const uint8_t *p, size_t cap, size_t bytes, int *headers_first,
			int *n_frames, int *n_data)
{
	size_t off = 0;

	*headers_first = -1;
	*n_frames = 0;
	*n_data = 0;
	if (cap != bytes || cap < FRAME_HDR)
		return false;
	while (off + FRAME_HDR <= cap) {
		uint32_t len = (uint32_t)p[off] << 16 | (uint32_t)p[off + 1] << 8 | p[off + 2];
		uint8_t type = p[off + 3], flags = p[off + 4];
		uint32_t sid = be32(p + off + 5);
		size_t body = off + FRAME_HDR;

		if (type >= F__N || (sid & 0x80000000u) || len > 16384 + 256)
			return false;
		/* SETTINGS, PING, GOAWAY on stream 0 only; DATA, HEADERS, RST on a stream */
		if ((type == F_SETTINGS || type == F_PING || type == F_GOAWAY) != (sid == 0))
			return false;
		if (type == F_HEADERS && *headers_first < 0 && len) {
			size_t at = body + ((flags & FL_PADDED) ? 1 : 0) +
				    ((flags & FL_PRIORITY) ? 5 : 0);

			if (at < cap)
				*headers_first = p[at];
		}
		if (type == F_DATA && (sid & 1))
			(*n_data)++;
		off = body + len;
		(*n_frames)++;
	}
	return off == cap;
}

/* The first field of a header block: indexed :method/:path/:scheme (2..7), or :status (8..14). */
static int block_kind(int first)
{
	if (first >= 0x82 && first <= 0x87)
		return 1;	/* request */
	if (first >= 0x88 && first <= 0x8e)
		return 2;	/* response */
	return 0;
}

static enum proto_verdict http2_detect(const char *buf, size_t len, bool is_read,
				       enum track_role *role)
{
	int first, n, n_data;

	if (!len)
		return PROTO_MAYBE;
	if (!memcmp(buf, PREFACE, len < PREFACE_LEN ? len : PREFACE_LEN)) {
		if (len < PREFACE_LEN)
			return PROTO_MAYBE;
		/* the client sends the preface: reading it, the traced process serves */
		*role = is_read ? TRACK_ROLE_SERVER : TRACK_ROLE_CLIENT;
		return PROTO_YES;
	}
	/* a record that cannot start with a frame header is not HTTP/2 */
	if ((len >= 3 && ((uint32_t)(uint8_t)buf[0] << 16 | (uint32_t)(uint8_t)buf[1] << 8 |
			  (uint8_t)buf[2]) > 16384 + 256) ||
	    (len >= 4 && (uint8_t)buf[3] >= F__N) || (len >= 6 && ((uint8_t)buf[5] & 0x80)))
		return PROTO_NO;
	/* the tracker passes the record's capture only; a short capture cannot tile */
	if (!frames_tile((const uint8_t *)buf, len, len, &first, &n, &n_data))
		return PROTO_MAYBE;
	switch (block_kind(first)) {
	case 1:
		*role = is_read ? TRACK_ROLE_SERVER : TRACK_ROLE_CLIENT;
		return PROTO_YES;
	case 2:
		*role = is_read ? TRACK_ROLE_CLIENT : TRACK_ROLE_SERVER;
		return PROTO_YES;
	default:
		/* response bodies in flight: the side that writes DATA serves (LLM streams) */
		if (n_data) {
			*role = is_read ? TRACK_ROLE_CLIENT : TRACK_ROLE_SERVER;
			return PROTO_YES;
		}
		return PROTO_MAYBE;
	}
}

static void http2_free(void *st)
{
	struct h2 *s = st;

	if (!s)
		return;
	for (uint32_t i = 0; i < s->n; i++)
		stream_free(s->streams[i]);
	free(s->streams);
	for (int i = 0; i < 2; i++) {
		hpack_dec__free(s->dir[i].hpack);
		free(s->dir[i].hb);
	}
	free(s);
}

static void *http2_open(struct track_conn *tc, enum track_role role)
{
	struct h2 *s = calloc(1, sizeof(*s));

	if (!s)
		return NULL;
	s->tc = tc;
	for (int i = 0; i < 2; i++) {
		s->dir[i].side = i;
		s->dir[i].hpack = hpack_dec__new(true);
		if (!s->dir[i].hpack) {
			http2_free(s);
			return NULL;
		}
	}
	return s;
}

static void http2_feed(void *st, enum track_side side, uint32_t gap_before, const char *buf,
		       size_t len, size_t gap_after)
{
	struct h2 *s = st;
	struct h2_dir *d = &s->dir[side];
	int first, n, n_data;

	if (!s->started) {
		/*
		 * The record that was recognized comes first: the client's
		 * preface (the connection from its start), or frames of a
		 * connection that began before tracing, whose tables are unknown.
		 */
		s->started = true;
		if (side == TRACK_SIDE_REQ && !gap_before && len >= PREFACE_LEN &&
		    !memcmp(buf, PREFACE, PREFACE_LEN)) {
			d->preface_left = PREFACE_LEN;
		} else {
			s->mid = true;
			hpack_dec__desync(s->dir[0].hpack);
			hpack_dec__desync(s->dir[1].hpack);
		}
	}
	if (d->lost) {
		/* framing lost: start again at a record that is whole frames */
		if (gap_after || !frames_tile((const uint8_t *)buf, len, len, &first, &n, &n_data)) {
			track_count(s->tc, &http2_counters, H2_CNT_FRAMES_SKIPPED, 1);
			return;
		}
		d->lost = false;
		d->in_frame = false;
		d->hdr_got = 0;
		d->hb_active = false;
		d->preface_left = 0;
		gap_before = 0;
	}
	if (gap_before)
		dir_gap(s, d, gap_before);
	dir_feed(s, d, (const uint8_t *)buf, len);
	if (gap_after)
		dir_gap(s, d, gap_after);
}

static void http2_forget(void *st, struct track_req *q)
{
	struct h2 *s = st;

	for (uint32_t i = 0; i < s->n; i++) {
		struct h2_stream *x = s->streams[i];

		if (x->q == q) {
			x->q = NULL;
			/* the tracker emits it: what is left of the stream is not timed */
			x->req_done = x->resp_done = true;
			stream_drop(s, x);
			return;
		}
	}
}

static void http2_close(void *st, bool until_close_ends)
{
	struct h2 *s = st;

	/* byte counts of the streams cut short; the tracker emits them */
	for (uint32_t i = 0; i < s->n; i++) {
		struct h2_stream *x = s->streams[i];

		if (!x->q)
			continue;
		if (!x->req_done)
			track_req_bytes(x->q, x->req_bytes);
		track_resp_bytes(x->q, x->resp_bytes);
	}
}

const struct proto_recognizer proto_http2 = {
	.name = "http/2",
	.detect = http2_detect,
	.open = http2_open,
	.feed = http2_feed,
	.forget = http2_forget,
	.close = http2_close,
	.free = http2_free,
};
