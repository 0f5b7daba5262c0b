// SPDX-License-Identifier: GPL-2.0-only
/* Least-squares fit used for "prefill vs prompt tokens". */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <errno.h>
#include <cmocka.h>
#include "user/lib/fit.h"

/* y = 2 + 0.5 x exactly: a = 2, b = 0.5, r2 = 1. */
static void test_exact_line(void **state)
{
	struct linfit f = { 0 };
	double a, b, r2;

	for (int x = 32; x <= 512; x *= 2)
		linfit__add(&f, x, 2 + 0.5 * x);
	assert_int_equal(linfit__solve(&f, &a, &b, &r2), 0);
	assert_float_equal(a, 2.0, 1e-9);
	assert_float_equal(b, 0.5, 1e-12);
	assert_float_equal(r2, 1.0, 1e-12);
}

/* (1,1) (2,3) (3,2): b = 0.5, a = 1, r2 = 0.25 (hand-computed). */
static void test_noisy_points(void **state)
{
	struct linfit f = { 0 };
	double a, b, r2;

	linfit__add(&f, 1, 1);
	linfit__add(&f, 2, 3);
	linfit__add(&f, 3, 2);
	assert_int_equal(linfit__solve(&f, &a, &b, &r2), 0);
	assert_float_equal(b, 0.5, 1e-12);
	assert_float_equal(a, 1.0, 1e-12);
	assert_float_equal(r2, 0.25, 1e-12);
}

static void test_needs_spread(void **state)
{
	struct linfit f = { 0 };
	double a, b, r2;

	linfit__add(&f, 64, 10);
	linfit__add(&f, 64, 12);
	assert_int_equal(linfit__solve(&f, &a, &b, &r2), -EDOM);
	linfit__add(&f, 64, 11);
	assert_int_equal(linfit__solve(&f, &a, &b, &r2), -EDOM);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_exact_line),
		cmocka_unit_test(test_noisy_points),
		cmocka_unit_test(test_needs_spread),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
