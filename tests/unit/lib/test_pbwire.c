// SPDX-License-Identifier: GPL-2.0-only
/* Protobuf wire writer: byte-exact against the encoding guide's examples and by hand. */
#include <errno.h>
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>
#include "user/lib/pbwire.h"

#define EXPECT(b, ...) do { \
	static const uint8_t want[] = { __VA_ARGS__ }; \
	assert_int_equal((b)->err, 0); \
	assert_int_equal((b)->len, sizeof(want)); \
	assert_memory_equal((b)->p, want, sizeof(want)); \
} while (0)

static void test_varints(void **state)
{
	struct pb_buf b;

	pb_init(&b);
	pb_varint(&b, 0);
	pb_varint(&b, 1);
	pb_varint(&b, 127);
	pb_varint(&b, 128);
	pb_varint(&b, 300);
	EXPECT(&b, 0x00, 0x01, 0x7f, 0x80, 0x01, 0xac, 0x02);
	pb_free(&b);
	pb_varint(&b, UINT64_MAX);
	EXPECT(&b, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x01);
	pb_free(&b);
	/* int64 -1: two's complement, ten bytes */
	pb_int64(&b, 1, -1);
	EXPECT(&b, 0x08, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x01);
	pb_free(&b);
	assert_int_equal(pb_varint_len(0), 1);
	assert_int_equal(pb_varint_len(127), 1);
	assert_int_equal(pb_varint_len(128), 2);
	assert_int_equal(pb_varint_len(16383), 2);
	assert_int_equal(pb_varint_len(16384), 3);
	assert_int_equal(pb_varint_len(UINT64_MAX), 10);
}

/* The examples of https://protobuf.dev/programming-guides/encoding/ */
static void test_guide_examples(void **state)
{
	struct pb_buf b;

	pb_init(&b);
	pb_uint(&b, 1, 150);		/* Test1 { int32 a = 1; } a = 150 */
	EXPECT(&b, 0x08, 0x96, 0x01);
	pb_free(&b);
	pb_string(&b, 2, "testing");	/* Test2 { string b = 2; } */
	EXPECT(&b, 0x12, 0x07, 0x74, 0x65, 0x73, 0x74, 0x69, 0x6e, 0x67);
	pb_free(&b);
	pb_begin(&b, 3);		/* Test3 { Test1 c = 3; } */
	pb_uint(&b, 1, 150);
	pb_end(&b);
	EXPECT(&b, 0x1a, 0x03, 0x08, 0x96, 0x01);
	pb_free(&b);
}

static void test_fixed_and_double(void **state)
{
	struct pb_buf b;

	pb_init(&b);
	pb_fixed64(&b, 7, 0x0102030405060708ull);
	pb_fixed32(&b, 16, 0x301);		/* field 16: a two-byte tag */
	pb_double(&b, 4, 1.0);			/* 0x3ff0000000000000 */
	EXPECT(&b, 0x39, 0x08, 0x07, 0x06, 0x05, 0x04, 0x03, 0x02, 0x01,
	       0x85, 0x01, 0x01, 0x03, 0x00, 0x00,
	       0x21, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0xf0, 0x3f);
	pb_free(&b);
	pb_bytes(&b, 1, (uint8_t[]){ 0xde, 0xad }, 2);
	pb_bytes(&b, 2, "", 0);
	EXPECT(&b, 0x0a, 0x02, 0xde, 0xad, 0x12, 0x00);
	pb_free(&b);
}

static void test_packed(void **state)
{
	static const uint64_t u[2] = { 1, 256 };
	static const double d[1] = { -2.0 };	/* 0xc000000000000000 */
	struct pb_buf b;

	pb_init(&b);
	pb_packed_fixed64(&b, 6, u, 2);
	pb_packed_double(&b, 7, d, 1);
	pb_packed_double(&b, 8, d, 0);		/* empty: nothing */
	EXPECT(&b, 0x32, 0x10, 1, 0, 0, 0, 0, 0, 0, 0, 0, 1, 0, 0, 0, 0, 0, 0,
	       0x3a, 0x08, 0, 0, 0, 0, 0, 0, 0x00, 0xc0);
	pb_free(&b);
}

/* A body of 200 bytes needs a two-byte length: the body moves right by one. */
static void test_nested_long_bodies(void **state)
{
	char s[198];
	struct pb_buf b;

	memset(s, 'x', sizeof(s) - 1);
	s[sizeof(s) - 1] = '\0';
	pb_init(&b);
	pb_begin(&b, 1);
	pb_begin(&b, 2);
	pb_string(&b, 1, s);	/* 1 + 2 + 197 = 200 bytes */
	pb_end(&b);		/* inner: 200 = 0xc8 0x01 */
	pb_uint(&b, 3, 5);
	pb_end(&b);		/* outer: 1 + 2 + 200 + 2 = 205 = 0xcd 0x01 */
	assert_int_equal(b.err, 0);
	assert_int_equal(b.len, 3 + 205);
	assert_memory_equal(b.p, ((uint8_t[]){ 0x0a, 0xcd, 0x01, 0x12, 0xc8, 0x01, 0x0a, 0xc5,
					       0x01, 'x' }), 10);
	assert_memory_equal(b.p + 3 + 205 - 2, ((uint8_t[]){ 0x18, 0x05 }), 2);
	pb_free(&b);
	/* empty nested message */
	pb_begin(&b, 15);
	pb_end(&b);
	EXPECT(&b, 0x7a, 0x00);
	pb_free(&b);
}

static void test_errors_stick(void **state)
{
	struct pb_buf b;

	pb_init(&b);
	pb_end(&b);
	assert_int_equal(b.err, -EINVAL);
	pb_uint(&b, 1, 1);
	assert_int_equal(b.len, 0);
	pb_free(&b);
	for (int i = 0; i <= PB_MAX_DEPTH; i++)
		pb_begin(&b, 1);
	assert_int_equal(b.err, -EOVERFLOW);
	pb_free(&b);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_varints),
		cmocka_unit_test(test_guide_examples),
		cmocka_unit_test(test_fixed_and_double),
		cmocka_unit_test(test_packed),
		cmocka_unit_test(test_nested_long_bodies),
		cmocka_unit_test(test_errors_stick),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
