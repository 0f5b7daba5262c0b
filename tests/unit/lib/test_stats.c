// SPDX-License-Identifier: GPL-2.0-only
/* Sample collector: percentiles (numpy "linear"), mean, min, max, stddev. */
#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <cmocka.h>
#include "user/lib/stats.h"

#define EPS 1e-9

static void test_percentiles_1_to_10(void **state)
{
	struct stats *s = stats__new();
	int i;

	assert_non_null(s);
	/* Added out of order: percentile must sort. */
	for (i = 10; i >= 1; i--)
		assert_int_equal(stats__add(s, i), 0);
	assert_int_equal(stats__count(s), 10);
	assert_float_equal(stats__percentile(s, 50), 5.5, EPS);
	assert_float_equal(stats__percentile(s, 90), 9.1, EPS);
	assert_float_equal(stats__percentile(s, 95), 9.55, EPS);
	assert_float_equal(stats__percentile(s, 99), 9.91, EPS);
	assert_float_equal(stats__percentile(s, 0), 1, EPS);
	assert_float_equal(stats__percentile(s, 100), 10, EPS);
	assert_float_equal(stats__percentile(s, 250), 10, EPS); /* clamped */
	assert_float_equal(stats__mean(s), 5.5, EPS);
	assert_float_equal(stats__min(s), 1, EPS);
	assert_float_equal(stats__max(s), 10, EPS);
	/* population variance of 1..10 = (n^2 - 1) / 12 = 99 / 12 */
	assert_float_equal(stats__stddev(s), sqrt(99.0 / 12.0), EPS);
	stats__free(s);
}

static void test_add_after_query_resorts(void **state)
{
	struct stats *s = stats__new();

	stats__add(s, 10);
	stats__add(s, 20);
	assert_float_equal(stats__percentile(s, 50), 15, EPS);
	stats__add(s, 0);
	/* sorted: 0 10 20 -> P50 = 10, P25 = 5 */
	assert_float_equal(stats__percentile(s, 50), 10, EPS);
	assert_float_equal(stats__percentile(s, 25), 5, EPS);
	assert_float_equal(stats__min(s), 0, EPS);
	stats__free(s);
}

static void test_single_and_empty(void **state)
{
	struct stats *s = stats__new();

	assert_true(isnan(stats__percentile(s, 50)));
	assert_true(isnan(stats__mean(s)));
	assert_true(isnan(stats__min(s)));
	assert_true(isnan(stats__max(s)));
	assert_true(isnan(stats__stddev(s)));
	assert_int_equal(stats__add(s, NAN), -EINVAL);
	assert_int_equal(stats__count(s), 0);
	stats__add(s, 7.25);
	assert_float_equal(stats__percentile(s, 99), 7.25, EPS);
	assert_float_equal(stats__percentile(s, 0), 7.25, EPS);
	assert_float_equal(stats__stddev(s), 0, EPS);
	stats__free(s);
}

static void test_growth_many_samples(void **state)
{
	struct stats *s = stats__new();
	int i;

	/* 0..999 crosses several reallocations; P99 rank = 0.99 * 999 = 989.01 */
	for (i = 999; i >= 0; i--)
		assert_int_equal(stats__add(s, i), 0);
	assert_int_equal(stats__count(s), 1000);
	assert_float_equal(stats__percentile(s, 99), 989.01, 1e-6);
	assert_float_equal(stats__mean(s), 499.5, EPS);
	stats__free(s);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_percentiles_1_to_10),
		cmocka_unit_test(test_add_after_query_resorts),
		cmocka_unit_test(test_single_and_empty),
		cmocka_unit_test(test_growth_many_samples),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
