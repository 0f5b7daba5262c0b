// SPDX-License-Identifier: GPL-2.0-only
/* GenAI server histograms (otlp_metrics.h), read back from their JSON form. */
#include <errno.h>
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>
#include <cjson/cJSON.h>
#include "user/export/otlp/otlp_metrics.h"

static void src(struct otlp_span_src *s, uint32_t tgid, const char *model, int64_t ttft_ns,
		int status)
{
	memset(s, 0, sizeof(*s));
	s->tgid = tgid;
	strcpy(s->comm, "vllm");
	strcpy(s->method, "POST");
	strcpy(s->path, "/v1/chat/completions");
	strcpy(s->model, model);
	s->api = TTF_API_CHAT;
	s->status = status;
	s->server_port = 8000;
	s->addr_family = 2;
	memcpy(s->server_addr, (uint8_t[]){ 127, 0, 0, 1 }, 4);
	s->start_ns = 1000;
	s->end_ns = 1000 + 2 * ttft_ns;
	s->ttft_ns = ttft_ns;
	s->e2e_ns = 2 * ttft_ns;
	s->tpot_ns = ttft_ns / 10.0;
}

static cJSON *build(struct otlp_metrics *m)
{
	char *out;
	size_t len;
	cJSON *root;

	assert_int_equal(otlp_metrics__build(m, OTLP_PROTO_JSON, "h", NULL, 5000, &out, &len), 0);
	root = cJSON_Parse(out);
	assert_non_null(root);
	free(out);
	return root;
}

static const char *attr(cJSON *point, const char *key)
{
	static char buf[32];
	cJSON *kv;

	cJSON_ArrayForEach(kv, cJSON_GetObjectItem(point, "attributes")) {
		cJSON *v = cJSON_GetObjectItem(kv, "value"), *x;

		if (strcmp(cJSON_GetObjectItem(kv, "key")->valuestring, key))
			continue;
		if ((x = cJSON_GetObjectItem(v, "stringValue")) || (x = cJSON_GetObjectItem(v, "intValue")))
			return x->valuestring;
		snprintf(buf, sizeof(buf), "%s", cJSON_IsTrue(cJSON_GetObjectItem(v, "boolValue")) ?
			 "true" : "?");
		return buf;
	}
	return NULL;
}

/* The data points of metric name in resourceMetrics[rm]. */
static cJSON *points(cJSON *root, int rm, const char *name)
{
	cJSON *r = cJSON_GetArrayItem(cJSON_GetObjectItem(root, "resourceMetrics"), rm), *m;
	cJSON *sm = cJSON_GetArrayItem(cJSON_GetObjectItem(r, "scopeMetrics"), 0);

	cJSON_ArrayForEach(m, cJSON_GetObjectItem(sm, "metrics"))
		if (!strcmp(cJSON_GetObjectItem(m, "name")->valuestring, name)) {
			cJSON *h = cJSON_GetObjectItem(m, "histogram");

			assert_int_equal(cJSON_GetObjectItem(h, "aggregationTemporality")->valueint, 2);
			assert_string_equal(cJSON_GetObjectItem(m, "unit")->valuestring, "s");
			return cJSON_GetObjectItem(h, "dataPoints");
		}
	return NULL;
}

static long long count(cJSON *p)
{
	return atoll(cJSON_GetObjectItem(p, "count")->valuestring);
}

static long long bucket(cJSON *p, int i)
{
	return atoll(cJSON_GetArrayItem(cJSON_GetObjectItem(p, "bucketCounts"), i)->valuestring);
}

static void test_values_and_buckets(void **state)
{
	struct otlp_metrics *m = otlp_metrics__new(1000);
	struct otlp_span_src s;
	cJSON *root, *ttft, *dur, *p;

	/* TTFT 100 ms (on the bound 0.1: bucket 7, (0.08, 0.1]), 120 ms, 20 s (+Inf) */
	src(&s, 1, "llama", 100000000, 200);
	otlp_metrics__add(m, &s);
	src(&s, 1, "llama", 120000000, 200);
	otlp_metrics__add(m, &s);
	src(&s, 1, "llama", 20000000000ll, 200);
	otlp_metrics__add(m, &s);
	src(&s, 1, "llama", 50000000, 503);	/* failed: duration only */
	otlp_metrics__add(m, &s);
	src(&s, 1, "llama", 50000000, 200);
	s.flags = TTF_REQ_INCOMPLETE;		/* left out */
	otlp_metrics__add(m, &s);
	src(&s, 1, "llama", 50000000, 200);
	s.api = TTF_API_UNKNOWN;		/* not GenAI: left out */
	otlp_metrics__add(m, &s);
	assert_int_equal(otlp_metrics__n_series(m), 2);
	root = build(m);
	ttft = points(root, 0, "gen_ai.server.time_to_first_token");
	assert_int_equal(cJSON_GetArraySize(ttft), 1);
	p = cJSON_GetArrayItem(ttft, 0);
	assert_int_equal(count(p), 3);
	assert_float_equal(cJSON_GetObjectItem(p, "sum")->valuedouble, 20.22, 1e-9);
	assert_float_equal(cJSON_GetObjectItem(p, "min")->valuedouble, 0.1, 1e-12);
	assert_float_equal(cJSON_GetObjectItem(p, "max")->valuedouble, 20.0, 1e-12);
	assert_int_equal(cJSON_GetArraySize(cJSON_GetObjectItem(p, "bucketCounts")), 17);
	assert_int_equal(bucket(p, 7), 1);
	assert_int_equal(bucket(p, 8), 1);
	assert_int_equal(bucket(p, 16), 1);
	assert_string_equal(cJSON_GetObjectItem(p, "startTimeUnixNano")->valuestring, "1000");
	assert_string_equal(cJSON_GetObjectItem(p, "timeUnixNano")->valuestring, "5000");
	assert_string_equal(attr(p, "gen_ai.operation.name"), "chat");
	assert_string_equal(attr(p, "gen_ai.request.model"), "llama");
	assert_string_equal(attr(p, "server.address"), "127.0.0.1");
	assert_string_equal(attr(p, "server.port"), "8000");
	assert_null(attr(p, "error.type"));
	dur = points(root, 0, "gen_ai.server.request.duration");
	assert_int_equal(cJSON_GetArraySize(dur), 2);
	p = cJSON_GetArrayItem(dur, 1);
	assert_string_equal(attr(p, "error.type"), "503");
	assert_int_equal(count(p), 1);
	assert_float_equal(cJSON_GetObjectItem(p, "sum")->valuedouble, 0.1, 1e-12);
	assert_int_equal(cJSON_GetArraySize(points(root, 0, "gen_ai.server.time_per_output_token")),
			 1);
	cJSON_Delete(root);
	otlp_metrics__free(m);
}

static void test_processes_and_overflow(void **state)
{
	struct otlp_metrics *m = otlp_metrics__new(0);
	struct otlp_span_src s;
	cJSON *root, *rms, *p;
	char model[16];

	src(&s, 2, "a", 1000000, 200);
	otlp_metrics__add(m, &s);
	for (int i = 0; i < OTLP_MAX_SERIES + 5; i++) {
		snprintf(model, sizeof(model), "m%d", i);
		src(&s, 1, model, 1000000, 200);
		otlp_metrics__add(m, &s);
	}
	assert_int_equal(otlp_metrics__overflowed(m), 6);
	root = build(m);
	rms = cJSON_GetObjectItem(root, "resourceMetrics");
	assert_int_equal(cJSON_GetArraySize(rms), 3);	/* two processes and the overflow */
	p = cJSON_GetArrayItem(points(root, 2, "gen_ai.server.time_to_first_token"), 0);
	assert_string_equal(attr(p, "otel.metric.overflow"), "true");
	assert_null(attr(p, "gen_ai.request.model"));
	assert_int_equal(count(p), 6);
	cJSON_Delete(root);
	otlp_metrics__free(m);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_values_and_buckets),
		cmocka_unit_test(test_processes_and_overflow),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
