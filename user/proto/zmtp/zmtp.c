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
 * frames with an id in a msgpack body, or as whole frames each a whole
 * msgpack map or array or pickle (msg_sync.h), and each direction
 * then starts at the first record that parses so ("hunting"). The same
 * machinery reads streams of 4-byte length-prefixed messages
 * (proto_len32be, proto_len32le): one frame a message, opaque bodies
 * scanned for ids. In both, a lost framing hunts again at a later
 * record's start (counted in lost_sync as well).
 */
#include <stdlib.h>
#include <string.h>
#include "user/proto/zmtp/zmtp_conn.h"

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
	if (msg_sync__check(f, b, len, 0, &ms))
		return PROTO_MAYBE;
	if (!ms.id && !(ms.tiled && ms.values))	/* values: ZMTP only */
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

static void zmtp_feed(void *st, enum track_side side, uint32_t gap_before, const char *buf,
		      size_t len, size_t gap_after)
{
	int dir = side == TRACK_SIDE_REQ ? ZMTP_DIR_IN : ZMTP_DIR_OUT;

	zmtp_dir_feed(st, dir, gap_before, (const unsigned char *)buf, len, gap_after);
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
