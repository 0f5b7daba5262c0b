// SPDX-License-Identifier: GPL-2.0-only
/* fresh_procs.c: processes looked at again at each drain until they map something new. */
#include <fcntl.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <stdlib.h>
#include <unistd.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <cmocka.h>
#include "user/cmd/fresh_procs.h"

static uint32_t seen[8];
static int n_seen;

static void note(void *ctx, uint32_t tgid)
{
	(void)ctx;
	if (n_seen < 8)
		seen[n_seen++] = tgid;
}

/* Only a change of what the process maps executable brings a look. */
static void test_look_when_mappings_change(void **state)
{
	struct fresh_procs *f = calloc(1, sizeof(*f));
	uint32_t me = (uint32_t)getpid();
	struct stat st;
	void *p;
	int fd;

	assert_non_null(f);
	fresh_procs__add(f, me, 1000);
	assert_true(fresh_procs__any(f, 2000));
	n_seen = 0;
	fresh_procs__changed(f, 2000, note, NULL);
	assert_int_equal(n_seen, 0);	/* nothing mapped since it was added */
	fd = open("/proc/self/exe", O_RDONLY | O_CLOEXEC);
	assert_true(fd >= 0 && fstat(fd, &st) == 0);
	p = mmap(NULL, (size_t)st.st_size, PROT_READ | PROT_EXEC, MAP_PRIVATE, fd, 0);
	assert_true(p != MAP_FAILED);
	fresh_procs__changed(f, 3000, note, NULL);
	assert_int_equal(n_seen, 1);
	assert_int_equal(seen[0], me);
	fresh_procs__changed(f, 4000, note, NULL);
	assert_int_equal(n_seen, 1);	/* looked at once per change */
	munmap(p, (size_t)st.st_size);
	close(fd);
	free(f);
}

/* A process stays fresh FRESH_NS from its (last) add, then leaves the list. */
static void test_expiry(void **state)
{
	struct fresh_procs *f = calloc(1, sizeof(*f));

	assert_non_null(f);
	assert_false(fresh_procs__any(f, 1));
	fresh_procs__add(f, 0x7ffffff0u, 10);
	fresh_procs__add(f, 0x7ffffff1u, 20);
	fresh_procs__add(f, 0x7ffffff0u, 30);	/* again: its time starts over, no second entry */
	assert_int_equal(f->n, 2);
	assert_true(fresh_procs__any(f, 20 + FRESH_NS - 1));
	assert_true(fresh_procs__any(f, 20 + FRESH_NS));	/* the first still, until 30 + FRESH_NS */
	assert_int_equal(f->n, 1);
	assert_int_equal(f->tgid[0], 0x7ffffff0u);
	assert_false(fresh_procs__any(f, 30 + FRESH_NS));
	assert_int_equal(f->n, 0);
	free(f);
}

/* A full list drops its first entry (here the oldest) for a new one. */
static void test_full_list_drops_oldest(void **state)
{
	struct fresh_procs *f = calloc(1, sizeof(*f));

	assert_non_null(f);
	for (uint32_t i = 0; i <= FRESH_MAX; i++)
		fresh_procs__add(f, 0x7fff0000u + i, 100 + i);
	assert_int_equal(f->n, FRESH_MAX);
	assert_int_equal(f->tgid[0], 0x7fff0001u);
	assert_int_equal(f->tgid[FRESH_MAX - 1], 0x7fff0000u + FRESH_MAX);
	free(f);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_look_when_mappings_change),
		cmocka_unit_test(test_expiry),
		cmocka_unit_test(test_full_list_drops_oldest),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
