// SPDX-License-Identifier: GPL-2.0-only
/* http.c: incremental HTTP/1.1 framing over split captures and gaps. */
#include <errno.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <string.h>
#include <cmocka.h>
#include "user/proto/http1/http.h"

struct rec {
	int begins, heads, ends;
	struct http_head head;
	char body[512];
	size_t body_len, gap_len;
	uint64_t last_bytes;
};

static void on_begin(void *ctx)
{
	((struct rec *)ctx)->begins++;
}

static void on_head(void *ctx, struct http_head *h)
{
	struct rec *r = ctx;

	r->heads++;
	r->head = *h;
}

static void on_body(void *ctx, const char *d, size_t n)
{
	struct rec *r = ctx;

	assert_true(r->body_len + n < sizeof(r->body));
	memcpy(r->body + r->body_len, d, n);
	r->body_len += n;
}

static void on_gap(void *ctx, size_t n)
{
	((struct rec *)ctx)->gap_len += n;
}

static void on_end(void *ctx, uint64_t bytes)
{
	struct rec *r = ctx;

	r->ends++;
	r->last_bytes = bytes;
}

static const struct http_parser_cbs cbs = {
	.on_begin = on_begin, .on_head = on_head, .on_body = on_body,
	.on_body_gap = on_gap, .on_end = on_end,
};

static int feed(struct http_parser *p, const char *s)
{
	return http_parser__feed(p, s, strlen(s));
}

static void test_request_split_headers_chunked_body(void **state)
{
	struct rec r = {};
	struct http_parser *p = http_parser__new(true, &cbs, &r);

	assert_int_equal(feed(p, "POST /v1/chat/completions?x=1 HTTP/1.1\r\nTransfer-Enc"), 0);
	assert_int_equal(r.begins, 1);
	assert_int_equal(r.heads, 0);
	assert_int_equal(feed(p, "oding: chunked\r\nHost: a\r\n\r\n5\r\nhel"), 0);
	assert_int_equal(r.heads, 1);
	assert_string_equal(r.head.method, "POST");
	assert_string_equal(r.head.path, "/v1/chat/completions");
	assert_true(r.head.chunked);
	assert_int_equal(feed(p, "lo\r\n0\r\n"), 0);
	assert_int_equal(r.ends, 0);
	assert_int_equal(feed(p, "\r\n"), 0);
	assert_int_equal(r.ends, 1);
	assert_int_equal(r.body_len, 5);
	assert_memory_equal(r.body, "hello", 5);
	/* start line 40, headers 28 + 9 + 2, chunks "5\r\nhello\r\n" 10, "0\r\n\r\n" 5 */
	assert_int_equal(r.last_bytes, 94);
	http_parser__free(p);
}

static void test_keepalive_two_requests_one_feed(void **state)
{
	struct rec r = {};
	struct http_parser *p = http_parser__new(true, &cbs, &r);

	assert_int_equal(feed(p, "POST /a HTTP/1.1\r\nContent-Length: 3\r\n\r\nabc"
				 "GET /b HTTP/1.1\r\n\r\n"), 0);
	assert_int_equal(r.begins, 2);
	assert_int_equal(r.ends, 2);
	assert_string_equal(r.head.path, "/b");
	assert_string_equal(r.head.method, "GET");
	assert_int_equal(r.last_bytes, 19);
	http_parser__free(p);
}

static void test_response_content_length_gap_in_sync(void **state)
{
	struct rec r = {};
	struct http_parser *p = http_parser__new(false, &cbs, &r);

	assert_int_equal(feed(p, "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\n"
				 "Content-Length: 10\r\n\r\n{\"a\""), 0);
	assert_int_equal(r.head.status, 200);
	assert_true(r.head.json);
	assert_int_equal(r.head.content_length, 10);
	assert_int_equal(http_parser__body_mode(p), HTTP_BODY_LENGTH);
	assert_int_equal(http_parser__gap(p, 6), 0);
	assert_int_equal(r.ends, 1);
	assert_int_equal(r.gap_len, 6);
	assert_false(http_parser__lost(p));
	/* a gap past the end of the body hides the next message's head */
	assert_int_equal(feed(p, "HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\n"), 0);
	assert_int_equal(http_parser__gap(p, 5), -EPROTO);
	assert_int_equal(r.ends, 2);
	assert_true(http_parser__lost(p));
	assert_int_equal(feed(p, "HTTP/1.1 200 OK\r\n"), -EPROTO);
	http_parser__resync(p);
	assert_int_equal(feed(p, "HTTP/1.1 204 No Content\r\n\r\n"), 0);
	assert_int_equal(r.ends, 3);
	http_parser__free(p);
}

static void test_chunked_gap_in_data_and_crlf(void **state)
{
	struct rec r = {};
	struct http_parser *p = http_parser__new(false, &cbs, &r);

	assert_int_equal(feed(p, "HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\n"
				 "Transfer-Encoding: chunked\r\n\r\na\r\ndata"), 0);
	assert_true(r.head.event_stream);
	/* 6 data bytes + CRLF not captured: still in sync */
	assert_int_equal(http_parser__gap(p, 8), 0);
	assert_int_equal(r.gap_len, 6);
	assert_int_equal(feed(p, "3\r\nabc\r\n0\r\n\r\n"), 0);
	assert_int_equal(r.ends, 1);
	assert_memory_equal(r.body, "dataabc", 7);
	http_parser__free(p);
}

static void test_chunk_size_line_in_gap_loses_sync(void **state)
{
	struct rec r = {};
	struct http_parser *p = http_parser__new(false, &cbs, &r);

	assert_int_equal(feed(p, "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n"
				 "2\r\nab"), 0);
	assert_int_equal(http_parser__gap(p, 5), -EPROTO);
	assert_true(http_parser__lost(p));
	assert_int_equal(r.ends, 0);
	http_parser__free(p);
}

static void test_until_close_and_eof(void **state)
{
	struct rec r = {};
	struct http_parser *p = http_parser__new(false, &cbs, &r);

	assert_int_equal(feed(p, "HTTP/1.0 200 OK\r\nContent-Type: text/event-stream\r\n\r\n"
				 "data: x\n\n"), 0);
	assert_int_equal(http_parser__body_mode(p), HTTP_BODY_CLOSE);
	assert_int_equal(http_parser__gap(p, 100), 0);
	assert_int_equal(http_parser__eof(p), 0);
	assert_int_equal(r.ends, 1);
	/* 17 + 33 + 2 + 9 + 100 */
	assert_int_equal(r.last_bytes, 161);
	assert_int_equal(feed(p, "HTTP/1.1 200 OK\r\nContent-Length: 5\r\n\r\nab"), 0);
	assert_int_equal(http_parser__eof(p), -EPIPE);
	assert_int_equal(r.ends, 1);
	http_parser__free(p);
}

static void test_bad_start_lines(void **state)
{
	struct rec r = {};
	struct http_parser *p = http_parser__new(true, &cbs, &r);

	assert_int_equal(feed(p, "\x16\x03\x01 hello\r\n"), -EPROTO);
	http_parser__free(p);
	p = http_parser__new(false, &cbs, &r);
	assert_int_equal(feed(p, "HTTP/1.1 2000 OK\r\n"), -EPROTO);
	http_parser__free(p);
	assert_true(http_looks_like_request("POST /v1 HTTP/1.1", 17));
	assert_false(http_looks_like_request("POSTX /v1", 9));
	assert_false(http_looks_like_request("data: x", 7));
	assert_true(http_looks_like_response("HTTP/1.1 200", 12));
	assert_false(http_looks_like_response("HTTP/2", 6));
}

static void test_head_response_no_body_and_100_continue(void **state)
{
	struct rec r = {};
	struct http_parser *p = http_parser__new(false, &cbs, &r);

	assert_int_equal(feed(p, "HTTP/1.1 100 Continue\r\n\r\nHTTP/1.1 200 OK\r\n"
				 "Content-Length: 2\r\n\r\nok"), 0);
	assert_int_equal(r.begins, 2);
	assert_int_equal(r.ends, 2);
	assert_int_equal(r.head.status, 200);
	assert_int_equal(r.body_len, 2);
	http_parser__free(p);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_request_split_headers_chunked_body),
		cmocka_unit_test(test_keepalive_two_requests_one_feed),
		cmocka_unit_test(test_response_content_length_gap_in_sync),
		cmocka_unit_test(test_chunked_gap_in_data_and_crlf),
		cmocka_unit_test(test_chunk_size_line_in_gap_loses_sync),
		cmocka_unit_test(test_until_close_and_eof),
		cmocka_unit_test(test_bad_start_lines),
		cmocka_unit_test(test_head_response_no_body_and_100_continue),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
