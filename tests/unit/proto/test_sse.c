// SPDX-License-Identifier: GPL-2.0-only
/* sse.c: token classification and the incremental event splitter. */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <string.h>
#include <cmocka.h>
#include "user/proto/request.h"
#include "user/proto/stream/sse.h"

static void classify(const char *s, struct sse_event_info *out)
{
	sse_classify(s, strlen(s), out);
}

static void test_role_only_not_token(void **state)
{
	struct sse_event_info i;

	classify("{\"choices\":[{\"index\":0,\"delta\":{\"role\":\"assistant\"},"
		 "\"finish_reason\":null}]}", &i);
	assert_int_equal(i.kind, SSE_EV_OTHER);
	assert_int_equal(i.token_flags, 0);
	assert_false(i.is_final);
}

static void test_empty_and_null_content_not_token(void **state)
{
	struct sse_event_info i;

	classify("{\"choices\":[{\"delta\":{\"content\":\"\"}}]}", &i);
	assert_int_equal(i.kind, SSE_EV_OTHER);
	classify("{\"choices\":[{\"delta\":{\"content\":null}}]}", &i);
	assert_int_equal(i.kind, SSE_EV_OTHER);
	classify("{\"choices\":[{\"text\":\"\"}]}", &i);
	assert_int_equal(i.kind, SSE_EV_OTHER);
	classify("{\"content\":\"\",\"stop\":false}", &i);
	assert_int_equal(i.kind, SSE_EV_OTHER);
}

static void test_content_and_reasoning(void **state)
{
	struct sse_event_info i;

	classify("{\"choices\":[{\"delta\":{\"content\":\"Hi\"}}]}", &i);
	assert_int_equal(i.kind, SSE_EV_TOKEN);
	assert_int_equal(i.token_flags, TTF_TOK_CONTENT);
	assert_int_equal(i.n_tokens, 1);

	classify("{\"choices\":[{\"delta\":{\"content\":null,\"reasoning_content\":\"hm\"}}]}", &i);
	assert_int_equal(i.kind, SSE_EV_TOKEN);
	assert_int_equal(i.token_flags, TTF_TOK_REASONING);

	classify("{\"choices\":[{\"delta\":{\"reasoning\":\"so\"}}]}", &i);
	assert_int_equal(i.token_flags, TTF_TOK_REASONING);

	classify("{\"choices\":[{\"delta\":{\"tool_calls\":[{\"index\":0}]}}]}", &i);
	assert_int_equal(i.kind, SSE_EV_TOKEN);
	assert_int_equal(i.token_flags, TTF_TOK_TOOL);

	classify("{\"choices\":[{\"delta\":{\"tool_calls\":[]}}]}", &i);
	assert_int_equal(i.kind, SSE_EV_OTHER);

	classify("{\"choices\":[{\"text\":\" the\",\"finish_reason\":\"length\"}]}", &i);
	assert_int_equal(i.kind, SSE_EV_TOKEN);
	assert_true(i.is_final);
}

static void test_usage_only_chunk(void **state)
{
	struct sse_event_info i;

	classify("{\"choices\":[],\"usage\":{\"prompt_tokens\":12,\"completion_tokens\":34,"
		 "\"total_tokens\":46}}", &i);
	assert_int_equal(i.kind, SSE_EV_OTHER);
	assert_true(i.has_usage);
	assert_int_equal(i.completion_tokens, 34);
	assert_int_equal(i.prompt_tokens, 12);

	/* stream_options chunks carry "usage": null before the end */
	classify("{\"choices\":[{\"delta\":{\"content\":\"a\"}}],\"usage\":null}", &i);
	assert_int_equal(i.kind, SSE_EV_TOKEN);
	assert_false(i.has_usage);
}

static void test_done_error_garbage(void **state)
{
	struct sse_event_info i;

	classify("[DONE]", &i);
	assert_int_equal(i.kind, SSE_EV_DONE);
	classify(" [DONE] ", &i);
	assert_int_equal(i.kind, SSE_EV_DONE);
	classify("{\"error\":{\"message\":\"boom\"}}", &i);
	assert_int_equal(i.kind, SSE_EV_ERROR);
	classify("{\"choices\":[{\"delta\":{\"content\":\"x\"", &i);
	assert_int_equal(i.kind, SSE_EV_OTHER);
	classify("", &i);
	assert_int_equal(i.kind, SSE_EV_OTHER);
	classify("[1,2]", &i);
	assert_int_equal(i.kind, SSE_EV_OTHER);
}

static void test_llamacpp(void **state)
{
	struct sse_event_info i;

	classify("{\"content\":\"x\",\"stop\":false,\"id_slot\":0}", &i);
	assert_int_equal(i.kind, SSE_EV_TOKEN);
	assert_int_equal(i.n_tokens, 1);
	classify("{\"content\":\"ab\",\"tokens\":[5,6],\"stop\":false}", &i);
	assert_int_equal(i.kind, SSE_EV_TOKEN);
	assert_int_equal(i.n_tokens, 2);
	classify("{\"content\":\"\",\"stop\":true,\"tokens_predicted\":17,\"tokens_evaluated\":9}",
		 &i);
	assert_int_equal(i.kind, SSE_EV_OTHER);
	assert_true(i.is_final);
	assert_true(i.has_usage);
	assert_int_equal(i.completion_tokens, 17);
	assert_int_equal(i.prompt_tokens, 9);
}

/* ---- splitter ---- */

#define MAX_GOT 16
struct got {
	int n;
	char data[MAX_GOT][128];
	uint64_t tag[MAX_GOT];
};

static void on_ev(void *ctx, const char *data, size_t len, uint64_t tag)
{
	struct got *g = ctx;

	assert_true(g->n < MAX_GOT);
	assert_true(len < sizeof(g->data[0]));
	memcpy(g->data[g->n], data, len);
	g->data[g->n][len] = 0;
	g->tag[g->n++] = tag;
}

static void feed(struct sse_splitter *s, const char *str, uint64_t tag)
{
	assert_int_equal(sse_splitter__feed(s, str, strlen(str), tag), 0);
}

static void test_split_coalesced(void **state)
{
	struct got g = {};
	struct sse_splitter *s = sse_splitter__new(on_ev, &g);

	feed(s, "data: a\n\ndata: b\n\ndata: c\n\n", 7);
	assert_int_equal(g.n, 3);
	assert_string_equal(g.data[0], "a");
	assert_string_equal(g.data[2], "c");
	assert_int_equal(g.tag[0], 7);
	assert_int_equal(g.tag[2], 7);
	sse_splitter__free(s);
}

static void test_split_across_feeds_crlf_multiline(void **state)
{
	struct got g = {};
	struct sse_splitter *s = sse_splitter__new(on_ev, &g);

	/* CRLF split between feeds, multi-line data, a comment and an event with no data */
	feed(s, ": keep-alive\r\n\r\ndata: x\r", 1);
	assert_int_equal(g.n, 0);
	feed(s, "\ndata:y\r\n", 2);
	assert_int_equal(g.n, 0);
	feed(s, "\r\nevent: ping\n\n", 3);
	assert_int_equal(g.n, 1);
	assert_string_equal(g.data[0], "x\ny");
	assert_int_equal(g.tag[0], 3);
	assert_int_equal(sse_splitter__lost(s), 0);
	sse_splitter__free(s);
}

static void test_split_gap_does_not_invent(void **state)
{
	struct got g = {};
	struct sse_splitter *s = sse_splitter__new(on_ev, &g);

	feed(s, "data: {\"a\":1}\n\ndata: {\"b\"", 1);
	sse_splitter__gap(s, 40);
	/* the rest after the gap looks like a data line but is a fragment */
	feed(s, "data: 2}\n\ndata: z\n\n", 2);
	assert_int_equal(g.n, 2);
	assert_string_equal(g.data[0], "{\"a\":1}");
	assert_string_equal(g.data[1], "z");
	assert_int_equal(sse_splitter__lost(s), 1);
	sse_splitter__free(s);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_role_only_not_token),
		cmocka_unit_test(test_empty_and_null_content_not_token),
		cmocka_unit_test(test_content_and_reasoning),
		cmocka_unit_test(test_usage_only_chunk),
		cmocka_unit_test(test_done_error_garbage),
		cmocka_unit_test(test_llamacpp),
		cmocka_unit_test(test_split_coalesced),
		cmocka_unit_test(test_split_across_feeds_crlf_multiline),
		cmocka_unit_test(test_split_gap_does_not_invent),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
