// SPDX-License-Identifier: GPL-2.0-only
/*
 * HTTP/2 framing of one direction (h2.h, RFC 9113 section 4): the preface,
 * frame headers, padding and priority prefixes, header blocks gathered over
 * CONTINUATION frames, control frames (RST_STREAM, SETTINGS, GOAWAY), and
 * capture gaps skipped by count inside a payload.
 */
#include <stdlib.h>
#include <string.h>
#include "user/proto/http2/h2.h"

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

/* The end of a frame that is not DATA or part of a header block. */
static void ctrl_done(struct h2 *s, struct h2_dir *d)
{
	struct h2_stream *st;

	switch (d->type) {
	case F_RST_STREAM:
		st = h2_stream_find(s, d->sid);
		if (st)
			h2_stream_reset(s, st);
		break;
	case F_SETTINGS:
		if (d->flags & 0x1)	/* ACK */
			break;
		for (uint32_t i = 0; i + 6 <= d->ctrl_got; i += 6) {
			uint16_t id = (uint16_t)d->ctrl[i] << 8 | d->ctrl[i + 1];
			uint32_t v = be32(d->ctrl + i + 2);

			/* the sender decodes with this limit: the other direction's blocks */
			if (id == SETTINGS_HEADER_TABLE_SIZE)
				hpack_dec__settings_max(s->dir[!d->side].hpack, v);
			/* and accepts frames this large from the other side */
			if (id == SETTINGS_MAX_FRAME_SIZE && v >= MAX_FRAME_INITIAL &&
			    v <= MAX_FRAME_LIMIT)
				s->dir[!d->side].max_frame = v;
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

					h2_stream_reset(s, st);
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

/*
 * A frame no peer may send on a connection seen from its preface: longer
 * than the receiver's SETTINGS_MAX_FRAME_SIZE (RFC 9113 4.2). A server sent
 * garbage after a valid preface answers it with GOAWAY; the tracer stops
 * reading there too (lost_sync) rather than take the garbage's first three
 * bytes as the length of a frame that swallows the rest unseen. Not judged
 * on a connection that began before tracing: its settings are unknown.
 */
static bool frame_too_long(const struct h2 *s, const struct h2_dir *d)
{
	return !s->mid && d->len > (d->max_frame ? d->max_frame : MAX_FRAME_INITIAL);
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
		st = h2_stream_find(s, d->sid);
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
				h2_resp_end(s, st);
				h2_stream_maybe_drop(s, st);
			}
		}
		break;
	case F_HEADERS:
	case F_CONTINUATION:
		if (d->flags & FL_END_HEADERS)
			h2_block_done(s, d);
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
		st = h2_stream_find(s, d->sid);
		if (st && st->q) {
			track_resp_touch(s->tc, st->q);
			h2_stream_body(st, p, n);
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
void h2_dir_feed(struct h2 *s, struct h2_dir *d, const uint8_t *p, size_t len)
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
				if (frame_too_long(s, d)) {
					d->lost = true;
					track_lost_sync(s->tc);
					hpack_dec__desync(d->hpack);
					return;
				}
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
void h2_dir_gap(struct h2 *s, struct h2_dir *d, size_t n)
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
				struct h2_stream *st = h2_stream_find(s, d->sid);

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
