// SPDX-License-Identifier: GPL-2.0-only
/* Sample collector past STATS_EXACT_MAX samples: the log-linear histogram of user/lib/stats.h. */
#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <cmocka.h>
#include "user/lib/stats.h"

#define EPS 1e-9

/*
 * 1..10000: P50 interpolates samples 5000 and 5001. Both fall in the
 * bucket [4992, 5024) of the octave [4096, 8192) (128 buckets of 32), read
 * back as its middle 5008: 0.15% above the exact 5000.5.
 */
static void test_one_to_ten_thousand(void **state)
{
	struct stats *s = stats__new();

	(void)state;
	for (int i = 10000; i >= 1; i--)
		assert_int_equal(stats__add(s, i), 0);
	assert_int_equal(stats__count(s), 10000);
	assert_float_equal(stats__percentile(s, 50), 5008, EPS);
	assert_true(fabs(stats__percentile(s, 50) - 5000.5) <= 5000.5 / 256);
	/* P99: rank 9899.01 -> 9900 and 9901, bucket [9856, 9920) of 64: middle 9888 */
	assert_float_equal(stats__percentile(s, 99), 9888, EPS);
	assert_float_equal(stats__percentile(s, 0), 1, EPS);
	assert_float_equal(stats__percentile(s, 100), 10000, EPS);
	assert_float_equal(stats__mean(s), 5000.5, EPS);
	assert_float_equal(stats__min(s), 1, EPS);
	assert_float_equal(stats__max(s), 10000, EPS);
	/* population stddev of 1..n: sqrt((n^2 - 1) / 12) */
	assert_float_equal(stats__stddev(s), sqrt((1e8 - 1) / 12), 1e-6);
	stats__free(s);
}

/* Exact up to STATS_EXACT_MAX samples, histogram from the next one. */
static void test_switch_point(void **state)
{
	struct stats *s = stats__new();

	(void)state;
	for (int i = 1; i <= STATS_EXACT_MAX; i++)
		stats__add(s, i);
	/* 1..2048 exact: P50 = 1024.5 */
	assert_float_equal(stats__percentile(s, 50), 1024.5, EPS);
	stats__add(s, 2049);
	/* 1..2049: P50 = sample 1025, bucket [1024, 1032) -> 1028 */
	assert_float_equal(stats__percentile(s, 50), 1028, EPS);
	stats__free(s);
}

/* Negative samples: -3000..-1, P50 between -1501 and -1500, both in [1496, 1504) -> 1500. */
static void test_negative_and_zero(void **state)
{
	struct stats *s = stats__new();

	(void)state;
	for (int i = 1; i <= 3000; i++)
		stats__add(s, -i);
	assert_float_equal(stats__percentile(s, 50), -1500, EPS);
	assert_float_equal(stats__percentile(s, 0), -3000, EPS);
	assert_float_equal(stats__percentile(s, 100), -1, EPS);
	for (int i = 0; i < 6000; i++)
		stats__add(s, 0);
	/* 9000 samples, P50 = rank 4499.5: zeros (samples 3000..8999) */
	assert_float_equal(stats__percentile(s, 50), 0, EPS);
	assert_float_equal(stats__mean(s), -3001.0 * 1500 / 9000, EPS);
	stats__free(s);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_one_to_ten_thousand),
		cmocka_unit_test(test_switch_point),
		cmocka_unit_test(test_negative_and_zero),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
