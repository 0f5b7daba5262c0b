// SPDX-License-Identifier: GPL-2.0-only
/* --otlp and the OTEL_* exporter variables (otlp_config.h). */
#include <errno.h>
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <string.h>
#include <cmocka.h>
#include "user/export/otlp/otlp_config.h"

static const char *const *env;	/* NAME, VALUE, ..., NULL */

static char *fake_getenv(const char *name)
{
	for (int i = 0; env && env[i]; i += 2)
		if (!strcmp(env[i], name))
			return (char *)env[i + 1];
	return NULL;
}

static char err[256], hint[160];

static int load(struct otlp_config *c, const char *cli, const char *const *e)
{
	env = e;
	return otlp_config__load(c, cli, fake_getenv, err, sizeof(err), hint, sizeof(hint));
}

static void test_off_by_default(void **state)
{
	struct otlp_config c;

	assert_int_equal(load(&c, NULL, NULL), 0);
	assert_false(otlp_config__enabled(&c));
	assert_int_equal(c.interval_ms, 60000);
	/* an empty variable reads as unset */
	assert_int_equal(load(&c, NULL, (const char *[]){ "OTEL_EXPORTER_OTLP_ENDPOINT", "",
							  NULL }), 0);
	assert_false(otlp_config__enabled(&c));
}

static void test_base_and_signal_endpoints(void **state)
{
	struct otlp_config c;

	assert_int_equal(load(&c, NULL, (const char *[]){
		"OTEL_EXPORTER_OTLP_ENDPOINT", "http://col:4318/", NULL }), 0);
	assert_string_equal(c.traces.url, "http://col:4318/v1/traces");
	assert_string_equal(c.metrics.url, "http://col:4318/v1/metrics");
	assert_int_equal(c.traces.proto, OTLP_PROTO_PROTOBUF);	/* the default */
	assert_false(c.traces.gzip);
	/* a base with a path keeps it */
	assert_int_equal(load(&c, NULL, (const char *[]){
		"OTEL_EXPORTER_OTLP_ENDPOINT", "https://gw/otlp", NULL }), 0);
	assert_string_equal(c.metrics.url, "https://gw/otlp/v1/metrics");
	/* a signal's own endpoint: as is, and only that signal is on */
	assert_int_equal(load(&c, NULL, (const char *[]){
		"OTEL_EXPORTER_OTLP_METRICS_ENDPOINT", "http://m:9/custom", NULL }), 0);
	assert_string_equal(c.metrics.url, "http://m:9/custom");
	assert_string_equal(c.traces.url, "");
	assert_true(otlp_config__enabled(&c));
	/* the signal's endpoint wins over the base */
	assert_int_equal(load(&c, NULL, (const char *[]){
		"OTEL_EXPORTER_OTLP_ENDPOINT", "http://b:1",
		"OTEL_EXPORTER_OTLP_TRACES_ENDPOINT", "http://t:2/x", NULL }), 0);
	assert_string_equal(c.traces.url, "http://t:2/x");
	assert_string_equal(c.metrics.url, "http://b:1/v1/metrics");
	/* OTEL_METRICS_EXPORTER=none turns one signal off */
	assert_int_equal(load(&c, NULL, (const char *[]){
		"OTEL_EXPORTER_OTLP_ENDPOINT", "http://b:1", "OTEL_METRICS_EXPORTER", "none",
		NULL }), 0);
	assert_string_equal(c.metrics.url, "");
	assert_string_equal(c.traces.url, "http://b:1/v1/traces");
}

static void test_cli_url(void **state)
{
	struct otlp_config c;

	/* a traces URL: metrics beside it */
	assert_int_equal(load(&c, "http://h:4318/v1/traces", (const char *[]){
		"OTEL_EXPORTER_OTLP_ENDPOINT", "http://other:1", NULL }), 0);
	assert_string_equal(c.traces.url, "http://h:4318/v1/traces");
	assert_string_equal(c.metrics.url, "http://h:4318/v1/metrics");
	/* a base URL */
	assert_int_equal(load(&c, "http://h:4318", NULL), 0);
	assert_string_equal(c.traces.url, "http://h:4318/v1/traces");
	assert_string_equal(c.metrics.url, "http://h:4318/v1/metrics");
	assert_int_equal(load(&c, "h:4318", NULL), -EINVAL);
	assert_non_null(strstr(err, "--otlp 'h:4318'"));
	assert_non_null(strstr(hint, "http://"));
}

static void test_protocol_compression_headers(void **state)
{
	struct otlp_config c;

	assert_int_equal(load(&c, NULL, (const char *[]){
		"OTEL_EXPORTER_OTLP_ENDPOINT", "http://b:1",
		"OTEL_EXPORTER_OTLP_PROTOCOL", "http/json",
		"OTEL_EXPORTER_OTLP_METRICS_PROTOCOL", "http/protobuf",
		"OTEL_EXPORTER_OTLP_COMPRESSION", "gzip",
		"OTEL_EXPORTER_OTLP_TRACES_COMPRESSION", "none",
		"OTEL_EXPORTER_OTLP_HEADERS", "api-key=a%3Db, tenant = t1",
		"OTEL_EXPORTER_OTLP_METRICS_HEADERS", "x=1", NULL }), 0);
	assert_int_equal(c.traces.proto, OTLP_PROTO_JSON);
	assert_int_equal(c.metrics.proto, OTLP_PROTO_PROTOBUF);
	assert_false(c.traces.gzip);
	assert_true(c.metrics.gzip);
	assert_int_equal(c.traces.n_headers, 2);
	assert_string_equal(c.traces.headers[0], "api-key: a=b");
	assert_string_equal(c.traces.headers[1], "tenant: t1");
	/* the signal's headers replace the general ones */
	assert_int_equal(c.metrics.n_headers, 1);
	assert_string_equal(c.metrics.headers[0], "x: 1");
}

static void test_resource_and_interval(void **state)
{
	struct otlp_config c;

	assert_int_equal(load(&c, "http://b:1", (const char *[]){
		"OTEL_RESOURCE_ATTRIBUTES", "service.name=from-attrs,k8s.pod.name=p%201",
		"OTEL_METRIC_EXPORT_INTERVAL", "1500", NULL }), 0);
	assert_string_equal(c.service_name, "from-attrs");
	assert_int_equal(c.n_res_attrs, 2);
	assert_string_equal(c.res_key[1], "k8s.pod.name");
	assert_string_equal(c.res_val[1], "p 1");
	assert_int_equal(c.interval_ms, 1500);
	/* OTEL_SERVICE_NAME wins */
	assert_int_equal(load(&c, "http://b:1", (const char *[]){
		"OTEL_RESOURCE_ATTRIBUTES", "service.name=from-attrs",
		"OTEL_SERVICE_NAME", "svc", NULL }), 0);
	assert_string_equal(c.service_name, "svc");
}

static void test_bad_values(void **state)
{
	static const char *const cases[][3] = {
		{ "OTEL_EXPORTER_OTLP_PROTOCOL", "grpc", "OTEL_EXPORTER_OTLP_PROTOCOL 'grpc'" },
		{ "OTEL_EXPORTER_OTLP_TRACES_PROTOCOL", "thrift",
		  "OTEL_EXPORTER_OTLP_TRACES_PROTOCOL 'thrift'" },
		{ "OTEL_EXPORTER_OTLP_COMPRESSION", "zstd", "not a compression" },
		{ "OTEL_EXPORTER_OTLP_HEADERS", "a=1,b", "'b' is not key=value" },
		{ "OTEL_EXPORTER_OTLP_HEADERS", "a=%zz", "bad %-escape" },
		{ "OTEL_RESOURCE_ATTRIBUTES", "=v", "empty key" },
		{ "OTEL_METRIC_EXPORT_INTERVAL", "10s", "not a period" },
		{ "OTEL_METRIC_EXPORT_INTERVAL", "0", "not a period" },
		{ "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT", "localhost:4318", "not an http" },
		{ "OTEL_TRACES_EXPORTER", "zipkin", "not supported" },
	};
	struct otlp_config c;

	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		const char *e[] = { "OTEL_EXPORTER_OTLP_ENDPOINT", "http://b:1", cases[i][0],
				    cases[i][1], NULL };

		assert_int_equal(load(&c, NULL, e), -EINVAL);
		if (!strstr(err, cases[i][2]))
			fail_msg("%s=%s: '%s' lacks '%s'", cases[i][0], cases[i][1], err,
				 cases[i][2]);
	}
	assert_int_equal(load(&c, NULL, (const char *[]){ "OTEL_EXPORTER_OTLP_ENDPOINT",
							  "tcp://x", NULL }), -EINVAL);
	assert_non_null(strstr(err, "OTEL_EXPORTER_OTLP_ENDPOINT 'tcp://x'"));
	assert_true(hint[0]);
}

/* OTEL_TRACES_SAMPLER / _ARG (otlp_sampler.h): the SDK's names, warn-and-default on bad values */
static void test_sampler(void **state)
{
	static const uint8_t low[16] = { [15] = 1 }, high[16] = { 0, [9] = 0xff, [10] = 0xff };
	struct ttf_trace_parent sampled = { .valid = true, .flags = 1 },
				not_sampled = { .valid = true, .flags = 0 }, none = { 0 };
	struct otlp_config c;
	const char *ep = "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT", *url = "http://h:1/v1/traces";

	assert_int_equal(load(&c, NULL, (const char *[]){ ep, url, NULL }), 0);
	assert_string_equal(c.sampler.name, "parentbased_always_on");
	assert_true(otlp_sampler__sample(&c.sampler, low, &none));
	assert_true(otlp_sampler__sample(&c.sampler, low, &sampled));
	assert_false(otlp_sampler__sample(&c.sampler, low, &not_sampled));
	/* unknown: the default; enum values are case-insensitive */
	assert_int_equal(load(&c, NULL, (const char *[]){ ep, url, "OTEL_TRACES_SAMPLER", "bogus",
							  NULL }), 0);
	assert_string_equal(c.sampler.name, "parentbased_always_on");
	assert_int_equal(load(&c, NULL, (const char *[]){ ep, url, "OTEL_TRACES_SAMPLER",
							  "TraceIdRatio", "OTEL_TRACES_SAMPLER_ARG",
							  "0.5", NULL }), 0);
	assert_string_equal(c.sampler.name, "traceidratio");
	/* T = (1 - 0.5) * 2^56; R: the 7 rightmost bytes, the parent's flag ignored */
	assert_true(c.sampler.threshold == 1ull << 55);
	assert_false(otlp_sampler__sample(&c.sampler, low, &sampled));
	assert_true(otlp_sampler__sample(&c.sampler, high, &not_sampled));
	/* a bad ratio: 1.0 */
	assert_int_equal(load(&c, NULL, (const char *[]){ ep, url, "OTEL_TRACES_SAMPLER",
							  "traceidratio", "OTEL_TRACES_SAMPLER_ARG",
							  "1.5", NULL }), 0);
	assert_true(c.sampler.threshold == 0);
	assert_true(otlp_sampler__sample(&c.sampler, low, &none));
	/* gen_ai.provider.name is lifted off the resource attributes */
	assert_int_equal(load(&c, NULL, (const char *[]){ ep, url, "OTEL_RESOURCE_ATTRIBUTES",
							  "a=1,gen_ai.provider.name=vllm,b=2", NULL }),
			 0);
	assert_string_equal(c.provider, "vllm");
	assert_int_equal(c.n_res_attrs, 2);
	assert_string_equal(c.res_key[1], "b");
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_off_by_default),
		cmocka_unit_test(test_base_and_signal_endpoints),
		cmocka_unit_test(test_cli_url),
		cmocka_unit_test(test_protocol_compression_headers),
		cmocka_unit_test(test_resource_and_interval),
		cmocka_unit_test(test_bad_values),
		cmocka_unit_test(test_sampler),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
