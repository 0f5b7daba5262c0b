/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * Incremental HTTP/1.1 message parser for one direction of a connection
 * (RFC 9112). Fed the captured prefix of each read or write, then told how
 * many bytes of it were not captured (a gap). Gaps inside a body of known
 * length (Content-Length, chunk data, the CRLF after chunk data, or a body
 * that lasts until close) are skipped by count and keep the parser in sync;
 * a gap anywhere else (start line, headers, chunk-size line, between
 * messages) loses sync. A lost parser ignores everything until the caller
 * sees a message start at a record boundary and calls http_parser__resync().
 *
 * Only what request recognition needs is kept: method, path (no query),
 * status, and the headers that decide framing and content type.
 * Callbacks run synchronously inside feed/gap/eof.
 */
#ifndef TTFTRACE_HTTP_H
#define TTFTRACE_HTTP_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include "user/proto/stream/content_coding.h"
#include "user/proto/traceparent.h"

struct http_head {
	bool is_request;
	char method[8];		/* requests: "POST", truncated */
	char path[96];		/* requests: target without the query string, truncated */
	int version_minor;	/* HTTP/1.x; -1 when the start line was too long to see it */
	int status;		/* responses: status code */
	int64_t content_length;	/* -1: no Content-Length */
	bool chunked;		/* Transfer-Encoding: chunked */
	bool event_stream;	/* Content-Type: text/event-stream */
	bool ndjson;		/* Content-Type: application/x-ndjson (Ollama's token stream) */
	bool json;		/* Content-Type: .../json */
	bool conn_close;	/* Connection: close */
	bool expect_continue;	/* requests: Expect: 100-continue (RFC 9110 section 10.1.1) */
	enum http_coding coding; /* Content-Encoding */
	/* requests: a W3C traceparent header (traceparent.h); bad: one or more, none valid */
	struct ttf_trace_parent traceparent;
	int n_traceparent;	/* traceparent headers seen (a second makes the first invalid) */
	bool no_body;		/* on_head may set it: no body follows (response to HEAD) */
};

enum http_body_mode {
	HTTP_BODY_NONE = 0,	/* no message in progress, or still in the head */
	HTTP_BODY_LENGTH,	/* Content-Length */
	HTTP_BODY_CHUNKED,
	HTTP_BODY_CLOSE,	/* response without length: ends when the connection closes */
};

struct http_parser_cbs {
	/* First byte of a new message. */
	void (*on_begin)(void *ctx);
	/* Start line and headers parsed; may set h->no_body. 1xx responses end right after. */
	void (*on_head)(void *ctx, struct http_head *h);
	/* Decoded body bytes (chunk framing removed). */
	void (*on_body)(void *ctx, const char *data, size_t len);
	/* len body bytes were not captured. */
	void (*on_body_gap)(void *ctx, size_t len);
	/* The message ended; msg_bytes: start line, headers, body, framing, gaps included. */
	void (*on_end)(void *ctx, uint64_t msg_bytes);
};

struct http_parser;

/* is_request: parse requests (else responses). cbs is copied. NULL + errno on failure. */
struct http_parser *http_parser__new(bool is_request, const struct http_parser_cbs *cbs,
				     void *ctx);
void http_parser__free(struct http_parser *p);

/* Feed captured bytes in order. Returns 0, or -EPROTO when sync is (or already was) lost. */
int http_parser__feed(struct http_parser *p, const char *buf, size_t len);
/* len bytes were not captured. Returns 0 in sync, -EPROTO when sync is (or was) lost. */
int http_parser__gap(struct http_parser *p, size_t len);
/*
 * The connection closed: a body that lasts until close ends (on_end).
 * Returns 0 when no message was left unfinished, -EPIPE when one was cut.
 * The parser is then idle.
 */
int http_parser__eof(struct http_parser *p);
/* Forget the current message (no on_end) and sync: the next byte starts a message. */
void http_parser__resync(struct http_parser *p);

bool http_parser__lost(const struct http_parser *p);
/* A message has begun and not ended. */
bool http_parser__in_message(const struct http_parser *p);
enum http_body_mode http_parser__body_mode(const struct http_parser *p);
/* Bytes of the message in progress so far, gaps included. */
uint64_t http_parser__msg_bytes(const struct http_parser *p);

/* buf starts like a request line: known METHOD, SP, then '/' or '*' or "http". */
bool http_looks_like_request(const char *buf, size_t len);
/* buf starts with "HTTP/1." */
bool http_looks_like_response(const char *buf, size_t len);

#endif /* TTFTRACE_HTTP_H */
