// SPDX-License-Identifier: GPL-2.0-only
/*
 * One ZMTP direction's parser (zmtp_conn.h): the 64-byte greeting, then
 * frames (flags byte, 1- or 8-byte size, body), command frames read for
 * READY's Socket-Type, message frames joined into messages (MORE) and
 * their bodies walked for request ids; gaps skipped by count inside a body,
 * framing lost (or hunted again, mid-stream) over a flags byte or size.
 */
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include "user/proto/zmtp/zmtp_conn.h"
#include "user/proto/zmtp/zmtp_pickle.h"

static void lose(struct zmtp *s, int dir)
{
	struct zdir *d = &s->d[dir];

	if (d->st == Z_LOST || d->st == Z_HUNT)
		return;
	d->st = s->mid ? Z_HUNT : Z_LOST;
	d->in_msg = false;
	s->sum.dir[dir].lost_sync = 1;
	track_lost_sync(s->tc);
	track_count(s->tc, &zmtp_counters, ZMTP_CNT_LOST_SYNC, 1);
}

/* ---- ids ---- */

static void id_add(struct zmtp *s, struct ttf_zmtp_msg *m, const char *id, size_t n)
{
	struct id_seen *e;
	unsigned int k;

	for (k = 0; k < m->n_ids; k++)
		if (strlen(m->ids[k]) == n && !memcmp(m->ids[k], id, n))
			return;		/* said twice in one message */
	track_count(s->tc, &zmtp_counters, ZMTP_CNT_IDS, 1);
	if (m->n_ids == ZMTP_MSG_IDS) {
		struct zdir *d = &s->d[m->dir];

		m->flags |= ZMTP_MSG_IDS_MORE;
		for (k = 0; k < d->n_more; k++)
			if (strlen(d->more[k]) == n && !memcmp(d->more[k], id, n))
				return;
		if (d->n_more == d->cap_more && d->cap_more < ZMTP_MSG_MORE_IDS) {
			uint32_t cap = d->cap_more ? d->cap_more * 2 : 16;
			char (*nm)[ZMTP_ID_BYTES] = realloc(d->more, cap * sizeof(*nm));

			if (nm) {
				d->more = nm;
				d->cap_more = cap;
			}
		}
		if (d->n_more < d->cap_more) {
			memcpy(d->more[d->n_more], id, n);
			d->more[d->n_more++][n] = 0;
		}
	} else {
		memcpy(m->ids[m->n_ids], id, n);
		m->ids[m->n_ids++][n] = 0;
	}
	HASH_FIND(hh, s->ids, id, n, e);
	if (e)
		return;
	if (s->n_tracked == IDS_TRACKED || !(e = calloc(1, sizeof(*e)))) {
		s->sum.ids_untracked++;
		return;
	}
	memcpy(e->id, id, n);
	HASH_ADD(hh, s->ids, id[0], n, e);
	if (!ttf_hash_added(e)) {
		free(e);
		s->sum.ids_untracked++;
		return;
	}
	s->n_tracked++;
	s->sum.ids_seen++;
	if (s->sum.n_ids < ZMTP_CONN_IDS) {
		memcpy(s->sum.ids[s->sum.n_ids], id, n);
		s->sum.ids[s->sum.n_ids++][n] = 0;
	}
}

struct id_ctx {
	struct zmtp *s;
	struct ttf_zmtp_msg *m;
};

static void found_str(void *ctx, const char *str, size_t n)
{
	struct id_ctx *c = ctx;

	if (zmtp_id_like(str, n))
		id_add(c->s, c->m, str, n);
}

/* ---- commands ---- */

static uint32_t be32(const unsigned char *p)
{
	return (uint32_t)p[0] << 24 | (uint32_t)p[1] << 16 | (uint32_t)p[2] << 8 | p[3];
}

/*
 * READY's properties: name-size, name, 4-byte value-size, value (23/ZMTP;
 * names compared without case). Of Identity only its length is kept.
 */
static void ready(struct zmtp_dir_stats *ds, const unsigned char *p, size_t n)
{
	size_t i = 0;

	while (i < n) {
		size_t nl = p[i++], vl;

		if (nl > n - i || n - i - nl < 4)
			return;
		vl = be32(p + i + nl);
		if (vl > n - i - nl - 4)
			return;
		if (nl == 11 && !strncasecmp((const char *)p + i, "Socket-Type", 11) && vl < sizeof(ds->socket_type)) {
			memcpy(ds->socket_type, p + i + nl + 4, vl);
			ds->socket_type[vl] = 0;
			for (size_t k = 0; k < vl; k++)
				if (ds->socket_type[k] < 'A' || ds->socket_type[k] > 'Z')
					ds->socket_type[k] = '?';
		}
		if (nl == 8 && !strncasecmp((const char *)p + i, "Identity", 8))
			ds->identity_bytes = vl;
		i += nl + 4 + vl;
	}
}

static void command(struct zmtp *s, int dir, const struct zdir *d)
{
	struct zmtp_dir_stats *ds = &s->sum.dir[dir];
	size_t nl;

	ds->commands++;
	if (!d->body_n)
		return;
	nl = d->body[0];
	if (nl > d->body_n - 1)
		return;
	if (nl == 5 && !memcmp(d->body + 1, "READY", 5) && !d->body_gap &&
	    d->body_n == d->size)
		ready(ds, d->body + 6, d->body_n - 6);
	else if (nl == 4 && (!memcmp(d->body + 1, "PING", 4) || !memcmp(d->body + 1, "PONG", 4)))
		ds->pings++;
}

/* ---- frames ---- */

/* Ready for the next frame's header: ZMTP's flags, or a len32 message's length. */
static void frame_next(struct zmtp *s, struct zdir *d)
{
	if (s->framing == MSG_FRAMING_ZMTP) {
		d->st = Z_FLAGS;
		return;
	}
	d->st = Z_SIZE;
	d->flags = 0;		/* every message one frame */
	d->size_w = 4;
	d->size_n = 0;
	d->size = 0;
}

static void frame_end(struct zmtp *s, int dir)
{
	struct zdir *d = &s->d[dir];
	struct ttf_zmtp_msg *m = &d->msg;
	struct zmtp_dir_stats *ds = &s->sum.dir[dir];
	struct id_ctx ic = { s, m };
	uint64_t size = d->size, hdr = (s->framing == MSG_FRAMING_ZMTP) + d->size_w;

	frame_next(s, d);	/* len32: flags stay 0 (no MORE, no COMMAND) */
	if (d->flags & F_COMMAND) {
		command(s, dir, d);
		return;
	}
	if (!d->in_msg) {
		memset(m, 0, sizeof(*m));
		d->n_more = 0;
		m->dir = dir;
		m->seq = d->seq;
		d->in_msg = true;
	}
	m->frames++;
	m->bytes += hdr + size;
	m->body_bytes += size;
	if (d->body_gap)	/* not captured; past BODY_KEEP is only not walked */
		m->flags |= ZMTP_MSG_PARTIAL;
	if (s->framing == MSG_FRAMING_ZMTP)
		zmtp_body_strs(d->body, d->body_n, found_str, &ic);	/* pickle or msgpack */
	else
		zmtp_ids_scan(d->body, d->body_n, found_str, &ic);
	if (d->flags & F_MORE)
		return;
	d->in_msg = false;
	d->seq++;
	ds->msgs++;
	ds->bytes += m->bytes;
	if (m->flags & ZMTP_MSG_PARTIAL) {
		ds->partial++;
		track_count(s->tc, &zmtp_counters, ZMTP_CNT_PARTIAL, 1);
	}
	m->more_ids = (const char (*)[ZMTP_ID_BYTES])d->more;
	m->n_more_ids = d->n_more;
	track_count(s->tc, &zmtp_counters,
		    m->dir == ZMTP_DIR_IN ? ZMTP_CNT_MSGS_IN : ZMTP_CNT_MSGS_OUT, 1);
	track_zmtp_msg(s->tc, m);
	m->more_ids = NULL;
	m->n_more_ids = 0;
}

static void frame_begin_body(struct zmtp *s, int dir)
{
	struct zdir *d = &s->d[dir];

	d->left = d->size;
	d->body_n = 0;
	d->body_gap = false;
	d->st = Z_BODY;
	if (!d->left)
		frame_end(s, dir);
}

/* The greeting is complete: what it says. */
static void greeting_end(struct zmtp *s, int dir)
{
	struct zdir *d = &s->d[dir];
	struct zmtp_dir_stats *ds = &s->sum.dir[dir];
	const uint64_t mech = ((1ull << 20) - 1) << 12;	/* bytes 12 .. 31 */

	d->st = Z_FLAGS;
	if (d->greet_known & (1ull << 11))
		ds->minor = d->greet[11];
	if ((d->greet_known & mech) == mech) {
		for (int i = 0; i < 20 && d->greet[12 + i]; i++)
			ds->mechanism[i] = d->greet[12 + i] >= 'A' && d->greet[12 + i] <= 'Z' ?
					   d->greet[12 + i] : '?';
	}
	if ((d->greet_known & (1ull << 10)) && d->greet[10] < 3)
		lose(s, dir);	/* a version this parser does not speak */
}

/* Captured bytes of direction dir. */
static void consume(struct zmtp *s, int dir, const unsigned char *p, size_t n)
{
	struct zdir *d = &s->d[dir];

	while (n) {
		switch (d->st) {
		case Z_GREETING:
			d->greet_known |= 1ull << d->greet_n;
			d->greet[d->greet_n++] = *p++;
			n--;
			if (d->greet_n == GREETING_BYTES)
				greeting_end(s, dir);
			break;
		case Z_FLAGS:
			d->flags = *p++;
			n--;
			if (d->flags & F_RESERVED) {
				lose(s, dir);
				break;
			}
			d->size_w = d->flags & F_LONG ? 8 : 1;
			d->size_n = 0;
			d->size = 0;
			d->st = Z_SIZE;
			break;
		case Z_SIZE:
			if (s->framing == MSG_FRAMING_LEN32LE)
				d->size |= (uint64_t)*p++ << (8 * d->size_n);
			else
				d->size = d->size << 8 | *p++;
			n--;
			if (++d->size_n < d->size_w)
				break;
			if (d->size >> 62 || (s->framing != MSG_FRAMING_ZMTP &&
			    (!d->size || d->size >= MSG_SYNC_LEN32_MAX_BYTES))) {
				lose(s, dir);	/* no frame is that long: not this framing */
				break;
			}
			frame_begin_body(s, dir);
			break;
		case Z_BODY: {
			size_t k = n < d->left ? n : (size_t)d->left;

			if (!d->body_gap && d->body_n < BODY_KEEP) {
				size_t c = BODY_KEEP - d->body_n < k ? BODY_KEEP - d->body_n : k;

				memcpy(d->body + d->body_n, p, c);
				d->body_n += c;
			}
			d->left -= k;
			p += k;
			n -= k;
			if (!d->left)
				frame_end(s, dir);
			break;
		}
		case Z_LOST:
		case Z_HUNT:
			s->sum.dir[dir].bytes_unparsed += n;
			return;
		}
	}
}

/* n bytes of direction dir that were not captured. */
static void skip(struct zmtp *s, int dir, uint64_t n)
{
	struct zdir *d = &s->d[dir];

	while (n) {
		switch (d->st) {
		case Z_GREETING: {
			uint64_t k = GREETING_BYTES - d->greet_n < n ? GREETING_BYTES - d->greet_n : n;

			d->greet_n += k;
			n -= k;
			if (d->greet_n == GREETING_BYTES)
				greeting_end(s, dir);
			break;
		}
		case Z_BODY: {
			uint64_t k = n < d->left ? n : d->left;

			d->body_gap = true;
			d->left -= k;
			n -= k;
			if (!d->left)
				frame_end(s, dir);
			break;
		}
		case Z_FLAGS:
		case Z_SIZE:
			lose(s, dir);	/* where the next frame starts is not known */
			break;
		case Z_LOST:
		case Z_HUNT:
			s->sum.dir[dir].bytes_unparsed += n;
			return;
		}
	}
}

/*
 * A hunting direction starts at this record when it parses from its first
 * byte as whole frames, the last ending at the record's end or going on
 * past it (msg_sync.h); for len32 also at a record of just a length (a
 * reader that takes the 4 bytes first, then the body).
 */
static void hunt(struct zmtp *s, int dir, const unsigned char *p, size_t len, size_t gap_after)
{
	struct zdir *d = &s->d[dir];
	struct msg_sync ms;

	if (msg_sync__check(s->framing, p, len, (uint64_t)len + gap_after, &ms))
		return;
	if (!ms.frames && !(ms.cut && ms.id) &&
	    !(s->framing != MSG_FRAMING_ZMTP && len == 4 && !gap_after))
		return;
	d->in_msg = false;
	frame_next(s, d);
}

void zmtp_dir_feed(struct zmtp *s, int dir, uint32_t gap_before, const unsigned char *p,
		   size_t len, size_t gap_after)
{
	if (gap_before && s->d[dir].st != Z_HUNT)
		skip(s, dir, gap_before);
	if (s->d[dir].st == Z_HUNT)
		hunt(s, dir, p, len, gap_after);
	consume(s, dir, p, len);
	if (gap_after)
		skip(s, dir, gap_after);
}
