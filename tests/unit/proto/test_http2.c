// SPDX-License-Identifier: GPL-2.0-only
/*
 * The HTTP/2 recognizer through the tracker, on hand-built frames (RFC 9113
 * section 4.1, HPACK literals without indexing): streams in flight together
 * answered out of order, CONTINUATION, RST_STREAM, GOAWAY, a capture gap
 * inside a DATA frame, a connection seen mid-way, gRPC messages counted by
 * a token profile, gzip bodies decoded and br ones opaque.
 */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <zlib.h>
#include <cmocka.h>
#include "user/proto/conn.h"
#include "user/proto/http2/grpc.h"

#define MS 1000000ull

struct out {
	int n;
	struct ttf_request r[8];
	struct ttf_token_event ev[8][16];
};

static void on_request(void *ctx, const struct ttf_request *r)
{
	struct out *o = ctx;

	assert_true(o->n < 8 && r->n_events <= 16);
	o->r[o->n] = *r;
	memcpy(o->ev[o->n], r->events, r->n_events * sizeof(*r->events));
	o->r[o->n].events = o->ev[o->n];
	o->n++;
}

static struct conn_table *mk(struct out *o, const struct grpc_profile *gp)
{
	struct conn_table_opts opts = { .sz = sizeof(opts), .on_request = on_request, .ctx = o,
					.grpc_profile = gp };

	memset(o, 0, sizeof(*o));
	return conn_table__new(&opts);
}

/* a byte buffer of frames */
struct buf {
	uint8_t b[4096];
	size_t n;
};

static void put(struct buf *b, const void *p, size_t n)
{
	assert_true(b->n + n <= sizeof(b->b));
	memcpy(b->b + b->n, p, n);
	b->n += n;
}

static void frame(struct buf *b, uint8_t type, uint8_t flags, uint32_t sid, const void *p,
		  size_t n)
{
	uint8_t h[9] = { n >> 16, n >> 8, n, type, flags, sid >> 24, sid >> 16, sid >> 8, sid };

	put(b, h, 9);
	put(b, p, n);
}

/* :method POST, :scheme http, :path literal (indexed name 4), without indexing */
static size_t req_block(uint8_t *o, const char *path)
{
	size_t n = strlen(path);

	o[0] = 0x83;
	o[1] = 0x86;
	o[2] = 0x04;
	o[3] = n;
	memcpy(o + 4, path, n);
	return 4 + n;
}

/* :status 200, content-type (static 31) literal without indexing */
static size_t resp_block(uint8_t *o, const char *ctype)
{
	size_t n = strlen(ctype);

	o[0] = 0x88;
	o[1] = 0x0f;
	o[2] = 0x10;
	o[3] = n;
	memcpy(o + 4, ctype, n);
	return 4 + n;
}

static void rec(struct conn_table *t, int type, uint64_t ts, const struct buf *b, size_t cap,
		size_t bytes)
{
	struct ttf_net_event *e = calloc(1, sizeof(*e) + cap);

	e->ts_ns = ts;
	e->sock_cookie = 42;
	e->tgid = 1;
	e->type = type;
	e->bytes = bytes;
	e->cap_len = cap;
	e->arrival_first_ns = e->arrival_last_ns = type == TTF_EV_RECV ? ts - MS / 2 : 0;
	memcpy(e->payload, b->b, cap);
	assert_int_equal(conn_table__on_event(t, e, sizeof(*e) + cap), 0);
	free(e);
}

static void in(struct conn_table *t, uint64_t ts, struct buf *b)
{
	rec(t, TTF_EV_RECV, ts, b, b->n, b->n);
	b->n = 0;
}

static void out(struct conn_table *t, uint64_t ts, struct buf *b)
{
	rec(t, TTF_EV_SEND, ts, b, b->n, b->n);
	b->n = 0;
}

#define PREFACE "PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n"
#define TOK(x) "data: {\"choices\":[{\"delta\":{\"content\":\"" x "\"}}]}\n\n"
#define SSE "text/event-stream"

static void test_two_streams_out_of_order(void **state)
{
	struct out o;
	struct conn_table *t = mk(&o, NULL);
	struct buf b = {};
	uint8_t blk[128];
	size_t n;

	put(&b, PREFACE, 24);
	frame(&b, 4, 0, 0, NULL, 0);				/* SETTINGS */
	n = req_block(blk, "/v1/chat/completions");
	frame(&b, 1, 0x5, 1, blk, n);				/* HEADERS s1, END_STREAM|END_HEADERS */
	in(t, 10 * MS, &b);
	/* s3's head in a HEADERS and a CONTINUATION */
	n = req_block(blk, "/v1/completions");
	frame(&b, 1, 0x1, 3, blk, 3);
	frame(&b, 9, 0x4, 3, blk + 3, n - 3);
	in(t, 12 * MS, &b);
	n = resp_block(blk, SSE);
	frame(&b, 1, 0x4, 3, blk, n);
	out(t, 20 * MS, &b);
	frame(&b, 0, 0, 3, TOK("a"), strlen(TOK("a")));
	out(t, 30 * MS, &b);
	frame(&b, 1, 0x4, 1, blk, n);
	frame(&b, 0, 0, 1, TOK("b"), strlen(TOK("b")));
	out(t, 40 * MS, &b);
	frame(&b, 8, 0, 0, "\0\0\1\0", 4);			/* WINDOW_UPDATE */
	in(t, 41 * MS, &b);
	frame(&b, 0, 0x1, 3, "data: [DONE]\n\n", 14);		/* END_STREAM */
	out(t, 50 * MS, &b);
	assert_int_equal(o.n, 1);
	frame(&b, 0, 0, 1, TOK("c"), strlen(TOK("c")));
	frame(&b, 0, 0x1, 1, NULL, 0);				/* an empty DATA ends s1 */
	out(t, 60 * MS, &b);
	assert_int_equal(o.n, 2);

	/* s3 ended first; it is the connection's second request */
	assert_string_equal(o.r[0].path, "/v1/completions");
	assert_int_equal(o.r[0].conn_seq, 1);
	assert_int_equal(o.r[0].api, TTF_API_COMPLETION);
	assert_int_equal(o.r[0].status, 200);
	assert_true(o.r[0].flags & TTF_REQ_STREAM);
	assert_true(o.r[0].flags & TTF_REQ_DONE_MARKER);
	assert_int_equal(o.r[0].n_events, 1);
	assert_int_equal(o.r[0].events[0].write_ns, 30 * MS);
	assert_int_equal(o.r[0].resp_first_write_ns, 20 * MS);
	assert_int_equal(o.r[0].read_done_ns, 12 * MS);
	assert_int_equal(o.r[0].n_sse_events, 2);

	assert_string_equal(o.r[1].method, "POST");
	assert_string_equal(o.r[1].path, "/v1/chat/completions");
	assert_int_equal(o.r[1].conn_seq, 0);
	assert_int_equal(o.r[1].n_events, 2);
	assert_int_equal(o.r[1].events[0].write_ns, 40 * MS);
	assert_int_equal(o.r[1].events[1].write_ns, 60 * MS);
	assert_int_equal(o.r[1].end_write_ns, 60 * MS);
	assert_false(o.r[1].flags & (TTF_REQ_ABORTED | TTF_REQ_HPACK_UNKNOWN | TTF_REQ_TRUNCATED));
	conn_table__free(t);
}

static void test_rst_goaway_gap(void **state)
{
	struct out o;
	struct conn_table *t = mk(&o, NULL);
	struct buf b = {};
	uint8_t blk[128];
	size_t n = req_block(blk, "/v1/chat/completions"), rn;
	uint8_t rblk[64];
	char big[200];

	rn = resp_block(rblk, SSE);
	put(&b, PREFACE, 24);
	frame(&b, 1, 0x5, 1, blk, n);
	frame(&b, 1, 0x5, 3, blk, n);
	frame(&b, 1, 0x5, 5, blk, n);
	in(t, 10 * MS, &b);
	frame(&b, 1, 0x4, 1, rblk, rn);
	out(t, 20 * MS, &b);
	frame(&b, 3, 0, 1, "\0\0\0\x8", 4);			/* RST_STREAM s1: CANCEL */
	in(t, 25 * MS, &b);
	assert_int_equal(o.n, 1);
	assert_true(o.r[0].flags & TTF_REQ_ABORTED);

	/* a DATA frame for s3 whose middle was not captured: skipped by count */
	frame(&b, 1, 0x4, 3, rblk, rn);
	memset(big, ':', sizeof(big));
	big[sizeof(big) - 2] = big[sizeof(big) - 1] = '\n';
	frame(&b, 0, 0, 3, big, sizeof(big));
	rec(t, TTF_EV_SEND, 30 * MS, &b, b.n - 100, b.n);
	b.n = 0;
	/* the SSE splitter drops the event the gap cut (it ends with "z"), then reads on */
	frame(&b, 0, 0, 3, TOK("z"), strlen(TOK("z")));
	frame(&b, 0, 0x1, 3, TOK("y"), strlen(TOK("y")));
	out(t, 40 * MS, &b);
	assert_int_equal(o.n, 2);
	assert_true(o.r[1].flags & TTF_REQ_TRUNCATED);
	assert_false(o.r[1].flags & TTF_REQ_ABORTED);
	assert_int_equal(o.r[1].n_events, 1);	/* the frames after the gap were read */

	/* GOAWAY with last stream 3: s5 was not processed */
	frame(&b, 7, 0, 0, "\0\0\0\x3\0\0\0\0", 8);
	out(t, 50 * MS, &b);
	assert_int_equal(o.n, 3);
	assert_int_equal(o.r[2].conn_seq, 2);
	assert_true(o.r[2].flags & TTF_REQ_ABORTED);
	assert_int_equal(conn_table__stats(t)->lost_sync, 0);
	conn_table__free(t);
}

static void test_mid_connection(void **state)
{
	struct out o;
	struct conn_table *t = mk(&o, NULL);
	struct buf b = {};
	uint8_t blk[128], rblk[64];
	size_t n, rn = resp_block(rblk, SSE);

	/* :method POST, then a reference to a dynamic entry made before tracing */
	blk[0] = 0x83;
	blk[1] = 0xbe;
	frame(&b, 1, 0x5, 7, blk, 2);
	in(t, 10 * MS, &b);
	frame(&b, 1, 0x4, 7, rblk, rn);
	frame(&b, 0, 0x1, 7, TOK("a"), strlen(TOK("a")));
	out(t, 20 * MS, &b);
	/* a stream that began before tracing: DATA only, counted, not timed */
	frame(&b, 0, 0x1, 5, TOK("q"), strlen(TOK("q")));
	out(t, 21 * MS, &b);
	/* a later stream with a literal path: known */
	n = req_block(blk, "/v1/responses");
	frame(&b, 1, 0x5, 9, blk, n);
	in(t, 30 * MS, &b);
	frame(&b, 1, 0x4, 9, rblk, rn);
	frame(&b, 0, 0x1, 9, TOK("b"), strlen(TOK("b")));
	out(t, 40 * MS, &b);
	assert_int_equal(o.n, 2);
	assert_string_equal(o.r[0].method, "POST");
	assert_string_equal(o.r[0].path, "unknown");
	assert_true(o.r[0].flags & TTF_REQ_HPACK_UNKNOWN);
	assert_int_equal(o.r[0].n_events, 1);
	assert_string_equal(o.r[1].path, "/v1/responses");
	assert_int_equal(o.r[1].api, TTF_API_RESPONSES);
	assert_int_equal(conn_table__count(t, "hpack_unknown_refs"), 1);
	conn_table__free(t);
}

static void test_grpc_profile_counts(void **state)
{
	struct grpc_profile gp;
	struct out o;
	struct conn_table *t;
	struct buf b = {};
	uint8_t blk[128], rblk[64], msg[32];
	size_t n, rn;
	int bad;

	assert_int_equal(grpc_profile__parse("/g.S/M 1#\n", &gp, &bad), 0);
	t = mk(&o, &gp);
	n = req_block(blk, "/g.S/M");
	put(&b, PREFACE, 24);
	frame(&b, 1, 0x4, 1, blk, n);
	frame(&b, 0, 0x1, 1, "\0\0\0\0\0", 5);	/* an empty request message */
	in(t, 10 * MS, &b);
	rn = resp_block(rblk, "application/grpc");
	frame(&b, 1, 0x4, 1, rblk, rn);
	/* message: field 1 packed {7, 8, 9} */
	memcpy(msg, "\0\0\0\0\x5\x0a\x03\x07\x08\x09", 10);
	frame(&b, 0, 0, 1, msg, 10);
	out(t, 20 * MS, &b);
	/* two messages in one DATA frame, split across two writes: {1}, {2, 3} */
	memcpy(msg, "\0\0\0\0\x3\x0a\x01\x01\0\0\0\0\x4\x0a\x02\x02\x03", 17);
	frame(&b, 0, 0, 1, msg, 17);
	rec(t, TTF_EV_SEND, 30 * MS, &b, 15, 15);
	memmove(b.b, b.b + 15, b.n - 15);
	b.n -= 15;
	out(t, 31 * MS, &b);
	/* trailers: grpc-status 0 (a new-name literal) */
	memcpy(blk, "\x00\x0bgrpc-status\x01" "0", 14);
	frame(&b, 1, 0x5, 1, blk, 14);
	out(t, 40 * MS, &b);
	assert_int_equal(o.n, 1);
	assert_int_equal(o.r[0].n_events, 3);
	assert_int_equal(o.r[0].events[0].n_tokens, 3);
	assert_int_equal(o.r[0].events[1].n_tokens, 1);
	assert_int_equal(o.r[0].events[2].n_tokens, 2);
	assert_int_equal(o.r[0].events[2].write_ns, 31 * MS);
	assert_false(o.r[0].flags & (TTF_REQ_CHUNKS | TTF_REQ_ERROR));
	conn_table__free(t);
	grpc_profile__free(&gp);
}

/* content-encoding gzip (static name 26): decoded per DATA frame; br: opaque */
static void run_coded(struct out *o, const char *coding)
{
	struct conn_table *t = mk(o, NULL);
	struct buf b = {};
	uint8_t blk[128], z[1024];
	static const char *const parts[] = { TOK("a"), TOK("b"),
		"data: {\"choices\":[],\"usage\":{\"completion_tokens\":2}}\n\n" };
	z_stream zs = {};
	size_t n = req_block(blk, "/v1/chat/completions"), cl = strlen(coding), off = 0;

	put(&b, PREFACE, 24);
	frame(&b, 1, 0x5, 1, blk, n);
	in(t, 10 * MS, &b);
	n = resp_block(blk, SSE);
	blk[n++] = 0x0f;
	blk[n++] = 0x0b;
	blk[n++] = cl;
	memcpy(blk + n, coding, cl);
	n += cl;
	frame(&b, 1, 0x4, 1, blk, n);
	out(t, 20 * MS, &b);
	assert_int_equal(deflateInit2(&zs, 6, Z_DEFLATED, 31, 8, Z_DEFAULT_STRATEGY), Z_OK);
	for (int i = 0; i < 3; i++) {
		zs.next_in = (unsigned char *)parts[i];
		zs.avail_in = strlen(parts[i]);
		zs.next_out = z + off;
		zs.avail_out = sizeof(z) - off;
		deflate(&zs, i == 2 ? Z_FINISH : Z_SYNC_FLUSH);
		frame(&b, 0, i == 2 ? 0x1 : 0, 1, z + off, sizeof(z) - off - zs.avail_out);
		off = sizeof(z) - zs.avail_out;
		out(t, (30 + 10 * i) * MS, &b);
	}
	deflateEnd(&zs);
	assert_int_equal(o->n, 1);
	conn_table__free(t);
}

static void test_coded_bodies(void **state)
{
	struct out o;

	run_coded(&o, "gzip");
	assert_true(o.r[0].flags & TTF_REQ_DECODED);
	assert_false(o.r[0].flags & TTF_REQ_OPAQUE);
	assert_int_equal(o.r[0].n_events, 2);
	assert_int_equal(o.r[0].events[0].write_ns, 30 * MS);
	assert_int_equal(o.r[0].events[1].write_ns, 40 * MS);
	assert_true(o.r[0].flags & TTF_REQ_USAGE);
	assert_int_equal(o.r[0].usage_completion_tokens, 2);

	run_coded(&o, "br");
	assert_true(o.r[0].flags & TTF_REQ_OPAQUE);
	assert_false(o.r[0].flags & (TTF_REQ_DECODED | TTF_REQ_USAGE));
	assert_int_equal(o.r[0].n_events, 1);	/* the first body write, for TTFT */
	assert_int_equal(o.r[0].events[0].write_ns, 30 * MS);
}

/* traceparent (a new-name literal): the request keeps its ids; an invalid one is counted */
static void test_traceparent(void **state)
{
	static const char *const tps[2] = {
		"00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01",
		"00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-1",	/* short flags */
	};
	struct out o;
	struct conn_table *t = mk(&o, NULL);
	struct buf b = {};
	uint8_t blk[160];
	size_t n;

	put(&b, PREFACE, 24);
	for (int i = 0; i < 2; i++) {
		size_t vl = strlen(tps[i]);

		n = req_block(blk, "/v1/chat/completions");
		blk[n++] = 0x00;
		blk[n++] = 11;
		memcpy(blk + n, "traceparent", 11);
		n += 11;
		blk[n++] = vl;
		memcpy(blk + n, tps[i], vl);
		n += vl;
		frame(&b, 1, 0x5, 1 + 2 * i, blk, n);
	}
	in(t, 10 * MS, &b);
	for (int i = 0; i < 2; i++) {
		n = resp_block(blk, "application/json");
		frame(&b, 1, 0x4, 1 + 2 * i, blk, n);
		frame(&b, 0, 0x1, 1 + 2 * i, "{}", 2);
	}
	out(t, 20 * MS, &b);
	assert_int_equal(o.n, 2);
	assert_true(o.r[0].traceparent.valid);
	assert_int_equal(o.r[0].traceparent.trace_id[0], 0x4b);
	assert_int_equal(o.r[0].traceparent.span_id[7], 0xb7);
	assert_int_equal(o.r[0].traceparent.flags, 1);
	assert_false(o.r[1].traceparent.valid);
	assert_int_equal(conn_table__count(t, "traceparent_invalid"), 1);
	conn_table__free(t);
}

/*
 * An NDJSON stream (Ollama over h2c) is read line by line, as over
 * HTTP/1.1; an SSE stream's first event names the response's id.
 */
static void test_ndjson_stream_and_response_id(void **state)
{
	static const char l1[] = "{\"message\":{\"role\":\"assistant\",\"content\":\"Hi\"},"
				 "\"done\":false}\n";
	static const char l2[] = "{\"response\":\" there\",\"done\":false}\n";
	static const char ev[] = "data: {\"id\":\"cmpl-0123456789abcdef0123456789abcdef\","
				 "\"choices\":[{\"delta\":{\"content\":\"a\"}}]}\n\n";
	struct out o;
	struct conn_table *t = mk(&o, NULL);
	struct buf b = {};
	uint8_t blk[128];
	size_t n;

	(void)state;
	put(&b, PREFACE, 24);
	n = req_block(blk, "/api/chat");
	frame(&b, 1, 0x5, 1, blk, n);
	n = req_block(blk, "/v1/chat/completions");
	frame(&b, 1, 0x5, 3, blk, n);
	in(t, 10 * MS, &b);
	n = resp_block(blk, "application/x-ndjson");
	frame(&b, 1, 0x4, 1, blk, n);
	frame(&b, 0, 0, 1, l1, strlen(l1));
	out(t, 20 * MS, &b);
	frame(&b, 0, 0x1, 1, l2, strlen(l2));
	out(t, 30 * MS, &b);
	n = resp_block(blk, SSE);
	frame(&b, 1, 0x4, 3, blk, n);
	frame(&b, 0, 0x1, 3, ev, strlen(ev));
	out(t, 40 * MS, &b);
	assert_int_equal(o.n, 2);

	assert_true(o.r[0].flags & TTF_REQ_STREAM);
	assert_int_equal(o.r[0].n_events, 2);
	assert_int_equal(o.r[0].events[0].write_ns, 20 * MS);
	assert_int_equal(o.r[0].events[1].write_ns, 30 * MS);
	assert_string_equal(o.r[0].resp_id, "");		/* NDJSON names none */

	assert_int_equal(o.r[1].n_events, 1);
	assert_string_equal(o.r[1].resp_id, "cmpl-0123456789abcdef0123456789abcdef");
	conn_table__free(t);
}

/*
 * A frame longer than the receiver's SETTINGS_MAX_FRAME_SIZE (16384 unless
 * its SETTINGS raised it): garbage after a valid preface, framing lost and
 * counted, not a frame that swallows the rest. max_frame_bytes: what the
 * server's SETTINGS says (0: no such setting); the client then sends a
 * 20,000-byte DATA frame (100 bytes captured).
 */
static uint64_t lost_after_big_frame(uint32_t max_frame_bytes)
{
	struct out o;
	struct conn_table *t = mk(&o, NULL);
	struct buf b = {};
	uint8_t blk[128], set[6] = { 0, 5, max_frame_bytes >> 24, max_frame_bytes >> 16,
				     max_frame_bytes >> 8, max_frame_bytes };
	size_t n = req_block(blk, "/v1/chat/completions");
	uint64_t lost;

	put(&b, PREFACE, 24);
	frame(&b, 4, 0, 0, NULL, 0);
	frame(&b, 1, 0x4, 1, blk, n);				/* HEADERS s1, body to come */
	in(t, 10 * MS, &b);
	frame(&b, 4, 0, 0, set, max_frame_bytes ? 6 : 0);	/* the server's SETTINGS */
	out(t, 11 * MS, &b);
	memset(blk, '{', sizeof(blk));
	frame(&b, 0, 0x1, 1, blk, 91);				/* DATA s1, END_STREAM */
	b.b[0] = 20000 >> 16;
	b.b[1] = 20000 >> 8 & 0xff;
	b.b[2] = 20000 & 0xff;
	rec(t, TTF_EV_RECV, 12 * MS, &b, b.n, 9 + 20000);
	b.n = 0;
	lost = conn_table__stats(t)->lost_sync;
	conn_table__free(t);
	return lost;
}

static void test_frame_too_long(void **state)
{
	struct out o;
	struct conn_table *t = mk(&o, NULL);
	struct buf b = {};

	assert_int_equal(lost_after_big_frame(32768), 0);
	assert_int_equal(lost_after_big_frame(16384), 1);
	assert_int_equal(lost_after_big_frame(0), 1);

	/* a HEADERS frame that says 16 MB after the preface, then garbage */
	put(&b, PREFACE, 24);
	frame(&b, 4, 0, 0, NULL, 0);
	frame(&b, 1, 0x4, 1, "\x83\x86\x84", 3);
	b.b[24 + 9] = 0xff;
	b.b[24 + 9 + 1] = 0xff;
	b.b[24 + 9 + 2] = 0xff;
	in(t, 10 * MS, &b);
	assert_int_equal(conn_table__stats(t)->lost_sync, 1);
	frame(&b, 1, 0x5, 3, "\x83\x86\x84", 3);		/* whole frames again: read */
	in(t, 11 * MS, &b);
	conn_table__finish(t, 20 * MS);
	assert_int_equal(o.n, 1);
	assert_string_equal(o.r[0].path, "/");
	conn_table__free(t);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_two_streams_out_of_order),
		cmocka_unit_test(test_rst_goaway_gap),
		cmocka_unit_test(test_mid_connection),
		cmocka_unit_test(test_grpc_profile_counts),
		cmocka_unit_test(test_coded_bodies),
		cmocka_unit_test(test_traceparent),
		cmocka_unit_test(test_ndjson_stream_and_response_id),
		cmocka_unit_test(test_frame_too_long),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
