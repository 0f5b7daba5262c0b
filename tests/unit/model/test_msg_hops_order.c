// SPDX-License-Identifier: GPL-2.0-only
/*
 * Message hops joined by order across two connections of one frontend
 * (user/model/hops/msg_order.c, docs/design.md D17): data-parallel engines,
 * each with its own connection. The order holds per connection only.
 */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <string.h>
#include <cmocka.h>
#include "user/model/hops/msg.h"
#include "tests/unit/model/msg_hops_fix.h"

#define MS 1000000ull
#define FE 100
#define ENG_A 200	/* requests in on unix inodes 12 <- 11, outputs 22 -> 21 */
#define ENG_B 201	/* requests in on 14 <- 13, outputs 24 -> 23 */

/* A request message to engine A (on_a) or B, read by it 0.1 ms later. */
static void to_engine(struct msg_hops *mh, int on_a, uint64_t ts)
{
	cross(mh, FE, ZMTP_DIR_OUT, ts, 100, on_a ? 11 : 13, on_a ? 12 : 14);
	cross(mh, on_a ? ENG_A : ENG_B, ZMTP_DIR_IN, ts + 100000, 100, on_a ? 12 : 14,
	      on_a ? 11 : 13);
}

/* An output of engine A (on_a) or B, read by the frontend 0.2 ms later. */
static void from_engine(struct msg_hops *mh, int on_a, uint64_t ts)
{
	cross(mh, on_a ? ENG_A : ENG_B, ZMTP_DIR_OUT, ts, 50, on_a ? 22 : 24, on_a ? 21 : 23);
	cross(mh, FE, ZMTP_DIR_IN, ts + 200000, 50, on_a ? 21 : 23, on_a ? 22 : 24);
}

/* Request id, read at read_ns (its wait from 0.5 ms before), its first token written at tok_ns. */
static void req_fix(struct req_fix *f, uint64_t id, uint64_t read_ns, uint64_t tok_ns)
{
	memset(f, 0, sizeof(*f));
	f->ev = (struct ttf_token_event){ .write_ns = tok_ns, .n_tokens = 1 };
	f->r = (struct ttf_request){ .id = id, .tgid = FE, .tx_tid = 7, .n_events = 1,
				     .events = &f->ev };
	f->m = (struct ttf_req_metrics){ .t_start_ns = read_ns - MS, .t_first_token_ns = tok_ns,
					 .ttft_ns = (int64_t)(tok_ns - read_ns + MS) };
	f->a.valid = 1;
	f->a.bound_ns[1] = read_ns - 500000;
	f->a.bound_ns[2] = read_ns;
}

/* Reads far apart: each message left before the next read, so the order is the truth. */
static void test_apart(void **state)
{
	struct msg_hops *mh = msg_hops__new();
	struct req_fix f1, f2;
	struct ttf_msg_chain c;

	(void)state;
	req_fix(&f1, 1, 10 * MS, 21 * MS);
	req_fix(&f2, 2, 30 * MS, 41 * MS);
	msg_hops__on_read(mh, FE, 1, 10 * MS);
	to_engine(mh, 1, 11 * MS);
	from_engine(mh, 1, 20 * MS);
	msg_hops__on_read(mh, FE, 2, 30 * MS);
	to_engine(mh, 0, 31 * MS);
	from_engine(mh, 0, 40 * MS);
	assert_int_equal(msg_hops__join(mh, &f1.r, &f1.m, &f1.a, &c), 1);
	assert_int_equal(c.eng_tgid, ENG_A);
	assert_int_equal(c.order_ambiguous, 0);
	assert_int_equal(msg_hops__join(mh, &f2.r, &f2.m, &f2.a, &c), 1);
	assert_int_equal(c.eng_tgid, ENG_B);
	assert_int_equal(c.order_ambiguous, 0);
	assert_int_equal(msg_hops__stats(mh)->inferred_ambiguous, 0);
	msg_hops__free(mh);
}

/*
 * Four requests read at 10 .. 10.6 ms, handed over alternately (1 and 3 to
 * engine A, 2 and 4 to B); libzmq's I/O thread wrote A's two messages at
 * 12 ms, then B's at 12.1. By order, A's carry 1 and 2: every one of the
 * four could have been the other connection's, and each is marked.
 */
static void test_batched_writes(void **state)
{
	struct msg_hops *mh = msg_hops__new();
	struct ttf_msg_chain c;

	(void)state;
	for (uint64_t k = 0; k < 4; k++)
		msg_hops__on_read(mh, FE, k + 1, 10 * MS + k * 200000);
	to_engine(mh, 1, 12 * MS);
	to_engine(mh, 1, 12 * MS);
	to_engine(mh, 0, 12100000);
	to_engine(mh, 0, 12100000);
	from_engine(mh, 1, 20 * MS);
	from_engine(mh, 0, 22 * MS);
	for (uint64_t k = 0; k < 4; k++) {
		struct req_fix f;

		req_fix(&f, k + 1, 10 * MS + k * 200000, 23 * MS + k * 100000);
		assert_int_equal(msg_hops__join(mh, &f.r, &f.m, &f.a, &c), 1);
		assert_int_equal(c.inferred, 1);
		assert_int_equal(c.order_ambiguous, 1);
		assert_int_equal(c.eng_tgid, k < 2 ? ENG_A : ENG_B);	/* by order */
	}
	assert_int_equal(msg_hops__stats(mh)->inferred_ambiguous, 4);
	msg_hops__free(mh);
}

/*
 * Requests 1 and 2 read at 10 and 10.2 ms; 1 went to engine A, 2 to B, but
 * B's connection was written first (12 ms, A's at 12.1). By order 1 took
 * B's message, and B's only output (30 ms) was read after 1's first token
 * (21 ms): no output it can have come from. The other connection's message
 * could have carried it, and through it A's output at 20 can: joined there.
 */
static void test_swapped_when_order_finds_none(void **state)
{
	struct msg_hops *mh = msg_hops__new();
	struct req_fix f1;
	struct ttf_msg_chain c;

	(void)state;
	req_fix(&f1, 1, 10 * MS, 21 * MS);
	msg_hops__on_read(mh, FE, 1, 10 * MS);
	msg_hops__on_read(mh, FE, 2, 10200000);
	to_engine(mh, 0, 12 * MS);
	to_engine(mh, 1, 12100000);
	from_engine(mh, 1, 20 * MS);
	from_engine(mh, 0, 30 * MS);
	assert_int_equal(msg_hops__join(mh, &f1.r, &f1.m, &f1.a, &c), 1);
	assert_int_equal(c.eng_tgid, ENG_A);
	assert_int_equal(c.order_ambiguous, 1);
	assert_int_equal(c.stage_ns[TTF_MS_FRONTEND], 2100000);	/* A's message at 12.1 */
	assert_int_equal(c.stage_ns[TTF_MS_IPC_OUT], 200000);
	msg_hops__free(mh);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_apart),
		cmocka_unit_test(test_batched_writes),
		cmocka_unit_test(test_swapped_when_order_finds_none),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
