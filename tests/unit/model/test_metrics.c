// SPDX-License-Identifier: GPL-2.0-only
/* Per-request token metrics (user/model/metrics.c) against hand-computed values. */
#include <errno.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdlib.h>
#include <setjmp.h>
#include <cmocka.h>
#include "user/model/metrics.h"

#define MS 1000000ull
#define EPS 1e-6
#define T0 (1000 * MS) /* arrival of the first request byte */

static struct ttf_token_event evs[32];

/* A streamed request whose token events were written at T0 + ms[i] (xmit unknown). */
static struct ttf_request mkreq(const double *ms, int n, uint32_t tok_per_ev)
{
	struct ttf_request r = {
		.id = 1, .arrival_first_ns = T0, .read_first_ns = T0 + 1 * MS,
		.end_write_ns = T0 + 5000 * MS, .flags = TTF_REQ_STREAM,
		.events = evs, .n_events = n, .cap_events = 32,
	};
	int i;

	for (i = 0; i < n; i++)
		evs[i] = (struct ttf_token_event){
			.write_ns = T0 + (uint64_t)(ms[i] * MS), .n_tokens = tok_per_ev,
			.flags = TTF_TOK_CONTENT,
		};
	return r;
}

/* docs/cases.md #7: 3 events of 2 tokens each, usage.completion_tokens = 6. */
static void test_tpot_from_usage_case7(void **state)
{
	double t[] = { 100, 120, 140 };
	struct ttf_request r = mkreq(t, 3, 2);
	struct ttf_req_metrics m;

	r.flags |= TTF_REQ_USAGE;
	r.usage_completion_tokens = 6;
	assert_int_equal(ttf_metrics__compute(&r, &m), 0);
	assert_int_equal(m.ttft_ns, 100 * MS);
	assert_int_equal(m.n_tokens, 6);
	assert_int_equal(m.n_events, 3);
	assert_true(m.tokens_from_usage);
	/* (140 - 100) ms / (6 - 1) = 8 ms, not 40 / 2 = 20 ms per event */
	assert_float_equal(m.tpot_ns, 8.0 * MS, EPS);
	assert_float_equal(m.tokens_per_event, 2.0, EPS);
	assert_float_equal(m.itl_mean_ns, 20.0 * MS, EPS);
	assert_float_equal(m.itl_cv, 0.0, EPS);
	assert_int_equal(m.grade, 'A');
	assert_int_equal(m.e2e_ns, 5000 * MS);
}

static void test_tpot_usage_vs_events(void **state)
{
	double t[] = { 100, 120, 140 };
	struct ttf_request r = mkreq(t, 3, 1);
	struct ttf_req_metrics m;

	/* No usage: 3 counted tokens -> 40 ms / 2 */
	ttf_metrics__compute(&r, &m);
	assert_int_equal(m.n_tokens, 3);
	assert_false(m.tokens_from_usage);
	assert_float_equal(m.tpot_ns, 20.0 * MS, EPS);
	assert_float_equal(m.tokens_per_event, 1.0, EPS);

	/* Usage says 9 -> 40 ms / 8 = 5 ms */
	r.flags |= TTF_REQ_USAGE;
	r.usage_completion_tokens = 9;
	ttf_metrics__compute(&r, &m);
	assert_int_equal(m.n_tokens, 9);
	assert_float_equal(m.tpot_ns, 5.0 * MS, EPS);
	assert_float_equal(m.tokens_per_event, 3.0, EPS);

	/* Usage flag but 0 tokens (e.g. error frame): fall back to the events */
	r.usage_completion_tokens = 0;
	ttf_metrics__compute(&r, &m);
	assert_int_equal(m.n_tokens, 3);
	assert_false(m.tokens_from_usage);
}

static void test_one_event_many_tokens_has_no_tpot(void **state)
{
	double t[] = { 100 };
	struct ttf_request r = mkreq(t, 1, 4);
	struct ttf_req_metrics m;

	ttf_metrics__compute(&r, &m);
	assert_int_equal(m.ttft_ns, 100 * MS);
	assert_int_equal(m.n_tokens, 4);
	assert_float_equal(m.tpot_ns, -1, EPS);
	assert_float_equal(m.itl_mean_ns, -1, EPS);
	assert_int_equal(m.grade, '-');
}

static void test_ttft_null_without_tokens(void **state)
{
	struct ttf_request r = mkreq(NULL, 0, 1);
	struct ttf_req_metrics m;

	assert_int_equal(ttf_metrics__compute(&r, &m), 0);
	assert_int_equal(m.ttft_ns, -1);
	assert_int_equal(m.ttfv_ns, -1);
	assert_int_equal(m.n_tokens, 0);
	assert_float_equal(m.tpot_ns, -1, EPS);
	assert_float_equal(m.itl_cv, -1, EPS);
	assert_float_equal(m.tokens_per_event, -1, EPS);
	assert_int_equal(m.grade, '-');
	assert_int_equal(m.t_first_token_ns, 0);
	/* the response still ended */
	assert_int_equal(m.e2e_ns, 5000 * MS);
}

static void test_ttft_uses_xmit_when_present(void **state)
{
	double t[] = { 100, 120, 140 };
	struct ttf_request r = mkreq(t, 3, 1);
	struct ttf_req_metrics m;

	ttf_metrics__compute(&r, &m);
	assert_int_equal(m.ttft_ns, 100 * MS);
	assert_false(m.ttft_end_is_xmit);

	evs[0].xmit_ns = T0 + 103 * MS;
	r.end_xmit_ns = T0 + 5002 * MS;
	ttf_metrics__compute(&r, &m);
	assert_int_equal(m.ttft_ns, 103 * MS);
	assert_true(m.ttft_end_is_xmit);
	assert_int_equal(m.t_first_token_ns, T0 + 103 * MS);
	assert_int_equal(m.e2e_ns, 5002 * MS);
	/* ITL 0 = write(120) - xmit(103) = 17 ms */
	assert_float_equal(m.itl_mean_ns, (17.0 + 20.0) / 2 * MS, EPS);
}

static void test_start_falls_back_to_read(void **state)
{
	double t[] = { 100 };
	struct ttf_request r = mkreq(t, 1, 1);
	struct ttf_req_metrics m;

	r.arrival_first_ns = 0; /* read_first_ns = T0 + 1 ms */
	ttf_metrics__compute(&r, &m);
	assert_int_equal(m.ttft_ns, 99 * MS);
	assert_int_equal(m.t_start_ns, T0 + 1 * MS);
	assert_int_equal(m.e2e_ns, 4999 * MS);

	r.read_first_ns = 0;
	ttf_metrics__compute(&r, &m);
	assert_int_equal(m.ttft_ns, -1);
	assert_int_equal(m.e2e_ns, -1);
}

/* docs/cases.md #6: a reasoning token comes first; visible content later. */
static void test_ttfv_first_content_event(void **state)
{
	double t[] = { 100, 300, 500 };
	struct ttf_request r = mkreq(t, 3, 1);
	struct ttf_req_metrics m;

	evs[0].flags = TTF_TOK_REASONING;
	evs[1].flags = TTF_TOK_REASONING;
	ttf_metrics__compute(&r, &m);
	assert_int_equal(m.ttft_ns, 100 * MS);
	assert_int_equal(m.ttfv_ns, 500 * MS);

	evs[2].flags = TTF_TOK_TOOL;
	ttf_metrics__compute(&r, &m);
	assert_int_equal(m.ttfv_ns, -1);
}

static void test_nonstream_ttft_is_e2e(void **state)
{
	struct ttf_request r = mkreq(NULL, 0, 1);
	struct ttf_req_metrics m;

	r.flags = TTF_REQ_NONSTREAM | TTF_REQ_USAGE;
	r.usage_completion_tokens = 50;
	r.end_write_ns = T0 + 800 * MS;
	ttf_metrics__compute(&r, &m);
	assert_int_equal(m.e2e_ns, 800 * MS);
	assert_int_equal(m.ttft_ns, 800 * MS);
	assert_int_equal(m.ttfv_ns, 800 * MS);
	assert_false(m.ttft_end_is_xmit);
	assert_int_equal(m.n_tokens, 50);

	r.end_xmit_ns = T0 + 801 * MS;
	ttf_metrics__compute(&r, &m);
	assert_int_equal(m.ttft_ns, 801 * MS);
	assert_true(m.ttft_end_is_xmit);
}

static void test_aborted_has_no_e2e(void **state)
{
	double t[] = { 100, 120 };
	struct ttf_request r = mkreq(t, 2, 1);
	struct ttf_req_metrics m;

	r.flags |= TTF_REQ_ABORTED;
	ttf_metrics__compute(&r, &m);
	assert_int_equal(m.ttft_ns, 100 * MS);
	assert_int_equal(m.e2e_ns, -1);
	assert_int_equal(m.t_end_ns, 0);
}

/* Nine 10 ms gaps and one 110 ms gap: mean 20, stddev 30, CV 1.5, one outlier. */
static void test_itl_per_event_and_outliers(void **state)
{
	double t[] = { 100, 110, 120, 130, 140, 150, 260, 270, 280, 290, 300 };
	struct ttf_request r = mkreq(t, 11, 1);
	struct ttf_req_metrics m;
	uint64_t itl[16], *a = NULL, small[3];
	int i, n;

	ttf_metrics__compute(&r, &m);
	assert_float_equal(m.itl_mean_ns, 20.0 * MS, EPS);
	assert_float_equal(m.itl_cv, 1.5, 1e-12);
	assert_int_equal(m.grade, 'C');
	assert_int_equal(m.n_outliers, 1);

	assert_int_equal(ttf_metrics__itl(&r, itl, 16), 10);
	for (i = 0; i < 10; i++)
		assert_int_equal(itl[i], (i == 5 ? 110 : 10) * MS);
	assert_true(ttf_metrics__is_outlier(&m, itl[5]));
	assert_false(ttf_metrics__is_outlier(&m, itl[4]));
	assert_false(ttf_metrics__is_outlier(&m, 60 * MS)); /* exactly 3 x mean is not */

	/* short buffer: count is still 10, only 3 written */
	small[2] = 7;
	assert_int_equal(ttf_metrics__itl(&r, small, 2), 10);
	assert_int_equal(small[1], 10 * MS);
	assert_int_equal(small[2], 7);

	n = ttf_metrics__itl_alloc(&r, &a);
	assert_int_equal(n, 10);
	assert_int_equal(a[5], 110 * MS);
	free(a);

	r.n_events = 1;
	assert_int_equal(ttf_metrics__itl_alloc(&r, &a), 0);
	assert_null(a);
}

static void test_negative_gap_is_zero(void **state)
{
	double t[] = { 100, 103 };
	struct ttf_request r = mkreq(t, 2, 1);
	uint64_t itl[1];

	evs[0].xmit_ns = T0 + 105 * MS; /* left after the next write returned */
	assert_int_equal(ttf_metrics__itl(&r, itl, 1), 1);
	assert_int_equal(itl[0], 0);
}

static char grade_of(double a_ms, double b_ms, double *cv)
{
	double t[] = { 100, 100 + a_ms, 100 + a_ms + b_ms };
	struct ttf_request r = mkreq(t, 3, 1);
	struct ttf_req_metrics m;

	ttf_metrics__compute(&r, &m);
	*cv = m.itl_cv;
	return m.grade;
}

static void test_cv_grade_boundaries(void **state)
{
	double cv;

	/* ITLs 86, 114: mean 100, stddev 14 -> 0.14 */
	assert_int_equal(grade_of(86, 114, &cv), 'A');
	assert_float_equal(cv, 0.14, 1e-12);
	/* 85, 115 -> exactly 0.15 is B */
	assert_int_equal(grade_of(85, 115, &cv), 'B');
	assert_float_equal(cv, 0.15, 1e-12);
	/* 71, 129 -> 0.29 */
	assert_int_equal(grade_of(71, 129, &cv), 'B');
	/* 70, 130 -> exactly 0.30 is C */
	assert_int_equal(grade_of(70, 130, &cv), 'C');
	assert_float_equal(cv, 0.30, 1e-12);
	/* all gaps 0: CV undefined */
	assert_int_equal(grade_of(0, 0, &cv), '-');
	assert_float_equal(cv, -1, EPS);
}

static void test_buffered_detection(void **state)
{
	double pos[] = { 500, 501, 502 };          /* 500 ms silence, 2 ms span */
	double span_long[] = { 500, 503, 506 };    /* 6 ms span > 5 ms */
	double short_silence[] = { 50, 51, 52 };   /* 50 ms < 100 ms */
	double edge[] = { 100, 102.5, 105 };       /* exactly 100 ms and 5 ms: buffered */
	struct ttf_request r;
	struct ttf_req_metrics m;

	r = mkreq(pos, 3, 1);
	ttf_metrics__compute(&r, &m);
	assert_true(m.buffered);

	r = mkreq(pos, 2, 1); /* only 2 events */
	ttf_metrics__compute(&r, &m);
	assert_false(m.buffered);

	r = mkreq(span_long, 3, 1);
	ttf_metrics__compute(&r, &m);
	assert_false(m.buffered);

	r = mkreq(short_silence, 3, 1);
	ttf_metrics__compute(&r, &m);
	assert_false(m.buffered);

	r = mkreq(edge, 3, 1);
	ttf_metrics__compute(&r, &m);
	assert_true(m.buffered);
}

static void test_invalid(void **state)
{
	struct ttf_request r = { .n_events = 2, .events = NULL };
	struct ttf_req_metrics m;

	assert_int_equal(ttf_metrics__compute(&r, &m), -EINVAL);
	assert_int_equal(ttf_metrics__compute(NULL, &m), -EINVAL);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_tpot_from_usage_case7),
		cmocka_unit_test(test_tpot_usage_vs_events),
		cmocka_unit_test(test_one_event_many_tokens_has_no_tpot),
		cmocka_unit_test(test_ttft_null_without_tokens),
		cmocka_unit_test(test_ttft_uses_xmit_when_present),
		cmocka_unit_test(test_start_falls_back_to_read),
		cmocka_unit_test(test_ttfv_first_content_event),
		cmocka_unit_test(test_nonstream_ttft_is_e2e),
		cmocka_unit_test(test_aborted_has_no_e2e),
		cmocka_unit_test(test_itl_per_event_and_outliers),
		cmocka_unit_test(test_negative_gap_is_zero),
		cmocka_unit_test(test_cv_grade_boundaries),
		cmocka_unit_test(test_buffered_detection),
		cmocka_unit_test(test_invalid),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
