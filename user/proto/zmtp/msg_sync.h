/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * Finding message framing in a connection seen from its middle
 * (docs/protocols.md, "ZMTP mid-stream" and "Length-prefixed messages"):
 * does one record's payload, read from its first byte, parse as whole
 * frames of ZMTP 3.x (no greeting) or of 4-byte length-prefixed messages?
 * The recognizers in zmtp.c decide from these checks; nothing is guessed
 * inside a record (a record that does not start at a frame says no).
 */
#ifndef TTFTRACE_MSG_SYNC_H
#define TTFTRACE_MSG_SYNC_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

enum msg_framing {
	MSG_FRAMING_ZMTP,	/* ZMTP 3.x frames: flags, 1- or 8-byte size, body */
	MSG_FRAMING_LEN32BE,	/* 4-byte big-endian length, then that many bytes */
	MSG_FRAMING_LEN32LE,	/* 4-byte little-endian length, then that many bytes */
	MSG_FRAMING__N,
};

/* A len32 message this long or longer is no message (a header that is not one). */
#define MSG_SYNC_LEN32_MAX_BYTES (16u << 20)

/* A message frame this short may sit beside a msgpack body (msg_sync.values). */
#define MSG_SYNC_SMALL_FRAME_BYTES 8

/* What msg_sync__check() found. */
struct msg_sync {
	unsigned int frames;	/* frames (len32: messages) complete within the record */
	bool tiled;		/* they end exactly at the record's end */
	bool cut;		/* a frame runs past the record (or past its captured bytes) */
	/*
	 * A body holds a request-id-like string (zmtp_id_like()): for ZMTP one
	 * that is a msgpack map or array, exactly one value to its end (or
	 * valid to the end of what was captured); for len32 any body (opaque:
	 * zmtp_ids_scan()).
	 */
	bool id;
	/*
	 * ZMTP: every message frame captured whole, at least one with a body
	 * that is exactly one msgpack map or array, or one pickle (protocol 2
	 * to 5: 0x80, the version, ... the STOP opcode '.'), the others at most
	 * MSG_SYNC_SMALL_FRAME_BYTES (a request type, an identity, an empty
	 * delimiter): framing that agrees with itself without an id (the
	 * id-less messages of a coordinator or a stats channel).
	 */
	bool values;
};

/* "zmtp", "len32be", "len32le" */
const char *msg_framing_name(enum msg_framing f);

/*
 * Parse b[0 .. len) (a record's captured prefix) as framing f from its
 * first byte. total: the record's bytes (len plus those not captured), or
 * 0 when only len is known (then a frame past len is cut). ZMTP: reserved
 * flag bits zero, a long size only above 255 and below 2^32 (as libzmq
 * writes), a command's name 1..31 capital letters; len32: a length of
 * 1 .. MSG_SYNC_LEN32_MAX_BYTES-1. 0 with *out filled, or -EINVAL at the
 * first header that breaks these (then *out is not meaningful).
 */
int msg_sync__check(enum msg_framing f, const unsigned char *b, size_t len, uint64_t total,
		    struct msg_sync *out);

/*
 * Does b[0 .. len) start with a TLS record header (type 0x14..0x17,
 * version 0x03 0x00..0x04; RFC 8446 5.1)? Ciphertext: a recognizer may rule
 * the connection out. (Text may be a frame body's tail: no such rule.)
 */
bool msg_sync__tls_record(const unsigned char *b, size_t len);

#endif /* TTFTRACE_MSG_SYNC_H */
