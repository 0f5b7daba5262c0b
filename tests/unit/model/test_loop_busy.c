// SPDX-License-Identifier: GPL-2.0-only
/* Request windows per serving thread (user/model/loop_busy.h, docs/design.md D14). */
#include <errno.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>
#include "user/model/loop_busy.h"

#define MS 1000000ull

static void test_who_covers_most(void **state)
{
	struct loop_busy *lb = loop_busy__new();
	uint64_t id, ov;

	(void)state;
	assert_non_null(lb);
	loop_busy__add(lb, 1, 7, 0, 1000 * MS);		/* the asking request itself */
	loop_busy__add(lb, 2, 7, 100 * MS, 400 * MS);	/* covers 100..400 */
	loop_busy__add(lb, 3, 7, 350 * MS, 360 * MS);	/* covers 10 ms of it */
	loop_busy__add(lb, 4, 8, 0, 1000 * MS);		/* another thread */
	loop_busy__add(lb, 5, 7, 500 * MS, 500 * MS);	/* empty: ignored */
	assert_int_equal(loop_busy__who(lb, 7, 90 * MS, 410 * MS, 1, &id, &ov), 0);
	assert_int_equal(id, 2);
	assert_int_equal(ov, 300 * MS);
	assert_int_equal(loop_busy__who(lb, 7, 450 * MS, 600 * MS, 1, &id, &ov), -ENOENT);
	assert_int_equal(loop_busy__who(lb, 9, 0, 1000 * MS, 1, &id, &ov), -ENOENT);
	assert_int_equal(loop_busy__stats(lb)->windows, 4);
	loop_busy__free(lb);
}

static void test_bounded(void **state)
{
	struct loop_busy *lb = loop_busy__new();
	uint64_t id, ov;

	(void)state;
	for (uint64_t i = 0; i < LOOP_BUSY_WINDOWS + 10; i++)
		loop_busy__add(lb, i + 1, 7, i * 10 * MS, i * 10 * MS + 5 * MS);
	assert_int_equal(loop_busy__stats(lb)->overwritten, 10);
	/* the oldest are gone, the newest answer */
	assert_int_equal(loop_busy__who(lb, 7, 0, 10 * MS, 0, &id, &ov), -ENOENT);
	assert_int_equal(loop_busy__who(lb, 7, (LOOP_BUSY_WINDOWS + 9) * 10 * MS,
					(LOOP_BUSY_WINDOWS + 10) * 10 * MS, 0, &id, &ov), 0);
	assert_int_equal(id, LOOP_BUSY_WINDOWS + 10);
	loop_busy__free(lb);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_who_covers_most),
		cmocka_unit_test(test_bounded),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
