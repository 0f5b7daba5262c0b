// SPDX-License-Identifier: GPL-2.0-only
/*
 * json_print.c against cJSON_PrintUnformatted itself: the same bytes for
 * the numbers NDJSON lines carry (ms at microsecond precision, ratios,
 * counts, 64-bit integers), for awkward doubles, and for whole trees with
 * strings that need escapes.
 */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <errno.h>
#include <limits.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>
#include "user/lib/json_print.h"

/* The bytes cJSON prints for one number item. */
static void expect_same_number(double d)
{
	cJSON *n = cJSON_CreateNumber(d);
	char *want = cJSON_PrintUnformatted(n), got[26];
	int len = json_print__number(got, n);

	assert_non_null(want);
	assert_int_equal(len, (int)strlen(want));
	assert_string_equal(got, want);
	cJSON_free(want);
	cJSON_Delete(n);
}

static void test_hand_picked_numbers(void **state)
{
	static const double v[] = {
		0, -0.0, 1, -1, 0.5, 0.001, 0.0001, 0.00015, 0.00001, 1e-5, 0.1, 0.2, 0.3,
		1.005, 12.345, 123456.789, 99999999.9999, 1e10 + 0.5, 1e11, 1e11 + 0.25,
		1e15, 1e16, 1e21, 2147483647.0, 2147483648.0, -2147483648.0, -2147483649.5,
		4294967296.0, 3e9, 1.0 / 3, 2.0 / 3, M_PI, 1e-300, -1e-300, 5e-324,
		1.7976931348623157e308, NAN, INFINITY, -INFINITY, 0.0999, 0.9999, 9.99995,
		0.30000000000000004, 100.10000000000001,
	};

	for (size_t i = 0; i < sizeof(v) / sizeof(v[0]); i++)
		expect_same_number(v[i]);
}

/* Values as report.c makes them: round(ns / 1e3) / 1e3 and 4-decimal ratios. */
static void test_rounded_values(void **state)
{
	uint64_t x = 88172645463325252ull;

	for (int i = 0; i < 50000; i++) {
		double ns;

		x ^= x << 13;
		x ^= x >> 7;
		x ^= x << 17;
		ns = (double)(x % 100000000000000ull) / (double)(1 + x % 1000);
		expect_same_number(round(ns / 1e3) / 1e3);
		expect_same_number(round(ns / 1e9 * 1e4) / 1e4);
		expect_same_number(-round(ns / 1e6 * 1e2) / 1e2);
		expect_same_number(ns);
		expect_same_number((double)(x >> (x % 64)));
	}
}

static void expect_same_tree(cJSON *o)
{
	struct json_buf b = { 0 };
	char *want = cJSON_PrintUnformatted(o);

	assert_non_null(want);
	assert_int_equal(json_print__append(&b, o), 0);
	assert_int_equal(b.len, strlen(want));
	assert_string_equal(b.p, want);
	/* a second line appends after the first */
	assert_int_equal(json_print__append(&b, o), 0);
	assert_int_equal(b.len, 2 * strlen(want));
	assert_memory_equal(b.p + strlen(want), want, strlen(want));
	cJSON_free(want);
	json_buf__free(&b);
}

static void test_trees(void **state)
{
	cJSON *o = cJSON_CreateObject(), *a, *in;
	char ctl[40];

	for (int i = 0; i < 32; i++)
		ctl[i] = (char)(i + 1);
	memcpy(ctl + 31, "\"\\/\x7f\xc3\xa9", 7);
	ctl[38] = '\0';
	cJSON_AddStringToObject(o, "type", "request");
	cJSON_AddStringToObject(o, "ctl", ctl);
	cJSON_AddStringToObject(o, "", "");
	cJSON_AddStringToObject(o, "k\"ey\n", "v");
	cJSON_AddNullToObject(o, "n");
	cJSON_AddBoolToObject(o, "t", 1);
	cJSON_AddBoolToObject(o, "f", 0);
	cJSON_AddRawToObject(o, "id", "18446744073709551615");
	cJSON_AddNumberToObject(o, "ms", 12.345);
	cJSON_AddNumberToObject(o, "ms", 0.1 + 0.2); /* cJSON keeps duplicate keys */
	cJSON_AddArrayToObject(o, "empty");
	cJSON_AddObjectToObject(o, "none");
	a = cJSON_AddArrayToObject(o, "itl_ms");
	for (int i = 0; i < 40; i++)
		cJSON_AddItemToArray(a, cJSON_CreateNumber(i * 0.125 - 2));
	in = cJSON_CreateObject();
	cJSON_AddNumberToObject(in, "index", 3);
	cJSON_AddStringToObject(in, "cause", "none visible");
	cJSON_AddItemToArray(cJSON_AddArrayToObject(o, "outliers"), in);
	expect_same_tree(o);
	cJSON_Delete(o);
}

/* What cJSON refuses to print (a raw item without text) is refused too, and leaves the buffer as it was. */
static void test_refused(void **state)
{
	struct json_buf b = { 0 };
	cJSON *o = cJSON_CreateObject(), *ok = cJSON_CreateString("x");
	cJSON *raw = cJSON_CreateRaw("1");

	free(raw->valuestring);
	raw->valuestring = NULL;
	cJSON_AddItemToObject(o, "r", raw);
	assert_null(cJSON_PrintUnformatted(o));
	assert_int_equal(json_print__append(&b, ok), 0);
	assert_int_equal(json_print__append(&b, o), -EINVAL);
	assert_int_equal(b.len, 3);
	assert_string_equal(b.p, "\"x\"");
	assert_int_equal(json_print__append(&b, NULL), -EINVAL);
	json_buf__free(&b);
	cJSON_Delete(o);
	cJSON_Delete(ok);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_hand_picked_numbers),
		cmocka_unit_test(test_rounded_values),
		cmocka_unit_test(test_trees),
		cmocka_unit_test(test_refused),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
