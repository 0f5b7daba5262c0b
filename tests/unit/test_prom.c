// SPDX-License-Identifier: GPL-2.0-only
/* Prometheus text rendering, fixed-bucket histogram, --metrics address parsing. */
#include <arpa/inet.h>
#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <setjmp.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>
#include "user/lib/histo.h"
#include "user/export/prom.h"

static void test_histo_buckets(void **state)
{
	static const double b[] = { 1, 2, 5 };
	static const double bad[] = { 1, 1 };
	struct histo h;

	assert_int_equal(histo__init(&h, bad, 2), -EINVAL);
	assert_int_equal(histo__init(&h, b, 0), -EINVAL);
	assert_int_equal(histo__init(&h, b, 3), 0);
	histo__add(&h, 0.5);
	histo__add(&h, 1);	/* on a bound: le="1" */
	histo__add(&h, 1.5);
	histo__add(&h, 5);
	histo__add(&h, 7);	/* +Inf */
	histo__add(&h, NAN);	/* ignored */
	assert_int_equal(h.counts[0], 2);
	assert_int_equal(h.counts[1], 1);
	assert_int_equal(h.counts[2], 1);
	assert_int_equal(h.counts[3], 1);
	assert_int_equal(histo__cumulative(&h, 0), 2);
	assert_int_equal(histo__cumulative(&h, 1), 3);
	assert_int_equal(histo__cumulative(&h, 2), 4);
	assert_int_equal(histo__cumulative(&h, 3), 5);
	assert_int_equal(h.count, 5);
	assert_float_equal(h.sum, 15, 1e-12);
}

static void has(const char *text, const char *line)
{
	char want[256];

	snprintf(want, sizeof(want), "\n%s\n", line);
	if (!strstr(text, want))
		fail_msg("missing line: %s", line);
}

static void lacks(const char *text, const char *s)
{
	if (strstr(text, s))
		fail_msg("unexpected: %s", s);
}

/* 3 token events written 120, 130 and 160 ms after the start: ITLs 10 and 30 ms. */
static void observe_one(struct prom_metrics *pm, uint32_t flags, const struct ttf_attrib *a)
{
	struct ttf_token_event ev[3] = {
		{ .write_ns = 1120000000 }, { .write_ns = 1130000000 }, { .write_ns = 1160000000 },
	};
	struct ttf_request r = { .events = ev, .n_events = 3, .flags = flags };
	struct ttf_req_metrics m = {
		.ttft_ns = 120000000, .e2e_ns = 200000000, .tpot_ns = 20e6, .n_tokens = 3,
	};

	prom_metrics__observe(pm, &r, &m, a);
}

static void test_render(void **state)
{
	struct prom_metrics *pm = prom_metrics__new();
	struct report_counter c[] = {
		{ "events", 42 }, { "ringbuf_full", 3 }, { "a\"b\\c\nd", 7 },
	};
	struct ttf_attrib a = { .valid = 1 };
	size_t len;
	char *text;

	assert_non_null(pm);
	for (int i = 0; i < TTF_ST__ALL; i++)
		a.stage_ns[i] = -1;
	a.stage_ns[TTF_ST_NET_IN] = 400000;	/* 0.4 ms: le="0.0005" */
	a.stage_ns[TTF_ST_QUEUE] = 1000000;	/* 1 ms: le="0.001" */
	observe_one(pm, TTF_REQ_STREAM, &a);
	observe_one(pm, TTF_REQ_STREAM | TTF_REQ_ABORTED | TTF_REQ_ERROR, NULL);
	observe_one(pm, TTF_REQ_UNKNOWN, &a);	/* counted, feeds nothing */
	prom_metrics__add_uprobe_hits(pm, 5);
	prom_metrics__set_counters(pm, c, 3);
	text = prom_metrics__render(pm, &len);
	assert_non_null(text);
	assert_int_equal(strlen(text), len);
	has(text, "# TYPE ttftrace_ttft_seconds histogram");
	assert_non_null(strstr(text, "# HELP ttftrace_ttft_seconds Time to first token"));
	has(text, "ttftrace_ttft_seconds_bucket{le=\"0.1\"} 0");
	has(text, "ttftrace_ttft_seconds_bucket{le=\"0.15\"} 2");
	has(text, "ttftrace_ttft_seconds_bucket{le=\"+Inf\"} 2");
	has(text, "ttftrace_ttft_seconds_sum 0.24");
	has(text, "ttftrace_ttft_seconds_count 2");
	/* ITLs 10 ms and 30 ms, twice */
	has(text, "ttftrace_itl_seconds_bucket{le=\"0.0075\"} 0");
	has(text, "ttftrace_itl_seconds_bucket{le=\"0.01\"} 2");
	has(text, "ttftrace_itl_seconds_bucket{le=\"0.02\"} 2");
	has(text, "ttftrace_itl_seconds_bucket{le=\"0.03\"} 4");
	has(text, "ttftrace_itl_seconds_count 4");
	has(text, "ttftrace_tpot_seconds_sum 0.04");
	has(text, "ttftrace_e2e_seconds_bucket{le=\"0.2\"} 2");
	/* stages: only the request with attribution */
	has(text, "ttftrace_ttft_stage_seconds_bucket{stage=\"net_in\",le=\"0.0005\"} 1");
	has(text, "ttftrace_ttft_stage_seconds_bucket{stage=\"queue\",le=\"0.0005\"} 0");
	has(text, "ttftrace_ttft_stage_seconds_bucket{stage=\"queue\",le=\"0.001\"} 1");
	has(text, "ttftrace_ttft_stage_seconds_sum{stage=\"queue\"} 0.001");
	has(text, "ttftrace_ttft_stage_seconds_count{stage=\"prefill\"} 0");
	has(text, "ttftrace_requests_total{outcome=\"ok\"} 1");
	has(text, "ttftrace_requests_total{outcome=\"aborted\"} 1");
	has(text, "ttftrace_requests_total{outcome=\"error\"} 0");	/* aborted wins */
	has(text, "ttftrace_requests_total{outcome=\"unknown\"} 1");
	has(text, "ttftrace_tokens_total 6");
	has(text, "ttftrace_uprobe_hits_total 5");
	has(text, "ttftrace_dropped_events_total{reason=\"ringbuf_full\"} 3");
	lacks(text, "ttftrace_dropped_events_total{reason=\"events\"}");
	has(text, "ttftrace_counter_total{name=\"events\"} 42");
	has(text, "ttftrace_counter_total{name=\"a\\\"b\\\\c\\nd\"} 7");
	lacks(text, "ttftrace_cupti_records_total");	/* no CUPTI counters given */
	free(text);
	prom_metrics__free(pm);
}

static void test_cupti_counters(void **state)
{
	struct prom_metrics *pm = prom_metrics__new();
	struct report_counter c[] = {
		{ "gpu_records", 100 }, { "gpu_cupti_dropped", 2 }, { "gpu_send_dropped", 3 },
	};
	char *text;

	prom_metrics__set_counters(pm, c, 3);
	text = prom_metrics__render(pm, NULL);
	assert_non_null(text);
	has(text, "ttftrace_cupti_records_total 100");
	has(text, "ttftrace_cupti_dropped_records_total 5");
	has(text, "ttftrace_dropped_events_total{reason=\"gpu_cupti_dropped\"} 2");
	free(text);
	prom_metrics__free(pm);
}

static void check_v4(const char *spec, const char *addr, int port)
{
	struct sockaddr_storage sa;
	struct sockaddr_in *s4 = (struct sockaddr_in *)&sa;
	socklen_t len;
	char buf[INET_ADDRSTRLEN];

	assert_int_equal(prom__parse_listen(spec, &sa, &len), 0);
	assert_int_equal(sa.ss_family, AF_INET);
	assert_int_equal(len, sizeof(*s4));
	assert_string_equal(inet_ntop(AF_INET, &s4->sin_addr, buf, sizeof(buf)), addr);
	assert_int_equal(ntohs(s4->sin_port), port);
}

static void test_parse_listen(void **state)
{
	static const char *const bad[] = {
		"", "abc", "1.2.3.4:", ":80", "70000", "-1", "1.2.3:4", "[::1]9", "[::1]:",
		"host:80", "9464x",
	};
	struct sockaddr_storage sa;
	struct sockaddr_in6 *s6 = (struct sockaddr_in6 *)&sa;
	socklen_t len;

	check_v4("9464", "127.0.0.1", 9464);		/* bare port: loopback */
	check_v4("0.0.0.0:80", "0.0.0.0", 80);
	check_v4("localhost:1", "127.0.0.1", 1);
	check_v4("10.1.2.3:0", "10.1.2.3", 0);
	assert_int_equal(prom__parse_listen("[::1]:9", &sa, &len), 0);
	assert_int_equal(sa.ss_family, AF_INET6);
	assert_int_equal(ntohs(s6->sin6_port), 9);
	assert_true(IN6_IS_ADDR_LOOPBACK(&s6->sin6_addr));
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
		if (prom__parse_listen(bad[i], &sa, &len) != -EINVAL)
			fail_msg("accepted '%s'", bad[i]);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_histo_buckets),
		cmocka_unit_test(test_render),
		cmocka_unit_test(test_cupti_counters),
		cmocka_unit_test(test_parse_listen),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
