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
#include "user/lib/version.h"
#include "user/export/prom/prom.h"

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
/* The request body's "model" of the next observe_one() (empty: unknown). */
static const char *obs_model = "";
/* and its start time */
static uint64_t obs_start_ns;

static void observe_one(struct prom_metrics *pm, uint32_t flags, int status, enum ttf_api api,
			const char *comm, const struct ttf_attrib *a)
{
	struct ttf_token_event ev[3] = {
		{ .write_ns = 1120000000 }, { .write_ns = 1130000000 }, { .write_ns = 1160000000 },
	};
	struct ttf_request r = { .events = ev, .n_events = 3, .flags = flags, .status = status,
				 .api = api, .usage_prompt_tokens = 11 };
	struct ttf_req_metrics m = {
		.ttft_ns = 120000000, .e2e_ns = 200000000, .tpot_ns = 20e6, .n_tokens = 3,
		.t_start_ns = obs_start_ns,
	};

	snprintf(r.comm, sizeof(r.comm), "%s", comm);
	snprintf(r.model, sizeof(r.model), "%s", obs_model);
	prom_metrics__observe(pm, &r, &m, a);
}

#define L "route=\"chat\",comm=\"srv\",model=\"unknown\""

static void test_render(void **state)
{
	struct prom_metrics *pm = prom_metrics__new(NULL);
	struct report_counter c[] = {
		{ "events", 42 }, { "ringbuf_full", 3 }, { "a\"b\\c\nd", 7 },
		{ "orphaned_engine_us", 2500000 }, { "delay_by_orphans_us", 1500 },
		{ "orphaned_engine_steps", 4 },
	};
	struct ttf_attrib a = { .valid = 1 };
	size_t len;
	char *text;

	assert_non_null(pm);
	for (int i = 0; i < TTF_ST__ALL; i++)
		a.stage_ns[i] = -1;
	a.stage_ns[TTF_ST_NET_IN] = 400000;	/* 0.4 ms: le="0.0005" */
	a.stage_ns[TTF_ST_QUEUE] = 1000000;	/* 1 ms: le="0.001" */
	a.stage_ns[TTF_ST_TOKENIZE] = 200000;	/* 0.2 ms, inside frontend */
	observe_one(pm, TTF_REQ_STREAM | TTF_REQ_USAGE, 200, TTF_API_CHAT, "srv", &a);
	observe_one(pm, TTF_REQ_STREAM, 200, TTF_API_CHAT, "srv", NULL);
	/* failed: counted by outcome and status class, no latency */
	observe_one(pm, TTF_REQ_STREAM | TTF_REQ_ABORTED | TTF_REQ_ERROR, 200, TTF_API_CHAT, "srv",
		    &a);
	observe_one(pm, TTF_REQ_ERROR, 503, TTF_API_CHAT, "srv", &a);
	observe_one(pm, 0, 0, TTF_API_CHAT, "srv", &a);	/* ok but no status: not 2xx */
	observe_one(pm, TTF_REQ_UNKNOWN, 200, TTF_API_CHAT, "srv", &a);	/* counted, feeds nothing */
	prom_metrics__add_uprobe_hits(pm, 5);
	prom_metrics__set_counters(pm, c, 6);
	text = prom_metrics__render(pm, &len);
	assert_non_null(text);
	assert_int_equal(strlen(text), len);
	has(text, "ttftrace_build_info{version=\"" TTF_VERSION "\"} 1");
	has(text, "# TYPE ttftrace_ttft_seconds histogram");
	assert_non_null(strstr(text, "# HELP ttftrace_ttft_seconds Time to first token"));
	/* the default TTFT buckets are vLLM's: 0.1, 0.25 */
	has(text, "ttftrace_ttft_seconds_bucket{" L ",le=\"0.001\"} 0");
	has(text, "ttftrace_ttft_seconds_bucket{" L ",le=\"0.1\"} 0");
	has(text, "ttftrace_ttft_seconds_bucket{" L ",le=\"0.25\"} 2");
	has(text, "ttftrace_ttft_seconds_bucket{" L ",le=\"2560\"} 2");
	has(text, "ttftrace_ttft_seconds_bucket{" L ",le=\"+Inf\"} 2");
	has(text, "ttftrace_ttft_seconds_sum{" L "} 0.24");
	has(text, "ttftrace_ttft_seconds_count{" L "} 2");
	has(text, "ttftrace_e2e_seconds_bucket{" L ",le=\"7680\"} 2");
	/* ITLs 10 ms and 30 ms, twice */
	has(text, "ttftrace_itl_seconds_bucket{" L ",le=\"0.0075\"} 0");
	has(text, "ttftrace_itl_seconds_bucket{" L ",le=\"0.01\"} 2");
	has(text, "ttftrace_itl_seconds_bucket{" L ",le=\"0.02\"} 2");
	has(text, "ttftrace_itl_seconds_bucket{" L ",le=\"0.03\"} 4");
	has(text, "ttftrace_itl_seconds_count{" L "} 4");
	has(text, "ttftrace_tpot_seconds_sum{" L "} 0.04");
	has(text, "ttftrace_e2e_seconds_bucket{" L ",le=\"0.25\"} 2");
	/* stages: only the successful request with attribution; no tokenize stage */
	has(text, "ttftrace_ttft_stage_seconds_bucket{" L ",stage=\"net_in\",le=\"0.0005\"} 1");
	has(text, "ttftrace_ttft_stage_seconds_bucket{" L ",stage=\"queue\",le=\"0.0005\"} 0");
	has(text, "ttftrace_ttft_stage_seconds_bucket{" L ",stage=\"queue\",le=\"0.001\"} 1");
	has(text, "ttftrace_ttft_stage_seconds_sum{" L ",stage=\"queue\"} 0.001");
	/* a stage no request had has no series: no copy without CUPTI, no NaN quantiles */
	lacks(text, "stage=\"prefill\"");
	lacks(text, "stage=\"copy\"");
	lacks(text, "stage=\"tokenize\"");
	has(text, "ttftrace_tokenize_seconds_bucket{" L ",le=\"0.00025\"} 1");
	has(text, "ttftrace_tokenize_seconds_count{" L "} 1");
	has(text, "ttftrace_requests_total{" L ",status_class=\"2xx\",outcome=\"ok\"} 2");
	has(text, "ttftrace_requests_total{" L ",status_class=\"2xx\",outcome=\"aborted\"} 1");
	has(text, "ttftrace_requests_total{" L ",status_class=\"5xx\",outcome=\"error\"} 1");
	has(text, "ttftrace_requests_total{" L ",status_class=\"unknown\",outcome=\"ok\"} 1");
	has(text, "ttftrace_requests_total{" L ",status_class=\"2xx\",outcome=\"unknown\"} 1");
	lacks(text, "outcome=\"incomplete\"");	/* none seen: no series */
	/* tokens of every request but the unknown one; prompt tokens where usage was seen */
	has(text, "ttftrace_output_tokens_total{" L "} 15");
	has(text, "ttftrace_prompt_tokens_total{" L "} 11");
	has(text, "ttftrace_uprobe_hits_total 5");
	/* every counter once, in its family; times in seconds */
	has(text, "ttftrace_dropped_events_total{reason=\"ringbuf_full\"} 3");
	lacks(text, "ttftrace_dropped_events_total{reason=\"events\"}");
	has(text, "ttftrace_tracer_events_total{name=\"events\"} 42");
	has(text, "ttftrace_tracer_events_total{name=\"orphaned_engine_steps\"} 4");
	has(text, "ttftrace_tracer_events_total{name=\"a\\\"b\\\\c\\nd\"} 7");
	lacks(text, "name=\"ringbuf_full\"");
	has(text, "# TYPE ttftrace_orphaned_engine_seconds_total counter");
	has(text, "ttftrace_orphaned_engine_seconds_total 2.5");
	has(text, "ttftrace_delay_by_orphans_seconds_total 0.0015");
	lacks(text, "name=\"orphaned_engine_us\"");
	lacks(text, "ttftrace_orphaned_engine_us");
	lacks(text, "ttftrace_counter_total");
	lacks(text, "ttftrace_cupti_records_total");	/* no CUPTI counters given */
	free(text);
	prom_metrics__free(pm);
}

/* route from the API kind, comm capped at PROM_MAX_COMMS then "other" */
static void test_labels_bounded(void **state)
{
	struct prom_metrics *pm = prom_metrics__new(NULL);
	char comm[16], *text;

	assert_non_null(pm);
	for (int i = 0; i < PROM_MAX_COMMS + 5; i++) {
		snprintf(comm, sizeof(comm), "c%d", i);
		observe_one(pm, 0, 200, TTF_API_LLAMACPP, comm, NULL);
	}
	observe_one(pm, 0, 404, TTF_API_UNKNOWN, "c0", NULL);
	observe_one(pm, 0, 200, TTF_API_COMPLETION, "q\"x", NULL);	/* over the cap too */
	text = prom_metrics__render(pm, NULL);
	assert_non_null(text);
	has(text, "ttftrace_ttft_seconds_count{route=\"llamacpp\",comm=\"c0\",model=\"unknown\"} 1");
	has(text, "ttftrace_ttft_seconds_count{route=\"llamacpp\",comm=\"c15\",model=\"unknown\"} 1");
	lacks(text, "comm=\"c16\"");
	has(text, "ttftrace_ttft_seconds_count{route=\"llamacpp\",comm=\"other\",model=\"unknown\"} 5");
	has(text, "ttftrace_ttft_seconds_count{route=\"completion\",comm=\"other\",model=\"unknown\"} 1");
	has(text, "ttftrace_requests_total{route=\"unknown\",comm=\"c0\",model=\"unknown\",status_class=\"4xx\","
		  "outcome=\"ok\"} 1");
	/* a 404 feeds no latency histogram */
	has(text, "ttftrace_ttft_seconds_count{route=\"unknown\",comm=\"c0\",model=\"unknown\"} 0");
	free(text);
	prom_metrics__free(pm);
}

/* model from the request body, capped at PROM_MAX_MODELS then "other"; none: "unknown" */
static void test_model_label_bounded(void **state)
{
	struct prom_metrics *pm = prom_metrics__new(NULL);
	char model[32], *text;

	assert_non_null(pm);
	for (int i = 0; i < PROM_MAX_MODELS + 3; i++) {
		snprintf(model, sizeof(model), "m%d", i);
		obs_model = model;
		observe_one(pm, 0, 200, TTF_API_CHAT, "srv", NULL);
	}
	obs_model = "";
	observe_one(pm, 0, 200, TTF_API_CHAT, "srv", NULL);
	text = prom_metrics__render(pm, NULL);
	assert_non_null(text);
	has(text, "ttftrace_ttft_seconds_count{route=\"chat\",comm=\"srv\",model=\"m0\"} 1");
	has(text, "ttftrace_ttft_seconds_count{route=\"chat\",comm=\"srv\",model=\"m15\"} 1");
	lacks(text, "model=\"m16\"");
	has(text, "ttftrace_ttft_seconds_count{route=\"chat\",comm=\"srv\",model=\"other\"} 3");
	has(text, "ttftrace_ttft_seconds_count{route=\"chat\",comm=\"srv\",model=\"unknown\"} 1");
	free(text);
	prom_metrics__free(pm);
}

/*
 * Any client can name a model in a request that fails: 20 made-up names on
 * 404s make no label value, and a real model served later gets its own.
 */
static void test_model_label_failing_requests(void **state)
{
	struct prom_metrics *pm = prom_metrics__new(NULL);
	char model[32], *text;

	assert_non_null(pm);
	for (int i = 0; i < 20; i++) {
		snprintf(model, sizeof(model), "scan%d", i);
		obs_model = model;
		observe_one(pm, TTF_REQ_ERROR, 404, TTF_API_UNKNOWN, "srv", NULL);
		observe_one(pm, TTF_REQ_ERROR, 500, TTF_API_CHAT, "srv", NULL);
	}
	obs_model = "real";
	observe_one(pm, 0, 200, TTF_API_CHAT, "srv", NULL);
	observe_one(pm, TTF_REQ_ERROR, 503, TTF_API_CHAT, "srv", NULL);	/* known now: its own */
	obs_model = "";
	text = prom_metrics__render(pm, NULL);
	assert_non_null(text);
	lacks(text, "model=\"scan");
	has(text, "ttftrace_requests_total{route=\"unknown\",comm=\"srv\",model=\"other\","
		  "status_class=\"4xx\",outcome=\"error\"} 20");
	has(text, "ttftrace_requests_total{route=\"chat\",comm=\"srv\",model=\"other\","
		  "status_class=\"5xx\",outcome=\"error\"} 20");
	has(text, "ttftrace_ttft_seconds_count{route=\"chat\",comm=\"srv\",model=\"real\"} 1");
	has(text, "ttftrace_requests_total{route=\"chat\",comm=\"srv\",model=\"real\","
		  "status_class=\"5xx\",outcome=\"error\"} 1");
	free(text);
	prom_metrics__free(pm);
}

/* A value quiet for PROM_MODEL_QUIET_NS, with none in flight, gives its slot to a new name. */
static void test_model_slot_freed_when_quiet(void **state)
{
	struct prom_metrics *pm = prom_metrics__new(NULL);
	struct ttf_request rd = { .api = TTF_API_CHAT, .flags = TTF_REQ_READ, .comm = "srv",
				  .model = "m1" };
	char model[32], *text;

	assert_non_null(pm);
	obs_start_ns = 1000000000;
	for (int i = 0; i < PROM_MAX_MODELS; i++) {
		snprintf(model, sizeof(model), "m%d", i);
		obs_model = model;
		observe_one(pm, 0, 200, TTF_API_CHAT, "srv", NULL);
	}
	prom_metrics__read(pm, &rd);	/* m1 has one in flight: not quiet */
	/* m5 stays busy */
	obs_start_ns += PROM_MODEL_QUIET_NS / 2;
	obs_model = "m5";
	observe_one(pm, 0, 200, TTF_API_CHAT, "srv", NULL);
	/* not quiet for long enough yet: "other" */
	obs_model = "early";
	observe_one(pm, 0, 200, TTF_API_CHAT, "srv", NULL);
	/* m0 has been quiet for longer: its slot and series go to the new name */
	obs_start_ns = 1000000000 + PROM_MODEL_QUIET_NS + 1;
	obs_model = "late";
	observe_one(pm, 0, 200, TTF_API_CHAT, "srv", NULL);
	obs_model = "";
	obs_start_ns = 0;
	text = prom_metrics__render(pm, NULL);
	assert_non_null(text);
	lacks(text, "model=\"early\"");
	has(text, "ttftrace_ttft_seconds_count{route=\"chat\",comm=\"srv\",model=\"other\"} 1");
	has(text, "ttftrace_ttft_seconds_count{route=\"chat\",comm=\"srv\",model=\"late\"} 1");
	lacks(text, "model=\"m0\"");
	has(text, "ttftrace_ttft_seconds_count{route=\"chat\",comm=\"srv\",model=\"m1\"} 1");
	has(text, "ttftrace_requests_in_flight{route=\"chat\",comm=\"srv\",model=\"m1\"} 1");
	has(text, "ttftrace_ttft_seconds_count{route=\"chat\",comm=\"srv\",model=\"m5\"} 2");
	has(text, "ttftrace_tracer_events_total{name=\"prom_model_slots_reused\"} 1");
	free(text);
	prom_metrics__free(pm);
}

/*
 * A request read before a successful one made its model's value is in flight
 * under "other", and leaves from there.
 */
static void test_in_flight_across_new_model(void **state)
{
	struct prom_metrics *pm = prom_metrics__new(NULL);
	struct ttf_request rd = { .api = TTF_API_CHAT, .flags = TTF_REQ_READ, .comm = "srv",
				  .model = "new" };
	char *text;

	assert_non_null(pm);
	prom_metrics__read(pm, &rd);
	prom_metrics__read(pm, &rd);
	obs_model = "new";
	observe_one(pm, TTF_REQ_READ, 200, TTF_API_CHAT, "srv", NULL);
	observe_one(pm, TTF_REQ_READ, 200, TTF_API_CHAT, "srv", NULL);
	obs_model = "";
	text = prom_metrics__render(pm, NULL);
	assert_non_null(text);
	has(text, "ttftrace_requests_in_flight{route=\"chat\",comm=\"srv\",model=\"other\"} 0");
	has(text, "ttftrace_requests_in_flight{route=\"chat\",comm=\"srv\",model=\"new\"} 0");
	/* reading made no histogram series for "other" */
	lacks(text, "ttftrace_ttft_seconds_count{route=\"chat\",comm=\"srv\",model=\"other\"}");
	free(text);
	prom_metrics__free(pm);
}

/* Trimming old history is not a drop; a scheduler overlay cut short is. */
static void test_trimmed_is_not_dropped(void **state)
{
	struct prom_metrics *pm = prom_metrics__new(NULL);
	struct report_counter c[] = {
		{ "sched_marks_trimmed", 900 }, { "engine_steps_trimmed", 40 },
		{ "sched_overlays_cut", 2 }, { "sched_marks_capped", 5 },
	};
	char *text;

	assert_non_null(pm);
	prom_metrics__set_counters(pm, c, 4);
	text = prom_metrics__render(pm, NULL);
	assert_non_null(text);
	has(text, "ttftrace_tracer_events_total{name=\"sched_marks_trimmed\"} 900");
	has(text, "ttftrace_tracer_events_total{name=\"engine_steps_trimmed\"} 40");
	has(text, "ttftrace_tracer_events_total{name=\"sched_marks_capped\"} 5");
	has(text, "ttftrace_dropped_events_total{reason=\"sched_overlays_cut\"} 2");
	lacks(text, "reason=\"sched_marks");
	lacks(text, "reason=\"engine_steps");
	free(text);
	prom_metrics__free(pm);
}

/* read -> in flight; observed or rejected -> not; a request never read does not count */
static void test_in_flight(void **state)
{
	struct prom_metrics *pm = prom_metrics__new(NULL);
	struct ttf_request r = { .api = TTF_API_CHAT, .flags = TTF_REQ_READ, .comm = "srv" };
	char *text;

	assert_non_null(pm);
	prom_metrics__read(pm, &r);
	prom_metrics__read(pm, &r);
	prom_metrics__read(pm, &r);
	observe_one(pm, TTF_REQ_READ, 200, TTF_API_CHAT, "srv", NULL);
	prom_metrics__rejected(pm, &r);
	observe_one(pm, 0, 200, TTF_API_CHAT, "srv", NULL);	/* aborted while being read */
	text = prom_metrics__render(pm, NULL);
	assert_non_null(text);
	has(text, "# TYPE ttftrace_requests_in_flight gauge");
	has(text, "ttftrace_requests_in_flight{route=\"chat\",comm=\"srv\",model=\"unknown\"} 1");
	free(text);
	prom_metrics__free(pm);
}

static void test_cupti_counters(void **state)
{
	struct prom_metrics *pm = prom_metrics__new(NULL);
	struct report_counter c[] = {
		{ "gpu_records", 100 }, { "gpu_cupti_dropped", 2 }, { "gpu_send_dropped", 3 },
	};
	char *text;

	prom_metrics__set_counters(pm, c, 3);
	text = prom_metrics__render(pm, NULL);
	assert_non_null(text);
	has(text, "ttftrace_cupti_records_total 100");
	has(text, "ttftrace_dropped_events_total{reason=\"gpu_cupti_dropped\"} 2");
	has(text, "ttftrace_dropped_events_total{reason=\"gpu_send_dropped\"} 3");
	lacks(text, "name=\"gpu_records\"");	/* once */
	lacks(text, "ttftrace_cupti_dropped_records_total");	/* was a sum of the two above */
	free(text);
	prom_metrics__free(pm);
}

static void test_buckets_option(void **state)
{
	static const char *const bad[] = {
		"", "ttft", "=1", "nope=1", "ttft=", "ttft=1,", "ttft=,1", "ttft=2,1", "ttft=1,1",
		"ttft=0", "ttft=-1", "ttft=inf", "ttft=nan", "ttft=1x", "ttft= 1", "ttft=0x10",
		"ttft=1;e2e=2",
		"ttft=1,2,3,4,5,6,7,8,9,10,11,12,13,14,15,16,17,18,19,20,21,22,23,24,25,26,27,28,29,"
		"30,31,32,33",
	};
	struct prom_buckets b = { 0 };
	struct prom_metrics *pm;
	char err[160], *text;
	int n;

	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		err[0] = '\0';
		if (prom_buckets__parse(&b, bad[i], err, sizeof(err)) != -EINVAL)
			fail_msg("accepted '%s'", bad[i]);
		if (!err[0])
			fail_msg("no reason for '%s'", bad[i]);
	}
	assert_int_equal(b.n[PROM_H_TTFT], 0);	/* bad input changes nothing */
	assert_int_equal(prom_buckets__parse(&b, "ttft=0.05,0.1,1e1", err, sizeof(err)), 0);
	assert_int_equal(prom_buckets__parse(&b, "stage=0.001", err, sizeof(err)), 0);
	assert_int_equal(prom_buckets__parse(&b, "ttft=0.05,0.5", err, sizeof(err)), 0); /* last wins */
	assert_int_equal(b.n[PROM_H_TTFT], 2);
	assert_float_equal(prom_buckets__get(&b, PROM_H_TTFT, &n)[1], 0.5, 0);
	assert_int_equal(n, 2);
	/* defaults: TTFT 1 ms .. 2560 s, E2E .. 7680 s */
	assert_float_equal(prom_buckets__get(NULL, PROM_H_TTFT, &n)[0], 0.001, 0);
	assert_float_equal(prom_buckets__get(NULL, PROM_H_TTFT, &n)[n - 1], 2560, 0);
	assert_float_equal(prom_buckets__get(&b, PROM_H_E2E, &n)[n - 1], 7680, 0);
	assert_float_equal(prom_buckets__get(&b, PROM_H_E2E, &n)[0], 0.001, 0);

	pm = prom_metrics__new(&b);
	assert_non_null(pm);
	memset(&b, 0, sizeof(b));	/* the metrics keep their own copy */
	observe_one(pm, 0, 200, TTF_API_CHAT, "srv", NULL);
	text = prom_metrics__render(pm, NULL);
	assert_non_null(text);
	has(text, "ttftrace_ttft_seconds_bucket{" L ",le=\"0.05\"} 0");
	has(text, "ttftrace_ttft_seconds_bucket{" L ",le=\"0.5\"} 1");
	has(text, "ttftrace_ttft_seconds_bucket{" L ",le=\"+Inf\"} 1");
	lacks(text, "ttftrace_ttft_seconds_bucket{" L ",le=\"0.25\"}");
	has(text, "ttftrace_e2e_seconds_bucket{" L ",le=\"0.25\"} 1");	/* default */
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
		cmocka_unit_test(test_labels_bounded),
		cmocka_unit_test(test_model_label_bounded),
		cmocka_unit_test(test_model_label_failing_requests),
		cmocka_unit_test(test_model_slot_freed_when_quiet),
		cmocka_unit_test(test_in_flight),
		cmocka_unit_test(test_in_flight_across_new_model),
		cmocka_unit_test(test_trimmed_is_not_dropped),
		cmocka_unit_test(test_cupti_counters),
		cmocka_unit_test(test_buckets_option),
		cmocka_unit_test(test_parse_listen),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
