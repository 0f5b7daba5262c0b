// SPDX-License-Identifier: GPL-2.0-only
/* zmtp_log.c: per-connection ZMTP messages, bounded, drops counted. */
#include <errno.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>
#include "user/model/zmtp_log.h"

static struct ttf_zmtp_msg msg(uint64_t cookie, uint64_t seq)
{
	return (struct ttf_zmtp_msg){ .sock_cookie = cookie, .seq = seq, .frames = 1,
				      .bytes = 10 + seq };
}

static void test_per_conn_bound(void **state)
{
	struct zmtp_log *l = zmtp_log__new();
	const struct ttf_zmtp_msg *m;
	struct ttf_zmtp_msg x;
	uint64_t dropped;
	size_t n;

	(void)state;
	assert_non_null(l);
	for (uint64_t i = 0; i < ZMTP_LOG_PER_CONN; i++) {
		x = msg(7, i);
		assert_int_equal(zmtp_log__add(l, &x), 0);
	}
	x = msg(7, ZMTP_LOG_PER_CONN);
	assert_int_equal(zmtp_log__add(l, &x), -ENOSPC);
	x = msg(8, 0);
	assert_int_equal(zmtp_log__add(l, &x), 0);
	m = zmtp_log__msgs(l, 7, &n, &dropped);
	assert_int_equal(n, ZMTP_LOG_PER_CONN);
	assert_int_equal(dropped, 1);
	assert_int_equal(m[0].seq, 0);
	assert_int_equal(m[ZMTP_LOG_PER_CONN - 1].seq, ZMTP_LOG_PER_CONN - 1);
	assert_int_equal(m[5].bytes, 15);
	m = zmtp_log__msgs(l, 8, &n, &dropped);
	assert_int_equal(n, 1);
	assert_int_equal(dropped, 0);
	assert_int_equal(zmtp_log__stats(l)->kept, ZMTP_LOG_PER_CONN + 1);
	assert_int_equal(zmtp_log__stats(l)->dropped, 1);
	/* closed: forgotten; the cookie may come again, empty */
	zmtp_log__close(l, 7);
	assert_null(zmtp_log__msgs(l, 7, &n, &dropped));
	assert_int_equal(n, 0);
	x = msg(7, 0);
	assert_int_equal(zmtp_log__add(l, &x), 0);
	zmtp_log__msgs(l, 7, &n, &dropped);
	assert_int_equal(n, 1);
	assert_int_equal(dropped, 0);
	zmtp_log__free(l);
}

static void test_conn_bound(void **state)
{
	struct zmtp_log *l = zmtp_log__new();
	struct ttf_zmtp_msg x;
	uint64_t dropped;
	size_t n;

	(void)state;
	for (uint64_t c = 1; c <= ZMTP_LOG_CONNS; c++) {
		x = msg(c, 0);
		assert_int_equal(zmtp_log__add(l, &x), 0);
	}
	x = msg(ZMTP_LOG_CONNS + 1, 0);
	assert_int_equal(zmtp_log__add(l, &x), -ENOSPC);
	assert_null(zmtp_log__msgs(l, ZMTP_LOG_CONNS + 1, &n, &dropped));
	assert_int_equal(zmtp_log__stats(l)->dropped, 1);
	/* one closes: room for the next */
	zmtp_log__close(l, 1);
	assert_int_equal(zmtp_log__add(l, &x), 0);
	zmtp_log__msgs(l, ZMTP_LOG_CONNS + 1, &n, &dropped);
	assert_int_equal(n, 1);
	zmtp_log__free(l);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_per_conn_bound),
		cmocka_unit_test(test_conn_bound),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
