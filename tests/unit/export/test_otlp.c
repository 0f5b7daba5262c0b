// SPDX-License-Identifier: GPL-2.0-only
/* OTLP/HTTP JSON building: ids, span layout, attributes, resources. */
#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>
#include <cjson/cJSON.h>
#include "user/export/otlp/otlp.h"
#include "user/model/hops/view.h"

#define OFFSET_NS 1700000000000000000ll

static void test_ids(void **state)
{
	char t1[33], t2[33], s0[17], s1[17], s0b[17];

	otlp__ids(7, 1, 0, t1, s0);
	otlp__ids(7, 1, 1, t2, s1);
	otlp__ids(7, 1, 0, NULL, s0b);
	assert_int_equal(strlen(t1), 32);
	assert_int_equal(strlen(s0), 16);
	assert_int_equal(strspn(t1, "0123456789abcdef"), 32);
	assert_int_equal(strspn(s0, "0123456789abcdef"), 16);
	assert_string_equal(t1, t2);		/* one trace per request */
	assert_string_not_equal(s0, s1);	/* a span id per span */
	assert_string_equal(s0, s0b);		/* deterministic */
	otlp__ids(7, 2, 0, t2, s1);
	assert_string_not_equal(t1, t2);
	assert_memory_equal(t1, t2, 16);	/* the first half is the run's */
	otlp__ids(8, 1, 0, t2, s1);
	assert_string_not_equal(t1, t2);
}

static void base_src(struct otlp_span_src *s, uint64_t id, uint32_t tgid)
{
	memset(s, 0, sizeof(*s));
	s->req_id = id;
	s->tgid = tgid;
	strcpy(s->comm, "llama-server");
	strcpy(s->method, "POST");
	strcpy(s->path, "/v1/chat/completions");
	s->status = 200;
	s->api = TTF_API_CHAT;
	s->server_port = 8080;
	s->addr_family = 2;
	memcpy(s->server_addr, (uint8_t[]){ 10, 0, 0, 7 }, 4);
	s->flags = TTF_REQ_STREAM;
	s->start_ns = 1000000000;
	s->end_ns = 1300000000;
	s->ttft_ns = 120000000;
	s->e2e_ns = 300000000;
	s->tpot_ns = 20000000;
	s->itl_cv = 0.1;
	s->grade = 'A';
	s->n_tokens = 10;
	s->n_events = 10;
	for (int i = 0; i < TTF_ST__ALL; i++)
		s->stage_ns[i] = -1;
	s->have_stages = 1;
	s->kind = TTF_ATTR_MERGED;
	strcpy(s->merged, "frontend+queue+prefill+emit");
	s->stage_ns[TTF_ST_NET_IN] = 1000000;
	s->stage_ns[TTF_ST_READ_WAIT] = 2000000;
	s->stage_ns[TTF_ST_SERVER] = 110000000;
	s->stage_ns[TTF_ST_NET_OUT] = 7000000;	/* sum 120 ms = TTFT */
}

static cJSON *attr_value(cJSON *attrs, const char *key)
{
	cJSON *kv;

	cJSON_ArrayForEach(kv, attrs)
		if (!strcmp(cJSON_GetObjectItem(kv, "key")->valuestring, key))
			return cJSON_GetObjectItem(kv, "value");
	return NULL;
}

static const char *str_attr(cJSON *o, const char *key)
{
	cJSON *v = attr_value(cJSON_GetObjectItem(o, "attributes"), key);

	assert_non_null(v);
	return cJSON_GetObjectItem(v, cJSON_GetObjectItem(v, "stringValue") ? "stringValue"
							: "intValue")->valuestring;
}

static double dbl_attr(cJSON *o, const char *key)
{
	cJSON *v = attr_value(cJSON_GetObjectItem(o, "attributes"), key);

	assert_non_null(v);
	return cJSON_GetObjectItem(v, "doubleValue")->valuedouble;
}

static const char *str(cJSON *o, const char *key)
{
	cJSON *v = cJSON_GetObjectItem(o, key);

	assert_non_null(v);
	assert_true(cJSON_IsString(v));
	return v->valuestring;
}

static cJSON *find_span(cJSON *spans, const char *name)
{
	cJSON *sp;

	cJSON_ArrayForEach(sp, spans)
		if (!strcmp(str(sp, "name"), name))
			return sp;
	fail_msg("no span %s", name);
	return NULL;
}

static void check_stage(cJSON *spans, const char *name, const char *parent_id,
			const char *start, const char *end)
{
	cJSON *sp = find_span(spans, name);

	assert_string_equal(str(sp, "parentSpanId"), parent_id);
	assert_int_equal(cJSON_GetObjectItem(sp, "kind")->valueint, 1);
	assert_string_equal(str(sp, "startTimeUnixNano"), start);
	assert_string_equal(str(sp, "endTimeUnixNano"), end);
}

static void test_one_request(void **state)
{
	struct otlp_span_src s;
	cJSON *root, *rs, *ss, *spans, *p, *res;
	char trace[33], span[17];
	char *json;

	base_src(&s, 5, 4242);
	json = otlp__build_json(&s, 1, "gpu-host-1", 99, OFFSET_NS);
	assert_non_null(json);
	root = cJSON_Parse(json);
	assert_non_null(root);
	assert_int_equal(cJSON_GetArraySize(cJSON_GetObjectItem(root, "resourceSpans")), 1);
	rs = cJSON_GetArrayItem(cJSON_GetObjectItem(root, "resourceSpans"), 0);
	res = cJSON_GetObjectItem(rs, "resource");
	assert_string_equal(str_attr(res, "service.name"), "llama-server");	/* its comm */
	assert_string_equal(str_attr(res, "telemetry.sdk.name"), "ttftrace");
	assert_string_equal(str_attr(res, "host.name"), "gpu-host-1");
	assert_string_equal(str_attr(res, "process.pid"), "4242");
	assert_string_equal(str_attr(res, "process.executable.name"), "llama-server");
	ss = cJSON_GetArrayItem(cJSON_GetObjectItem(rs, "scopeSpans"), 0);
	assert_string_equal(str(cJSON_GetObjectItem(ss, "scope"), "name"), "ttftrace");
	assert_string_equal(str(ss, "schemaUrl"), "https://opentelemetry.io/schemas/1.37.0");
	spans = cJSON_GetObjectItem(ss, "spans");
	assert_int_equal(cJSON_GetArraySize(spans), 5);	/* request + 4 stages */

	p = find_span(spans, "POST /v1/chat/completions");
	otlp__ids(99, 5, 0, trace, span);
	assert_string_equal(str(p, "traceId"), trace);
	assert_string_equal(str(p, "spanId"), span);
	assert_null(cJSON_GetObjectItem(p, "parentSpanId"));
	assert_int_equal(cJSON_GetObjectItem(p, "kind")->valueint, 2);
	assert_string_equal(str(p, "startTimeUnixNano"), "1700000001000000000");
	assert_string_equal(str(p, "endTimeUnixNano"), "1700000001300000000");
	assert_null(cJSON_GetObjectItem(p, "status"));
	/* metric names in the conventions, not span attributes */
	assert_null(attr_value(cJSON_GetObjectItem(p, "attributes"),
			       "gen_ai.server.time_to_first_token"));
	assert_float_equal(dbl_attr(p, "ttftrace.ttft"), 0.12, 1e-12);
	assert_float_equal(dbl_attr(p, "ttftrace.tpot"), 0.02, 1e-12);
	assert_string_equal(str_attr(p, "http.route"), "/v1/chat/completions");
	assert_string_equal(str_attr(p, "url.scheme"), "http");
	assert_string_equal(str_attr(p, "server.address"), "10.0.0.7");
	assert_null(attr_value(cJSON_GetObjectItem(p, "attributes"), "error.type"));
	assert_null(cJSON_GetObjectItem(p, "flags"));
	assert_float_equal(dbl_attr(p, "ttftrace.e2e"), 0.3, 1e-12);
	assert_string_equal(str_attr(p, "gen_ai.operation.name"), "chat");
	assert_string_equal(str_attr(p, "gen_ai.usage.output_tokens"), "10");
	assert_null(attr_value(cJSON_GetObjectItem(p, "attributes"), "gen_ai.usage.input_tokens"));
	assert_string_equal(str_attr(p, "http.request.method"), "POST");
	assert_string_equal(str_attr(p, "url.path"), "/v1/chat/completions");
	assert_string_equal(str_attr(p, "http.response.status_code"), "200");
	assert_string_equal(str_attr(p, "server.port"), "8080");
	assert_string_equal(str_attr(p, "ttftrace.attribution"), "merged");
	assert_string_equal(str_attr(p, "ttftrace.merged"), "frontend+queue+prefill+emit");
	assert_string_equal(str_attr(p, "ttftrace.grade"), "A");
	/* back to back from the start: 1 + 2 + 110 + 7 ms = TTFT */
	check_stage(spans, "ttft.net_in", span, "1700000001000000000", "1700000001001000000");
	check_stage(spans, "ttft.read_wait", span, "1700000001001000000", "1700000001003000000");
	check_stage(spans, "ttft.server", span, "1700000001003000000", "1700000001113000000");
	check_stage(spans, "ttft.net_out", span, "1700000001113000000", "1700000001120000000");
	assert_string_equal(str(find_span(spans, "ttft.server"), "traceId"), trace);
	cJSON_Delete(root);
	free(json);
}

/*
 * Two prefill steps (chunked): 1.010..1.050 s with 512 tokens and a GPU split,
 * 1.052..1.080 s with 300 tokens and no CUPTI data. Each is a child of the
 * request span at its own times; only the first carries ttftrace.gpu.*.
 */
static void test_prefill_step_spans(void **state)
{
	struct otlp_span_src s;
	cJSON *root, *spans, *sp, *attrs;
	char req_span[17], step_span[17];
	char *json;
	int n = 0;

	base_src(&s, 6, 4242);
	s.n_steps = 2;
	s.steps[0] = (struct ttf_step_span){ .start_ns = 1010000000, .end_ns = 1050000000,
					     .n_tokens = 512, .tid = 4250, .have_gpu = 1,
					     .compute_ns = 30000000, .copy_ns = 4000000,
					     .host_gap_ns = 6000000, .kernels = 40, .copies = 3 };
	s.steps[1] = (struct ttf_step_span){ .start_ns = 1052000000, .end_ns = 1080000000,
					     .n_tokens = 300, .tid = 4250 };
	json = otlp__build_json(&s, 1, "h", 99, OFFSET_NS);
	assert_non_null(json);
	root = cJSON_Parse(json);
	assert_non_null(root);
	spans = cJSON_GetObjectItem(cJSON_GetArrayItem(cJSON_GetObjectItem(
		cJSON_GetArrayItem(cJSON_GetObjectItem(root, "resourceSpans"), 0), "scopeSpans"), 0),
		"spans");
	assert_int_equal(cJSON_GetArraySize(spans), 7);	/* request + 4 stages + 2 steps */
	otlp__ids(99, 6, 0, NULL, req_span);
	cJSON_ArrayForEach(sp, spans) {
		if (strcmp(str(sp, "name"), "prefill.step"))
			continue;
		otlp__ids(99, 6, 1 + TTF_ST__ALL + n, NULL, step_span);
		assert_string_equal(str(sp, "spanId"), step_span);
		assert_string_equal(str(sp, "parentSpanId"), req_span);
		assert_int_equal(cJSON_GetObjectItem(sp, "kind")->valueint, 1);
		attrs = cJSON_GetObjectItem(sp, "attributes");
		assert_string_equal(str_attr(sp, "thread.id"), "4250");
		if (n == 0) {
			assert_string_equal(str(sp, "startTimeUnixNano"), "1700000001010000000");
			assert_string_equal(str(sp, "endTimeUnixNano"), "1700000001050000000");
			assert_string_equal(str_attr(sp, "ttftrace.step.index"), "1");
			assert_string_equal(str_attr(sp, "ttftrace.step.tokens"), "512");
			assert_float_equal(dbl_attr(sp, "ttftrace.gpu.compute"), 0.030, 1e-12);
			assert_float_equal(dbl_attr(sp, "ttftrace.gpu.copy"), 0.004, 1e-12);
			assert_float_equal(dbl_attr(sp, "ttftrace.gpu.host_gap"), 0.006, 1e-12);
			assert_string_equal(str_attr(sp, "ttftrace.gpu.kernels"), "40");
			assert_string_equal(str_attr(sp, "ttftrace.gpu.copies"), "3");
		} else {
			assert_string_equal(str(sp, "startTimeUnixNano"), "1700000001052000000");
			assert_string_equal(str(sp, "endTimeUnixNano"), "1700000001080000000");
			assert_string_equal(str_attr(sp, "ttftrace.step.index"), "2");
			assert_string_equal(str_attr(sp, "ttftrace.step.tokens"), "300");
			assert_null(attr_value(attrs, "ttftrace.gpu.compute"));
		}
		n++;
	}
	assert_int_equal(n, 2);
	cJSON_Delete(root);
	free(json);
}

static void test_two_servers_usage_error_tokenize(void **state)
{
	struct otlp_span_src s[3];
	cJSON *root, *rs_arr, *spans, *p, *fe, *res;
	char fe_id[17];
	char *json;

	base_src(&s[0], 1, 10);
	base_src(&s[1], 2, 20);
	base_src(&s[2], 3, 10);
	/* request 2: usage told the prompt size; a 503; llama.cpp API */
	s[1].flags |= TTF_REQ_USAGE | TTF_REQ_ERROR;
	s[1].prompt_tokens = 17;
	s[1].status = 503;
	s[1].api = TTF_API_LLAMACPP;
	/* request 3: exact stages with tokenize inside frontend, no server */
	s[2].kind = TTF_ATTR_EXACT;
	s[2].merged[0] = '\0';
	s[2].stage_ns[TTF_ST_SERVER] = -1;
	s[2].stage_ns[TTF_ST_FRONTEND] = 10000000;
	s[2].stage_ns[TTF_ST_TOKENIZE] = 4000000;
	s[2].stage_ns[TTF_ST_QUEUE] = 100000000;
	json = otlp__build_json(s, 3, NULL, 1, 0);
	assert_non_null(json);
	root = cJSON_Parse(json);
	rs_arr = cJSON_GetObjectItem(root, "resourceSpans");
	/* one resource per server process, requests 1 and 3 together */
	assert_int_equal(cJSON_GetArraySize(rs_arr), 2);
	res = cJSON_GetObjectItem(cJSON_GetArrayItem(rs_arr, 0), "resource");
	assert_null(attr_value(cJSON_GetObjectItem(res, "attributes"), "host.name"));
	spans = cJSON_GetObjectItem(cJSON_GetArrayItem(cJSON_GetObjectItem(
		cJSON_GetArrayItem(rs_arr, 0), "scopeSpans"), 0), "spans");
	/* request 1: itself + 4 stages; request 3: itself + 5 stages + tokenize */
	assert_int_equal(cJSON_GetArraySize(spans), 5 + 7);
	fe = find_span(spans, "ttft.frontend");
	otlp__ids(1, 3, 1 + TTF_ST_FRONTEND, NULL, fe_id);
	assert_string_equal(str(fe, "spanId"), fe_id);
	/* tokenize: child of frontend, at its start */
	check_stage(spans, "ttft.tokenize", fe_id, "1003000000", "1007000000");
	check_stage(spans, "ttft.queue", str(fe, "parentSpanId"), "1013000000", "1113000000");
	assert_string_equal(str_attr(find_span(spans, "ttft.queue"), "ttftrace.stage"), "queue");

	spans = cJSON_GetObjectItem(cJSON_GetArrayItem(cJSON_GetObjectItem(
		cJSON_GetArrayItem(rs_arr, 1), "scopeSpans"), 0), "spans");
	p = find_span(spans, "POST /v1/chat/completions");
	assert_string_equal(str_attr(p, "gen_ai.usage.input_tokens"), "17");
	assert_string_equal(str_attr(p, "gen_ai.operation.name"), "text_completion");
	assert_int_equal(cJSON_GetObjectItem(cJSON_GetObjectItem(p, "status"), "code")->valueint,
			 2);
	cJSON_Delete(root);
	free(json);
}

static void test_fill_end_without_e2e(void **state)
{
	struct ttf_request r = { .id = 9, .tgid = 3, .status = 200, .closed_ns = 5000,
				 .flags = TTF_REQ_ABORTED | TTF_REQ_STREAM };
	struct ttf_req_metrics m = { .ttft_ns = 1000, .e2e_ns = -1, .tpot_ns = -1, .itl_cv = -1,
				     .t_start_ns = 1000, .t_first_token_ns = 2000,
				     .t_last_token_ns = 4000 };
	struct otlp_span_src s;

	strcpy(r.path, "/completion");
	otlp_span_src__fill(&s, &r, &m, NULL);
	assert_int_equal(s.start_ns, 1000);
	assert_int_equal(s.end_ns, 5000);	/* the abort, after the last token */
	assert_int_equal(s.have_stages, 0);
	assert_int_equal(s.stage_ns[TTF_ST_NET_IN], -1);
	assert_string_equal(s.path, "/completion");
	r.closed_ns = 0;
	otlp_span_src__fill(&s, &r, &m, NULL);
	assert_int_equal(s.end_ns, 4000);	/* the last token */
}

/*
 * Through a gateway: hop.gateway over the TTFT (1.000..1.120 s) and, inside
 * it, hop.upstream (a CLIENT span) from 1.004 s to 1.110 s, in the
 * upstream's own resource (its process), a child of hop.gateway.
 */
static void test_hop_spans(void **state)
{
	struct otlp_span_src s;
	cJSON *root, *rss, *spans, *up_spans, *gw, *up, *res;
	char req_span[17], gw_span[17];
	char *json;
	int base = 1 + TTF_ST__ALL + TTF_MAX_STEP_SPANS;

	base_src(&s, 7, 4242);
	s.have_hops = 1;
	s.hops[0] = (struct otlp_hop){ .tgid = 4242, .comm = "nginx", .start_ns = 1000000000,
				       .end_ns = 1120000000 };
	s.hops[1] = (struct otlp_hop){ .tgid = 5151, .comm = "llama-server",
				       .start_ns = 1004000000, .end_ns = 1110000000 };
	s.hop_exact = 1;
	s.hop_upstream_port = 8081;
	json = otlp__build_json(&s, 1, "h", 99, OFFSET_NS);
	assert_non_null(json);
	root = cJSON_Parse(json);
	assert_non_null(root);
	rss = cJSON_GetObjectItem(root, "resourceSpans");
	assert_int_equal(cJSON_GetArraySize(rss), 2);	/* the gateway's, the upstream's */
	spans = cJSON_GetObjectItem(cJSON_GetArrayItem(cJSON_GetObjectItem(
		cJSON_GetArrayItem(rss, 0), "scopeSpans"), 0), "spans");
	up_spans = cJSON_GetObjectItem(cJSON_GetArrayItem(cJSON_GetObjectItem(
		cJSON_GetArrayItem(rss, 1), "scopeSpans"), 0), "spans");
	assert_int_equal(cJSON_GetArraySize(spans), 6);	/* request + 4 stages + hop.gateway */
	assert_int_equal(cJSON_GetArraySize(up_spans), 1);
	res = cJSON_GetObjectItem(cJSON_GetArrayItem(rss, 1), "resource");
	assert_string_equal(str_attr(res, "process.pid"), "5151");
	assert_string_equal(str_attr(res, "service.name"), "llama-server");
	otlp__ids(99, 7, 0, NULL, req_span);
	otlp__ids(99, 7, base, NULL, gw_span);
	gw = find_span(spans, "hop.gateway");
	up = find_span(up_spans, "hop.upstream");
	assert_string_equal(str(gw, "parentSpanId"), req_span);
	assert_string_equal(str(gw, "spanId"), gw_span);
	assert_string_equal(str(up, "parentSpanId"), gw_span);
	assert_string_equal(str(up, "traceId"), str(gw, "traceId"));
	assert_int_equal(cJSON_GetObjectItem(up, "kind")->valueint, 3);
	assert_string_equal(str(up, "startTimeUnixNano"), "1700000001004000000");
	assert_string_equal(str(up, "endTimeUnixNano"), "1700000001110000000");
	assert_string_equal(str_attr(up, "process.pid"), "5151");
	assert_string_equal(str_attr(up, "process.executable.name"), "llama-server");
	assert_string_equal(str_attr(up, "server.port"), "8081");
	assert_string_equal(str_attr(gw, "ttftrace.hop.join"), "exact");
	assert_string_equal(str_attr(gw, "process.executable.name"), "nginx");
	cJSON_Delete(root);
	free(json);
}

/*
 * A message hop (a frontend and its engine over ZMQ): hop.frontend over the
 * TTFT in the frontend's resource, hop.engine (a CONSUMER span) in the
 * engine's, with its stages as attributes, a child of hop.frontend.
 */
static void test_msg_hop_spans(void **state)
{
	struct otlp_span_src s;
	cJSON *root, *rss, *eng, *fe;
	char fe_span[17];
	char *json;
	int base = 1 + TTF_ST__ALL + TTF_MAX_STEP_SPANS;

	base_src(&s, 9, 300);
	s.have_hops = 1;
	s.n_hops = 2;
	s.hop_kind = TTF_HOPV_MSG;
	s.hop_exact = 1;
	s.hops[0] = (struct otlp_hop){ .hop = "frontend", .tgid = 300, .comm = "python3",
				       .start_ns = 1000000000, .end_ns = 1120000000 };
	s.hops[1] = (struct otlp_hop){ .hop = "engine", .tgid = 301, .comm = "EngineCore",
				       .start_ns = 1010000000, .end_ns = 1100000000, .n_stages = 2,
				       .stages = { { "queue", 30000000 }, { "prefill", 60000000 } } };
	json = otlp__build_json(&s, 1, "h", 99, OFFSET_NS);
	assert_non_null(json);
	root = cJSON_Parse(json);
	assert_non_null(root);
	rss = cJSON_GetObjectItem(root, "resourceSpans");
	assert_int_equal(cJSON_GetArraySize(rss), 2);
	fe = find_span(cJSON_GetObjectItem(cJSON_GetArrayItem(cJSON_GetObjectItem(
		cJSON_GetArrayItem(rss, 0), "scopeSpans"), 0), "spans"), "hop.frontend");
	eng = find_span(cJSON_GetObjectItem(cJSON_GetArrayItem(cJSON_GetObjectItem(
		cJSON_GetArrayItem(rss, 1), "scopeSpans"), 0), "spans"), "hop.engine");
	assert_non_null(fe);
	assert_non_null(eng);
	assert_string_equal(str_attr(cJSON_GetObjectItem(cJSON_GetArrayItem(rss, 1), "resource"),
				     "process.executable.name"), "EngineCore");
	otlp__ids(99, 9, base, NULL, fe_span);
	assert_string_equal(str(eng, "parentSpanId"), fe_span);
	assert_int_equal(cJSON_GetObjectItem(eng, "kind")->valueint, 5);
	assert_string_equal(str(eng, "startTimeUnixNano"), "1700000001010000000");
	assert_float_equal(cJSON_GetObjectItem(attr_value(cJSON_GetObjectItem(eng, "attributes"),
			   "ttftrace.hop.stage.prefill"), "doubleValue")->valuedouble, 0.06, 1e-12);
	assert_null(attr_value(cJSON_GetObjectItem(eng, "attributes"), "server.port"));
	assert_null(attr_value(cJSON_GetObjectItem(fe, "attributes"), "ttftrace.hop.buffering"));
	cJSON_Delete(root);
	free(json);
}

/*
 * A traceparent from the client: the request span takes its trace id and
 * has the caller's span as parent (flags: sampled | has-is-remote |
 * is-remote); the children keep ttftrace's span ids in the same trace. An
 * unknown path names the span by the method alone; a 404 has error.type.
 */
static void test_traceparent_route_error(void **state)
{
	static const uint8_t tid[16] = { 0x4b, 0xf9, 0x2f, 0x35, 0x77, 0xb3, 0x4d, 0xa6,
					 0xa3, 0xce, 0x92, 0x9d, 0x0e, 0x0e, 0x47, 0x36 };
	static const uint8_t pid[8] = { 0x00, 0xf0, 0x67, 0xaa, 0x0b, 0xa9, 0x02, 0xb7 };
	struct otlp_span_src s[2];
	cJSON *root, *spans, *p, *kid;
	char span[17];
	char *json;

	base_src(&s[0], 1, 10);
	s[0].parent.valid = true;
	memcpy(s[0].parent.trace_id, tid, 16);
	memcpy(s[0].parent.span_id, pid, 8);
	s[0].parent.flags = 1;
	base_src(&s[1], 2, 10);
	strcpy(s[1].path, "/secret/raw/path");
	s[1].api = TTF_API_UNKNOWN;
	s[1].status = 404;
	s[1].have_stages = 0;
	json = otlp__build_json(s, 2, NULL, 3, OFFSET_NS);
	assert_non_null(json);
	root = cJSON_Parse(json);
	spans = cJSON_GetObjectItem(cJSON_GetArrayItem(cJSON_GetObjectItem(
		cJSON_GetArrayItem(cJSON_GetObjectItem(root, "resourceSpans"), 0), "scopeSpans"), 0),
		"spans");
	p = find_span(spans, "POST /v1/chat/completions");
	assert_string_equal(str(p, "traceId"), "4bf92f3577b34da6a3ce929d0e0e4736");
	assert_string_equal(str(p, "parentSpanId"), "00f067aa0ba902b7");
	assert_int_equal(cJSON_GetObjectItem(p, "flags")->valueint, 0x301);
	otlp__ids(3, 1, 0, NULL, span);
	assert_string_equal(str(p, "spanId"), span);
	kid = find_span(spans, "ttft.server");
	assert_string_equal(str(kid, "traceId"), "4bf92f3577b34da6a3ce929d0e0e4736");
	assert_string_equal(str(kid, "parentSpanId"), span);
	/* the raw path is never a span name */
	p = find_span(spans, "POST");
	assert_null(strstr(json, "\"name\":\"POST /secret"));
	assert_null(attr_value(cJSON_GetObjectItem(p, "attributes"), "http.route"));
	assert_null(attr_value(cJSON_GetObjectItem(p, "attributes"), "gen_ai.operation.name"));
	assert_string_equal(str_attr(p, "error.type"), "404");
	assert_string_not_equal(str(p, "traceId"), "4bf92f3577b34da6a3ce929d0e0e4736");
	cJSON_Delete(root);
	free(json);
}

static void test_names(void **state)
{
	struct otlp_span_src s;
	char buf[16];

	assert_string_equal(otlp__route("/v1/completions"), "/v1/completions");
	assert_string_equal(otlp__route("/api/generate"), "/api/generate");
	assert_null(otlp__route("/v1/chat/completions/x"));
	assert_string_equal(otlp__operation(TTF_API_MESSAGES), "chat");
	assert_string_equal(otlp__operation(TTF_API_LLAMACPP), "text_completion");
	assert_null(otlp__operation(TTF_API_UNKNOWN));
	base_src(&s, 1, 1);
	assert_null(otlp__error_type(&s, buf, sizeof(buf)));
	s.flags |= TTF_REQ_ERROR;
	assert_string_equal(otlp__error_type(&s, buf, sizeof(buf)), "stream_error");
	s.flags |= TTF_REQ_ABORTED;
	assert_string_equal(otlp__error_type(&s, buf, sizeof(buf)), "aborted");
	s.status = 503;
	assert_string_equal(otlp__error_type(&s, buf, sizeof(buf)), "503");
	s.addr_family = 10;
	memset(s.server_addr, 0, 16);
	s.server_addr[15] = 1;
	otlp__server_address(&s, buf, sizeof(buf));
	assert_string_equal(buf, "::1");
	s.addr_family = 0;
	otlp__server_address(&s, buf, sizeof(buf));
	assert_string_equal(buf, "");
}

/* The protobuf body of the same request has the same ids and names (bytes, not hex). */
static void test_protobuf_body_has_ids(void **state)
{
	struct otlp_span_src s;
	uint8_t trace[16], span[8];
	char *out;
	size_t len;

	base_src(&s, 5, 4242);
	assert_int_equal(otlp__build_traces(OTLP_PROTO_PROTOBUF, &s, 1, "h", NULL, 99, OFFSET_NS,
					    &out, &len), 0);
	otlp__ids_bin(99, 5, 0, trace, span);
	assert_true(len > 200);
	assert_int_equal(out[0], 0x0a);	/* field 1 (resource_spans), LEN */
	assert_non_null(memmem(out, len, trace, 16));
	assert_non_null(memmem(out, len, span, 8));
	assert_non_null(memmem(out, len, "POST /v1/chat/completions", 25));
	assert_null(memmem(out, len, "4bf9", 4));
	free(out);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_ids),
		cmocka_unit_test(test_one_request),
		cmocka_unit_test(test_prefill_step_spans),
		cmocka_unit_test(test_two_servers_usage_error_tokenize),
		cmocka_unit_test(test_fill_end_without_e2e),
		cmocka_unit_test(test_hop_spans),
		cmocka_unit_test(test_msg_hop_spans),
		cmocka_unit_test(test_traceparent_route_error),
		cmocka_unit_test(test_names),
		cmocka_unit_test(test_protobuf_body_has_ids),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
