// SPDX-License-Identifier: GPL-2.0-only
/*
 * One vocabulary (user/model/vocab.h): the same synthetic requests through
 * NDJSON (report.c), OTLP (otlp.c), Perfetto (perfetto.c) and the HTML
 * report (html_report.c, fed the NDJSON) carry the same flag names, in the
 * same order, all of them from the table; attribution kind, ttft_end and
 * stage names agree too.
 */
#include <errno.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <setjmp.h>
#include <cmocka.h>
#include <cjson/cJSON.h>
#include "user/model/vocab.h"
#include "user/export/report/report.h"
#include "user/export/otlp/otlp.h"
#include "user/export/perfetto/perfetto.h"
#include "user/export/html/html_report.h"

#define MS 1000000ull
#define T0 (1000 * MS)
#define MAXN TTF_VF__MAX

static struct ttf_token_event evs[3];

/*
 * Streamed, no device transmit seen (write-end), TCP_NODELAY off (nagle),
 * buffered: the flags OTLP could not say before the one table.
 */
static struct ttf_request req_buffered_nagle(void)
{
	struct ttf_request r = {
		.id = 7, .sock_cookie = 99, .tgid = 4242, .comm = "llama-server",
		.method = "POST", .path = "/v1/chat/completions", .status = 200,
		.api = TTF_API_CHAT, .arrival_first_ns = T0, .read_first_ns = T0 + MS,
		.end_write_ns = T0 + 210 * MS, .events = evs, .n_events = 3, .cap_events = 3,
		.flags = TTF_REQ_STREAM | TTF_REQ_BUFFERED,
	};

	for (int i = 0; i < 3; i++)
		evs[i] = (struct ttf_token_event){ .write_ns = T0 + (200 + i) * MS, .n_tokens = 1,
						   .flags = TTF_TOK_CONTENT };
	return r;
}

/* The other flags: non-streamed, aborted, incomplete, truncated, unknown, error, usage. */
static struct ttf_request req_rest(void)
{
	struct ttf_request r = {
		.id = 8, .tgid = 4242, .method = "POST", .path = "/completion", .status = 500,
		.api = TTF_API_LLAMACPP, .arrival_first_ns = T0, .end_write_ns = T0 + 50 * MS,
		.end_xmit_ns = T0 + 51 * MS, .closed_ns = T0 + 60 * MS,
		.usage_completion_tokens = 5, .usage_prompt_tokens = 3,
		.flags = TTF_REQ_NONSTREAM | TTF_REQ_ABORTED | TTF_REQ_INCOMPLETE |
			 TTF_REQ_TRUNCATED | TTF_REQ_UNKNOWN | TTF_REQ_ERROR | TTF_REQ_USAGE |
			 TTF_REQ_NODELAY | TTF_REQ_EXPECT_100 | TTF_REQ_INTERIM | TTF_REQ_DECODED |
			 TTF_REQ_HPACK_UNKNOWN | TTF_REQ_CHUNKS | TTF_REQ_UPSTREAM | TTF_REQ_TLS,
	};

	return r;
}

/* A merged attribution: net_in, read_wait, server, net_out sum to TTFT. */
static struct ttf_attrib attrib_merged(int64_t ttft_ns)
{
	struct ttf_attrib a = { .valid = 1, .kind = TTF_ATTR_MERGED };

	for (int i = 0; i < TTF_ST__ALL; i++)
		a.stage_ns[i] = -1;
	a.stage_ns[TTF_ST_NET_IN] = 0;
	a.stage_ns[TTF_ST_READ_WAIT] = MS;
	a.stage_ns[TTF_ST_NET_OUT] = MS;
	a.stage_ns[TTF_ST_SERVER] = ttft_ns - 2 * MS;
	snprintf(a.merged, sizeof(a.merged), "frontend+queue+prefill+emit");
	return a;
}

/* What each output printed for one request. */
struct seen {
	char *ndjson, *otlp, *perfetto, *html;	/* the raw outputs, owned */
	const char *flags[4][MAXN];		/* [output][i]: NDJSON, OTLP, Perfetto, HTML */
	int n_flags[4];
	cJSON *j_ndjson, *j_otlp, *j_perfetto, *j_html;
};

static char *slurp(FILE *f)
{
	static char buf[1 << 20];
	size_t n;

	assert_non_null(f);
	n = fread(buf, 1, sizeof(buf) - 1, f);
	buf[n] = 0;
	return strdup(buf);
}

/* Strings of a JSON array (OTLP arrays: [{stringValue}]) into out. */
static int strings(const cJSON *arr, const char **out)
{
	const cJSON *it;
	int n = 0;

	assert_true(cJSON_IsArray(arr));
	cJSON_ArrayForEach(it, arr) {
		const cJSON *s = cJSON_IsObject(it) ? cJSON_GetObjectItem(it, "stringValue") : it;

		assert_true(cJSON_IsString(s));
		assert_true(n < MAXN);
		out[n++] = s->valuestring;
	}
	return n;
}

static const cJSON *otlp_attr(const cJSON *span, const char *key)
{
	const cJSON *kv;

	cJSON_ArrayForEach(kv, cJSON_GetObjectItem(span, "attributes"))
		if (!strcmp(cJSON_GetObjectItem(kv, "key")->valuestring, key))
			return cJSON_GetObjectItem(kv, "value");
	return NULL;
}

static const char *otlp_str(const cJSON *span, const char *key)
{
	const cJSON *v = otlp_attr(span, key);

	return v ? cJSON_GetObjectItem(v, "stringValue")->valuestring : NULL;
}

/* The values of an array attribute: [{stringValue}]. */
static const cJSON *otlp_array(const cJSON *span, const char *key)
{
	const cJSON *v = otlp_attr(span, key);

	assert_non_null(v);
	return cJSON_GetObjectItem(cJSON_GetObjectItem(v, "arrayValue"), "values");
}

static const cJSON *otlp_spans(const cJSON *root)
{
	const cJSON *rs = cJSON_GetArrayItem(cJSON_GetObjectItem(root, "resourceSpans"), 0);
	const cJSON *ss = cJSON_GetArrayItem(cJSON_GetObjectItem(rs, "scopeSpans"), 0);

	return cJSON_GetObjectItem(ss, "spans");
}

static const cJSON *perfetto_event(const cJSON *root, const char *cat, int i)
{
	const cJSON *e;

	cJSON_ArrayForEach(e, cJSON_GetObjectItem(root, "traceEvents")) {
		const cJSON *c = cJSON_GetObjectItem(e, "cat");

		if (cJSON_IsString(c) && !strcmp(c->valuestring, cat) && i-- == 0)
			return e;
	}
	return NULL;
}

static void run_outputs(const struct ttf_request *r, const struct ttf_attrib *a,
			struct seen *sn)
{
	struct report_opts ro = { .sz = sizeof(ro), .json = 1 };
	struct html_report_opts ho = { .generated = "test" };
	struct html_report_result hres;
	struct ttf_req_metrics m;
	struct otlp_span_src src;
	struct ttf_sink sink;
	char path[64], err[128], *buf = NULL, *data;
	size_t len = 0;
	struct report *rp;
	FILE *f;

	memset(sn, 0, sizeof(*sn));
	assert_int_equal(ttf_metrics__compute(r, &m), 0);

	/* NDJSON: the reference */
	f = open_memstream(&buf, &len);
	ro.out = f;
	rp = report__new(&ro);
	assert_non_null(rp);
	report__request(rp, r, &m, a);
	report__free(rp);
	fclose(f);
	sn->ndjson = buf;
	sn->j_ndjson = cJSON_Parse(buf);
	assert_non_null(sn->j_ndjson);
	sn->n_flags[0] = strings(cJSON_GetObjectItem(sn->j_ndjson, "flags"), sn->flags[0]);

	/* OTLP */
	otlp_span_src__fill(&src, r, &m, a);
	sn->otlp = otlp__build_json(&src, 1, NULL, 1, 0);
	assert_non_null(sn->otlp);
	sn->j_otlp = cJSON_Parse(sn->otlp);
	assert_non_null(sn->j_otlp);
	sn->n_flags[1] = strings(otlp_array(cJSON_GetArrayItem(otlp_spans(sn->j_otlp), 0),
					    "ttftrace.flags"), sn->flags[1]);

	/* Perfetto */
	snprintf(path, sizeof(path), "/tmp/test_vocab_%d.json", getpid());
	unlink(path);
	assert_int_equal(perfetto_sink__new(path, NULL, &sink), 0);
	sink.request(sink.ctx, r, &m, a);
	assert_int_equal(sink.finish(sink.ctx, NULL, 0), 0);
	sink.destroy(sink.ctx);
	f = fopen(path, "r");
	sn->perfetto = slurp(f);
	fclose(f);
	unlink(path);
	sn->j_perfetto = cJSON_Parse(sn->perfetto);
	assert_non_null(sn->j_perfetto);
	sn->n_flags[2] = strings(cJSON_GetObjectItem(cJSON_GetObjectItem(
		perfetto_event(sn->j_perfetto, "request", 0), "args"), "flags"), sn->flags[2]);

	/* HTML report, from the NDJSON line */
	f = fmemopen(sn->ndjson, strlen(sn->ndjson), "r");
	assert_non_null(f);
	buf = NULL;
	len = 0;
	{
		FILE *out = open_memstream(&buf, &len);

		assert_int_equal(html_report__render(f, out, &ho, &hres, err, sizeof(err)), 0);
		fclose(out);
	}
	fclose(f);
	sn->html = buf;
	data = strstr(sn->html, "{\"meta\":");
	assert_non_null(data);
	sn->j_html = cJSON_ParseWithOpts(data, NULL, 0);
	assert_non_null(sn->j_html);
	sn->n_flags[3] = strings(cJSON_GetObjectItem(cJSON_GetArrayItem(
		cJSON_GetObjectItem(sn->j_html, "requests"), 0), "flags"), sn->flags[3]);
}

static void seen_free(struct seen *sn)
{
	cJSON_Delete(sn->j_ndjson);
	cJSON_Delete(sn->j_otlp);
	cJSON_Delete(sn->j_perfetto);
	cJSON_Delete(sn->j_html);
	free(sn->ndjson);
	free(sn->otlp);
	free(sn->perfetto);
	free(sn->html);
}

static int has(const char *const *names, int n, const char *name)
{
	for (int i = 0; i < n; i++)
		if (!strcmp(names[i], name))
			return 1;
	return 0;
}

/*
 * Every output lists exactly the table's names of the request's flags, in
 * table order. Returns the mask of flags seen.
 */
static uint32_t check_flags(const struct ttf_request *r, const struct ttf_attrib *a)
{
	struct ttf_req_metrics m;
	struct seen sn;
	uint32_t vf;

	assert_int_equal(ttf_metrics__compute(r, &m), 0);
	vf = ttf_vocab__flags(r, &m);
	run_outputs(r, a, &sn);
	for (int o = 0; o < 4; o++) {
		int k = 0;

		for (int f = 0; f < TTF_VF__MAX; f++) {
			if (!(vf & TTF_VF_BIT(f))) {
				assert_false(has(sn.flags[o], sn.n_flags[o], ttf_vflag_name(f)));
				continue;
			}
			assert_true(k < sn.n_flags[o]);
			assert_string_equal(sn.flags[o][k], ttf_vflag_name(f));
			k++;
		}
		assert_int_equal(k, sn.n_flags[o]);
	}
	assert_null(strstr(sn.otlp, "nodelay"));
	assert_null(strstr(sn.perfetto, "nodelay"));
	seen_free(&sn);
	return vf;
}

static void test_table(void **state)
{
	for (int i = 0; i < TTF_VF__MAX; i++) {
		assert_true(ttf_vflag_name(i)[0] && strcmp(ttf_vflag_name(i), "?"));
		for (int j = 0; j < i; j++)
			assert_string_not_equal(ttf_vflag_name(i), ttf_vflag_name(j));
	}
	for (int i = 0; i < TTF_OC__MAX; i++)
		assert_string_not_equal(ttf_outcome_name(i), "?");
	for (int i = 0; i < TTF_ST__ALL; i++) {
		int in_order = 0, in_time = 0;

		assert_string_not_equal(ttf_stage_name(i), "?");
		for (int j = 0; j < TTF_STAGE_ORDER_N; j++) {
			in_order += ttf_stage_order[j] == (enum ttf_stage)i;
			in_time += ttf_stage_time_order[j] == (enum ttf_stage)i;
		}
		assert_int_equal(in_order, 1);	/* every stage once in each order */
		assert_int_equal(in_time, 1);
	}
	assert_string_equal(ttf_vflag_name(TTF_VF_BUFFERED), "buffered");
	assert_string_equal(ttf_vflag_name(TTF_VF_NAGLE), "nagle");
	assert_string_equal(ttf_vflag_name(TTF_VF_WRITE_END), "write-end");
	assert_string_equal(ttf_vflag_name(TTF_VF__MAX), "?");
}

/* The case of the issue: buffered, nagle and write-end in NDJSON, OTLP and Perfetto. */
static void test_buffered_nagle_write_end_everywhere(void **state)
{
	struct ttf_request r = req_buffered_nagle();
	struct ttf_req_metrics m;
	struct ttf_attrib a;
	struct seen sn;
	uint32_t vf;

	assert_int_equal(ttf_metrics__compute(&r, &m), 0);
	a = attrib_merged(m.ttft_ns);
	vf = check_flags(&r, &a);
	assert_int_equal(vf, TTF_VF_BIT(TTF_VF_STREAM) | TTF_VF_BIT(TTF_VF_BUFFERED) |
			     TTF_VF_BIT(TTF_VF_WRITE_END) | TTF_VF_BIT(TTF_VF_NAGLE));

	run_outputs(&r, &a, &sn);
	for (int o = 0; o < 4; o++) {
		assert_true(has(sn.flags[o], sn.n_flags[o], "buffered"));
		assert_true(has(sn.flags[o], sn.n_flags[o], "nagle"));
		assert_true(has(sn.flags[o], sn.n_flags[o], "write-end"));
		assert_false(has(sn.flags[o], sn.n_flags[o], "nodelay"));
	}

	/* the other enumerations: attribution kind, ttft_end */
	{
		const cJSON *span = cJSON_GetArrayItem(otlp_spans(sn.j_otlp), 0);

		assert_string_equal(cJSON_GetObjectItem(sn.j_ndjson, "attribution")->valuestring,
				    ttf_attrib_kind_name(TTF_ATTR_MERGED));
		assert_string_equal(otlp_str(span, "ttftrace.attribution"),
				    ttf_attrib_kind_name(TTF_ATTR_MERGED));
		assert_string_equal(cJSON_GetObjectItem(sn.j_ndjson, "ttft_end")->valuestring,
				    ttf_ttft_end_name(0));
		assert_string_equal(otlp_str(span, "ttftrace.ttft_end"), ttf_ttft_end_name(0));
		assert_string_equal(cJSON_GetObjectItem(sn.j_ndjson, "token_source")->valuestring,
				    otlp_str(span, "ttftrace.tokens.source"));
		assert_string_equal(cJSON_GetObjectItem(sn.j_ndjson, "api")->valuestring,
				    ttf_api_name(TTF_API_CHAT));
	}

	/* stage names: NDJSON keys, OTLP ttft.STAGE spans, Perfetto stage slices, HTML stage_keys */
	for (int s = 0; s < TTF_ST__ALL; s++) {
		const char *name = ttf_stage_name(s);
		const cJSON *nd = cJSON_GetObjectItem(cJSON_GetObjectItem(sn.j_ndjson, "stages_ms"),
						      name);
		/* the page: stages an array in the order of meta.stage_keys */
		const cJSON *keys = cJSON_GetObjectItem(cJSON_GetObjectItem(sn.j_html, "meta"),
							"stage_keys");
		const cJSON *ht = NULL, *k;
		int in_otlp = 0, in_perfetto = 0, at = 0;
		const cJSON *sp, *e;
		char want[32];

		cJSON_ArrayForEach(k, keys) {
			if (!strcmp(k->valuestring, name))
				ht = cJSON_GetArrayItem(cJSON_GetObjectItem(cJSON_GetArrayItem(
					cJSON_GetObjectItem(sn.j_html, "requests"), 0), "stages"), at);
			at++;
		}

		assert_non_null(nd);	/* every stage is a key, null when absent */
		assert_non_null(ht);
		assert_int_equal(cJSON_IsNull(nd), a.stage_ns[s] < 0);
		assert_int_equal(cJSON_IsNull(ht), a.stage_ns[s] < 0);
		snprintf(want, sizeof(want), "ttft.%s", name);
		cJSON_ArrayForEach(sp, otlp_spans(sn.j_otlp))
			if (!strcmp(cJSON_GetObjectItem(sp, "name")->valuestring, want)) {
				assert_string_equal(otlp_str(sp, "ttftrace.stage"), name);
				in_otlp++;
			}
		for (int i = 0; (e = perfetto_event(sn.j_perfetto, "stage", i)); i++)
			in_perfetto += !strcmp(cJSON_GetObjectItem(e, "name")->valuestring, name);
		assert_int_equal(in_otlp, a.stage_ns[s] >= 0);
		assert_int_equal(in_perfetto, a.stage_ns[s] >= 0);
	}
	seen_free(&sn);
}

/* Between the two requests every flag of the table shows, with the same names everywhere. */
static void test_every_flag_same_names(void **state)
{
	struct ttf_request r1 = req_buffered_nagle(), r2 = req_rest(), r3 = req_rest();
	uint32_t all;

	/* opaque: no token counts, so not "usage" either; on a request of its own */
	r3.flags = TTF_REQ_NONSTREAM | TTF_REQ_OPAQUE;
	all = check_flags(&r1, NULL) | check_flags(&r2, NULL) | check_flags(&r3, NULL);

	assert_int_equal(all, TTF_VF_BIT(TTF_VF__MAX) - 1);
}

/* The page's script knows every stage the NDJSON can name, in the same time order. */
static void test_html_template_stage_names(void **state)
{
	struct ttf_request r = req_buffered_nagle();
	const char *colors, *order, *end;
	char key[40];
	struct seen sn;

	run_outputs(&r, NULL, &sn);
	colors = strstr(sn.html, "const STAGE_COLORS = {");
	order = strstr(sn.html, "const STAGE_ORDER = [");
	assert_non_null(colors);
	assert_non_null(order);
	end = strchr(order, ']');
	assert_non_null(end);
	for (int s = 0; s < TTF_ST__ALL; s++) {
		const char *name = ttf_stage_name(s);

		snprintf(key, sizeof(key), "%s: \"#", name);
		assert_non_null(strstr(colors, key));
	}
	/* STAGE_ORDER is the vocabulary's time order without tokenize (drawn inside frontend) */
	for (int i = 0; i < TTF_STAGE_ORDER_N; i++) {
		enum ttf_stage s = ttf_stage_time_order[i];
		const char *at;

		if (s == TTF_ST_TOKENIZE)
			continue;
		snprintf(key, sizeof(key), "\"%s\"", ttf_stage_name(s));
		at = strstr(order, key);
		assert_non_null(at);
		assert_true(at < end);
		order = at;
	}
	seen_free(&sn);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_table),
		cmocka_unit_test(test_buffered_nagle_write_end_everywhere),
		cmocka_unit_test(test_every_flag_same_names),
		cmocka_unit_test(test_html_template_stage_names),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
