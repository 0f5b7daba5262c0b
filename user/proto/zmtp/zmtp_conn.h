/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * The ZMTP recognizers' own state (zmtp.c: the recognizers; zmtp_frame.c:
 * each direction's greeting, frames, commands and message ids).
 */
#ifndef TTFTRACE_ZMTP_CONN_H
#define TTFTRACE_ZMTP_CONN_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include "user/lib/hash.h"
#include "user/proto/recognizer.h"
#include "user/proto/zmtp/msg_sync.h"
#include "user/proto/zmtp/zmtp.h"

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

/*
 * One record of direction dir: gap_before bytes not captured, len captured
 * bytes, then gap_after not captured (proto_recognizer.feed).
 */
void zmtp_dir_feed(struct zmtp *s, int dir, uint32_t gap_before, const unsigned char *p,
		   size_t len, size_t gap_after);

#endif /* TTFTRACE_ZMTP_CONN_H */
