// SPDX-License-Identifier: GPL-2.0-only
/* user/model/proc_names.c: names by tgid, renamed in place, the oldest overwritten when full. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <cmocka.h>
#include "user/model/proc_names.h"

static void test_set_get_bounded(void **state)
{
	struct proc_names *pn = proc_names__new();
	char buf[16], comm[16];

	assert_non_null(pn);
	assert_int_equal(proc_names__get(pn, 7, buf, sizeof(buf)), 0);
	assert_string_equal(buf, "");
	proc_names__set(pn, 7, "python3");
	proc_names__set(pn, 7, "EngineCore_0");	/* renamed (setproctitle, exec) */
	proc_names__set(pn, 8, "");			/* no name: ignored */
	assert_int_equal(proc_names__get(pn, 7, buf, sizeof(buf)), 1);
	assert_string_equal(buf, "EngineCore_0");
	assert_int_equal(proc_names__get(pn, 8, buf, sizeof(buf)), 0);
	proc_names__set(pn, 9, "a-name-longer-than-fifteen");
	proc_names__get(pn, 9, buf, sizeof(buf));
	assert_string_equal(buf, "a-name-longer-t");
	/* full: the oldest (7) goes first, the newest stay */
	for (uint32_t t = 100; t < 100 + PROC_NAMES_MAX - 1; t++) {
		snprintf(comm, sizeof(comm), "p%u", t);
		proc_names__set(pn, t, comm);
	}
	assert_int_equal(proc_names__get(pn, 7, buf, sizeof(buf)), 0);
	assert_int_equal(proc_names__get(pn, 9, buf, sizeof(buf)), 1);
	assert_int_equal(proc_names__get(pn, 100 + PROC_NAMES_MAX - 2, buf, sizeof(buf)), 1);
	assert_string_equal(buf, "p354");
	proc_names__free(pn);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_set_get_bounded),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
