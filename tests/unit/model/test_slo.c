// SPDX-License-Identifier: GPL-2.0-only
/* --slo SPEC: parsing (units, order, bad input) and the check against measured values. */
#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>
#include "user/lib/stats.h"
#include "user/model/slo.h"

#define EPS 1e-12

static void test_parse_units_and_order(void **state)
{
	struct slo_set s;
	char err[128] = "";

	assert_int_equal(slo__parse("ttft_p95=2s,tpot_p95=100ms, itl_p99=50000us ,e2e_p50=1.5s,"
				    "ttfv_p90=250000ns", &s, err, sizeof(err)), 0);
	assert_int_equal(s.n, 5);
	assert_int_equal(s.items[0].metric, SLO_TTFT);
	assert_int_equal(s.items[0].pct, SLO_P95);
	assert_float_equal(s.items[0].limit_ms, 2000.0, EPS);
	assert_int_equal(s.items[1].metric, SLO_TPOT);
	assert_float_equal(s.items[1].limit_ms, 100.0, EPS);
	assert_int_equal(s.items[2].metric, SLO_ITL);
	assert_int_equal(s.items[2].pct, SLO_P99);
	assert_float_equal(s.items[2].limit_ms, 50.0, EPS);
	assert_int_equal(s.items[3].metric, SLO_E2E);
	assert_int_equal(s.items[3].pct, SLO_P50);
	assert_float_equal(s.items[3].limit_ms, 1500.0, EPS);
	assert_int_equal(s.items[4].metric, SLO_TTFV);
	assert_int_equal(s.items[4].pct, SLO_P90);
	assert_float_equal(s.items[4].limit_ms, 0.25, EPS);
	assert_int_equal(slo__parse("ttft_p50=1us", &s, err, sizeof(err)), 0);
	assert_int_equal(s.n, 1);
	assert_float_equal(s.items[0].limit_ms, 0.001, EPS);
}

static void expect_bad(const char *spec, const char *needle)
{
	struct slo_set s;
	char err[128] = "";

	assert_int_equal(slo__parse(spec, &s, err, sizeof(err)), -EINVAL);
	if (!strstr(err, needle))
		fail_msg("'%s': error '%s' lacks '%s'", spec, err, needle);
}

static void test_parse_bad(void **state)
{
	struct slo_set s;

	expect_bad("", "empty item");
	expect_bad("ttft_p95=2s,", "empty item");
	expect_bad("ttft_p95", "no '=LIMIT'");
	expect_bad("ttft=2s", "METRIC_PCT");
	expect_bad("tbt_p95=2s", "unknown metric 'tbt'");
	expect_bad("ttft_p97=2s", "unknown percentile 'p97'");
	expect_bad("ttft_p95=2", "needs a unit");
	expect_bad("ttft_p95=2min", "needs a unit");
	expect_bad("ttft_p95=", "missing");
	expect_bad("ttft_p95=-1s", "positive number");
	expect_bad("ttft_p95=0ms", "positive number");
	expect_bad("ttft_p95=infs", "positive number");
	expect_bad("ttft_p95=0x10ms", "positive number");
	expect_bad("ttft_p95=1s,ttft_p95=2s", "given twice");
	/* NULL err buffer is allowed */
	assert_int_equal(slo__parse("nope", &s, NULL, 0), -EINVAL);
	assert_int_equal(slo__parse(NULL, &s, NULL, 0), -EINVAL);
}

static void test_check(void **state)
{
	struct slo_values v;
	struct slo_result r;
	struct slo_set s;

	assert_int_equal(slo__parse("ttft_p95=2s,tpot_p95=100ms,itl_p99=50ms", &s, NULL, 0), 0);
	slo_values__init(&v);
	v.ms[SLO_TTFT][SLO_P95] = 2000.0;	/* equal to the limit: met */
	v.ms[SLO_TPOT][SLO_P95] = 100.001;	/* just above: not met */
	/* itl_p99 not measured: not met */
	assert_int_equal(slo__check(&s, &v, &r), 2);
	assert_int_equal(r.n_failed, 2);
	assert_false(r.failed[0]);
	assert_true(r.failed[1]);
	assert_true(r.failed[2]);
	assert_float_equal(r.value_ms[0], 2000.0, EPS);
	assert_float_equal(r.value_ms[1], 100.001, EPS);
	assert_true(isnan(r.value_ms[2]));
	v.ms[SLO_TPOT][SLO_P95] = 99.0;
	v.ms[SLO_ITL][SLO_P99] = 0.5;
	assert_int_equal(slo__check(&s, &v, &r), 0);
	assert_int_equal(slo__check(NULL, &v, &r), -EINVAL);
}

static void test_values_from_stats(void **state)
{
	struct stats *st = stats__new();
	struct slo_values v;

	assert_non_null(st);
	slo_values__init(&v);
	slo_values__from_stats(&v, SLO_TTFT, st);	/* empty: NAN */
	assert_true(isnan(v.ms[SLO_TTFT][SLO_P50]));
	for (int i = 1; i <= 10; i++)
		assert_int_equal(stats__add(st, i), 0);
	slo_values__from_stats(&v, SLO_TTFT, st);
	/* samples 1..10 (user/lib/stats.h): P50 5.5, P90 9.1, P95 9.55, P99 9.91 */
	assert_float_equal(v.ms[SLO_TTFT][SLO_P50], 5.5, 1e-9);
	assert_float_equal(v.ms[SLO_TTFT][SLO_P90], 9.1, 1e-9);
	assert_float_equal(v.ms[SLO_TTFT][SLO_P95], 9.55, 1e-9);
	assert_float_equal(v.ms[SLO_TTFT][SLO_P99], 9.91, 1e-9);
	assert_true(isnan(v.ms[SLO_TPOT][SLO_P50]));
	stats__free(st);
}

static void test_print(void **state)
{
	struct slo_values v;
	struct slo_result r;
	struct slo_set s;
	char *buf = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&buf, &len);

	assert_non_null(f);
	assert_int_equal(slo__parse("ttft_p95=2s,tpot_p50=1us", &s, NULL, 0), 0);
	slo_values__init(&v);
	v.ms[SLO_TTFT][SLO_P95] = 812.0;
	assert_int_equal(slo__check(&s, &v, &r), 1);
	slo__print(f, "x", &s, &r);
	fclose(f);
	assert_string_equal(buf, "x: SLO ttft_p95 <= 2000 ms: met (812.000 ms)\n"
			    "x: SLO tpot_p50 <= 0.001 ms: FAILED (not measured)\n");
	free(buf);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_parse_units_and_order),
		cmocka_unit_test(test_parse_bad),
		cmocka_unit_test(test_check),
		cmocka_unit_test(test_values_from_stats),
		cmocka_unit_test(test_print),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
