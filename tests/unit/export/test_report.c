// SPDX-License-Identifier: GPL-2.0-only
/* Output (user/export/report/report.c): live lines, NDJSON parsed back with cJSON, summaries. */
#include <errno.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <setjmp.h>
#include <cmocka.h>
#include "bpf/net.h"
#include <cjson/cJSON.h>
#include "user/export/report/report.h"

/* As the pipeline does: metrics once, then the report (or its rejected count). */
static void put(struct report *rp, const struct ttf_request *r)
{
	struct ttf_req_metrics m;

	if (ttf_metrics__compute(r, &m))
		report__rejected(rp, r);
	else
		report__request(rp, r, &m, NULL);
}

#define MS 1000000ull
#define EPS 1e-9
#define T0 (1000 * MS)

static struct ttf_token_event ev_a[3];
static struct ttf_token_event ev_o[11];

/* Streamed chat request: xmit for the first event, 3 events of 2 tokens, usage 6. */
static struct ttf_request req_a(void)
{
	struct ttf_request r = {
		.id = 1, .sock_cookie = 0x8000000000000001ull, .conn_seq = 2, .tgid = 4242,
		.rx_tid = 4243, .tx_tid = 4244, .comm = "llama-server",
		.addr = { .family = 2, .lport = 8080, .rport = 45678,
			  .laddr = { 127, 0, 0, 1 }, .raddr = { 10, 1, 2, 3 } },
		.method = "POST", .path = "/v1/chat/completions", .status = 200,
		.api = TTF_API_CHAT, .arrival_first_ns = T0, .read_first_ns = T0 + MS,
		.end_write_ns = T0 + 150 * MS, .req_bytes = 300, .resp_bytes = 2000,
		.resp_first_write_ns = T0 + 20 * MS, .resp_first_xmit_ns = T0 + 20 * MS + 300000,
		.first_event_write_ns = T0 + 60 * MS,
		.events = ev_a, .n_events = 3, .cap_events = 3, .usage_completion_tokens = 6,
		.usage_prompt_tokens = 12, .flags = TTF_REQ_STREAM | TTF_REQ_USAGE,
	};
	int i;

	for (i = 0; i < 3; i++)
		ev_a[i] = (struct ttf_token_event){ .write_ns = T0 + (100 + 20 * i) * MS,
						    .n_tokens = 2, .flags = TTF_TOK_CONTENT };
	ev_a[0].xmit_ns = T0 + 100 * MS + 500000; /* 100.5 ms */
	return r;
}

/* Streamed, error status, no token at all, IPv6. */
static struct ttf_request req_b(void)
{
	struct ttf_request r = {
		.id = 2, .tgid = 4242, .addr = { .family = 10, .lport = 8080, .rport = 5555 },
		.method = "POST", .path = "/v1/completions", .status = 500,
		.api = TTF_API_COMPLETION, .arrival_first_ns = T0, .end_write_ns = T0 + 30 * MS,
		.flags = TTF_REQ_STREAM | TTF_REQ_ERROR,
	};

	r.addr.laddr[15] = 1; /* ::1 */
	r.addr.raddr[15] = 1;
	return r;
}

/* Non-streamed llama.cpp request: TTFT = E2E = 400 ms at the write. */
static struct ttf_request req_c(void)
{
	struct ttf_request r = {
		.id = 3, .tgid = 4242, .method = "POST", .path = "/completion", .status = 200,
		.api = TTF_API_LLAMACPP, .arrival_first_ns = T0 + 1000 * MS,
		.end_write_ns = T0 + 1400 * MS, .usage_completion_tokens = 40,
		.flags = TTF_REQ_NONSTREAM | TTF_REQ_USAGE,
	};

	return r;
}

/* Nine 10 ms ITLs and one 110 ms ITL at index 5 (mean 20 ms -> one outlier). */
static struct ttf_request req_outlier(void)
{
	static const int t[] = { 100, 110, 120, 130, 140, 150, 260, 270, 280, 290, 300 };
	struct ttf_request r = {
		.id = 4, .tgid = 7, .path = "/a\x1b[31mb", .status = 200,
		.arrival_first_ns = T0, .end_write_ns = T0 + 310 * MS, .flags = TTF_REQ_STREAM,
		.events = ev_o, .n_events = 11, .cap_events = 11,
	};
	int i;

	for (i = 0; i < 11; i++)
		ev_o[i] = (struct ttf_token_event){ .write_ns = T0 + t[i] * MS, .n_tokens = 1,
						    .flags = TTF_TOK_CONTENT };
	return r;
}

struct capture {
	char *buf;
	size_t len;
	FILE *f;
	struct report *rp;
};

static void cap_open(struct capture *c, int json, int verbose)
{
	struct report_opts o = { .sz = sizeof(o), .json = json, .verbose = verbose,
				 .t0_ns = T0 - 500 * MS };

	c->f = open_memstream(&c->buf, &c->len);
	assert_non_null(c->f);
	o.out = c->f;
	c->rp = report__new(&o);
	assert_non_null(c->rp);
}

static void cap_close(struct capture *c)
{
	report__free(c->rp);
	fclose(c->f);
	free(c->buf);
}

static cJSON *line_json(const char *text, int line)
{
	const char *p = text;
	char *copy;
	size_t n;
	cJSON *j;

	while (line-- > 0) {
		p = strchr(p, '\n');
		assert_non_null(p);
		p++;
	}
	n = strcspn(p, "\n");
	copy = strndup(p, n);
	j = cJSON_Parse(copy);
	free(copy);
	assert_non_null(j);
	return j;
}

static double num(const cJSON *o, const char *k)
{
	const cJSON *it = cJSON_GetObjectItemCaseSensitive(o, k);

	assert_non_null(it);
	assert_true(cJSON_IsNumber(it));
	return it->valuedouble;
}

static const char *str(const cJSON *o, const char *k)
{
	const cJSON *it = cJSON_GetObjectItemCaseSensitive(o, k);

	assert_non_null(it);
	assert_true(cJSON_IsString(it));
	return it->valuestring;
}

static void assert_null_field(const cJSON *o, const char *k)
{
	const cJSON *it = cJSON_GetObjectItemCaseSensitive(o, k);

	assert_non_null(it);
	assert_true(cJSON_IsNull(it));
}

static void test_json_request_fields(void **state)
{
	struct capture c;
	struct ttf_request a = req_a();
	const cJSON *arr, *fl;
	cJSON *j;

	cap_open(&c, 1, 0);
	report__header(c.rp); /* no header in JSON mode */
	put(c.rp, &a);
	fflush(c.f);
	assert_int_equal(strchr(c.buf, '\n') - c.buf + 1, (long)c.len); /* exactly one line */

	j = line_json(c.buf, 0);
	assert_string_equal(str(j, "type"), "request");
	assert_float_equal(num(j, "id"), 1, EPS);
	assert_float_equal(num(j, "pid"), 4242, EPS);
	assert_float_equal(num(j, "tid_rx"), 4243, EPS);
	assert_float_equal(num(j, "tid_tx"), 4244, EPS);
	assert_string_equal(str(j, "comm"), "llama-server");
	assert_string_equal(str(j, "conn"), "127.0.0.1:8080<-10.1.2.3:45678");
	/* 2^63 + 1 printed exactly, not as a rounded double */
	assert_non_null(strstr(c.buf, "\"sock_cookie\":9223372036854775809,"));
	assert_float_equal(num(j, "conn_seq"), 2, EPS);
	assert_string_equal(str(j, "method"), "POST");
	assert_string_equal(str(j, "path"), "/v1/chat/completions");
	assert_float_equal(num(j, "status"), 200, EPS);
	assert_string_equal(str(j, "api"), "chat");
	assert_float_equal(num(j, "ttft_ms"), 100.5, EPS);
	assert_string_equal(str(j, "ttft_end"), "xmit");
	assert_float_equal(num(j, "ttfv_ms"), 100.5, EPS);
	/* the head's write reached the device 20.3 ms in; the first event was written at 60 */
	assert_float_equal(num(j, "ttfb_ms"), 20.3, EPS);
	assert_float_equal(num(j, "ttfe_ms"), 60, EPS);
	assert_float_equal(num(j, "e2e_ms"), 150, EPS);
	/* (140 - 100.5) ms / (6 - 1) */
	assert_float_equal(num(j, "tpot_ms"), 7.9, EPS);
	arr = cJSON_GetObjectItemCaseSensitive(j, "itl_ms");
	assert_int_equal(cJSON_GetArraySize(arr), 2);
	assert_float_equal(cJSON_GetArrayItem(arr, 0)->valuedouble, 19.5, EPS);
	assert_float_equal(cJSON_GetArrayItem(arr, 1)->valuedouble, 20, EPS);
	assert_float_equal(num(j, "itl_mean_ms"), 19.75, EPS);
	/* stddev 0.25 / mean 19.75 = 0.012658 -> 4 decimals */
	assert_float_equal(num(j, "itl_cv"), 0.0127, EPS);
	assert_string_equal(str(j, "grade"), "A");
	assert_float_equal(num(j, "tokens"), 6, EPS);
	assert_float_equal(num(j, "token_events"), 3, EPS);
	assert_float_equal(num(j, "tokens_per_event"), 2, EPS);
	assert_string_equal(str(j, "token_source"), "usage");
	assert_float_equal(num(j, "prompt_tokens"), 12, EPS);
	assert_int_equal(cJSON_GetArraySize(cJSON_GetObjectItemCaseSensitive(j, "outliers")), 0);
	fl = cJSON_GetObjectItemCaseSensitive(j, "flags");
	assert_int_equal(cJSON_GetArraySize(fl), 3);
	assert_string_equal(cJSON_GetArrayItem(fl, 0)->valuestring, "stream");
	assert_string_equal(cJSON_GetArrayItem(fl, 1)->valuestring, "usage");
	/* written without TCP_NODELAY: Nagle may hold small SSE writes */
	assert_string_equal(cJSON_GetArrayItem(fl, 2)->valuestring, "nagle");
	assert_true(cJSON_IsFalse(cJSON_GetObjectItemCaseSensitive(j, "tcp_nodelay")));
	assert_non_null(strstr(c.buf, "\"t_arrival_ns\":1000000000,"));
	assert_non_null(strstr(c.buf, "\"t_first_token_ns\":1100500000,"));
	assert_non_null(strstr(c.buf, "\"t_end_ns\":1150000000,"));
	assert_float_equal(num(j, "req_bytes"), 300, EPS);
	assert_float_equal(num(j, "resp_bytes"), 2000, EPS);
	cJSON_Delete(j);
	cap_close(&c);
}

/* A unix stream connection: its two socket inodes (bpf/net.h), no ports. */
static void test_json_unix_conn(void **state)
{
	struct capture c;
	struct ttf_request r = req_c();
	uint64_t own = 1533473, peer = 1534614;
	cJSON *j;

	(void)state;
	r.addr.family = TTF_AF_UNIX;
	memcpy(r.addr.laddr, &own, sizeof(own));
	memcpy(r.addr.raddr, &peer, sizeof(peer));
	cap_open(&c, 1, 0);
	put(c.rp, &r);
	fflush(c.f);
	j = line_json(c.buf, 0);
	assert_string_equal(str(j, "conn"), "unix:1533473<-unix:1534614");
	cJSON_Delete(j);
	cap_close(&c);
}

static void test_json_nulls_ipv6_nonstream(void **state)
{
	struct capture c;
	struct ttf_request b = req_b(), cr = req_c();
	const cJSON *fl;
	cJSON *j;

	cap_open(&c, 1, 0);
	put(c.rp, &b);
	put(c.rp, &cr);
	fflush(c.f);

	j = line_json(c.buf, 0);
	assert_string_equal(str(j, "conn"), "[::1]:8080<-[::1]:5555");
	assert_string_equal(str(j, "api"), "completion");
	assert_null_field(j, "ttft_ms");
	assert_null_field(j, "ttft_end");
	assert_null_field(j, "ttfv_ms");
	assert_null_field(j, "ttfb_ms");
	assert_null_field(j, "ttfe_ms");
	assert_null_field(j, "tpot_ms");
	assert_null_field(j, "itl_mean_ms");
	assert_null_field(j, "itl_cv");
	assert_null_field(j, "tokens_per_event");
	assert_null_field(j, "prompt_tokens");
	assert_null_field(j, "t_first_token_ns");
	assert_null_field(j, "comm");
	assert_float_equal(num(j, "e2e_ms"), 30, EPS);
	assert_float_equal(num(j, "tokens"), 0, EPS);
	assert_string_equal(str(j, "grade"), "-");
	assert_string_equal(str(j, "token_source"), "events");
	fl = cJSON_GetObjectItemCaseSensitive(j, "flags");
	assert_int_equal(cJSON_GetArraySize(fl), 2);
	assert_string_equal(cJSON_GetArrayItem(fl, 1)->valuestring, "error");
	cJSON_Delete(j);

	j = line_json(c.buf, 1);
	assert_null_field(j, "conn");
	assert_string_equal(str(j, "api"), "llamacpp");
	assert_float_equal(num(j, "ttft_ms"), 400, EPS);
	assert_float_equal(num(j, "e2e_ms"), 400, EPS);
	assert_string_equal(str(j, "ttft_end"), "write");
	assert_float_equal(num(j, "tokens"), 40, EPS);
	fl = cJSON_GetObjectItemCaseSensitive(j, "flags");
	assert_int_equal(cJSON_GetArraySize(fl), 3);
	assert_string_equal(cJSON_GetArrayItem(fl, 0)->valuestring, "nonstream");
	assert_string_equal(cJSON_GetArrayItem(fl, 1)->valuestring, "usage");
	assert_string_equal(cJSON_GetArrayItem(fl, 2)->valuestring, "write-end");
	cJSON_Delete(j);
	cap_close(&c);
}

static void test_json_outliers_and_sanitized_path(void **state)
{
	struct capture c;
	struct ttf_request o = req_outlier();
	const cJSON *ol, *first;
	cJSON *j;

	cap_open(&c, 1, 0);
	put(c.rp, &o);
	fflush(c.f);
	j = line_json(c.buf, 0);
	assert_string_equal(str(j, "path"), "/a?[31mb");
	assert_string_equal(str(j, "grade"), "C");
	assert_float_equal(num(j, "itl_cv"), 1.5, EPS);
	ol = cJSON_GetObjectItemCaseSensitive(j, "outliers");
	assert_int_equal(cJSON_GetArraySize(ol), 1);
	first = cJSON_GetArrayItem(ol, 0);
	assert_float_equal(num(first, "index"), 5, EPS);
	assert_float_equal(num(first, "itl_ms"), 110, EPS);
	cJSON_Delete(j);
	cap_close(&c);
}

static void test_text_lines(void **state)
{
	struct capture c;
	struct ttf_request a = req_a(), b = req_b(), o = req_outlier();
	const char *hdr = "TIME(s)  PID       REQ PATH                  ST TTFT(ms) TPOT(ms)   TOK"
			  "    EV   E2E(ms) TTFB(ms) TTFE(ms) GR FLAGS\n";
	const char *la = "0.500    4242        1 /v1/chat/completions 200    100.5     7.90"
			 "     6     3     150.0     20.3     60.0  A stream,usage,nagle\n";
	const char *lb = "0.500    4242        2 /v1/completions      500        -        -"
			 "     0     0      30.0        -        -  - stream,error\n";
	const char *lo = "0.500    7           4 /a?[31mb             200    100.0    20.00"
			 "    11    11     310.0        -        -  C stream,write-end,nagle\n"
			 "    ITL outliers (> 3x mean 20.000 ms): #5 110.000 ms\n";
	char *want;

	cap_open(&c, 0, 1);
	report__header(c.rp);
	report__header(c.rp); /* printed once */
	put(c.rp, &a);
	put(c.rp, &b);
	put(c.rp, &o);
	fflush(c.f);
	assert_int_equal(asprintf(&want, "%s%s%s%s", hdr, la, lb, lo), (int)(strlen(hdr) +
			 strlen(la) + strlen(lb) + strlen(lo)));
	assert_string_equal(c.buf, want);
	free(want);
	cap_close(&c);
}

static const struct report_counter zero_counters[] = {
	{ "ringbuf_drops", 0 }, { "lost_sync", 0 },
};
static const struct report_counter some_counters[] = {
	{ "ringbuf_drops", 0 }, { "lost_sync", 3 },
};

static void feed_abc(struct capture *c)
{
	struct ttf_request a = req_a(), b = req_b(), cr = req_c();

	put(c->rp, &a);
	put(c->rp, &b);
	put(c->rp, &cr);
}

static void test_text_summary(void **state)
{
	struct capture c;

	cap_open(&c, 0, 0);
	feed_abc(&c);
	fflush(c.f);
	c.buf[0] = '\0'; /* only look at the summary */
	rewind(c.f);
	assert_int_equal(report__summary(c.rp, some_counters, 2), 0);
	/* TTFT 100.5, 400: P50 250.25, P90 370.05, P95 385.025, P99 397.005 */
	assert_non_null(strstr(c.buf, "TTFT(ms)            2    250.250    370.050    385.025"
				      "    397.005    250.250    400.000    100.500    149.750\n"));
	/* E2E 150, 400: request b (500) is not a success and feeds no percentile */
	assert_non_null(strstr(c.buf, "E2E(ms)             2    275.000    375.000    387.500"
				      "    397.500    275.000    400.000    150.000    125.000\n"));
	/* first arrival T0 to the last response end (c's write at T0 + 1.4 s); a and c succeed */
	assert_non_null(strstr(c.buf, "Duration 1.400 s (first request in to last response out): "
				      "1.429 successful requests/s, 32.9 output tokens/s; "
				      "output tokens 46, input tokens 12 (usage reports of 2 "
				      "requests).\n"));
	assert_non_null(strstr(c.buf, "Percentiles over the 2 successful requests (2xx, not "
				      "aborted, incomplete, error or unknown): 1 left out.\n"));
	/* ITL samples 19.5, 20 */
	assert_non_null(strstr(c.buf, "ITL(ms)             2     19.750     19.950     19.975"));
	assert_non_null(strstr(c.buf, "TPOT(ms)            1      7.900"));
	/* tokens 6 and 40; request b has neither tokens nor events */
	assert_non_null(strstr(c.buf, "tokens/req          2       23.0"));
	assert_non_null(strstr(c.buf, "TTFT n=2 of 3 requests"));
	assert_non_null(strstr(c.buf, "(xmit) for 1 requests, at write for 1."));
	assert_non_null(strstr(c.buf, "Outcomes: ok=2 aborted=0 incomplete=0 error=1 unknown=0 "
				      "nonstream=1 buffered=0 truncated=0\n"));
	assert_non_null(strstr(c.buf, "A=1 B=0 C=0 -=1\n"));
	assert_non_null(strstr(c.buf, "Drops and health:\n  lost_sync = 3\n"));
	assert_null(strstr(c.buf, "ringbuf_drops"));
	assert_null(strstr(c.buf, "none"));
	cap_close(&c);

	cap_open(&c, 0, 0);
	assert_int_equal(report__summary(c.rp, zero_counters, 2), 0);
	assert_non_null(strstr(c.buf, "Summary: 0 requests\n"));
	assert_non_null(strstr(c.buf, "TTFT(ms)            0          -"));
	assert_non_null(strstr(c.buf, "Drops and health:\n  none\n"));
	cap_close(&c);
}

static void test_json_summary(void **state)
{
	struct capture c;
	const cJSON *t, *sub;
	cJSON *j;

	cap_open(&c, 1, 0);
	feed_abc(&c);
	assert_int_equal(report__summary(c.rp, some_counters, 2), 0);
	j = line_json(c.buf, 3);
	assert_string_equal(str(j, "type"), "summary");
	assert_float_equal(num(j, "requests"), 3, EPS);
	t = cJSON_GetObjectItemCaseSensitive(j, "ttft_ms");
	assert_float_equal(num(t, "n"), 2, EPS);
	assert_float_equal(num(t, "p50"), 250.25, EPS);
	assert_float_equal(num(t, "p90"), 370.05, EPS);
	assert_float_equal(num(t, "p99"), 397.005, EPS);
	assert_float_equal(num(t, "min"), 100.5, EPS);
	assert_float_equal(num(t, "max"), 400, EPS);
	assert_float_equal(num(t, "std"), 149.75, EPS);
	assert_float_equal(num(j, "left_out_of_percentiles"), 1, EPS);
	assert_float_equal(num(j, "duration_s"), 1.4, EPS);
	assert_float_equal(num(j, "request_throughput"), 1.429, EPS);
	assert_float_equal(num(j, "output_token_throughput"), 32.857, EPS);
	assert_float_equal(num(j, "total_output_tokens"), 46, EPS);
	assert_float_equal(num(j, "total_input_tokens"), 12, EPS);
	t = cJSON_GetObjectItemCaseSensitive(j, "e2e_ms");
	assert_float_equal(num(t, "n"), 2, EPS);
	assert_float_equal(num(t, "mean"), 275, EPS);
	t = cJSON_GetObjectItemCaseSensitive(j, "itl_ms");
	assert_float_equal(num(t, "n"), 2, EPS);
	assert_float_equal(num(t, "p50"), 19.75, EPS);
	t = cJSON_GetObjectItemCaseSensitive(j, "ttfv_ms");
	assert_float_equal(num(t, "n"), 2, EPS);
	t = cJSON_GetObjectItemCaseSensitive(j, "ttfb_ms");
	assert_float_equal(num(t, "n"), 1, EPS);
	assert_float_equal(num(t, "p50"), 20.3, EPS);
	sub = cJSON_GetObjectItemCaseSensitive(j, "outcomes");
	assert_float_equal(num(sub, "ok"), 2, EPS);
	assert_float_equal(num(sub, "error"), 1, EPS);
	assert_float_equal(num(sub, "nonstream"), 1, EPS);
	assert_float_equal(num(sub, "aborted"), 0, EPS);
	sub = cJSON_GetObjectItemCaseSensitive(j, "grades");
	assert_float_equal(num(sub, "A"), 1, EPS);
	assert_float_equal(num(sub, "-"), 1, EPS);
	sub = cJSON_GetObjectItemCaseSensitive(j, "ttft_end");
	assert_float_equal(num(sub, "xmit"), 1, EPS);
	assert_float_equal(num(sub, "write"), 1, EPS);
	sub = cJSON_GetObjectItemCaseSensitive(j, "counters");
	assert_float_equal(num(sub, "ringbuf_drops"), 0, EPS); /* zeros too */
	assert_float_equal(num(sub, "lost_sync"), 3, EPS);
	cJSON_Delete(j);
	cap_close(&c);

	cap_open(&c, 1, 0);
	assert_int_equal(report__summary(c.rp, NULL, 0), 0);
	j = line_json(c.buf, 0);
	t = cJSON_GetObjectItemCaseSensitive(j, "tpot_ms");
	assert_float_equal(num(t, "n"), 0, EPS);
	assert_null_field(t, "p50");
	assert_null_field(t, "max");
	cJSON_Delete(j);
	cap_close(&c);
}

static void test_unknown_left_out_of_percentiles(void **state)
{
	struct capture c;
	struct ttf_request a = req_a(), u = req_a();

	u.flags |= TTF_REQ_UNKNOWN;
	u.events = NULL;
	u.n_events = 0;
	cap_open(&c, 0, 0);
	put(c.rp, &a);
	put(c.rp, &u);
	fflush(c.f);
	c.buf[0] = '\0';
	rewind(c.f);
	assert_int_equal(report__summary(c.rp, NULL, 0), 0);
	assert_non_null(strstr(c.buf, "TTFT n=1 of 2 requests"));
	assert_non_null(strstr(c.buf, "ok=1 aborted=0 incomplete=0 error=0 unknown=1"));
	cap_close(&c);
}

/* A request metrics refuses (events missing) is not dropped silently. */
static void test_invalid_request_counted(void **state)
{
	struct capture c;
	struct ttf_request bad = req_a();

	bad.events = NULL;
	cap_open(&c, 0, 0);
	put(c.rp, &bad);
	assert_int_equal(report__summary(c.rp, zero_counters, 2), 0);
	assert_non_null(strstr(c.buf, "Summary: 0 requests\n"));
	assert_non_null(strstr(c.buf, "Drops and health:\n  report_requests_invalid = 1\n"));
	cap_close(&c);
}

static void test_write_error_returned(void **state)
{
	struct report_opts o = { .sz = sizeof(o) };
	struct ttf_request a = req_a();
	struct report *rp;
	FILE *f = fopen("/dev/full", "w");

	if (!f)
		skip();
	o.out = f;
	rp = report__new(&o);
	assert_non_null(rp);
	report__header(rp);
	put(rp, &a);
	assert_int_equal(report__summary(rp, zero_counters, 2), -ENOSPC);
	report__free(rp);
	fclose(f);
}

static void test_new_rejects_bad_opts(void **state)
{
	struct report_opts o = { .sz = sizeof(o) };

	errno = 0;
	assert_null(report__new(&o)); /* no out */
	assert_int_equal(errno, EINVAL);
	assert_null(report__new(NULL));
	o.out = stdout;
	o.sz = 4;
	assert_null(report__new(&o));
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_json_request_fields),
		cmocka_unit_test(test_json_nulls_ipv6_nonstream),
		cmocka_unit_test(test_json_unix_conn),
		cmocka_unit_test(test_json_outliers_and_sanitized_path),
		cmocka_unit_test(test_text_lines),
		cmocka_unit_test(test_text_summary),
		cmocka_unit_test(test_json_summary),
		cmocka_unit_test(test_unknown_left_out_of_percentiles),
		cmocka_unit_test(test_invalid_request_counted),
		cmocka_unit_test(test_write_error_returned),
		cmocka_unit_test(test_new_rejects_bad_opts),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
