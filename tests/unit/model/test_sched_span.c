// SPDX-License-Identifier: GPL-2.0-only
/*
 * The scheduler ring record (struct ttf_sched_span, bpf/sched.h) as the
 * events it stands for (sched_probe__expand), and the view those events
 * build: the same times as the three-records-per-cycle sequence of
 * tests/unit/model/test_sched.c's basic view.
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <cmocka.h>
#include "user/model/sched.h"
#include "user/probe/sched_probe.h"

static struct ttf_sched_span span(uint64_t wake, uint64_t in, uint64_t out, int type)
{
	return (struct ttf_sched_span){ .ts_ns = out, .in_ns = in, .wake_ns = wake, .tid = 10,
					.tgid = 1, .state = type == TTF_SCHED_OUT_BLOCKED ? 1 : 0,
					.cpu = 1, .type = type };
}

static void test_expand_orders_by_time(void **state)
{
	struct ttf_sched_span s = span(900, 1000, 3000, TTF_SCHED_OUT_BLOCKED);
	struct ttf_sched_event ev[3];

	(void)state;
	assert_int_equal(sched_probe__expand(&s, ev), 3);
	assert_int_equal(ev[0].type, TTF_SCHED_WAKEUP);
	assert_int_equal(ev[0].ts_ns, 900);
	assert_int_equal(ev[1].type, TTF_SCHED_IN);
	assert_int_equal(ev[1].ts_ns, 1000);
	assert_int_equal(ev[1].cpu, 1);
	assert_int_equal(ev[2].type, TTF_SCHED_OUT_BLOCKED);
	assert_int_equal(ev[2].ts_ns, 3000);
	assert_int_equal(ev[2].state, 1);
	assert_int_equal(ev[2].tid, 10);
	assert_int_equal(ev[2].tgid, 1);
	/* a wakeup while the thread ran comes after its switch-in */
	s = span(1500, 1000, 3000, TTF_SCHED_OUT_RUNNABLE);
	assert_int_equal(sched_probe__expand(&s, ev), 3);
	assert_int_equal(ev[0].type, TTF_SCHED_IN);
	assert_int_equal(ev[1].type, TTF_SCHED_WAKEUP);
	assert_int_equal(ev[1].ts_ns, 1500);
	/* no wakeup seen, switch-in unknown (a missed switch) */
	s = span(0, 0, 3000, TTF_SCHED_OUT_DEAD);
	assert_int_equal(sched_probe__expand(&s, ev), 1);
	assert_int_equal(ev[0].type, TTF_SCHED_OUT_DEAD);
	s = span(0, 1000, 3000, TTF_SCHED_OUT_RUNNABLE);
	assert_int_equal(sched_probe__expand(&s, ev), 2);
	assert_int_equal(ev[0].type, TTF_SCHED_IN);
	/* a wakeup sent alone */
	s = span(0, 0, 7000, TTF_SCHED_WAKEUP_NEW);
	assert_int_equal(sched_probe__expand(&s, ev), 1);
	assert_int_equal(ev[0].type, TTF_SCHED_WAKEUP_NEW);
	assert_int_equal(ev[0].ts_ns, 7000);
}

/*
 * tid 10: ON 1000..3000, preempted RUNNABLE 3000..4000 (a wakeup at 3500
 * changes nothing), ON 4000..6000, BLOCKED 6000..9000, RUNNABLE 9000..9500,
 * ON 9500..12000, as three spans.
 */
static void test_spans_build_the_same_view(void **state)
{
	struct ttf_sched_span s[] = {
		span(0, 1000, 3000, TTF_SCHED_OUT_RUNNABLE),
		span(3500, 4000, 6000, TTF_SCHED_OUT_BLOCKED),
		span(9000, 9500, 12000, TTF_SCHED_OUT_BLOCKED),
	};
	struct sched_view *v = sched__new(NULL);
	struct ttf_sched_event ev[3];
	struct sched_overlay o;
	struct sched_stats st;

	(void)state;
	assert_non_null(v);
	for (size_t i = 0; i < sizeof(s) / sizeof(s[0]); i++) {
		int n = sched_probe__expand(&s[i], ev);

		for (int j = 0; j < n; j++)
			assert_true(sched__add(v, &ev[j]) >= 0);
	}
	assert_int_equal(sched__overlay(v, 10, 0, 12000, &o), 0);
	assert_int_equal(o.on_cpu_ns, 2000 + 2000 + 2500);
	assert_int_equal(o.runnable_ns, 1000 + 500);
	assert_int_equal(o.blocked_ns, 3000);
	assert_int_equal(o.unknown_ns, 1000);
	sched__stats(v, &st);
	assert_int_equal(st.inconsistent, 0);
	sched__free(v);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_expand_orders_by_time),
		cmocka_unit_test(test_spans_build_the_same_view),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
