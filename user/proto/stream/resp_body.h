/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * One HTTP response body, as HTTP/1.1 (http1.c) and HTTP/2 (http2.c) read
 * it alike: its Content-Encoding decoded (content_coding.h) or, when it
 * cannot be, the request made opaque (no token counts, never wrong ones);
 * then the plain bytes split into SSE or NDJSON events, each reported as a
 * token event (sse.h, ndjson.h), or handed to another reader (gRPC
 * messages), or kept whole (bounded) to read its usage report at the end.
 *
 * The caller says where the body begins (resp_body__begin, with the
 * request it answers), how it is read, and feeds its bytes and gaps; the
 * body reports through track.h.
 */
#ifndef TTFTRACE_RESP_BODY_H
#define TTFTRACE_RESP_BODY_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include "user/proto/stream/content_coding.h"
#include "user/proto/track.h"

struct sse_splitter;
struct cc_decoder;

/* How the plain bytes are read. */
enum resp_body_mode {
	RESP_BODY_WHOLE = 0,	/* kept (bounded) to read its usage report at the end */
	RESP_BODY_EVENTS,	/* SSE events, or NDJSON lines: a token event each */
	RESP_BODY_READER,	/* handed to a reader of the caller's (gRPC messages) */
};

/* A reader of the plain bytes of a RESP_BODY_READER body. */
struct resp_body_reader {
	void (*data)(void *ctx, const char *data, size_t len);
	void (*gap)(void *ctx, size_t len);
	void *ctx;
};

struct resp_body {
	struct track_conn *tc;
	struct track_req *q;		/* the request answered; NULL: none */
	enum resp_body_mode mode;
	struct sse_splitter *sse;	/* RESP_BODY_EVENTS; kept across bodies */
	bool lines;			/* ... NDJSON lines (ndjson.h), not SSE */
	struct resp_body_reader reader;	/* RESP_BODY_READER */
	struct cc_decoder *dec;		/* gzip/deflate: decoded before reading */
	bool coded;			/* the body has a Content-Encoding */
	bool opaque;			/* ... that cannot be read: no tokens counted */
	uint64_t first_body_ns;		/* the write of the body's first byte; 0 not yet */
	char *body;			/* RESP_BODY_WHOLE: the bytes kept */
	size_t body_len;
	bool body_incomplete;		/* ... not all of them */
};

/* A body for connection tc: zeroed but for tc. */
void resp_body__init(struct resp_body *b, struct track_conn *tc);
/* Forget the body (keeps the splitter allocated); the next one begins afresh. */
void resp_body__reset(struct resp_body *b);
void resp_body__free(struct resp_body *b);

/*
 * q's response body is to come, coded as coding: read whole until told
 * otherwise; a coding not decoded here (or a decoder that could not be
 * allocated) makes q opaque at once.
 */
void resp_body__begin(struct resp_body *b, struct track_req *q, enum http_coding coding);
/* q's response cannot be read from its start (a head not decoded): opaque. */
void resp_body__unreadable(struct resp_body *b, struct track_req *q);
/* Read the body as events: NDJSON lines (lines) or SSE. */
void resp_body__events(struct resp_body *b, bool lines);
/* Hand the body's plain bytes to r. */
void resp_body__read_with(struct resp_body *b, const struct resp_body_reader *r);

/* Body bytes as they were written (still coded), captured in the current record. */
void resp_body__data(struct resp_body *b, const char *data, size_t len);
/* len body bytes were not captured. */
void resp_body__gap(struct resp_body *b, size_t len);
/*
 * The body ended: TTF_REQ_DECODED when it was decoded throughout; a whole
 * body's usage report and error read. The caller then ends the response
 * (a whole body is one token when its status says so: track_resp_whole).
 */
void resp_body__end(struct resp_body *b);

/* One event's data (SSE: data lines joined; NDJSON: a line) completed by the write at tag. */
void resp_body__event(struct resp_body *b, const char *data, size_t len, uint64_t tag);

#endif /* TTFTRACE_RESP_BODY_H */
