// SPDX-License-Identifier: GPL-2.0-only
/* Incremental HTTP/1.1 message framing (RFC 9112 sections 3, 5, 6, 7.1). */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include "user/proto/http1/http.h"

/* Longest line kept; longer lines are scanned to their end and kept truncated. */
#define HTTP_LINE_MAX 2048

enum http_state {
	HS_IDLE,	/* between messages */
	HS_START,	/* start line */
	HS_HEADER,
	HS_BODY_LEN,
	HS_CHUNK_SIZE,
	HS_CHUNK_DATA,
	HS_CHUNK_CRLF,	/* the CRLF after chunk data */
	HS_TRAILER,
	HS_BODY_CLOSE,
	HS_LOST,
};

struct http_parser {
	struct http_parser_cbs cbs;
	void *ctx;
	bool is_request;
	enum http_state state;
	struct http_head head;
	uint64_t remaining;	/* HS_BODY_LEN / HS_CHUNK_DATA */
	uint64_t msg_bytes;
	size_t line_len;
	bool line_overflow;
	char line[HTTP_LINE_MAX];
};

static const char *const methods[] = {
	"GET", "POST", "PUT", "DELETE", "HEAD", "OPTIONS", "PATCH", "CONNECT", "TRACE",
};

bool http_looks_like_request(const char *buf, size_t len)
{
	for (size_t i = 0; i < sizeof(methods) / sizeof(methods[0]); i++) {
		size_t m = strlen(methods[i]);

		if (len < m + 2 || memcmp(buf, methods[i], m) || buf[m] != ' ')
			continue;
		return buf[m + 1] == '/' || buf[m + 1] == '*' ||
		       (len >= m + 5 && !memcmp(buf + m + 1, "http", 4));
	}
	return false;
}

bool http_looks_like_response(const char *buf, size_t len)
{
	return len >= 7 && !memcmp(buf, "HTTP/1.", 7);
}

struct http_parser *http_parser__new(bool is_request, const struct http_parser_cbs *cbs,
				     void *ctx)
{
	struct http_parser *p = calloc(1, sizeof(*p));

	if (!p)
		return NULL;
	p->cbs = *cbs;
	p->ctx = ctx;
	p->is_request = is_request;
	return p;
}

void http_parser__free(struct http_parser *p)
{
	free(p);
}

static int lose(struct http_parser *p)
{
	p->state = HS_LOST;
	p->line_len = 0;
	return -EPROTO;
}

static void msg_end(struct http_parser *p)
{
	uint64_t n = p->msg_bytes;

	p->state = HS_IDLE;
	p->msg_bytes = 0;
	p->line_len = 0;
	if (p->cbs.on_end)
		p->cbs.on_end(p->ctx, n);
}

static bool parse_request_line(struct http_parser *p, const char *l, size_t n)
{
	struct http_head *h = &p->head;
	const char *sp1 = memchr(l, ' ', n), *t, *sp2, *q;
	size_t mlen, tlen;

	if (!sp1 || sp1 == l)
		return false;
	mlen = sp1 - l;
	for (size_t i = 0; i < mlen; i++)
		if (l[i] < 'A' || l[i] > 'Z')
			return false;
	t = sp1 + 1;
	sp2 = memchr(t, ' ', n - (t - l));
	if (!sp2) {
		if (!p->line_overflow)
			return false;
		sp2 = l + n;
		h->version_minor = -1;
	} else {
		size_t vlen = n - (sp2 + 1 - l);

		if (vlen != 8 || memcmp(sp2 + 1, "HTTP/1.", 7) || sp2[8] < '0' || sp2[8] > '9')
			return false;
		h->version_minor = sp2[8] - '0';
	}
	tlen = sp2 - t;
	if (!tlen)
		return false;
	q = memchr(t, '?', tlen);
	if (q)
		tlen = q - t;
	if (mlen >= sizeof(h->method))
		mlen = sizeof(h->method) - 1;
	memcpy(h->method, l, mlen);
	h->method[mlen] = 0;
	if (tlen >= sizeof(h->path))
		tlen = sizeof(h->path) - 1;
	memcpy(h->path, t, tlen);
	h->path[tlen] = 0;
	return true;
}

static bool parse_status_line(struct http_parser *p, const char *l, size_t n)
{
	struct http_head *h = &p->head;

	/* HTTP/1.x SP 3DIGIT [SP reason] */
	if (n < 12 || memcmp(l, "HTTP/1.", 7) || l[7] < '0' || l[7] > '9' || l[8] != ' ')
		return false;
	for (int i = 9; i < 12; i++)
		if (l[i] < '0' || l[i] > '9')
			return false;
	if (n > 12 && l[12] != ' ')
		return false;
	h->version_minor = l[7] - '0';
	h->status = (l[9] - '0') * 100 + (l[10] - '0') * 10 + (l[11] - '0');
	return true;
}

static bool value_has(const char *v, size_t n, const char *token)
{
	size_t tl = strlen(token);

	for (size_t i = 0; i + tl <= n; i++)
		if (!strncasecmp(v + i, token, tl))
			return true;
	return false;
}

static bool parse_header(struct http_parser *p, const char *l, size_t n)
{
	struct http_head *h = &p->head;
	const char *c = memchr(l, ':', n), *v;
	size_t nl, vl;

	if (!c || c == l)
		return false;
	nl = c - l;
	v = c + 1;
	vl = n - nl - 1;
	while (vl && (*v == ' ' || *v == '\t')) {
		v++;
		vl--;
	}
	while (vl && (v[vl - 1] == ' ' || v[vl - 1] == '\t'))
		vl--;
	if (nl == 14 && !strncasecmp(l, "content-length", nl)) {
		int64_t cl = 0;

		if (!vl)
			return false;
		for (size_t i = 0; i < vl; i++) {
			if (v[i] < '0' || v[i] > '9' || cl > (INT64_MAX - 9) / 10)
				return false;
			cl = cl * 10 + (v[i] - '0');
		}
		h->content_length = cl;
	} else if (nl == 17 && !strncasecmp(l, "transfer-encoding", nl)) {
		h->chunked = value_has(v, vl, "chunked");
	} else if (nl == 12 && !strncasecmp(l, "content-type", nl)) {
		h->event_stream = value_has(v, vl, "text/event-stream");
		h->ndjson = value_has(v, vl, "application/x-ndjson");
		h->json = value_has(v, vl, "json");
	} else if (nl == 10 && !strncasecmp(l, "connection", nl)) {
		h->conn_close = value_has(v, vl, "close");
	} else if (nl == 6 && !strncasecmp(l, "expect", nl)) {
		h->expect_continue = value_has(v, vl, "100-continue");
	} else if (nl == 16 && !strncasecmp(l, "content-encoding", nl)) {
		h->coding = http_coding_of(v, vl, h->coding);
	} else if (nl == 11 && !strncasecmp(l, "traceparent", nl) && h->is_request) {
		/* W3C Trace Context: more than one traceparent is invalid */
		if (h->n_traceparent++ || ttf_traceparent__parse(v, vl, &h->traceparent))
			h->traceparent.valid = false;
	} else if (nl == 10 && !strncasecmp(l, "tracestate", nl) && h->is_request) {
		/* passed on with the traceparent: the span's trace_state */
		ttf_tracestate__add(&h->traceparent, v, vl);
	}
	return true;
}

/* Headers done: pick the body framing (RFC 9112 section 6.3). */
static void head_done(struct http_parser *p)
{
	struct http_head *h = &p->head;
	int st = h->status;

	if (p->cbs.on_head)
		p->cbs.on_head(p->ctx, h);
	if (!h->is_request && (st < 200 || st == 204 || st == 304 || h->no_body)) {
		msg_end(p);
	} else if (h->chunked) {
		p->state = HS_CHUNK_SIZE;
	} else if (h->content_length > 0) {
		p->state = HS_BODY_LEN;
		p->remaining = h->content_length;
	} else if (h->content_length == 0 || h->is_request) {
		msg_end(p);
	} else {
		p->state = HS_BODY_CLOSE;
	}
}

static bool parse_chunk_size(struct http_parser *p, const char *l, size_t n)
{
	uint64_t sz = 0;
	size_t i;

	for (i = 0; i < n; i++) {
		char c = l[i];
		int d;

		if (c >= '0' && c <= '9')
			d = c - '0';
		else if (c >= 'a' && c <= 'f')
			d = c - 'a' + 10;
		else if (c >= 'A' && c <= 'F')
			d = c - 'A' + 10;
		else
			break;
		if (sz >> 60)
			return false;
		sz = sz * 16 + d;
	}
	if (!i || (i < n && l[i] != ';' && l[i] != ' ' && l[i] != '\t'))
		return false;
	if (sz) {
		p->state = HS_CHUNK_DATA;
		p->remaining = sz;
	} else {
		p->state = HS_TRAILER;
	}
	return true;
}

/* One complete line (terminator stripped) in a line state. Returns 0 or -EPROTO. */
static int on_line(struct http_parser *p, const char *l, size_t n)
{
	switch (p->state) {
	case HS_START:
		if (!(p->is_request ? parse_request_line(p, l, n) : parse_status_line(p, l, n)))
			return lose(p);
		p->state = HS_HEADER;
		return 0;
	case HS_HEADER:
		if (!n) {
			head_done(p);
			return 0;
		}
		/* A header we cannot read may be one that frames the body. */
		if (!parse_header(p, l, n) && !p->line_overflow)
			return lose(p);
		return 0;
	case HS_CHUNK_SIZE:
		return parse_chunk_size(p, l, n) ? 0 : lose(p);
	case HS_CHUNK_CRLF:
		if (n)
			return lose(p);
		p->state = HS_CHUNK_SIZE;
		return 0;
	case HS_TRAILER:
		if (!n)
			msg_end(p);
		return 0;
	default:
		return lose(p);
	}
}

static void begin(struct http_parser *p)
{
	memset(&p->head, 0, sizeof(p->head));
	p->head.is_request = p->is_request;
	p->head.content_length = -1;
	p->msg_bytes = 0;
	p->line_len = 0;
	p->line_overflow = false;
	p->state = HS_START;
	if (p->cbs.on_begin)
		p->cbs.on_begin(p->ctx);
}

int http_parser__feed(struct http_parser *p, const char *buf, size_t len)
{
	size_t i = 0;

	while (i < len) {
		size_t n, avail = len - i;
		const char *nl;

		switch (p->state) {
		case HS_LOST:
			return -EPROTO;
		case HS_IDLE:
			/* RFC 9112 2.2: ignore empty lines before a start line */
			if (buf[i] == '\r' || buf[i] == '\n') {
				i++;
				continue;
			}
			begin(p);
			continue;
		case HS_BODY_LEN:
		case HS_CHUNK_DATA:
			n = avail < p->remaining ? avail : p->remaining;
			p->remaining -= n;
			p->msg_bytes += n;
			if (p->cbs.on_body)
				p->cbs.on_body(p->ctx, buf + i, n);
			i += n;
			if (!p->remaining) {
				if (p->state == HS_BODY_LEN)
					msg_end(p);
				else
					p->state = HS_CHUNK_CRLF;
			}
			continue;
		case HS_BODY_CLOSE:
			p->msg_bytes += avail;
			if (p->cbs.on_body)
				p->cbs.on_body(p->ctx, buf + i, avail);
			return 0;
		default:
			break;
		}
		/* line states */
		nl = memchr(buf + i, '\n', avail);
		n = nl ? (size_t)(nl - (buf + i)) : avail;
		if (p->line_len + n > HTTP_LINE_MAX) {
			size_t keep = HTTP_LINE_MAX - p->line_len;

			memcpy(p->line + p->line_len, buf + i, keep);
			p->line_len = HTTP_LINE_MAX;
			p->line_overflow = true;
		} else {
			memcpy(p->line + p->line_len, buf + i, n);
			p->line_len += n;
		}
		p->msg_bytes += n + (nl ? 1 : 0);
		i += n + (nl ? 1 : 0);
		if (nl) {
			size_t ll = p->line_len;

			if (ll && p->line[ll - 1] == '\r' && !p->line_overflow)
				ll--;
			p->line_len = 0;
			if (on_line(p, p->line, ll) < 0)
				return -EPROTO;
			p->line_overflow = false;
		}
	}
	return 0;
}

int http_parser__gap(struct http_parser *p, size_t len)
{
	uint64_t n;

	if (!len)
		return p->state == HS_LOST ? -EPROTO : 0;
	switch (p->state) {
	case HS_BODY_CLOSE:
		p->msg_bytes += len;
		if (p->cbs.on_body_gap)
			p->cbs.on_body_gap(p->ctx, len);
		return 0;
	case HS_BODY_LEN:
	case HS_CHUNK_DATA:
		n = len < p->remaining ? len : p->remaining;
		p->remaining -= n;
		p->msg_bytes += n;
		len -= n;
		if (p->cbs.on_body_gap)
			p->cbs.on_body_gap(p->ctx, n);
		if (p->remaining)
			return 0;
		if (p->state == HS_BODY_LEN) {
			msg_end(p);
			/* the rest would be a message we cannot see */
			return len ? lose(p) : 0;
		}
		p->state = HS_CHUNK_CRLF;
		p->line_len = 0;
		if (!len)
			return 0;
		/* the CRLF after the data may be in the gap too */
		__attribute__((fallthrough));
	case HS_CHUNK_CRLF:
		/* line_len counts a CR already seen (kept in the line buffer) */
		if (len + p->line_len > 2 || (p->line_len && p->line[0] != '\r'))
			return lose(p);
		p->msg_bytes += len;
		if (len + p->line_len == 2) {
			p->line_len = 0;
			p->state = HS_CHUNK_SIZE;
		} else {
			/* assume the CR went missing: the LF still to come ends the line */
			p->line_len = 0;
		}
		return 0;
	default:
		return lose(p);
	}
}

int http_parser__eof(struct http_parser *p)
{
	int err = 0;

	if (p->state == HS_BODY_CLOSE)
		msg_end(p);
	else if (p->state != HS_IDLE)
		err = -EPIPE;
	p->state = HS_IDLE;
	p->msg_bytes = 0;
	p->line_len = 0;
	return err;
}

void http_parser__resync(struct http_parser *p)
{
	p->state = HS_IDLE;
	p->msg_bytes = 0;
	p->line_len = 0;
	p->line_overflow = false;
}

bool http_parser__lost(const struct http_parser *p)
{
	return p->state == HS_LOST;
}

bool http_parser__in_message(const struct http_parser *p)
{
	return p->state != HS_IDLE && p->state != HS_LOST;
}

enum http_body_mode http_parser__body_mode(const struct http_parser *p)
{
	switch (p->state) {
	case HS_BODY_LEN:
		return HTTP_BODY_LENGTH;
	case HS_CHUNK_SIZE:
	case HS_CHUNK_DATA:
	case HS_CHUNK_CRLF:
	case HS_TRAILER:
		return HTTP_BODY_CHUNKED;
	case HS_BODY_CLOSE:
		return HTTP_BODY_CLOSE;
	default:
		return HTTP_BODY_NONE;
	}
}

uint64_t http_parser__msg_bytes(const struct http_parser *p)
{
	return p->msg_bytes;
}
