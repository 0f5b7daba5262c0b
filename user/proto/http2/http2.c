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
#include <stdlib.h>
#include <string.h>
#include "user/proto/http2/h2.h"

static const char *const h2_counter_names[H2_CNT__N] = {
	[H2_CNT_FRAMES_SKIPPED] = "h2_frames_skipped",
	[H2_CNT_STREAMS_UNSEEN] = "h2_streams_unseen",
	[H2_CNT_HPACK_UNKNOWN] = "hpack_unknown_refs",
	[H2_CNT_HPACK_ERRORS] = "hpack_errors",
	[H2_CNT_GRPC_LOST] = "grpc_messages_lost",
};

const struct proto_counters http2_counters = { .names = h2_counter_names, .n = H2_CNT__N };

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
		h2_stream_free(s->streams[i]);
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
		h2_dir_gap(s, d, gap_before);
	h2_dir_feed(s, d, (const uint8_t *)buf, len);
	if (gap_after)
		h2_dir_gap(s, d, gap_after);
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
			h2_stream_drop(s, x);
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
