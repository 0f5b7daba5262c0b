// SPDX-License-Identifier: GPL-2.0-only
/*
 * grpc.c: token profiles (parsing, refusals), counting tokens along a
 * protobuf field path (packed, occurrences, nested), and the message
 * framing over split feeds and capture gaps.
 */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <errno.h>
#include <string.h>
#include <cmocka.h>
#include "user/proto/http2/grpc.h"

static void test_profile_parse(void **state)
{
	struct grpc_profile p;
	const struct grpc_rule *r;
	int bad = 0;

	assert_int_equal(grpc_profile__parse("# comment\n\n/a.B/C 1#\n"
					     "  /x.Y/Z\t2.3.1   # nested, occurrences\n", &p, &bad), 0);
	assert_int_equal(p.n, 2);
	r = grpc_profile__find(&p, "/a.B/C");
	assert_non_null(r);
	assert_int_equal(r->depth, 1);
	assert_int_equal(r->path[0], 1);
	assert_true(r->packed);
	r = grpc_profile__find(&p, "/x.Y/Z");
	assert_non_null(r);
	assert_int_equal(r->depth, 3);
	assert_int_equal(r->path[1], 3);
	assert_false(r->packed);
	assert_null(grpc_profile__find(&p, "/a.B/D"));
	grpc_profile__free(&p);

	assert_int_equal(grpc_profile__parse("/a.B/C 1\nnot-a-path 1\n", &p, &bad), -EINVAL);
	assert_int_equal(bad, 2);
	assert_int_equal(grpc_profile__parse("/a.B/C 0\n", &p, &bad), -EINVAL);
	assert_int_equal(grpc_profile__parse("/a.B/C 1.x\n", &p, &bad), -EINVAL);
	assert_int_equal(grpc_profile__parse("/a.B/C 1 2\n", &p, &bad), -EINVAL);
	assert_int_equal(grpc_profile__parse("/a.B/C 1.2.3.4.5.6.7.8.9\n", &p, &bad), -EINVAL);
	assert_int_equal(grpc_profile__load("/nonexistent/profile", &p, &bad), -ENOENT);
}

static void test_count_tokens(void **state)
{
	struct grpc_profile p;
	/* field 1: packed ids 300, 301 (2 bytes each), 5; field 2: "hi" */
	static const uint8_t m[] = { 0x0a, 0x05, 0xac, 0x02, 0xad, 0x02, 0x05, 0x12, 0x02, 'h', 'i' };
	/* field 3 { field 1: "a", field 1: "", field 1: "b", field 2: varint 7 }, field 4: fixed32 */
	static const uint8_t n[] = { 0x1a, 0x0a, 0x0a, 0x01, 'a', 0x0a, 0x00, 0x0a, 0x01, 'b',
				     0x10, 0x07, 0x25, 1, 2, 3, 4 };
	int bad;

	assert_int_equal(grpc_profile__parse("/m 1#\n/t 2\n/n 3.1\n/v 3.2\n/f 4\n", &p, &bad), 0);
	assert_int_equal(grpc_count_tokens(grpc_profile__find(&p, "/m"), m, sizeof(m)), 3);
	assert_int_equal(grpc_count_tokens(grpc_profile__find(&p, "/t"), m, sizeof(m)), 1);
	/* occurrences of a string count when non-empty */
	assert_int_equal(grpc_count_tokens(grpc_profile__find(&p, "/n"), n, sizeof(n)), 2);
	assert_int_equal(grpc_count_tokens(grpc_profile__find(&p, "/v"), n, sizeof(n)), 1);
	assert_int_equal(grpc_count_tokens(grpc_profile__find(&p, "/f"), n, sizeof(n)), 1);
	/* cut short: refused, never a partial count */
	assert_int_equal(grpc_count_tokens(grpc_profile__find(&p, "/m"), m, 4), -EPROTO);
	assert_int_equal(grpc_count_tokens(grpc_profile__find(&p, "/n"), n, sizeof(n) - 2), -EPROTO);
	grpc_profile__free(&p);
}

struct msgs {
	int n;
	uint32_t len[8];
	bool whole[8];
};

static void on_msg(void *ctx, const struct grpc_msg *m)
{
	struct msgs *o = ctx;

	o->len[o->n] = m->len;
	o->whole[o->n] = m->whole;
	o->n++;
}

static void test_reader_split_and_gaps(void **state)
{
	/* three messages: 3 bytes, 0 bytes, 2 bytes */
	static const uint8_t s[] = { 0, 0, 0, 0, 3, 'a', 'b', 'c', 0, 0, 0, 0, 0,
				     1, 0, 0, 0, 2, 'x', 'y' };
	struct grpc_reader r;
	struct msgs o = {};

	grpc_reader__init(&r);
	for (size_t i = 0; i < sizeof(s); i++)
		grpc_reader__feed(&r, s + i, 1, on_msg, &o);
	assert_int_equal(o.n, 3);
	assert_int_equal(o.len[0], 3);
	assert_int_equal(o.len[1], 0);
	assert_int_equal(o.len[2], 2);
	assert_true(o.whole[0] && o.whole[2]);

	/* a gap inside a message: it still ends, not whole */
	memset(&o, 0, sizeof(o));
	grpc_reader__init(&r);
	grpc_reader__feed(&r, s, 6, on_msg, &o);
	assert_int_equal(grpc_reader__gap(&r, 2, on_msg, &o), 0);
	grpc_reader__feed(&r, s + 8, sizeof(s) - 8, on_msg, &o);
	assert_int_equal(o.n, 3);
	assert_false(o.whole[0]);
	assert_true(o.whole[2]);

	/* a gap over a message prefix: the framing is lost for good */
	memset(&o, 0, sizeof(o));
	grpc_reader__init(&r);
	grpc_reader__feed(&r, s, 8, on_msg, &o);
	assert_int_equal(grpc_reader__gap(&r, 3, on_msg, &o), -EPROTO);
	grpc_reader__feed(&r, s + 11, sizeof(s) - 11, on_msg, &o);
	assert_int_equal(o.n, 1);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_profile_parse),
		cmocka_unit_test(test_count_tokens),
		cmocka_unit_test(test_reader_split_and_gaps),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
