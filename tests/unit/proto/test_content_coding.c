// SPDX-License-Identifier: GPL-2.0-only
/*
 * content_coding.c: gzip and deflate (zlib and raw) bodies decoded in any
 * split, and refused when corrupt or followed by bytes; and the HTTP/1.1
 * recognizer through the tracker: a gzip SSE stream decoded into its token
 * events, br and a gzip stream with a byte not captured made opaque.
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
#include "user/proto/stream/content_coding.h"

#define MS 1000000ull

struct sink {
	char buf[4096];
	size_t len;
};

static void collect(void *ctx, const char *data, size_t len)
{
	struct sink *k = ctx;

	assert_true(k->len + len <= sizeof(k->buf));
	memcpy(k->buf + k->len, data, len);
	k->len += len;
}

/* Compress src with windowBits wb (31 gzip, 15 zlib, -15 raw); flush after each of n parts. */
static size_t compress_parts(const char *const *parts, int n, int wb, unsigned char *out,
			     size_t cap)
{
	z_stream z = {};

	assert_int_equal(deflateInit2(&z, 6, Z_DEFLATED, wb, 8, Z_DEFAULT_STRATEGY), Z_OK);
	z.next_out = out;
	z.avail_out = cap;
	for (int i = 0; i < n; i++) {
		z.next_in = (unsigned char *)parts[i];
		z.avail_in = strlen(parts[i]);
		assert_int_equal(deflate(&z, i == n - 1 ? Z_FINISH : Z_SYNC_FLUSH),
				 i == n - 1 ? Z_STREAM_END : Z_OK);
	}
	deflateEnd(&z);
	return cap - z.avail_out;
}

static const char *const text[] = { "data: {\"a\":1}\n\n", "data: {\"b\":2}\n\n", "data: [DONE]\n\n" };
#define PLAIN "data: {\"a\":1}\n\ndata: {\"b\":2}\n\ndata: [DONE]\n\n"

static void decode_split(enum http_coding c, int wb, size_t step)
{
	unsigned char z[512];
	size_t n = compress_parts(text, 3, wb, z, sizeof(z));
	struct sink k = {};
	struct cc_decoder *d = cc_decoder__new(c, collect, &k);

	assert_non_null(d);
	for (size_t off = 0; off < n; off += step)
		assert_int_equal(cc_decoder__feed(d, (char *)z + off, off + step > n ? n - off : step),
				 0);
	assert_int_equal(k.len, strlen(PLAIN));
	assert_memory_equal(k.buf, PLAIN, k.len);
	assert_int_equal(cc_decoder__out_bytes(d), strlen(PLAIN));
	/* a byte after the end of the coded data */
	assert_int_equal(cc_decoder__feed(d, "x", 1), -EPROTO);
	cc_decoder__free(d);
}

static void test_gzip_any_split(void **state)
{
	for (size_t step = 1; step < 40; step += 3)
		decode_split(HTTP_CODING_GZIP, 31, step);
}

static void test_deflate_zlib_and_raw(void **state)
{
	for (size_t step = 1; step < 40; step += 7) {
		decode_split(HTTP_CODING_DEFLATE, 15, step);
		decode_split(HTTP_CODING_DEFLATE, -15, step);
	}
}

static void test_corrupt_refused(void **state)
{
	unsigned char z[512];
	size_t n = compress_parts(text, 3, 31, z, sizeof(z));
	struct sink k = {};
	struct cc_decoder *d = cc_decoder__new(HTTP_CODING_GZIP, collect, &k);

	z[0] ^= 0xff;	/* not a gzip magic */
	assert_int_equal(cc_decoder__feed(d, (char *)z, n), -EPROTO);
	assert_int_equal(cc_decoder__feed(d, (char *)z, 1), -EPROTO);	/* stays refused */
	cc_decoder__free(d);
	assert_false(cc_decodable(HTTP_CODING_OTHER));
	assert_null(cc_decoder__new(HTTP_CODING_OTHER, collect, &k));
	assert_int_equal(errno, EINVAL);
}

/* ---- through the tracker ---- */

struct out {
	int n;
	struct ttf_request r[4];
};

static void on_request(void *ctx, const struct ttf_request *r)
{
	struct out *o = ctx;

	assert_true(o->n < 4);
	o->r[o->n] = *r;
	o->r[o->n].events = NULL;
	o->n++;
}

static void feed(struct conn_table *t, int type, uint64_t ts, const void *p, size_t len,
		 size_t bytes)
{
	struct ttf_net_event *e = calloc(1, sizeof(*e) + len);

	e->ts_ns = ts;
	e->sock_cookie = 7;
	e->tgid = 1;
	e->type = type;
	e->bytes = bytes ? bytes : len;
	e->cap_len = len;
	e->arrival_first_ns = e->arrival_last_ns = type == TTF_EV_RECV ? ts - MS : 0;
	memcpy(e->payload, p, len);
	assert_int_equal(conn_table__on_event(t, e, sizeof(*e) + len), 0);
	free(e);
}

#define REQ "POST /v1/chat/completions HTTP/1.1\r\nContent-Length: 2\r\n\r\n{}"
#define HEAD(ce) "HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\n" \
		 "Content-Encoding: " ce "\r\nContent-Length: %zu\r\n\r\n"

static const char *const sse[] = {
	"data: {\"choices\":[{\"delta\":{\"role\":\"assistant\"}}]}\n\n",
	"data: {\"choices\":[{\"delta\":{\"content\":\"a\"}}]}\n\n",
	"data: {\"choices\":[{\"delta\":{\"content\":\"b\"}}]}\n\n"
	"data: {\"choices\":[],\"usage\":{\"completion_tokens\":2,\"prompt_tokens\":1}}\n\n",
};

/* The compressed stream, one write per flushed part (offsets in off[]). */
static size_t gz_stream(unsigned char *z, size_t cap, size_t off[4])
{
	z_stream s = {};

	assert_int_equal(deflateInit2(&s, 6, Z_DEFLATED, 31, 8, Z_DEFAULT_STRATEGY), Z_OK);
	s.next_out = z;
	s.avail_out = cap;
	off[0] = 0;
	for (int i = 0; i < 3; i++) {
		s.next_in = (unsigned char *)sse[i];
		s.avail_in = strlen(sse[i]);
		assert_int_equal(deflate(&s, i == 2 ? Z_FINISH : Z_SYNC_FLUSH), i == 2 ? Z_STREAM_END : Z_OK);
		off[i + 1] = cap - s.avail_out;
	}
	deflateEnd(&s);
	return off[3];
}

static void run(struct out *o, const char *ce, int lose_first_part_tail)
{
	struct conn_table_opts opts = { .sz = sizeof(opts), .on_request = on_request, .ctx = o };
	struct conn_table *t = conn_table__new(&opts);
	unsigned char z[1024];
	size_t off[4], n = gz_stream(z, sizeof(z), off);
	char head[256];

	memset(o, 0, sizeof(*o));
	feed(t, TTF_EV_RECV, 10 * MS, REQ, strlen(REQ), 0);
	snprintf(head, sizeof(head), strcmp(ce, "br") ? HEAD("gzip") : HEAD("br"), n);
	feed(t, TTF_EV_SEND, 20 * MS, head, strlen(head), 0);
	for (int i = 0; i < 3; i++) {
		size_t len = off[i + 1] - off[i];
		/* the capture of the first part lacks its last 3 bytes */
		size_t cap = i == 0 && lose_first_part_tail ? len - 3 : len;

		feed(t, TTF_EV_SEND, (30 + 10 * i) * MS, z + off[i], cap, len);
	}
	assert_int_equal(o->n, 1);
	conn_table__free(t);
}

static void test_tracker_gzip_stream(void **state)
{
	struct out o;

	run(&o, "gzip", 0);
	assert_true(o.r[0].flags & TTF_REQ_DECODED);
	assert_false(o.r[0].flags & TTF_REQ_OPAQUE);
	assert_int_equal(o.r[0].n_sse_events, 4);
	assert_int_equal(o.r[0].n_events, 2);	/* "a" at 40 ms, "b" at 50 ms */
	assert_true(o.r[0].flags & TTF_REQ_USAGE);
	assert_int_equal(o.r[0].usage_completion_tokens, 2);
	assert_int_equal(o.r[0].first_event_write_ns, 30 * MS);
}

static void test_tracker_br_opaque(void **state)
{
	struct out o;

	run(&o, "br", 0);
	assert_true(o.r[0].flags & TTF_REQ_OPAQUE);
	assert_false(o.r[0].flags & (TTF_REQ_DECODED | TTF_REQ_USAGE));
	/* one event, at the first body write, for TTFT */
	assert_int_equal(o.r[0].n_events, 1);
	assert_int_equal(o.r[0].n_sse_events, 0);
}

static void test_tracker_gzip_gap_opaque(void **state)
{
	struct out o;

	run(&o, "gzip", 1);
	assert_true(o.r[0].flags & TTF_REQ_OPAQUE);
	assert_true(o.r[0].flags & TTF_REQ_TRUNCATED);
	assert_false(o.r[0].flags & (TTF_REQ_DECODED | TTF_REQ_USAGE));
	/* nothing decoded before the gap but the role chunk's prefix: TTFT at the first body write */
	assert_int_equal(o.r[0].n_events, 1);
	assert_int_equal(o.r[0].usage_completion_tokens, 0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_gzip_any_split),
		cmocka_unit_test(test_deflate_zlib_and_raw),
		cmocka_unit_test(test_corrupt_refused),
		cmocka_unit_test(test_tracker_gzip_stream),
		cmocka_unit_test(test_tracker_br_opaque),
		cmocka_unit_test(test_tracker_gzip_gap_opaque),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
