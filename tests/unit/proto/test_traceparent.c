// SPDX-License-Identifier: GPL-2.0-only
/* W3C traceparent values, and their recognition in HTTP/1.1 request heads. */
#include <errno.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <string.h>
#include <cmocka.h>
#include "user/proto/http1/http.h"
#include "user/proto/traceparent.h"

/* The example of https://www.w3.org/TR/trace-context/#examples-of-http-traceparent-headers */
#define EXAMPLE "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"

static int parse(const char *v, struct ttf_trace_parent *tp)
{
	return ttf_traceparent__parse(v, strlen(v), tp);
}

static void test_valid(void **state)
{
	static const uint8_t tid[16] = { 0x4b, 0xf9, 0x2f, 0x35, 0x77, 0xb3, 0x4d, 0xa6,
					 0xa3, 0xce, 0x92, 0x9d, 0x0e, 0x0e, 0x47, 0x36 };
	static const uint8_t sid[8] = { 0x00, 0xf0, 0x67, 0xaa, 0x0b, 0xa9, 0x02, 0xb7 };
	struct ttf_trace_parent tp;

	assert_int_equal(parse(EXAMPLE, &tp), 0);
	assert_true(tp.valid);
	assert_memory_equal(tp.trace_id, tid, 16);
	assert_memory_equal(tp.span_id, sid, 8);
	assert_int_equal(tp.flags, 1);
	assert_int_equal(parse("00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-00", &tp), 0);
	assert_int_equal(tp.flags, 0);
	/* a later version may carry more fields after a '-' */
	assert_int_equal(parse("01-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-09-xyz",
			       &tp), 0);
	assert_int_equal(tp.flags, 9);
	assert_int_equal(parse("cc-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01", &tp), 0);
}

static void test_invalid(void **state)
{
	static const char *const bad[] = {
		"",
		"00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7",		/* no flags */
		"00-4BF92F3577B34DA6A3CE929D0E0E4736-00f067aa0ba902b7-01",	/* upper case */
		"00-4bf92f3577b34da6a3ce929d0e0e4736-00F067AA0BA902B7-01",
		"ff-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01",	/* version ff */
		"00-00000000000000000000000000000000-00f067aa0ba902b7-01",	/* zero trace */
		"00-4bf92f3577b34da6a3ce929d0e0e4736-0000000000000000-01",	/* zero parent */
		"00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01-x",	/* 00: nothing more */
		"01-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01x",	/* more without '-' */
		"00_4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01",	/* separators */
		"00-4bf92f3577b34da6a3ce929d0e0e4736_00f067aa0ba902b7-01",
		"00-4bf92f3577b34da6a3ce929d0e0e473g-00f067aa0ba902b7-01",	/* not hex */
		"0g-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01",
		"00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-0z",
		"00-4bf92f3577b34da6a3ce929d0e0e47-00f067aa0ba902b7-01-aa",	/* short id */
	};
	struct ttf_trace_parent tp;

	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		memset(&tp, 0xaa, sizeof(tp));
		assert_int_equal(parse(bad[i], &tp), -EINVAL);
		assert_false(tp.valid);
	}
}

struct seen {
	int heads;
	struct http_head head;
};

static void on_head(void *ctx, struct http_head *h)
{
	struct seen *s = ctx;

	s->heads++;
	s->head = *h;
}

static struct http_head head_of(const char *req)
{
	struct http_parser_cbs cbs = { .on_head = on_head };
	struct seen s = { 0 };
	struct http_parser *p = http_parser__new(true, &cbs, &s);

	assert_non_null(p);
	assert_int_equal(http_parser__feed(p, req, strlen(req)), 0);
	assert_int_equal(s.heads, 1);
	http_parser__free(p);
	return s.head;
}

static void test_http1_header(void **state)
{
	struct http_head h;

	h = head_of("POST /v1/chat/completions HTTP/1.1\r\nHost: x\r\n"
		    "TraceParent:  " EXAMPLE " \r\nContent-Length: 0\r\n\r\n");
	assert_int_equal(h.n_traceparent, 1);
	assert_true(h.traceparent.valid);
	assert_int_equal(h.traceparent.trace_id[0], 0x4b);
	h = head_of("POST / HTTP/1.1\r\nHost: x\r\nContent-Length: 0\r\n\r\n");
	assert_int_equal(h.n_traceparent, 0);
	assert_false(h.traceparent.valid);
	/* two traceparent headers: invalid, both ignored */
	h = head_of("POST / HTTP/1.1\r\ntraceparent: " EXAMPLE "\r\ntraceparent: " EXAMPLE
		    "\r\nContent-Length: 0\r\n\r\n");
	assert_int_equal(h.n_traceparent, 2);
	assert_false(h.traceparent.valid);
	h = head_of("POST / HTTP/1.1\r\ntraceparent: 00-zz\r\nContent-Length: 0\r\n\r\n");
	assert_int_equal(h.n_traceparent, 1);
	assert_false(h.traceparent.valid);
}

/* tracestate (https://www.w3.org/TR/trace-context/#tracestate-header): its examples' members */
static void test_tracestate(void **state)
{
	struct ttf_trace_parent tp = { 0 };
	char big[600];
	struct http_head h;

	/* two headers are one list, in order; blanks around members and empty members go */
	ttf_tracestate__add(&tp, "rojo=00f067aa0ba902b7 ", 22);
	ttf_tracestate__add(&tp, " congo=t61rcWkgMzE,,", 20);
	assert_string_equal(tp.state, "rojo=00f067aa0ba902b7,congo=t61rcWkgMzE");
	assert_false(tp.state_cut);
	/* a member without '=' or with a control byte is dropped and said */
	ttf_tracestate__add(&tp, "novalue,x=\x01", 10);
	assert_string_equal(tp.state, "rojo=00f067aa0ba902b7,congo=t61rcWkgMzE");
	assert_true(tp.state_cut);
	/* 512 characters are kept; a member past them is left out */
	memset(&tp, 0, sizeof(tp));
	memset(big, 'a', sizeof(big));
	big[0] = 'k';
	big[1] = '=';
	ttf_tracestate__add(&tp, big, 510);
	ttf_tracestate__add(&tp, "b=1", 3);	/* 514 with the comma: out */
	assert_int_equal(strlen(tp.state), 510);
	assert_true(tp.state_cut);
	ttf_tracestate__add(&tp, "c", 0);
	assert_int_equal(strlen(tp.state), 510);
	/* in a request head, before or after the traceparent */
	h = head_of("POST / HTTP/1.1\r\ntracestate: congo=t61rcWkgMzE\r\ntraceparent: " EXAMPLE
		    "\r\ntracestate: rojo=1\r\nContent-Length: 0\r\n\r\n");
	assert_true(h.traceparent.valid);
	assert_string_equal(h.traceparent.state, "congo=t61rcWkgMzE,rojo=1");
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_valid),
		cmocka_unit_test(test_invalid),
		cmocka_unit_test(test_http1_header),
		cmocka_unit_test(test_tracestate),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
