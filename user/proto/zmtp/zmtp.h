/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * ZMTP 3.x (ZeroMQ over tcp://) as the recognizer in zmtp.c sees it: the
 * messages crossing one traced socket, and a summary of the connection.
 * vLLM's API server talks to its engine core, SGLang's tokenizer manager to
 * its scheduler, through pyzmq sockets (PUSH/PULL, ROUTER/DEALER); these
 * shapes make those hops visible. Only ids, sizes and times: no payload
 * text leaves the recognizer but the request-id strings accepted by
 * zmtp_id_like() (docs/protocols.md, "ZMTP").
 */
#ifndef TTFTRACE_ZMTP_H
#define TTFTRACE_ZMTP_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include "user/proto/request.h"

#define ZMTP_MSG_IDS 4		/* request ids kept per message */
#define ZMTP_ID_BYTES 64	/* an id's room, NUL included: longer strings are no ids */
#define ZMTP_CONN_IDS 16	/* distinct ids listed per connection summary */
#define ZMTP_MSG_MORE_IDS 1024	/* ids past ZMTP_MSG_IDS handed to the callback per message */

/* Which way a message crossed the traced socket. */
enum zmtp_dir {
	ZMTP_DIR_IN,		/* the traced process read it (RECV records) */
	ZMTP_DIR_OUT,		/* the traced process wrote it (SEND records) */
	ZMTP_DIR__N,
};

/* struct ttf_zmtp_msg.flags */
enum zmtp_msg_flags {
	ZMTP_MSG_PARTIAL = 1 << 0,	/* some body bytes were not captured: ids may be missing */
	ZMTP_MSG_IDS_MORE = 1 << 1,	/* more than ZMTP_MSG_IDS ids were found (the first kept) */
};

/*
 * One complete message (all its frames, the last without MORE). The
 * tracker fills sock_cookie, addr, tgid, tid and ts_ns from the record that
 * carried the message's last byte (captured or not); the recognizer the rest.
 */
struct ttf_zmtp_msg {
	uint64_t sock_cookie;
	struct ttf_conn_addr addr;	/* the connection's, as its tracker has it (request.h) */
	uint32_t tgid;
	uint32_t tid;
	uint64_t ts_ns;		/* CLOCK_MONOTONIC: that record's timestamp */
	uint64_t seq;		/* 0, 1, ... per connection and direction */
	uint64_t bytes;		/* wire bytes: every frame's flags, size and body */
	uint64_t body_bytes;	/* frame bodies only */
	uint32_t frames;
	uint8_t dir;		/* enum zmtp_dir */
	uint8_t n_ids;		/* ids[0 .. n_ids), NUL-terminated, in the order found */
	uint16_t flags;		/* enum zmtp_msg_flags */
	char ids[ZMTP_MSG_IDS][ZMTP_ID_BYTES];
	/*
	 * The ids past the first ZMTP_MSG_IDS (an engine step's output names
	 * every request in the step), up to ZMTP_MSG_MORE_IDS: valid only
	 * during the callback, NULL in copies kept after it.
	 */
	const char (*more_ids)[ZMTP_ID_BYTES];
	uint32_t n_more_ids;
};

/* Per direction of a connection (index enum zmtp_dir). */
struct zmtp_dir_stats {
	uint64_t msgs;		/* complete messages */
	uint64_t bytes;		/* their wire bytes */
	uint64_t partial;	/* ... of them with body bytes not captured */
	uint64_t commands;	/* command frames (READY, PING, PONG, ERROR, ...) */
	uint64_t pings;		/* PING and PONG commands (ZMTP 3.1 heartbeats) */
	uint64_t lost_sync;	/* 1 when framing was lost: nothing after it was parsed (mid-stream: until a record parsed from its start) */
	uint64_t bytes_unparsed;/* bytes after the loss, or after a greeting not understood */
	uint64_t cut;		/* 1 when a message was in progress at close */
	uint8_t minor;		/* ZMTP minor version in the greeting; 0xff unknown */
	char socket_type[12];	/* READY's Socket-Type (the sender's), "" unknown */
	uint32_t identity_bytes;/* READY's Identity length (ROUTER peers), 0 none: never its bytes */
	char mechanism[21];	/* the greeting's security mechanism, "" unknown */
};

/*
 * The summary of a ZMTP connection, reported once when it closes or
 * tracing stops. The tracker fills sock_cookie, tgid and addr.
 */
struct ttf_zmtp_conn {
	uint64_t sock_cookie;
	uint32_t tgid;
	struct ttf_conn_addr addr;
	struct zmtp_dir_stats dir[ZMTP_DIR__N];
	uint64_t ids_seen;	/* distinct request ids seen, both directions */
	uint64_t ids_untracked;	/* ids not counted as distinct: the set was full */
	uint32_t n_ids;		/* ids[0 .. n_ids): the first distinct ones */
	char ids[ZMTP_CONN_IDS][ZMTP_ID_BYTES];
	uint8_t framing;	/* enum msg_framing (user/proto/zmtp/msg_sync.h): ZMTP, or len32 messages */
	uint8_t mid_stream;	/* 1: recognized from frames, no greeting seen (socket types unknown) */
	/* filled by whoever keeps the messages (user/model/zmtp_log.h); 0 here */
	uint64_t msgs_kept, msgs_dropped;
};

/*
 * Does the msgpack str s (n bytes, not NUL-terminated) look like a request
 * id? 16 .. ZMTP_ID_BYTES-1 bytes of [A-Za-z0-9._:-] holding 32 hex digits
 * in a row or a canonical UUID (8-4-4-4-12 hex): vLLM's cmpl-/chatcmpl-
 * ids with their uuid4().hex, SGLang's uuid4().hex rids.
 */
bool zmtp_id_like(const char *s, size_t n);

/*
 * The core of the request id s (NUL-terminated): its first canonical UUID,
 * else its first run of 32 or more hex digits, lowercased, into core (room
 * bytes, NUL included). vLLM's internal ids suffix the id its client sees
 * (chatcmpl-H-<8 hex>, cmpl-H-0-<8 hex>) and prefix its n>1 children
 * (N_...); all of them share H (docs/protocols.md, "Request ids").
 * Returns the core's length, 0 when s has none or it does not fit.
 */
size_t zmtp_id_core(const char *s, char *core, size_t room);

/*
 * Call found(ctx, s, n) for each str value of the msgpack byte string
 * buf[0 .. len), walking it as a flat sequence of values (containers are
 * headers followed by their elements, so no nesting is tracked); bin and
 * ext payloads are skipped unread. Stops at a byte that starts no msgpack
 * value (0xc1), at a value cut by len, or after 65536 values.
 */
void zmtp_msgpack_strs(const unsigned char *buf, size_t len,
		       void (*found)(void *ctx, const char *s, size_t n), void *ctx);

/*
 * Call found(ctx, s, n) for each maximal run of id characters
 * ([A-Za-z0-9._:-]) in the opaque bytes buf[0 .. len) that zmtp_id_like()
 * accepts: ids in JSON, msgpack, pickle or any framing that puts a byte
 * outside that set on both sides of them (a run cut by len is not one).
 */
void zmtp_ids_scan(const unsigned char *buf, size_t len,
		   void (*found)(void *ctx, const char *s, size_t n), void *ctx);

/*
 * Is b[0 .. n), the captured prefix of a body of total bytes (n <= total),
 * one msgpack value? Its end (> 0) when one value ends within b; 0 when
 * every byte of b is valid msgpack and the value goes on past n; -1 at an
 * unused byte (0xc1), or when a container or str claims more than the
 * total bytes left.
 */
long zmtp_msgpack_value(const unsigned char *b, size_t n, uint64_t total);

#endif /* TTFTRACE_ZMTP_H */
