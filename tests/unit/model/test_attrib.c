// SPDX-License-Identifier: GPL-2.0-only
/* Engine timeline (FIFO step->request) and TTFT stage split, on synthetic timelines. */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <string.h>
#include <stdlib.h>
#include <cmocka.h>
#include "user/model/attrib.h"
#include "user/model/metrics.h"
#include "user/model/timeline/timeline.h"

#define MS 1000000ull

static void call(struct timeline *tl, int role, uint32_t tid, uint64_t start,
		 uint64_t end, int64_t n_tokens, int n_seq, const int32_t *seqs)
{
	struct ttf_engine_event e = { .ts_ns = start, .tgid = 1, .tid = tid, .role = role,
			      .value = n_tokens, .n_seq = n_seq };

	if (seqs)
		memcpy(e.seq_ids, seqs, n_seq * sizeof(*seqs));
	assert_int_equal(timeline__on_engine_event(tl, &e), 0);
	e.type = TTF_ENG_RETURN;
	e.ts_ns = end;
	e.value = 0;
	assert_int_equal(timeline__on_engine_event(tl, &e), 0);
}

/* A streamed request with token events at the given write times (no xmit). */
static void make_request(struct ttf_request *r, uint64_t id, uint64_t arrival, uint64_t read_done,
			 const uint64_t *tok, int n)
{
	memset(r, 0, sizeof(*r));
	r->id = id;
	r->rx_tid = 10;
	r->tx_tid = 11;
	r->arrival_first_ns = arrival;
	r->arrival_last_ns = arrival + 100000;	/* 0.1 ms */
	r->read_first_ns = read_done;
	r->read_done_ns = read_done;
	r->flags = TTF_REQ_STREAM;
	for (int i = 0; i < n; i++) {
		struct ttf_token_event ev = { .write_ns = tok[i], .n_tokens = 1,
					      .flags = TTF_TOK_CONTENT };

		assert_int_equal(ttf_request__add_event(r, &ev), 0);
	}
	r->end_write_ns = tok[n - 1];
}

static void attribute(struct ttf_request *r, struct timeline *tl, struct ttf_attrib *a)
{
	struct attrib_sources src = { .tl = tl };
	struct ttf_req_metrics m;

	assert_int_equal(ttf_metrics__compute(r, &m), 0);
	assert_int_equal(ttf_attrib__compute(r, &m, &src, a), 0);
	assert_true(a->valid);
}

static int64_t sum_stages(const struct ttf_attrib *a)
{
	int64_t s = 0;

	for (int i = 0; i < TTF_ST__MAX; i++)
		if (a->stage_ns[i] > 0)
			s += a->stage_ns[i];
	if (a->stage_ns[TTF_ST_SERVER] > 0)
		s += a->stage_ns[TTF_ST_SERVER];
	if (a->stage_ns[TTF_ST_COPY] > 0)
		s += a->stage_ns[TTF_ST_COPY];
	return s;
}

/*
 * One request alone: arrival 0, read 1 ms, tokenize 2..3 ms on the reading
 * thread, prompt step (64 tokens, seq 0) 5..25 ms, first token written at
 * 26 ms. Stages: net_in 0.1, read_wait 0.9, frontend 2 (tokenize 1),
 * queue 2, prefill 20, emit 1, net_out 0; exact.
 */
static void test_single_request_exact(void **state)
{
	struct timeline *tl = timeline__new(60000 * MS);
	uint64_t tok[] = { 26 * MS, 30 * MS, 34 * MS };
	int32_t seq0[] = { 0 };
	struct ttf_request r;
	struct ttf_attrib a;

	assert_non_null(tl);
	make_request(&r, 1, 0 + 1, 1 * MS, tok, 3);
	r.arrival_first_ns = 1;	/* 0 means "unknown"; start at 1 ns */
	r.arrival_last_ns = 100001;
	assert_int_equal(timeline__on_request_read(tl, 1, 7, 10, 1 * MS, 0), 0);
	call(tl, TTF_ROLE_TOKENIZE, 10, 2 * MS, 3 * MS, -1, 0, NULL);
	call(tl, TTF_ROLE_STEP, 20, 5 * MS, 25 * MS, 64, 1, seq0);
	call(tl, TTF_ROLE_STEP, 20, 27 * MS, 29 * MS, 1, 1, seq0);	/* decode */
	timeline__advance(tl, 100 * MS);
	attribute(&r, tl, &a);
	assert_int_equal(a.kind, TTF_ATTR_EXACT);
	assert_int_equal(a.stage_ns[TTF_ST_NET_IN], 100000);
	assert_int_equal(a.stage_ns[TTF_ST_READ_WAIT], 1 * MS - 100001);
	assert_int_equal(a.stage_ns[TTF_ST_FRONTEND], 2 * MS);
	assert_int_equal(a.stage_ns[TTF_ST_TOKENIZE], 1 * MS);
	assert_int_equal(a.stage_ns[TTF_ST_QUEUE], 2 * MS);
	assert_int_equal(a.stage_ns[TTF_ST_PREFILL], 20 * MS);
	assert_int_equal(a.stage_ns[TTF_ST_EMIT], 1 * MS);
	assert_int_equal(a.stage_ns[TTF_ST_NET_OUT], 0);
	assert_int_equal(a.stage_ns[TTF_ST_SERVER], -1);
	assert_int_equal(sum_stages(&a), 26 * MS - 1);
	assert_int_equal(a.prefill_steps, 1);
	assert_int_equal(a.prefill_tokens, 64);
	ttf_request__release(&r);
	timeline__free(tl);
}

/*
 * Two requests read at 1 ms and 2 ms (threads 10 and 12), tokenized by 2.5 and
 * 3 ms, before the engine's first prompt step at 5 ms: FIFO gives request 1 the
 * step at 5..15 (seq 0) and request 2 the step at 16..26 (seq 1); both
 * are "inferred" (2 waiting). Chunked prefill: request 2's prompt comes in
 * two steps (16..26 and 27..37), so its prefill is 16..37 with 2 steps.
 */
static void test_fifo_inferred_and_chunked(void **state)
{
	struct timeline *tl = timeline__new(60000 * MS);
	uint64_t tok1[] = { 16 * MS, 40 * MS }, tok2[] = { 38 * MS, 42 * MS };
	int32_t s0[] = { 0 }, s1[] = { 1 }, s01[] = { 0, 1 };
	struct ttf_request r1, r2;
	struct ttf_attrib a1, a2;

	assert_non_null(tl);
	make_request(&r1, 1, 1, 1 * MS, tok1, 2);
	make_request(&r2, 2, 2 * MS - 100000, 2 * MS, tok2, 2);
	r2.rx_tid = 12;
	assert_int_equal(timeline__on_request_read(tl, 1, 7, 10, 1 * MS, 0), 0);
	assert_int_equal(timeline__on_request_read(tl, 2, 8, 12, 2 * MS, 0), 0);
	call(tl, TTF_ROLE_TOKENIZE, 12, 2 * MS + 100000, 3 * MS, -1, 0, NULL);
	call(tl, TTF_ROLE_TOKENIZE, 10, 1 * MS + 500000, 2 * MS + 500000, -1, 0, NULL);
	call(tl, TTF_ROLE_STEP, 20, 5 * MS, 15 * MS, 100, 1, s0);
	call(tl, TTF_ROLE_STEP, 20, 16 * MS, 26 * MS, 512, 1, s1);
	call(tl, TTF_ROLE_STEP, 20, 27 * MS, 37 * MS, 300, 1, s1);
	call(tl, TTF_ROLE_STEP, 20, 39 * MS, 40 * MS, 2, 2, s01);	/* decode both */
	timeline__advance(tl, 100 * MS);

	attribute(&r1, tl, &a1);
	assert_int_equal(a1.kind, TTF_ATTR_INFERRED);
	assert_string_equal(a1.inferred_by, "FIFO order among 2 waiting requests");
	assert_int_equal(a1.stage_ns[TTF_ST_FRONTEND], 1500000);	/* read 1 -> tokenize end 2.5 */
	assert_int_equal(a1.stage_ns[TTF_ST_TOKENIZE], 1 * MS);
	assert_int_equal(a1.stage_ns[TTF_ST_QUEUE], 2500000);
	assert_int_equal(a1.stage_ns[TTF_ST_PREFILL], 10 * MS);
	assert_int_equal(a1.stage_ns[TTF_ST_EMIT], 1 * MS);
	assert_int_equal(sum_stages(&a1), 16 * MS - 1);

	attribute(&r2, tl, &a2);
	assert_int_equal(a2.stage_ns[TTF_ST_FRONTEND], 1 * MS);	/* read 2 -> tokenize end 3 */
	assert_int_equal(a2.stage_ns[TTF_ST_QUEUE], 13 * MS);	/* 3 -> 16 */
	assert_int_equal(a2.stage_ns[TTF_ST_PREFILL], 21 * MS);	/* 16 -> 37 */
	assert_int_equal(a2.prefill_steps, 2);
	assert_int_equal(a2.prefill_tokens, 812);
	assert_int_equal(a2.stage_ns[TTF_ST_EMIT], 1 * MS);
	assert_int_equal(sum_stages(&a2), 38 * MS - (2 * MS - 100000));
	/* one span per prompt step, at the steps' own times; not the shared decode */
	assert_int_equal(a1.n_step_spans, 1);
	assert_int_equal(a1.step_spans[0].start_ns, 5 * MS);
	assert_int_equal(a1.step_spans[0].end_ns, 15 * MS);
	assert_int_equal(a1.step_spans[0].n_tokens, 100);
	assert_int_equal(a2.n_step_spans, 2);
	assert_int_equal(a2.step_spans[0].start_ns, 16 * MS);
	assert_int_equal(a2.step_spans[0].end_ns, 26 * MS);
	assert_int_equal(a2.step_spans[0].n_tokens, 512);
	assert_int_equal(a2.step_spans[1].start_ns, 27 * MS);
	assert_int_equal(a2.step_spans[1].end_ns, 37 * MS);
	assert_int_equal(a2.step_spans[1].n_tokens, 300);
	assert_int_equal(a2.step_spans[1].tid, 20);
	assert_false(a2.step_spans[0].have_gpu);
	ttf_request__release(&r1);
	ttf_request__release(&r2);
	timeline__free(tl);
}

/*
 * An ITL outlier of request 1 (tokens at 16, 18, 20, 40, 42 ms: gaps 2,2,20,2,
 * mean 6.5, 20 > 3 x 6.5) overlaps request 2's prompt step 21..39: the cause
 * names request 2.
 */
static void test_outlier_named_by_other_prefill(void **state)
{
	struct timeline *tl = timeline__new(60000 * MS);
	uint64_t tok1[] = { 16 * MS, 18 * MS, 20 * MS, 40 * MS, 42 * MS };
	int32_t s0[] = { 0 }, s1[] = { 1 };
	struct ttf_request r1;
	struct ttf_attrib a;

	assert_non_null(tl);
	make_request(&r1, 1, 1, 1 * MS, tok1, 5);
	assert_int_equal(timeline__on_request_read(tl, 1, 7, 10, 1 * MS, 0), 0);
	assert_int_equal(timeline__on_request_read(tl, 2, 8, 12, 20 * MS, 0), 0);
	call(tl, TTF_ROLE_STEP, 20, 5 * MS, 15 * MS, 100, 1, s0);
	call(tl, TTF_ROLE_STEP, 20, 21 * MS, 39 * MS, 900, 1, s1);
	timeline__advance(tl, 100 * MS);
	attribute(&r1, tl, &a);
	assert_int_equal(a.n_causes, 1);
	assert_int_equal(a.causes[0].index, 2);
	assert_string_equal(a.causes[0].cause, "prefill of request 2");
	/* No tokenize probe: frontend merges into queue, visibly. */
	assert_int_equal(a.kind, TTF_ATTR_MERGED);
	assert_string_equal(a.merged, "frontend+queue");
	assert_int_equal(a.stage_ns[TTF_ST_FRONTEND], -1);
	assert_int_equal(a.stage_ns[TTF_ST_QUEUE], 4 * MS);
	ttf_request__release(&r1);
	timeline__free(tl);
}

/* No engine events at all: frontend..emit merge into `server`, still summing to TTFT. */
static void test_no_engine_probe_merges(void **state)
{
	uint64_t tok[] = { 50 * MS, 60 * MS };
	struct attrib_sources src = { 0 };
	struct ttf_req_metrics m;
	struct ttf_request r;
	struct ttf_attrib a;

	make_request(&r, 3, 1, 2 * MS, tok, 2);
	r.events[0].xmit_ns = 50 * MS + 30000;
	assert_int_equal(ttf_metrics__compute(&r, &m), 0);
	assert_int_equal(ttf_attrib__compute(&r, &m, &src, &a), 0);
	assert_int_equal(a.kind, TTF_ATTR_MERGED);
	assert_string_equal(a.inferred_by, "no engine step probe");
	assert_int_equal(a.stage_ns[TTF_ST_SERVER], 48 * MS);
	assert_int_equal(a.stage_ns[TTF_ST_NET_OUT], 30000);
	assert_int_equal(a.stage_ns[TTF_ST_PREFILL], -1);
	assert_int_equal(sum_stages(&a), m.ttft_ns);
	ttf_request__release(&r);
}

/* A sync call after the step extends the prefill to the sync's return (docs/cases.md #17). */
static void test_sync_extends_step(void **state)
{
	struct timeline *tl = timeline__new(60000 * MS);
	uint64_t tok[] = { 40 * MS, 42 * MS };
	int32_t s0[] = { 0 };
	struct ttf_request r;
	struct ttf_attrib a;

	assert_non_null(tl);
	make_request(&r, 1, 1, 1 * MS, tok, 2);
	assert_int_equal(timeline__on_request_read(tl, 1, 7, 10, 1 * MS, 0), 0);
	call(tl, TTF_ROLE_STEP, 20, 5 * MS, 6 * MS, 64, 1, s0);	/* async launch returns */
	call(tl, TTF_ROLE_SYNC, 20, 6 * MS, 35 * MS, -1, 0, NULL);	/* GPU work done */
	timeline__advance(tl, 100 * MS);
	attribute(&r, tl, &a);
	assert_int_equal(a.stage_ns[TTF_ST_PREFILL], 30 * MS);
	assert_int_equal(a.stage_ns[TTF_ST_EMIT], 5 * MS);
	ttf_request__release(&r);
	timeline__free(tl);
}

/* Nothing is processed beyond the watermark: a step ending after it waits. */
static void test_watermark_holds_late_steps(void **state)
{
	struct timeline *tl = timeline__new(60000 * MS);
	int32_t s0[] = { 0 };

	assert_non_null(tl);
	assert_int_equal(timeline__on_request_read(tl, 1, 7, 10, 1 * MS, 0), 0);
	call(tl, TTF_ROLE_STEP, 20, 5 * MS, 25 * MS, 64, 1, s0);
	timeline__advance(tl, 20 * MS);
	assert_false(timeline__ticket(tl, 1)->done);
	timeline__advance(tl, 25 * MS);
	assert_true(timeline__ticket(tl, 1)->done);
	assert_int_equal(timeline__stats(tl)->prompt_steps, 1);
	timeline__release(tl, 1);
	assert_null(timeline__ticket(tl, 1));
	timeline__free(tl);
}

/*
 * Request 1 (seq 0) is aborted at 30 ms but the engine decodes it twice more
 * (31..33, 34..36 ms): 2 orphaned steps, 4 ms. Request 2, ready at 30 ms,
 * waits behind them until its prompt step at 40 ms: 4 ms of its queue time
 * is charged to the aborted request.
 */
static void test_orphaned_work_after_abort(void **state)
{
	struct timeline *tl = timeline__new(60000 * MS);
	uint64_t tok2[] = { 50 * MS, 52 * MS };
	int32_t s0[] = { 0 }, s1[] = { 1 };
	struct ttf_request r2;
	struct ttf_attrib a;

	assert_non_null(tl);
	assert_int_equal(timeline__on_request_read(tl, 1, 7, 10, 1 * MS, 0), 0);
	call(tl, TTF_ROLE_STEP, 20, 5 * MS, 15 * MS, 100, 1, s0);
	call(tl, TTF_ROLE_STEP, 20, 16 * MS, 18 * MS, 1, 1, s0);
	timeline__advance(tl, 20 * MS);
	timeline__on_abort(tl, 1, 30 * MS);
	timeline__release(tl, 1);	/* its output is done; the engine goes on */
	assert_int_equal(timeline__on_request_read(tl, 2, 8, 12, 30 * MS, 0), 0);
	call(tl, TTF_ROLE_STEP, 20, 31 * MS, 33 * MS, 1, 1, s0);
	call(tl, TTF_ROLE_STEP, 20, 34 * MS, 36 * MS, 1, 1, s0);
	call(tl, TTF_ROLE_STEP, 20, 40 * MS, 49 * MS, 64, 1, s1);
	timeline__advance(tl, 100 * MS);
	assert_int_equal(timeline__stats(tl)->aborted, 1);
	assert_int_equal(timeline__stats(tl)->orphaned_steps, 2);
	assert_int_equal(timeline__stats(tl)->orphaned_ns, 4 * MS);
	assert_int_equal(timeline__stats(tl)->delayed_by_orphans, 1);
	make_request(&r2, 2, 30 * MS - 100000, 30 * MS, tok2, 2);
	r2.rx_tid = 12;
	attribute(&r2, tl, &a);
	assert_int_equal(a.queued_behind_aborted_ns, 4 * MS);
	assert_int_equal(a.stage_ns[TTF_ST_QUEUE], 10 * MS);
	ttf_request__release(&r2);
	timeline__free(tl);
}

static void tokenize_returning(struct timeline *tl, uint32_t tid, uint64_t start, uint64_t end,
			       int64_t count)
{
	struct ttf_engine_event e = { .ts_ns = start, .tgid = 1, .tid = tid, .role = TTF_ROLE_TOKENIZE,
			      .value = -1 };

	assert_int_equal(timeline__on_engine_event(tl, &e), 0);
	e.type = TTF_ENG_RETURN;
	e.ts_ns = end;
	e.value = count;
	assert_int_equal(timeline__on_engine_event(tl, &e), 0);
}

/*
 * Two requests waiting: 300 tokens (ready first) and 115 tokens. The first
 * prompt step has 115 tokens: it is request 2's (matched by count, not
 * FIFO). A decode step of 8 sequences with 8 distinct ids is not a prompt.
 * Request 1's prompt comes as 128 + 128 + 44: the 44-token last chunk is
 * prefill, and so would be a 1-token one.
 */
static void test_count_match_decode_batch_last_chunk(void **state)
{
	struct timeline *tl = timeline__new(60000 * MS);
	int32_t s0[] = { 0 }, s1[] = { 1 }, s8[] = { 2, 3, 4, 5, 6, 7, 8, 9 };
	const struct tl_ticket *k1, *k2;

	assert_non_null(tl);
	assert_int_equal(timeline__on_request_read(tl, 1, 7, 10, 1 * MS, 0), 0);
	assert_int_equal(timeline__on_request_read(tl, 2, 8, 12, 1 * MS + 1000, 0), 0);
	tokenize_returning(tl, 10, 1 * MS + 100000, 2 * MS, 300);
	tokenize_returning(tl, 12, 1 * MS + 200000, 3 * MS, 115);
	call(tl, TTF_ROLE_STEP, 20, 4 * MS, 5 * MS, 8, 8, s8);	/* decode of 8 others */
	call(tl, TTF_ROLE_STEP, 20, 6 * MS, 8 * MS, 115, 1, s1);
	call(tl, TTF_ROLE_STEP, 20, 9 * MS, 11 * MS, 128, 1, s0);
	call(tl, TTF_ROLE_STEP, 20, 12 * MS, 14 * MS, 128, 1, s0);
	call(tl, TTF_ROLE_STEP, 20, 15 * MS, 16 * MS, 44, 1, s0);
	call(tl, TTF_ROLE_STEP, 20, 17 * MS, 18 * MS, 1, 1, s0);	/* decode: prompt done */
	timeline__advance(tl, 100 * MS);
	k1 = timeline__ticket(tl, 1);
	k2 = timeline__ticket(tl, 2);
	assert_int_equal(timeline__stats(tl)->prompt_steps, 4);
	assert_int_equal(k2->prefill_start_ns, 6 * MS);
	assert_int_equal(k2->prefill_tokens, 115);
	assert_int_equal(k2->match, TL_MATCH_COUNT);
	assert_int_equal(k2->n_waiting, 2);
	assert_int_equal(k1->prefill_start_ns, 9 * MS);
	assert_int_equal(k1->prefill_end_ns, 16 * MS);
	assert_int_equal(k1->prefill_steps, 3);
	assert_int_equal(k1->prefill_tokens, 300);
	timeline__free(tl);
}

static void add_rec(struct gpu_store *g, uint8_t type, uint64_t start, uint64_t end,
		    uint8_t copy_kind, uint8_t src_kind, uint64_t bytes)
{
	struct ttf_gpu_rec rec = { .start_ns = start, .end_ns = end, .type = type,
				   .copy_kind = copy_kind, .src_kind = src_kind,
				   .dst_kind = TTF_GPU_MEM_DEVICE };

	if (type == TTF_GPU_REC_MEMCPY)
		rec.copy.bytes = bytes;
	assert_int_equal(gpu_store__add(g, 77, &rec), 0);
}

/*
 * Prefill 5..25 ms in process 77: kernels 6..10 and 14..24 ms, a 64 MiB
 * pinned H2D copy 10..12 ms (33.55 GB/s, alone on the GPU: on the critical
 * path) and a pageable 1 MiB copy 15..16 ms hidden behind a kernel. The copy
 * stage is 2 ms, taken out of prefill (20 -> 18 ms); the sum stays TTFT.
 */
static void test_gpu_copy_stage(void **state)
{
	struct timeline *tl = timeline__new(60000 * MS);
	struct gpu_store *g = gpu_store__new();
	uint64_t tok[] = { 26 * MS, 30 * MS };
	struct attrib_sources src = { .link_gbps = 63.02 };
	int32_t s0[] = { 0 };
	struct ttf_req_metrics m;
	struct ttf_request r;
	struct ttf_attrib a;
	struct ttf_engine_event e = { .ts_ns = 5 * MS, .tgid = 77, .tid = 20, .role = TTF_ROLE_STEP,
			      .value = 64, .n_seq = 1, .seq_ids = { 0 } };

	assert_non_null(tl);
	assert_non_null(g);
	make_request(&r, 1, 1, 1 * MS, tok, 2);
	assert_int_equal(timeline__on_request_read(tl, 1, 7, 10, 1 * MS, 0), 0);
	assert_int_equal(timeline__on_engine_event(tl, &e), 0);
	e.type = TTF_ENG_RETURN;
	e.ts_ns = 25 * MS;
	assert_int_equal(timeline__on_engine_event(tl, &e), 0);
	(void)s0;
	timeline__advance(tl, 100 * MS);
	add_rec(g, TTF_GPU_REC_KERNEL, 6 * MS, 10 * MS, 0, 0, 0);
	add_rec(g, TTF_GPU_REC_KERNEL, 14 * MS, 24 * MS, 0, 0, 0);
	add_rec(g, TTF_GPU_REC_MEMCPY, 10 * MS, 12 * MS, TTF_GPU_COPY_HTOD, TTF_GPU_MEM_PINNED,
		64ull << 20);
	add_rec(g, TTF_GPU_REC_MEMCPY, 15 * MS, 16 * MS, TTF_GPU_COPY_HTOD, TTF_GPU_MEM_PAGEABLE,
		1ull << 20);
	src.tl = tl;
	src.gpu = g;
	assert_int_equal(ttf_metrics__compute(&r, &m), 0);
	assert_int_equal(ttf_attrib__compute(&r, &m, &src, &a), 0);
	assert_true(a.gpu.have);
	assert_int_equal(a.gpu.compute_ns, 14 * MS);
	assert_int_equal(a.gpu.copy_ns, 2 * MS);
	assert_int_equal(a.gpu.host_gap_ns, 4 * MS);
	assert_int_equal(a.gpu.n_copies, 2);
	assert_int_equal(a.stage_ns[TTF_ST_COPY], 2 * MS);
	assert_int_equal(a.stage_ns[TTF_ST_PREFILL], 18 * MS);
	assert_int_equal(sum_stages(&a), m.ttft_ns);
	for (uint32_t i = 0; i < a.gpu.n_copies; i++) {
		if (a.gpu.copies[i].pageable) {
			assert_int_equal(a.gpu.copies[i].bytes, 1 << 20);
		} else {
			assert_true(a.gpu.copies[i].gbps > 33.55 && a.gpu.copies[i].gbps < 33.56);
		}
	}
	assert_true(a.gpu.link_gbps > 63.0);
	/* the one prompt step, split the same way (its window is the prefill's) */
	assert_int_equal(a.n_step_spans, 1);
	assert_true(a.step_spans[0].have_gpu);
	assert_int_equal(a.step_spans[0].compute_ns, 14 * MS);
	assert_int_equal(a.step_spans[0].copy_ns, 2 * MS);
	assert_int_equal(a.step_spans[0].host_gap_ns, 4 * MS);
	assert_int_equal(a.step_spans[0].kernels, 2);
	assert_int_equal(a.step_spans[0].copies, 2);
	ttf_request__release(&r);
	gpu_store__free(g);
	timeline__free(tl);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_single_request_exact),
		cmocka_unit_test(test_fifo_inferred_and_chunked),
		cmocka_unit_test(test_outlier_named_by_other_prefill),
		cmocka_unit_test(test_no_engine_probe_merges),
		cmocka_unit_test(test_sync_extends_step),
		cmocka_unit_test(test_watermark_holds_late_steps),
		cmocka_unit_test(test_gpu_copy_stage),
		cmocka_unit_test(test_orphaned_work_after_abort),
		cmocka_unit_test(test_count_match_decode_batch_last_chunk),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
