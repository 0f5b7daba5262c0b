// SPDX-License-Identifier: GPL-2.0-only
/*
 * The allocation-free SSE classifier must agree with the cJSON path on every
 * payload it accepts, and refuse (fall back) where cJSON's semantics differ.
 */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <errno.h>
#include <string.h>
#include <cmocka.h>
#include "user/proto/request.h"
#include "user/proto/stream/sse_json.h"

static const char *const agree[] = {
	"{\"choices\":[{\"index\":0,\"delta\":{\"role\":\"assistant\",\"content\":\"\"},"
	"\"finish_reason\":null}]}",
	"{\"choices\":[{\"index\":0,\"delta\":{\"content\":\"Hi\"},\"finish_reason\":null}]}",
	"{\"choices\":[{\"delta\":{\"content\":null}}]}",
	"{\"choices\":[],\"usage\":{\"prompt_tokens\":12,\"completion_tokens\":34}}",
	"{\"choices\":[{\"delta\":{\"reasoning_content\":\"think\"}}]}",
	"{\"choices\":[{\"delta\":{\"reasoning\":\"x\"}}]}",
	"{\"choices\":[{\"delta\":{\"tool_calls\":[{\"id\":\"a\"}]}}]}",
	"{\"choices\":[{\"delta\":{\"tool_calls\":[]}}]}",
	"{\"choices\":[{\"text\":\"a\",\"finish_reason\":\"length\"}]}",
	"{\"choices\":[{\"delta\":{}},{\"delta\":{\"content\":\"second\"}}]}",
	"{\"content\":\"x\",\"stop\":false,\"tokens\":[1,2,3]}",
	"{\"content\":\"\",\"stop\":true,\"tokens_predicted\":16,\"tokens_evaluated\":65}",
	"{\"error\":{\"message\":\"bad\"}}",
	"{\"error\":null,\"choices\":[]}",
	"{\"choices\":[{\"delta\":{\"content\":\"\\u00e9\\n\\\"q\\\"\"}}]}",
	"{\"choices\":[{\"delta\":{\"content\":\"a\"}}],\"choices\":[]}",
	"{\"usage\":{\"completion_tokens\":-3,\"prompt_tokens\":1e10}}",
	"{\"usage\":{\"completion_tokens\":7.9}}",
	"{\"usage\":{\"completion_tokens\":\"7\"}}",
	"{\"tokens_predicted\":2,\"content\":\"\"}",
	"{\"a\":[[[[{\"b\":[1,2,{\"c\":null}]}]]]],\"content\":\"deep\"}",
	"{ \"choices\" : [ { \"delta\" : { \"content\" : \"sp\" } } ] }  trailing",
	"{\"choices\":{\"delta\":{\"content\":\"not an array\"}}}",
	"{\"choices\":[1,\"x\",null,{\"text\":\"y\"}]}",
	/* OpenAI Responses delta events, Anthropic Messages events */
	"{\"type\":\"response.output_text.delta\",\"item_id\":\"m\",\"delta\":\"Hi\"}",
	"{\"delta\":\"\",\"type\":\"response.output_text.delta\"}",
	"{\"type\":\"response.reasoning_summary_text.delta\",\"delta\":\"hmm\"}",
	"{\"type\":\"response.function_call_arguments.delta\",\"delta\":\"{\\\"a\\\"\"}",
	"{\"type\":\"response.output_text.delta\",\"delta\":\"x\",\"usage\":{\"output_tokens\":9}}",
	"{\"type\":\"content_block_delta\",\"index\":0,\"delta\":{\"type\":\"text_delta\",\"text\":\"Hi\"}}",
	"{\"type\":\"content_block_delta\",\"delta\":{\"text\":\"\",\"type\":\"text_delta\"}}",
	"{\"type\":\"content_block_delta\",\"delta\":{\"type\":\"thinking_delta\",\"thinking\":\"t\"}}",
	"{\"type\":\"content_block_delta\",\"delta\":{\"type\":\"input_json_delta\",\"partial_json\":\"{\"}}",
	"{\"type\":\"content_block_delta\",\"delta\":{\"type\":\"signature_delta\",\"signature\":\"s\"}}",
	"{\"type\":\"content_block_delta\",\"delta\":{\"type\":\"thinking_delta\",\"text\":\"wrong key\"}}",
	"{\"type\":\"message_delta\",\"delta\":{\"stop_reason\":\"end_turn\",\"stop_sequence\":null},"
	"\"usage\":{\"output_tokens\":15,\"input_tokens\":7}}",
	"{\"type\":\"message_start\",\"message\":{\"content\":[],\"usage\":{\"input_tokens\":25,\"output_tokens\":1}}}",
	"{\"type\":\"ping\"}",
	"{\"type\":\"error\",\"error\":{\"type\":\"overloaded_error\",\"message\":\"o\"}}",
	"{\"type\":\"error\",\"code\":\"x\",\"message\":\"m\"}",
	"{\"type\":\"ping\",\"content\":\"not a llama.cpp chunk\",\"choices\":[{\"text\":\"no\"}]}",
	"{\"type\":\"something_else\",\"content\":\"llama.cpp rules\"}",
	"{\"type\":7,\"content\":\"x\"}",
};

/* Payloads the fast path must leave to cJSON (differences in semantics or syntax). */
static const char *const refused[] = {
	"{\"con\\u0074ent\":\"escaped key\"}",
	"{\"content\":\"\\u0000\"}",
	"{\"content\":\"x\"",
	"{\"choices\":[{\"delta\":{\"content\":\"x\"}}],}",
	"{\"n\":01}",
	"{\"n\":1.}",
	"{\"s\":\"bad \\q escape\"}",
	"[1,2]",
	/* Responses events other than deltas, and escaped event names, are cJSON's */
	"{\"type\":\"response.created\",\"response\":{\"usage\":null}}",
	"{\"type\":\"response.output_item.added\",\"item\":{\"content\":[]}}",
	"{\"type\":\"response.output_text.delta\",\"delta\":\"x\",\"response\":{}}",
	"{\"type\":\"content_block\\u005fdelta\",\"delta\":{\"type\":\"text_delta\",\"text\":\"x\"}}",
};

static void same(const struct sse_event_info *a, const struct sse_event_info *b, const char *s)
{
	if (memcmp(a, b, sizeof(*a)))
		fail_msg("fast and cJSON paths differ on %s: kind %d/%d flags %u/%u n %u/%u "
			 "usage %d/%d %u/%u final %d/%d", s, a->kind, b->kind, a->token_flags,
			 b->token_flags, a->n_tokens, b->n_tokens, a->has_usage, b->has_usage,
			 a->completion_tokens, b->completion_tokens, a->is_final, b->is_final);
}

static void test_agree_with_cjson(void **state)
{
	for (size_t i = 0; i < sizeof(agree) / sizeof(agree[0]); i++) {
		struct sse_event_info fast, ref;

		assert_int_equal(sse_json__classify(agree[i], strlen(agree[i]), &fast), 0);
		sse__classify_cjson(agree[i], strlen(agree[i]), &ref);
		same(&fast, &ref, agree[i]);
	}
}

static void test_refuses_what_cjson_reads_differently(void **state)
{
	for (size_t i = 0; i < sizeof(refused) / sizeof(refused[0]); i++) {
		struct sse_event_info fast;

		if (sse_json__classify(refused[i], strlen(refused[i]), &fast) != -EINVAL)
			fail_msg("fast path accepted %s", refused[i]);
	}
}

/* Hand-checked values on the common shapes. */
static void test_values(void **state)
{
	struct sse_event_info o;
	const char *u = "{\"choices\":[],\"usage\":{\"prompt_tokens\":12,\"completion_tokens\":34}}";
	const char *t = "{\"choices\":[{\"delta\":{\"content\":\"Hi\"}}]}";

	assert_int_equal(sse_json__classify(u, strlen(u), &o), 0);
	assert_int_equal(o.kind, SSE_EV_OTHER);
	assert_int_equal(o.has_usage, 1);
	assert_int_equal(o.completion_tokens, 34);
	assert_int_equal(o.prompt_tokens, 12);
	assert_int_equal(sse_json__classify(t, strlen(t), &o), 0);
	assert_int_equal(o.kind, SSE_EV_TOKEN);
	assert_int_equal(o.token_flags, TTF_TOK_CONTENT);
	assert_int_equal(o.n_tokens, 1);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_agree_with_cjson),
		cmocka_unit_test(test_refuses_what_cjson_reads_differently),
		cmocka_unit_test(test_values),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
