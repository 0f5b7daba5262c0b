// SPDX-License-Identifier: GPL-2.0-only
/*
 * Scheduler view: synthetic record sequences with hand-computed per-state
 * times (user/model/sched.h). Times are small integers of ns unless noted.
 */
#include <errno.h>
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <string.h>
#include <cmocka.h>
#include "user/model/sched.h"

#define MS 1000000ULL
#define SEC 1000000000ULL

static int ev(struct sched_view *v, uint64_t ts_ns, uint32_t tid, int type)
{
	struct ttf_sched_event e = {
		.ts_ns = ts_ns, .tid = tid, .tgid = 1, .type = type, .cpu = 0,
	};

	return sched__add(v, &e);
}

static void assert_overlay(const struct sched_view *v, uint32_t tid, uint64_t a, uint64_t b,
			   uint64_t on, uint64_t run, uint64_t blk, uint64_t unk)
{
	struct sched_overlay o;

	sched__overlay(v, tid, a, b, &o);
	assert_int_equal(o.on_cpu_ns, on);
	assert_int_equal(o.runnable_ns, run);
	assert_int_equal(o.blocked_ns, blk);
	assert_int_equal(o.unknown_ns, unk);
}

/*
 * tid 10: ON 1000..3000, preempted RUNNABLE 3000..4000 (a wakeup at 3500
 * changes nothing), ON 4000..6000, BLOCKED 6000..9000, RUNNABLE 9000..9500,
 * ON from 9500. tid 11 switches in at 12000: the view knows up to 12000.
 */
static struct sched_view *basic_view(void)
{
	struct sched_view *v = sched__new(NULL);

	assert_non_null(v);
	assert_int_equal(ev(v, 1000, 10, TTF_SCHED_IN), 1);	/* new thread */
	assert_int_equal(ev(v, 3000, 10, TTF_SCHED_OUT_RUNNABLE), 0);
	assert_int_equal(ev(v, 3500, 10, TTF_SCHED_WAKEUP), 0);
	assert_int_equal(ev(v, 4000, 10, TTF_SCHED_IN), 0);
	assert_int_equal(ev(v, 6000, 10, TTF_SCHED_OUT_BLOCKED), 0);
	assert_int_equal(ev(v, 9000, 10, TTF_SCHED_WAKEUP), 0);
	assert_int_equal(ev(v, 9500, 10, TTF_SCHED_IN), 0);
	assert_int_equal(ev(v, 12000, 11, TTF_SCHED_IN), 1);
	return v;
}

static void test_overlay_full_and_partial_windows(void **state)
{
	struct sched_view *v = basic_view();
	struct sched_overlay o;

	assert_int_equal(sched__last_ns(v), 12000);
	/* unknown: [0,1000) before the first record, [12000,13000) after the newest */
	assert_overlay(v, 10, 0, 13000, 2000 + 2000 + 2500, 1000 + 500, 3000, 1000 + 1000);
	/* window cuts ON at 2500 and RUNNABLE at 9200 */
	assert_overlay(v, 10, 2500, 9200, 500 + 2000, 1000 + 200, 3000, 0);
	/* inside one interval */
	assert_overlay(v, 10, 6100, 6200, 0, 0, 100, 0);
	/* straddles the first record */
	assert_overlay(v, 10, 500, 1500, 500, 0, 0, 500);
	/* window starting exactly on a mark */
	assert_overlay(v, 10, 3000, 4000, 0, 1000, 0, 0);
	/* empty window */
	assert_int_equal(sched__overlay(v, 10, 5000, 5000, &o), 0);
	assert_int_equal(o.on_cpu_ns + o.runnable_ns + o.blocked_ns + o.unknown_ns, 0);
	/* unknown thread: all unknown */
	assert_int_equal(sched__overlay(v, 999, 0, 700, &o), -ENOENT);
	assert_int_equal(o.unknown_ns, 700);
	assert_int_equal(o.on_cpu_ns + o.runnable_ns + o.blocked_ns, 0);
	assert_int_equal(sched__overlay(v, 10, 10, 5, &o), -EINVAL);
	sched__free(v);
}

static void test_summary_and_hist(void **state)
{
	struct sched_view *v = basic_view();
	struct sched_thread_summary s[4];
	uint64_t hist[SCHED_HIST_BUCKETS];
	struct sched_stats st;

	assert_int_equal(sched__set_comm(v, 10, "frontend-thread-name"), 0);
	assert_int_equal(sched__set_comm(v, 77, "x"), -ENOENT);
	assert_int_equal(sched__top_runq(v, s, 4), 2);
	assert_int_equal(s[0].tid, 10);
	assert_string_equal(s[0].comm, "frontend-thread");	/* 15 chars + NUL */
	assert_int_equal(s[0].on_cpu_ns, 2000 + 2000 + 2500);	/* open interval up to 12000 */
	assert_int_equal(s[0].runnable_ns, 1500);
	assert_int_equal(s[0].blocked_ns, 3000);
	assert_int_equal(s[0].n_runq, 2);
	assert_int_equal(s[0].max_runq_ns, 1000);
	assert_false(s[0].exited);
	assert_int_equal(s[1].tid, 11);
	assert_int_equal(s[1].runnable_ns, 0);
	/* waits of 1000 ns (1 us: bucket 1) and 500 ns (< 1 us: bucket 0) */
	sched__runq_hist(v, hist);
	assert_int_equal(hist[0], 1);
	assert_int_equal(hist[1], 1);
	for (int i = 2; i < SCHED_HIST_BUCKETS; i++)
		assert_int_equal(hist[i], 0);
	sched__stats(v, &st);
	assert_int_equal(st.events, 8);
	assert_int_equal(st.threads, 2);
	assert_int_equal(st.inconsistent, 0);
	assert_int_equal(st.reordered, 0);
	sched__free(v);
}

static void test_hist_buckets(void **state)
{
	struct sched_view *v = sched__new(NULL);
	uint64_t hist[SCHED_HIST_BUCKETS];

	assert_int_equal(sched__hist_lo_us(0), 0);
	assert_int_equal(sched__hist_lo_us(1), 1);
	assert_int_equal(sched__hist_lo_us(12), 2048);
	/* 3 ms wait: 3000 us in [2048, 4096) -> bucket 12 */
	ev(v, 0, 5, TTF_SCHED_WAKEUP);
	ev(v, 3 * MS, 5, TTF_SCHED_IN);
	/* 1999 ns = 1 us -> bucket 1; 2000 ns = 2 us -> bucket 2 */
	ev(v, 3 * MS + 10, 5, TTF_SCHED_OUT_RUNNABLE);
	ev(v, 3 * MS + 10 + 1999, 5, TTF_SCHED_IN);
	ev(v, 4 * MS, 5, TTF_SCHED_OUT_RUNNABLE);
	ev(v, 4 * MS + 2000, 5, TTF_SCHED_IN);
	/* 2^30 us and more -> last bucket */
	ev(v, 5 * MS, 5, TTF_SCHED_OUT_RUNNABLE);
	ev(v, 5 * MS + (1ULL << 30) * 1000, 5, TTF_SCHED_IN);
	sched__runq_hist(v, hist);
	assert_int_equal(hist[12], 1);
	assert_int_equal(hist[1], 1);
	assert_int_equal(hist[2], 1);
	assert_int_equal(hist[SCHED_HIST_BUCKETS - 1], 1);
	assert_int_equal(hist[0] + hist[3] + hist[11] + hist[13] + hist[30], 0);
	sched__free(v);
}

/* A wakeup of a thread that is already runnable keeps the wait's start. */
static void test_wakeup_of_runnable_and_running(void **state)
{
	struct sched_view *v = sched__new(NULL);
	struct sched_thread_summary s;

	ev(v, 100, 20, TTF_SCHED_OUT_BLOCKED);	/* from unknown */
	ev(v, 200, 20, TTF_SCHED_WAKEUP);
	ev(v, 300, 20, TTF_SCHED_WAKEUP);	/* already runnable */
	ev(v, 700, 20, TTF_SCHED_IN);
	ev(v, 800, 20, TTF_SCHED_WAKEUP);	/* on CPU: ttwu of a task still queued */
	ev(v, 900, 20, TTF_SCHED_OUT_RUNNABLE);
	assert_overlay(v, 20, 0, 900, 200, 500, 100, 100);
	assert_int_equal(sched__top_runq(v, &s, 1), 1);
	assert_int_equal(s.max_runq_ns, 500);
	assert_int_equal(s.n_runq, 1);
	sched__free(v);
}

/* One switch where both prev and next are traced: two records, same time. */
static void test_switch_between_two_traced_threads(void **state)
{
	struct sched_view *v = sched__new(NULL);

	ev(v, 1000, 30, TTF_SCHED_IN);
	ev(v, 1000, 31, TTF_SCHED_WAKEUP);
	ev(v, 5000, 30, TTF_SCHED_OUT_RUNNABLE);
	ev(v, 5000, 31, TTF_SCHED_IN);
	ev(v, 8000, 31, TTF_SCHED_OUT_BLOCKED);
	ev(v, 8000, 30, TTF_SCHED_IN);
	assert_overlay(v, 30, 1000, 8000, 4000, 3000, 0, 0);
	assert_overlay(v, 31, 1000, 8000, 3000, 4000, 0, 0);
	sched__free(v);
}

/* A record older than its thread's last one is applied at that time. */
static void test_reordered_record_is_clamped(void **state)
{
	struct sched_view *v = sched__new(NULL);
	struct sched_stats st;

	ev(v, 1000, 40, TTF_SCHED_IN);
	ev(v, 2000, 40, TTF_SCHED_OUT_BLOCKED);
	ev(v, 1995, 40, TTF_SCHED_WAKEUP);	/* stamped 5 ns earlier on another CPU */
	ev(v, 3000, 40, TTF_SCHED_IN);
	assert_overlay(v, 40, 1000, 3000, 1000, 1000, 0, 0);
	sched__stats(v, &st);
	assert_int_equal(st.reordered, 1);
	sched__free(v);
}

static void test_lost_wakeup_counted(void **state)
{
	struct sched_view *v = sched__new(NULL);
	struct sched_stats st;

	ev(v, 100, 80, TTF_SCHED_OUT_BLOCKED);
	ev(v, 200, 80, TTF_SCHED_IN);	/* its wakeup was lost: [100,200) unknown */
	ev(v, 300, 80, TTF_SCHED_OUT_BLOCKED);
	ev(v, 400, 80, TTF_SCHED_WAKEUP);
	ev(v, 500, 80, TTF_SCHED_OUT_RUNNABLE);	/* switch-in lost: [400,500) unknown */
	ev(v, 600, 80, TTF_SCHED_IN);
	ev(v, 700, 80, TTF_SCHED_OUT_BLOCKED);
	assert_overlay(v, 80, 0, 700, 100 + 100, 100, 100, 100 + 100 + 100);
	sched__stats(v, &st);
	assert_int_equal(st.inconsistent, 2);
	sched__free(v);
}

/* Cap: only the newest 4 state changes stay; the dropped time reads unknown. */
static void test_cap_per_thread(void **state)
{
	struct sched_view_opts o = { .max_marks_per_thread = 4 };
	struct sched_view *v = sched__new(&o);
	struct sched_thread_summary s;
	struct sched_stats st;

	/* IN at odd thousands, OUT_RUNNABLE at even ones, 1000..10000 */
	for (uint64_t t = 1000; t <= 10000; t += 1000)
		ev(v, t, 50, t % 2000 ? TTF_SCHED_IN : TTF_SCHED_OUT_RUNNABLE);
	sched__stats(v, &st);
	assert_int_equal(st.marks_cap, 6);
	/* kept: ON 7000, RUNNABLE 8000, ON 9000, RUNNABLE 10000 */
	assert_overlay(v, 50, 0, 10000, 2000, 1000, 0, 7000);
	/* whole-run totals are not limited by the cap */
	sched__top_runq(v, &s, 1);
	assert_int_equal(s.on_cpu_ns, 5000);
	assert_int_equal(s.runnable_ns, 4000);
	assert_int_equal(s.n_runq, 4);
	sched__free(v);
}

/*
 * Horizon 1 s: state changes that ended more than 1 s before the newest
 * record are dropped; exited threads are freed 1 s after their exit; a live
 * thread that is not seen for longer stays.
 */
static void test_horizon_and_exit(void **state)
{
	struct sched_view_opts o = { .horizon_ns = SEC };
	struct sched_view *v = sched__new(&o);
	struct sched_thread_summary s[4];
	struct sched_overlay ov;
	struct sched_stats st;

	ev(v, 1 * SEC, 60, TTF_SCHED_IN);
	ev(v, 1500 * MS, 60, TTF_SCHED_OUT_BLOCKED);
	ev(v, 2000 * MS, 60, TTF_SCHED_WAKEUP);
	ev(v, 2100 * MS, 60, TTF_SCHED_IN);
	ev(v, 4 * SEC, 61, TTF_SCHED_IN);	/* garbage collection at 4 s */
	sched__stats(v, &st);
	assert_int_equal(st.marks_horizon, 3);
	assert_overlay(v, 60, 0, 4 * SEC, 1900 * MS, 0, 0, 2100 * MS);

	ev(v, 4 * SEC, 62, TTF_SCHED_IN);
	ev(v, 4200 * MS, 62, TTF_SCHED_OUT_DEAD);
	/* exited: unknown after its exit */
	assert_overlay(v, 62, 4 * SEC, 4400 * MS, 200 * MS, 0, 0, 200 * MS);
	ev(v, 5300 * MS, 61, TTF_SCHED_OUT_BLOCKED);	/* gc at 5.3 s: 62 exited 1.1 s ago */
	sched__stats(v, &st);
	assert_int_equal(st.threads_freed, 1);
	assert_int_equal(st.threads, 2);
	assert_int_equal(sched__overlay(v, 62, 4 * SEC, 4400 * MS, &ov), -ENOENT);
	/* 60 was not seen for 3.2 s but is alive: still there, on CPU */
	assert_overlay(v, 60, 5 * SEC, 5300 * MS, 300 * MS, 0, 0, 0);

	/* the freed thread's totals stay in the report */
	assert_int_equal(sched__top_runq(v, s, 4), 3);
	assert_int_equal(s[0].tid, 60);	/* 100 ms runnable */
	assert_int_equal(s[0].runnable_ns, 100 * MS);
	assert_int_equal(s[0].on_cpu_ns, 500 * MS + 3200 * MS);
	assert_int_equal(s[0].blocked_ns, 500 * MS);
	assert_int_equal(s[1].tid, 61);
	assert_int_equal(s[2].tid, 62);
	assert_true(s[2].exited);
	assert_int_equal(s[2].on_cpu_ns, 200 * MS);
	sched__free(v);
}

/* A new thread that reuses an exited thread's tid starts fresh totals. */
static void test_tid_reuse(void **state)
{
	struct sched_view *v = sched__new(NULL);
	struct sched_thread_summary s[2];

	ev(v, 100, 90, TTF_SCHED_IN);
	ev(v, 200, 90, TTF_SCHED_OUT_DEAD);
	assert_int_equal(ev(v, 300, 90, TTF_SCHED_WAKEUP_NEW), 1);
	ev(v, 400, 90, TTF_SCHED_IN);
	assert_overlay(v, 90, 0, 400, 100, 100, 0, 200);
	assert_int_equal(sched__top_runq(v, s, 2), 2);
	assert_int_equal(s[0].runnable_ns, 100);
	assert_false(s[0].exited);
	assert_int_equal(s[1].on_cpu_ns, 100);
	assert_true(s[1].exited);
	sched__free(v);
}

static void test_seed(void **state)
{
	struct sched_view *v = sched__new(NULL);
	struct sched_thread_summary s[2];

	assert_int_equal(sched__seed(v, 70, 1, 1000, SCHED_BLOCKED), 0);
	ev(v, 3000, 70, TTF_SCHED_WAKEUP);
	ev(v, 3500, 70, TTF_SCHED_IN);
	assert_overlay(v, 70, 0, 3500, 0, 500, 2000, 1000);
	assert_int_equal(sched__seed(v, 70, 1, 4000, SCHED_BLOCKED), -EEXIST);
	assert_int_equal(sched__seed(v, 71, 1, 4000, SCHED_EXITED), -EINVAL);
	/* a seeded wait began before the seed: total, but no latency sample */
	assert_int_equal(sched__seed(v, 71, 1, 4000, SCHED_RUNNABLE), 0);
	ev(v, 4600, 71, TTF_SCHED_IN);
	assert_int_equal(sched__top_runq(v, s, 2), 2);
	assert_int_equal(s[0].tid, 71);
	assert_int_equal(s[0].runnable_ns, 600);
	assert_int_equal(s[0].n_runq, 0);
	assert_int_equal(s[1].n_runq, 1);
	sched__free(v);
}

static void test_forget_tgid(void **state)
{
	struct sched_view *v = sched__new(NULL);
	struct ttf_sched_event e = { .ts_ns = 100, .tid = 101, .tgid = 7, .type = TTF_SCHED_IN };

	sched__add(v, &e);
	ev(v, 100, 102, TTF_SCHED_IN);	/* tgid 1 */
	sched__forget_tgid(v, 7, 500);
	ev(v, 1000, 102, TTF_SCHED_OUT_BLOCKED);
	assert_overlay(v, 101, 0, 1000, 400, 0, 0, 600);
	assert_overlay(v, 102, 0, 1000, 900, 0, 0, 100);
	sched__free(v);
}

/*
 * A set of threads over one window: the per-thread overlays add up to
 * n_threads * window, an unknown tid's all unknown.
 */
static void test_overlay_many(void **state)
{
	struct sched_view *v = basic_view();
	uint32_t tids[] = { 10, 11, 999 };
	struct sched_overlay o, sum = { 0 };

	for (int i = 0; i < 3; i++) {
		assert_int_equal(sched__overlay(v, tids[i], 0, 13000, &o), i < 2 ? 0 : -ENOENT);
		sum.on_cpu_ns += o.on_cpu_ns;
		sum.runnable_ns += o.runnable_ns;
		sum.blocked_ns += o.blocked_ns;
		sum.unknown_ns += o.unknown_ns;
	}
	assert_int_equal(sum.on_cpu_ns, 6500);	/* 11 is on CPU from 12000 = last_ns */
	assert_int_equal(sum.runnable_ns, 1500);
	assert_int_equal(sum.blocked_ns, 3000);
	assert_int_equal(sum.unknown_ns, 3 * 13000 - 11000);
	assert_int_equal(sched__overlay(v, 10, 2, 1, &o), -EINVAL);
	sched__free(v);
}

static void test_limits_and_bad_input(void **state)
{
	struct sched_view_opts o = { .max_threads = 2 };
	struct sched_view *v = sched__new(&o);
	struct sched_stats st;

	assert_int_equal(ev(v, 1, 1, TTF_SCHED_IN), 1);
	assert_int_equal(ev(v, 1, 2, TTF_SCHED_IN), 1);
	assert_int_equal(ev(v, 1, 3, TTF_SCHED_IN), -ENOSPC);
	assert_int_equal(ev(v, 1, 1, 0), -EINVAL);
	assert_int_equal(ev(v, 1, 1, TTF_SCHED_WAKEUP_NEW + 1), -EINVAL);
	sched__stats(v, &st);
	assert_int_equal(st.threads_refused, 1);
	assert_int_equal(st.threads, 2);
	assert_int_equal(st.events, 2);
	sched__free(v);
}

/*
 * All threads together hold at most max_marks_total: with 64 marks and 4
 * busy threads each keeps 16 (its share), the older ones are dropped and
 * counted, and a query that reaches into that dropped time is counted too.
 * A thread's recent past stays exact.
 */
static void test_total_marks_budget(void **state)
{
	struct sched_view_opts o = { .max_marks_total = 64 };
	struct sched_view *v = sched__new(&o);
	struct sched_stats st;
	uint64_t ts = 0;

	(void)state;
	assert_non_null(v);
	for (int round = 0; round < 100; round++)	/* 100 on/off cycles per thread */
		for (uint32_t tid = 1; tid <= 4; tid++) {
			ev(v, ts += 10, tid, TTF_SCHED_IN);
			ev(v, ts += 10, tid, TTF_SCHED_OUT_BLOCKED);
		}
	sched__stats(v, &st);
	assert_int_equal(st.threads, 4);
	assert_true(st.marks <= 64);
	assert_int_equal(st.marks, 4 * 16);
	assert_int_equal(st.marks_cap, 4 * 200 - 64);
	assert_int_equal(st.overlays_cut, 0);
	/* tid 4's last cycle: IN at ts-10, BLOCKED since ts */
	assert_overlay(v, 4, ts - 10, ts + 0, 10, 0, 0, 0);
	sched__stats(v, &st);
	assert_int_equal(st.overlays_cut, 0);
	/* the first cycles were dropped: unknown, and counted as a cut query */
	assert_overlay(v, 4, 0, 80, 0, 0, 0, 80);
	sched__stats(v, &st);
	assert_int_equal(st.overlays_cut, 1);
	sched__free(v);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_overlay_full_and_partial_windows),
		cmocka_unit_test(test_summary_and_hist),
		cmocka_unit_test(test_hist_buckets),
		cmocka_unit_test(test_wakeup_of_runnable_and_running),
		cmocka_unit_test(test_switch_between_two_traced_threads),
		cmocka_unit_test(test_reordered_record_is_clamped),
		cmocka_unit_test(test_lost_wakeup_counted),
		cmocka_unit_test(test_cap_per_thread),
		cmocka_unit_test(test_horizon_and_exit),
		cmocka_unit_test(test_tid_reuse),
		cmocka_unit_test(test_seed),
		cmocka_unit_test(test_forget_tgid),
		cmocka_unit_test(test_overlay_many),
		cmocka_unit_test(test_limits_and_bad_input),
		cmocka_unit_test(test_total_marks_budget),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
