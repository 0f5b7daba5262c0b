// SPDX-License-Identifier: GPL-2.0-only
/* maps_watch.c: exec_vm from /proc/PID/status, and when a rescan is let through. */
#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <cmocka.h>
#include "user/probe/maps_watch.h"

static void test_exec_kb_of_self(void **state)
{
	uint64_t kb = 0;

	assert_int_equal(maps_watch__exec_kb(getpid(), &kb), 0);
	assert_true(kb > 0);	/* this binary's text and libc's at least */
	assert_int_equal(maps_watch__exec_kb(0x7ffffff0u, &kb), -ENOENT);
}

/* Mapping a file r-x (what dlopen does) moves exec_vm: the next check lets a scan through. */
static void test_new_exec_mapping_is_a_change(void **state)
{
	struct maps_watch *w = calloc(1, sizeof(*w));
	uint32_t me = (uint32_t)getpid();
	uint64_t before, after;
	struct stat st;
	void *p;
	int fd;

	assert_non_null(w);
	assert_false(maps_watch__known(w, me));
	assert_true(maps_watch__changed(w, me, 1000));		/* not seen yet */
	assert_true(maps_watch__known(w, me));
	assert_false(maps_watch__changed(w, me, 2000));	/* nothing mapped since */
	fd = open("/proc/self/exe", O_RDONLY | O_CLOEXEC);
	assert_true(fd >= 0 && fstat(fd, &st) == 0);
	assert_int_equal(maps_watch__exec_kb(me, &before), 0);
	p = mmap(NULL, (size_t)st.st_size, PROT_READ | PROT_EXEC, MAP_PRIVATE, fd, 0);
	assert_true(p != MAP_FAILED);
	assert_int_equal(maps_watch__exec_kb(me, &after), 0);
	assert_true(after >= before + (uint64_t)st.st_size / 1024);
	assert_true(maps_watch__changed(w, me, 3000));
	assert_false(maps_watch__changed(w, me, 4000));
	munmap(p, (size_t)st.st_size);
	assert_true(maps_watch__changed(w, me, 5000));		/* unmapped: a change too */
	close(fd);
	free(w);
}

/* Unchanged, a process still gets a full scan every MAPS_WATCH_FULL_NS. */
static void test_full_scan_backstop(void **state)
{
	struct maps_watch *w = calloc(1, sizeof(*w));
	uint32_t me = (uint32_t)getpid();

	assert_non_null(w);
	assert_true(maps_watch__changed(w, me, 1));
	assert_false(maps_watch__changed(w, me, MAPS_WATCH_FULL_NS));
	assert_true(maps_watch__changed(w, me, 1 + MAPS_WATCH_FULL_NS));
	assert_false(maps_watch__changed(w, me, 2 + MAPS_WATCH_FULL_NS));
	/* a process that cannot be read is always let through (its scan says why) */
	assert_true(maps_watch__changed(w, 0x7ffffff0u, 1));
	assert_true(maps_watch__changed(w, 0x7ffffff0u, 2));
	free(w);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_exec_kb_of_self),
		cmocka_unit_test(test_new_exec_mapping_is_a_change),
		cmocka_unit_test(test_full_scan_backstop),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
