// SPDX-License-Identifier: GPL-2.0-only
/*
 * Engine timeline under continuous batching (user/model/timeline/timeline.h,
 * docs/design.md D10): steps whose probe counted each sequence's tokens,
 * first position and output flag.
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <string.h>
#include <cmocka.h>
#include "user/model/timeline/timeline.h"

#define MS 1000000ull
#define ENGINE_TID 20

/* One sequence of a batch: id, tokens, first position, last token is an output. */
struct seq { int32_t id, n, pos; int out; };

static void step(struct timeline *tl, uint64_t start_ms, uint64_t end_ms, int n_seq,
		 const struct seq *q)
{
	struct ttf_engine_event e = { .ts_ns = start_ms * MS, .tgid = 1, .tid = ENGINE_TID,
				      .role = TTF_ROLE_STEP, .n_seq = n_seq };

	for (int i = 0; i < n_seq; i++) {
		e.seq_ids[i] = q[i].id;
		e.seq_tokens[i] = q[i].n;
		e.seq_pos0[i] = q[i].pos;
		e.seq_out_mask |= q[i].out ? 1u << i : 0;
		e.value += q[i].n;
	}
	assert_int_equal(timeline__on_engine_event(tl, &e), 0);
	e.type = TTF_ENG_RETURN;
	e.ts_ns = end_ms * MS;
	e.value = 0;
	assert_int_equal(timeline__on_engine_event(tl, &e), 0);
}

/* Request id read by thread tid at read_ms, tokenized to `count` tokens by tok_ms. */
static void request(struct timeline *tl, uint64_t id, uint32_t tid, uint64_t read_ms,
		    uint64_t tok_ms, int64_t count)
{
	struct ttf_engine_event e = { .ts_ns = read_ms * MS + 100, .tgid = 1, .tid = tid,
				      .role = TTF_ROLE_TOKENIZE, .value = -1 };

	assert_int_equal(timeline__on_request_read(tl, id, id, tid, read_ms * MS, 0), 0);
	assert_int_equal(timeline__on_engine_event(tl, &e), 0);
	e.type = TTF_ENG_RETURN;
	e.ts_ns = tok_ms * MS;
	e.value = count;
	assert_int_equal(timeline__on_engine_event(tl, &e), 0);
}

/*
 * Two prompts of unequal length in one step next to a decode token: each is
 * its request's by count (exact), each has the whole step as its prefill,
 * and each knows it shared the step and its token share.
 */
static void test_two_prompts_one_step(void **state)
{
	struct timeline *tl = timeline__new(60000 * MS);
	const struct seq s1[] = { { 3, 1, 50, 1 }, { 0, 120, 0, 1 }, { 1, 30, 0, 1 } };
	const struct seq s2[] = { { 3, 1, 51, 1 }, { 0, 1, 120, 1 }, { 1, 1, 30, 1 } };
	const struct tl_ticket *a, *b;

	(void)state;
	assert_non_null(tl);
	request(tl, 1, 10, 1, 2, 30);	/* ready first: FIFO would give it the 120 */
	request(tl, 2, 11, 1, 3, 120);
	step(tl, 5, 9, 3, s1);
	step(tl, 10, 11, 3, s2);
	timeline__advance(tl, 100 * MS);
	a = timeline__ticket(tl, 1);
	b = timeline__ticket(tl, 2);
	assert_int_equal(a->seq, 1);
	assert_int_equal(b->seq, 0);
	assert_int_equal(b->match, TL_MATCH_COUNT);	/* taken first, in batch order */
	assert_int_equal(a->match, TL_MATCH_ALONE);	/* then the only one left */
	assert_int_equal(a->prefill_start_ns, 5 * MS);
	assert_int_equal(a->prefill_end_ns, 9 * MS);
	assert_int_equal(b->prefill_start_ns, 5 * MS);
	assert_int_equal(b->prefill_end_ns, 9 * MS);
	assert_int_equal(a->prefill_steps, 1);	/* the decode step after is not prefill */
	assert_int_equal(a->prefill_tokens, 30);
	assert_int_equal(b->prefill_tokens, 120);
	assert_int_equal(a->cached_tokens, 0);
	assert_int_equal(a->max_sharing, 2);
	assert_int_equal(a->step_tokens, 151);
	assert_int_equal(timeline__stats(tl)->shared_prompt_steps, 1);
	assert_int_equal(timeline__stats(tl)->counted_steps, 2);
	timeline__free(tl);
}

/*
 * A prefix cache hit: the same 1800-token prompt again on the slot that
 * holds it. The engine computes 1 token at position 1799: still that
 * request's prefill (exact), with 1799 tokens cached.
 */
static void test_prefix_cache_hit(void **state)
{
	struct timeline *tl = timeline__new(60000 * MS);
	const struct seq full = { 0, 1800, 0, 1 }, hit = { 0, 1, 1799, 1 };
	struct seq dec = { 0, 1, 1800, 1 };
	const struct tl_ticket *k;

	(void)state;
	request(tl, 1, 10, 1, 2, 1800);
	step(tl, 3, 50, 1, &full);
	for (int i = 0; i < 4; i++, dec.pos++)
		step(tl, 51 + 2 * i, 52 + 2 * i, 1, &dec);
	timeline__advance(tl, 60 * MS);
	timeline__release(tl, 1);	/* its response ended: slot 0 is free */
	request(tl, 2, 11, 70, 71, 1800);
	step(tl, 72, 74, 1, &hit);
	timeline__advance(tl, 100 * MS);
	k = timeline__ticket(tl, 2);
	assert_non_null(k);
	assert_int_equal(k->prefill_start_ns, 72 * MS);
	assert_int_equal(k->prefill_end_ns, 74 * MS);
	assert_int_equal(k->prefill_tokens, 1);
	assert_int_equal(k->cached_tokens, 1799);
	assert_int_equal(k->match, TL_MATCH_ALONE);
	assert_int_equal(k->prompt_done, 1);
	timeline__free(tl);
}

/*
 * A sequence whose request was released under a wrong guess keeps decoding:
 * its next token (1 token at the next position) is not a new prompt, and a
 * waiting request is not given it.
 */
static void test_released_sequence_keeps_decoding(void **state)
{
	struct timeline *tl = timeline__new(60000 * MS);
	const struct seq p = { 2, 40, 0, 1 }, d = { 2, 1, 40, 1 }, np = { 2, 25, 0, 1 };
	const struct tl_ticket *k;

	(void)state;
	request(tl, 1, 10, 1, 2, 40);
	step(tl, 3, 5, 1, &p);
	timeline__advance(tl, 6 * MS);
	timeline__release(tl, 1);
	request(tl, 2, 11, 6, 7, 25);
	step(tl, 8, 9, 1, &d);		/* still request 1's decode */
	step(tl, 20, 22, 1, &np);	/* slot reuse: request 2's prompt */
	timeline__advance(tl, 100 * MS);
	k = timeline__ticket(tl, 2);
	assert_int_equal(k->prefill_start_ns, 20 * MS);
	assert_int_equal(k->prefill_tokens, 25);
	assert_int_equal(k->match, TL_MATCH_ALONE);
	assert_int_equal(timeline__stats(tl)->orphan_prompt_steps, 0);
	timeline__free(tl);
}

/*
 * A prompt longer than the batch is picked at its first chunk among the
 * waiting requests with longer counts (a guess: oldest). When its last chunk
 * ends its length is known: the request with that count gets it, and the
 * other request, guessed wrong, waits again and gets its own prompt later.
 */
static void test_first_chunk_guess_corrected(void **state)
{
	struct timeline *tl = timeline__new(60000 * MS);
	const struct seq c1 = { 0, 256, 0, 0 }, c2 = { 0, 44, 256, 1 };
	const struct seq other = { 1, 400, 0, 1 };
	const struct tl_ticket *a, *b;

	(void)state;
	request(tl, 1, 10, 1, 2, 400);	/* oldest: the guess */
	request(tl, 2, 11, 1, 3, 300);
	step(tl, 5, 10, 1, &c1);
	step(tl, 11, 13, 1, &c2);	/* 300 tokens: request 2's */
	step(tl, 20, 30, 1, &other);
	timeline__advance(tl, 100 * MS);
	a = timeline__ticket(tl, 1);
	b = timeline__ticket(tl, 2);
	assert_int_equal(b->prefill_start_ns, 5 * MS);
	assert_int_equal(b->prefill_end_ns, 13 * MS);
	assert_int_equal(b->prefill_tokens, 300);
	assert_int_equal(b->prefill_steps, 2);
	assert_int_equal(b->match, TL_MATCH_COUNT);
	assert_int_equal(a->prefill_start_ns, 20 * MS);
	assert_int_equal(a->prefill_tokens, 400);
	assert_int_equal(a->seq, 1);
	assert_int_equal(timeline__stats(tl)->reassigned, 1);
	timeline__free(tl);
}

/*
 * Equal prompt lengths: a tie. The request whose response began during the
 * step (llama-server writes headers when a slot takes a request) comes
 * first; without that, arrival order.
 */
static void test_tie_prefers_response_begun(void **state)
{
	struct timeline *tl = timeline__new(60000 * MS);
	const struct seq p = { 0, 64, 0, 1 };
	const struct tl_ticket *a, *b;

	(void)state;
	request(tl, 1, 10, 1, 2, 64);
	request(tl, 2, 11, 1, 3, 64);
	timeline__on_response_begin(tl, 2, 6 * MS);
	step(tl, 5, 9, 1, &p);
	timeline__advance(tl, 100 * MS);
	a = timeline__ticket(tl, 1);
	b = timeline__ticket(tl, 2);
	assert_int_equal(b->prefill_start_ns, 5 * MS);
	assert_int_equal(b->match, TL_MATCH_TIE);
	assert_int_equal(b->n_tied, 2);
	assert_int_equal(a->done, 0);
	timeline__free(tl);
}

/*
 * Equal lengths, guessed wrong: request 2's prompt ran first and was given
 * to request 1 (ready first). Request 2's first token comes out right after
 * that step, while 2 holds no prompt yet: the prompt is taken back for 2 at
 * the first-token check, and 1 waits again for the later step, its own.
 */
static void test_first_token_takes_back_unassigned(void **state)
{
	struct timeline *tl = timeline__new(60000 * MS);
	const struct seq p0 = { 0, 64, 0, 1 }, p1 = { 1, 64, 0, 1 };
	const struct seq d0 = { 0, 1, 64, 1 };
	const struct tl_ticket *a, *b;

	(void)state;
	request(tl, 1, 10, 1, 2, 64);
	request(tl, 2, 11, 1, 3, 64);
	step(tl, 5, 9, 1, &p0);			/* 2's prompt: the guess says 1 */
	timeline__on_first_token(tl, 2, 10 * MS);
	timeline__advance(tl, 40 * MS);		/* the check runs 20 ms after the token */
	a = timeline__ticket(tl, 1);
	b = timeline__ticket(tl, 2);
	assert_int_equal(b->done, 1);
	assert_int_equal(b->prefill_start_ns, 5 * MS);
	assert_int_equal(b->prefill_end_ns, 9 * MS);
	assert_int_equal(b->match, TL_MATCH_TIE);	/* still a guess, now a checked one */
	assert_int_equal(a->done, 0);
	assert_int_equal(timeline__stats(tl)->reassigned_by_token, 1);
	step(tl, 41, 45, 1, &d0);		/* 2 decodes on sequence 0 */
	step(tl, 46, 50, 1, &p1);		/* 1's own prompt */
	timeline__on_first_token(tl, 1, 51 * MS);
	timeline__advance(tl, 100 * MS);
	assert_int_equal(a->done, 1);
	assert_int_equal(a->seq, 1);
	assert_int_equal(a->prefill_start_ns, 46 * MS);
	assert_int_equal(b->seq, 0);
	assert_int_equal(b->prefill_steps, 1);	/* its decode step is not prefill */
	timeline__free(tl);
}

/*
 * Tracing began after a slot was filled. One token at position 799 on that
 * sequence, never seen: a decode token of a request from before, unless a
 * waiting request is 800 tokens long, whose whole prompt the engine had
 * cached (the same prompt again): then it is that request's prefill.
 */
static void test_unseen_sequence_cache_hit(void **state)
{
	struct timeline *tl = timeline__new(60000 * MS);
	const struct seq old = { 1, 1, 300, 1 }, hit = { 2, 1, 799, 1 };
	const struct tl_ticket *k;

	(void)state;
	request(tl, 1, 10, 1, 2, 800);
	step(tl, 3, 4, 1, &old);	/* another sequence, never seen: a decode */
	step(tl, 5, 7, 1, &hit);
	timeline__advance(tl, 100 * MS);
	k = timeline__ticket(tl, 1);
	assert_int_equal(k->done, 1);
	assert_int_equal(k->seq, 2);
	assert_int_equal(k->prefill_start_ns, 5 * MS);
	assert_int_equal(k->cached_tokens, 799);
	assert_int_equal(k->prefill_tokens, 1);
	assert_int_equal(k->match, TL_MATCH_ALONE);
	timeline__free(tl);
}

/*
 * A first chunk that no waiting request can take (its request is not known
 * by then, in the tracer's view) is kept on its sequence; the next chunk,
 * continuing its positions, gives the whole prompt to its request: prefill
 * from the first chunk, no tokens counted as cached.
 */
static void test_unclaimed_first_chunk(void **state)
{
	struct timeline *tl = timeline__new(60000 * MS);
	const struct seq c1 = { 0, 100, 0, 0 }, c2 = { 0, 20, 100, 1 };
	const struct tl_ticket *k;

	(void)state;
	step(tl, 5, 9, 1, &c1);
	request(tl, 1, 10, 10, 11, 120);
	step(tl, 12, 14, 1, &c2);
	timeline__advance(tl, 100 * MS);
	k = timeline__ticket(tl, 1);
	assert_int_equal(k->done, 1);
	assert_int_equal(k->prefill_start_ns, 5 * MS);
	assert_int_equal(k->prefill_end_ns, 14 * MS);
	assert_int_equal(k->prefill_tokens, 120);
	assert_int_equal(k->prefill_steps, 2);
	assert_int_equal(k->cached_tokens, 0);
	assert_int_equal(timeline__stats(tl)->chunks_claimed_late, 1);
	timeline__free(tl);
}

/*
 * The middle chunk's batch walk faulted: that step has sequence ids but no
 * counts. The last chunk then starts at a position the timeline could not
 * predict; it still continues the same prompt, of the same request.
 */
static void test_step_without_counts_mid_prompt(void **state)
{
	struct timeline *tl = timeline__new(60000 * MS);
	const struct seq c1 = { 0, 100, 0, 0 }, c3 = { 0, 20, 130, 1 };
	struct ttf_engine_event e = { .ts_ns = 10 * MS, .tgid = 1, .tid = ENGINE_TID,
				      .role = TTF_ROLE_STEP, .n_seq = 1, .value = 30 };
	const struct tl_ticket *k;

	(void)state;
	request(tl, 1, 10, 1, 2, 150);
	step(tl, 5, 9, 1, &c1);
	e.seq_ids[0] = 0;		/* seq_tokens[0] == 0: no counts */
	assert_int_equal(timeline__on_engine_event(tl, &e), 0);
	e.type = TTF_ENG_RETURN;
	e.ts_ns = 12 * MS;
	assert_int_equal(timeline__on_engine_event(tl, &e), 0);
	step(tl, 13, 15, 1, &c3);
	timeline__advance(tl, 100 * MS);
	k = timeline__ticket(tl, 1);
	assert_int_equal(k->prefill_start_ns, 5 * MS);
	assert_int_equal(k->prefill_end_ns, 15 * MS);
	assert_int_equal(k->prefill_steps, 3);
	assert_int_equal(k->cached_tokens, 0);
	assert_int_equal(k->prompt_done, 1);
	assert_int_equal(timeline__stats(tl)->orphan_prompt_steps, 0);
	timeline__free(tl);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_two_prompts_one_step),
		cmocka_unit_test(test_prefix_cache_hit),
		cmocka_unit_test(test_released_sequence_keeps_decoding),
		cmocka_unit_test(test_first_chunk_guess_corrected),
		cmocka_unit_test(test_tie_prefers_response_begun),
		cmocka_unit_test(test_first_token_takes_back_unassigned),
		cmocka_unit_test(test_unseen_sequence_cache_hit),
		cmocka_unit_test(test_unclaimed_first_chunk),
		cmocka_unit_test(test_step_without_counts_mid_prompt),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
