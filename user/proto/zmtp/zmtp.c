// SPDX-License-Identifier: GPL-2.0-only
/*
 * ZMTP 3.x recognizer (recognizer.h, zmtp.h): ZeroMQ sockets over TCP, as
 * pyzmq's PUSH/PULL and ROUTER/DEALER connect an LLM API server to its
 * engine core. Wire facts: 23/ZMTP (3.0) and 37/ZMTP (3.1), summarized in
 * docs/protocols.md ("ZMTP").
 *
 * Each direction has its own parser: the 64-byte greeting, then frames
 * (flags byte, 1- or 8-byte size, body). Command frames are parsed for
 * READY's Socket-Type and counted (PING/PONG); message frames are joined
 * into messages (MORE), and each frame body's captured prefix is walked as
 * msgpack for request-id strings. Uncaptured bytes are skipped by count
 * inside a frame body; a gap over a frame's flags or size, or a flags byte
 * with reserved bits, loses the direction's framing for good: counted and
 * said (lost_sync), never guessed, since writes need not start at messages.
 * The connection makes no requests: it reports messages (track_zmtp_msg)
 * and, at close, its summary (track_zmtp_conn).
 *
 * Connections seen from their middle (opened before tracing) have no
 * greeting: proto_zmtp_mid says yes to a record that parses as whole
 * frames with an id in a msgpack body (msg_sync.h), and each direction
 * then starts at the first record that parses so ("hunting"). The same
 * machinery reads streams of 4-byte length-prefixed messages
 * (proto_len32be, proto_len32le): one frame a message, opaque bodies
 * scanned for ids. In both, a lost framing hunts again at a later
 * record's start (counted in lost_sync as well).
 */
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include "user/lib/hash.h"
#include "user/proto/zmtp/msg_sync.h"
#include "user/proto/recognizer.h"
#include "user/proto/zmtp/zmtp.h"
#include "user/proto/zmtp/zmtp_pickle.h"

/* The family's counters (zmtp_counters), in the order they are printed. */
enum zmtp_counter {
	ZMTP_CNT_CONNS,		/* connections summarized (length-prefixed ones too) */
	ZMTP_CNT_MSGS_IN,	/* messages read by traced processes */
	ZMTP_CNT_MSGS_OUT,	/* ... written */
	ZMTP_CNT_PARTIAL,	/* messages with body bytes not captured */
	ZMTP_CNT_IDS,		/* request ids found in messages (one per message and id) */
	ZMTP_CNT_LOST_SYNC,	/* directions whose framing was lost (never guessed inside a record) */
	ZMTP_CNT_MID_STREAM,	/* connections recognized mid-stream (no greeting) */
	ZMTP_CNT_LEN32_CONNS,	/* connections of 4-byte length-prefixed messages */
	ZMTP_CNT__N,
};

static const char *const zmtp_counter_names[ZMTP_CNT__N] = {
	[ZMTP_CNT_CONNS] = "zmtp_connections",
	[ZMTP_CNT_MSGS_IN] = "zmtp_messages_in",
	[ZMTP_CNT_MSGS_OUT] = "zmtp_messages_out",
	[ZMTP_CNT_PARTIAL] = "zmtp_messages_partial",
	[ZMTP_CNT_IDS] = "zmtp_request_ids",
	[ZMTP_CNT_LOST_SYNC] = "zmtp_lost_sync",
	[ZMTP_CNT_MID_STREAM] = "zmtp_mid_stream_connections",
	[ZMTP_CNT_LEN32_CONNS] = "len32_connections",
};

const struct proto_counters zmtp_counters = { .names = zmtp_counter_names, .n = ZMTP_CNT__N };

#define GREETING_BYTES 64
#define SIG_BYTES 10		/* %xFF, 8 padding bytes, %x7F */
#define BODY_KEEP 4096		/* a frame body's captured prefix kept for the id walk */
#define IDS_TRACKED 4096	/* distinct ids kept per connection for ids_seen */

#define F_MORE 0x01
#define F_LONG 0x02
#define F_COMMAND 0x04
#define F_RESERVED 0xf8

enum zstate { Z_GREETING, Z_FLAGS, Z_SIZE, Z_BODY, Z_LOST, Z_HUNT };

struct zdir {
	enum zstate st;
	uint32_t greet_n;		/* greeting bytes consumed */
	unsigned char greet[GREETING_BYTES];
	uint64_t greet_known;		/* bit i (i < 64): greeting byte i was captured */
	uint8_t flags;			/* the frame's */
	uint8_t size_n, size_w;		/* size bytes read, of size_w */
	uint64_t size, left;		/* the frame body's size, bytes still to come */
	unsigned char body[BODY_KEEP];
	size_t body_n;			/* captured prefix of the body kept */
	bool body_gap;			/* bytes of the body were not captured: body_n is final */
	struct ttf_zmtp_msg msg;	/* the message in progress */
	char (*more)[ZMTP_ID_BYTES];	/* its ids past ZMTP_MSG_IDS (msg.more_ids) */
	uint32_t n_more, cap_more;
	bool in_msg;
	uint64_t seq;
};

struct id_seen {
	char id[ZMTP_ID_BYTES];
	UT_hash_handle hh;
};

struct zmtp {
	struct track_conn *tc;
	enum msg_framing framing;
	bool mid;			/* no greeting: directions start hunting */
	struct zdir d[ZMTP_DIR__N];
	struct ttf_zmtp_conn sum;
	struct id_seen *ids;		/* distinct ids, uthash by id */
	unsigned int n_tracked;
};

static enum proto_verdict zmtp_detect(const char *buf, size_t len, bool is_read,
				      enum track_role *role)
{
	const unsigned char *b = (const unsigned char *)buf;

	(void)is_read;
	if (!len || b[0] != 0xff)
		return PROTO_NO;
	if (len < SIG_BYTES)
		return PROTO_MAYBE;
	if (b[SIG_BYTES - 1] != 0x7f || (len > SIG_BYTES && b[SIG_BYTES] < 3))
		return PROTO_NO;	/* not ZMTP, or ZMTP 1.0/2.0 */
	/* no requests here: "server" only makes RECV the IN side */
	*role = TRACK_ROLE_SERVER;
	return PROTO_YES;
}

static struct zmtp *open_as(struct track_conn *tc, enum msg_framing f, bool mid)
{
	struct zmtp *s = calloc(1, sizeof(*s));

	if (!s)
		return NULL;
	s->tc = tc;
	s->framing = f;
	s->mid = mid;
	s->sum.framing = f;
	s->sum.mid_stream = mid && f == MSG_FRAMING_ZMTP;
	for (int i = 0; i < ZMTP_DIR__N; i++) {
		s->d[i].msg.dir = i;
		s->d[i].st = mid ? Z_HUNT : Z_GREETING;
		s->sum.dir[i].minor = 0xff;
	}
	if (f == MSG_FRAMING_ZMTP && mid)
		track_count(tc, &zmtp_counters, ZMTP_CNT_MID_STREAM, 1);
	else if (f != MSG_FRAMING_ZMTP)
		track_count(tc, &zmtp_counters, ZMTP_CNT_LEN32_CONNS, 1);
	return s;
}

/*
 * No greeting: yes to a record that parses from its first byte as whole
 * frames of framing f (or frames going on past the captured bytes) with a
 * request id in a body (msg_sync.h); no to TLS records; else maybe (a
 * record that starts inside a frame, text included: a later one may
 * start at one; PROTO_UNDECIDED_MAX bounds the wait). A
 * len32 stream needs one whole message; ZMTP takes a body cut by the
 * capture when 256 bytes of it parsed as msgpack with the id.
 */
static enum proto_verdict mid_detect(enum msg_framing f, const char *buf, size_t len,
				     enum track_role *role)
{
	const unsigned char *b = (const unsigned char *)buf;
	struct msg_sync ms;

	if (!len)
		return PROTO_MAYBE;
	if (msg_sync__tls_record(b, len))
		return PROTO_NO;
	if (msg_sync__check(f, b, len, 0, &ms) || !ms.id)
		return PROTO_MAYBE;
	if (!(ms.tiled && ms.frames) &&
	    !(ms.cut && (ms.frames || (f == MSG_FRAMING_ZMTP && len >= 256))))
		return PROTO_MAYBE;
	*role = TRACK_ROLE_SERVER;	/* as zmtp_detect: RECV is IN */
	return PROTO_YES;
}

static enum proto_verdict zmtp_mid_detect(const char *buf, size_t len, bool is_read,
					  enum track_role *role)
{
	(void)is_read;
	return mid_detect(MSG_FRAMING_ZMTP, buf, len, role);
}

static enum proto_verdict len32be_detect(const char *buf, size_t len, bool is_read,
					 enum track_role *role)
{
	(void)is_read;
	return mid_detect(MSG_FRAMING_LEN32BE, buf, len, role);
}

static enum proto_verdict len32le_detect(const char *buf, size_t len, bool is_read,
					 enum track_role *role)
{
	(void)is_read;
	return mid_detect(MSG_FRAMING_LEN32LE, buf, len, role);
}

static void *zmtp_open(struct track_conn *tc, enum track_role role)
{
	(void)role;
	return open_as(tc, MSG_FRAMING_ZMTP, false);
}

static void *zmtp_mid_open(struct track_conn *tc, enum track_role role)
{
	(void)role;
	return open_as(tc, MSG_FRAMING_ZMTP, true);
}

static void *len32be_open(struct track_conn *tc, enum track_role role)
{
	(void)role;
	return open_as(tc, MSG_FRAMING_LEN32BE, true);
}

static void *len32le_open(struct track_conn *tc, enum track_role role)
{
	(void)role;
	return open_as(tc, MSG_FRAMING_LEN32LE, true);
}

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

static void zmtp_feed(void *st, enum track_side side, uint32_t gap_before, const char *buf,
		      size_t len, size_t gap_after)
{
	struct zmtp *s = st;
	int dir = side == TRACK_SIDE_REQ ? ZMTP_DIR_IN : ZMTP_DIR_OUT;

	if (gap_before && s->d[dir].st != Z_HUNT)
		skip(s, dir, gap_before);
	if (s->d[dir].st == Z_HUNT)
		hunt(s, dir, (const unsigned char *)buf, len, gap_after);
	consume(s, dir, (const unsigned char *)buf, len);
	if (gap_after)
		skip(s, dir, gap_after);
}

static void zmtp_forget(void *st, struct track_req *q)
{
	(void)st;
	(void)q;	/* no requests on a ZMTP connection */
}

static void zmtp_close(void *st, bool until_close_ends)
{
	struct zmtp *s = st;

	(void)until_close_ends;
	for (int i = 0; i < ZMTP_DIR__N; i++)
		if (s->d[i].in_msg ||
		    (s->d[i].st == Z_SIZE && (s->framing == MSG_FRAMING_ZMTP || s->d[i].size_n)) ||
		    (s->d[i].st == Z_BODY && !(s->d[i].flags & F_COMMAND)))
			s->sum.dir[i].cut = 1;
	track_count(s->tc, &zmtp_counters, ZMTP_CNT_CONNS, 1);
	track_zmtp_conn(s->tc, &s->sum);
}

static void zmtp_free(void *st)
{
	struct zmtp *s = st;
	struct id_seen *e, *tmp;

	HASH_ITER(hh, s->ids, e, tmp) {
		HASH_DEL(s->ids, e);
		free(e);
	}
	for (int i = 0; i < ZMTP_DIR__N; i++)
		free(s->d[i].more);
	free(s);
}

const struct proto_recognizer proto_zmtp = {
	.name = "zmtp",
	.detect = zmtp_detect,
	.open = zmtp_open,
	.feed = zmtp_feed,
	.forget = zmtp_forget,
	.close = zmtp_close,
	.free = zmtp_free,
};

const struct proto_recognizer proto_zmtp_mid = {
	.name = "zmtp-mid",
	.detect = zmtp_mid_detect,
	.open = zmtp_mid_open,
	.feed = zmtp_feed,
	.forget = zmtp_forget,
	.close = zmtp_close,
	.free = zmtp_free,
};

const struct proto_recognizer proto_len32be = {
	.name = "len32be",
	.detect = len32be_detect,
	.open = len32be_open,
	.feed = zmtp_feed,
	.forget = zmtp_forget,
	.close = zmtp_close,
	.free = zmtp_free,
};

const struct proto_recognizer proto_len32le = {
	.name = "len32le",
	.detect = len32le_detect,
	.open = len32le_open,
	.feed = zmtp_feed,
	.forget = zmtp_forget,
	.close = zmtp_close,
	.free = zmtp_free,
};
