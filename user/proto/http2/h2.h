/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * The HTTP/2 recognizer's own state, shared by its parts: http2.c (the
 * recognizer: detect, feed, close), h2_frame.c (frames of one direction),
 * h2_headers.c (what header blocks mean), h2_stream.c (the stream table and
 * response bodies).
 */
#ifndef TTFTRACE_H2_H
#define TTFTRACE_H2_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include "user/proto/http2/grpc.h"
#include "user/proto/http2/hpack.h"
#include "user/proto/recognizer.h"
#include "user/proto/stream/resp_body.h"

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
#define SETTINGS_MAX_FRAME_SIZE 5
/* SETTINGS_MAX_FRAME_SIZE before a SETTINGS frame says otherwise, and its limits (RFC 9113 6.5.2) */
#define MAX_FRAME_INITIAL 16384u
#define MAX_FRAME_LIMIT 16777215u

/* The family's counters (http2_counters), in the order they are printed. */
enum h2_counter {
	H2_CNT_FRAMES_SKIPPED,	/* frames not parsed: sync lost, or a gap inside */
	H2_CNT_STREAMS_UNSEEN,	/* streams that began before tracing: not timed */
	H2_CNT_HPACK_UNKNOWN,	/* header fields that referenced unknown table entries */
	H2_CNT_HPACK_ERRORS,	/* header blocks that could not be decoded */
	H2_CNT_GRPC_LOST,	/* gRPC messages whose framing was lost */
	H2_CNT__N,
};

struct h2;

/* One stream: one request and its response. */
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
	uint32_t max_frame;		/* largest payload the peer accepts; 0: MAX_FRAME_INITIAL */
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

static inline uint32_t be32(const uint8_t *p)
{
	return (uint32_t)p[0] << 24 | (uint32_t)p[1] << 16 | (uint32_t)p[2] << 8 | p[3];
}

/* ---- h2_stream.c ---- */

struct h2_stream *h2_stream_find(struct h2 *s, uint32_t id);
/* A new stream in the table; NULL when out of memory. */
struct h2_stream *h2_stream_new(struct h2 *s, uint32_t id);
void h2_stream_free(struct h2_stream *st);
/* Take st out of the table and free it. */
void h2_stream_drop(struct h2 *s, struct h2_stream *st);
/* Both directions ended and the tracker has the request (or never had): forget it. */
void h2_stream_maybe_drop(struct h2 *s, struct h2_stream *st);
/* A stream ends abnormally (RST_STREAM, GOAWAY): its request is aborted where it stands. */
void h2_stream_reset(struct h2 *s, struct h2_stream *st);
/* st's response body is gRPC messages (grpc.h). */
void h2_stream_grpc(struct h2_stream *st);
/* Response DATA payload bytes of st, captured in the current record. */
void h2_stream_body(struct h2_stream *st, const uint8_t *p, size_t len);

/* ---- h2_headers.c ---- */

/* The header block gathered in d ended (END_HEADERS): decode it, and act on it. */
void h2_block_done(struct h2 *s, struct h2_dir *d);
/* st's response ended (END_STREAM). */
void h2_resp_end(struct h2 *s, struct h2_stream *st);

/* ---- h2_frame.c ---- */

/* Captured bytes of one direction, in order. */
void h2_dir_feed(struct h2 *s, struct h2_dir *d, const uint8_t *p, size_t len);
/* n bytes of one direction were not captured. */
void h2_dir_gap(struct h2 *s, struct h2_dir *d, size_t n);

#endif /* TTFTRACE_H2_H */
