// SPDX-License-Identifier: GPL-2.0-only
/* NDJSON token lines (user/proto/stream/ndjson.h) and the splitter's line mode (sse.h). */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <string.h>
#include <cmocka.h>
#include "user/proto/stream/ndjson.h"
#include "user/proto/request.h"
#include "user/proto/stream/sse.h"

static void classify(const char *line, struct sse_event_info *out)
{
	ndjson_classify(line, strlen(line), out);
}

/* Ollama's /api/chat and /api/generate lines, and its runner's. */
static void test_ollama_lines(void **state)
{
	struct sse_event_info i;

	(void)state;
	classify("{\"model\":\"m\",\"message\":{\"role\":\"assistant\",\"content\":\"Hi\"},"
		 "\"done\":false}", &i);
	assert_int_equal(i.kind, SSE_EV_TOKEN);
	assert_int_equal(i.token_flags, TTF_TOK_CONTENT);
	assert_false(i.is_final);
	classify("{\"message\":{\"role\":\"assistant\",\"content\":\"\"},\"done\":false}", &i);
	assert_int_equal(i.kind, SSE_EV_OTHER);		/* empty content: not a token */
	classify("{\"message\":{\"role\":\"assistant\",\"content\":\"\",\"thinking\":\"hm\"}}", &i);
	assert_int_equal(i.kind, SSE_EV_TOKEN);
	assert_int_equal(i.token_flags, TTF_TOK_REASONING);
	classify("{\"message\":{\"content\":\"\",\"tool_calls\":[{\"function\":{}}]}}", &i);
	assert_int_equal(i.token_flags, TTF_TOK_TOOL);
	classify("{\"response\":\" world\",\"done\":false}", &i);	/* /api/generate */
	assert_int_equal(i.kind, SSE_EV_TOKEN);
	classify("{\"content\":\"x\",\"stop\":false}", &i);		/* the runner's */
	assert_int_equal(i.kind, SSE_EV_TOKEN);
	classify("{\"message\":{\"content\":\"\"},\"done\":true,\"eval_count\":12,"
		 "\"prompt_eval_count\":30}", &i);
	assert_int_equal(i.kind, SSE_EV_DONE);
	assert_true(i.is_final);
	assert_true(i.has_usage);
	assert_int_equal(i.completion_tokens, 12);
	assert_int_equal(i.prompt_tokens, 30);
	classify("{\"error\":\"model not found\"}", &i);
	assert_int_equal(i.kind, SSE_EV_ERROR);
	classify("not json", &i);
	assert_int_equal(i.kind, SSE_EV_OTHER);
}

struct got {
	char lines[8][64];
	uint64_t tags[8];
	int n;
};

static void on_line(void *ctx, const char *data, size_t len, uint64_t tag)
{
	struct got *g = ctx;

	assert_true(g->n < 8 && len < 64);
	memcpy(g->lines[g->n], data, len);
	g->lines[g->n][len] = 0;
	g->tags[g->n++] = tag;
}

/*
 * Lines split across feeds, CRLF, a "data: " prefix and an empty line; a
 * gap cuts one line, which is dropped and counted, and the next is whole.
 */
static void test_line_splitter(void **state)
{
	struct got g = { .n = 0 };
	struct sse_splitter *s = sse_splitter__new(on_line, &g);

	(void)state;
	assert_non_null(s);
	sse_splitter__set_lines(s, true);
	assert_int_equal(sse_splitter__feed(s, "{\"a\":1}\n{\"b\"", 12, 10), 0);
	assert_int_equal(sse_splitter__feed(s, ":2}\r\n\ndata: {\"c\":3}\n", 21, 20), 0);
	assert_int_equal(g.n, 3);
	assert_string_equal(g.lines[0], "{\"a\":1}");
	assert_int_equal(g.tags[0], 10);
	assert_string_equal(g.lines[1], "{\"b\":2}");
	assert_int_equal(g.tags[1], 20);		/* the feed that ended it */
	assert_string_equal(g.lines[2], "{\"c\":3}");
	assert_int_equal(sse_splitter__feed(s, "{\"d\"", 4, 30), 0);
	sse_splitter__gap(s, 100);
	assert_int_equal(sse_splitter__feed(s, "x\":4}\n{\"e\":5}\n", 14, 40), 0);
	assert_int_equal(g.n, 4);
	assert_string_equal(g.lines[3], "{\"e\":5}");
	assert_int_equal(sse_splitter__lost(s), 1);
	sse_splitter__free(s);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_ollama_lines),
		cmocka_unit_test(test_line_splitter),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
