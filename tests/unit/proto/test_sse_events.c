// SPDX-License-Identifier: GPL-2.0-only
/*
 * Token rules of the typed SSE formats (sse_events.h): OpenAI Responses and
 * Anthropic Messages events, classified through sse_classify() as the
 * recognizer sees them, with the values each event must give.
 */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <string.h>
#include <cmocka.h>
#include "user/proto/request.h"
#include "user/proto/stream/sse.h"

struct want {
	const char *data;
	enum sse_kind kind;
	uint32_t flags;
	int has_usage;
	uint32_t completion, prompt;
};

static const struct want cases[] = {
	/* OpenAI Responses */
	{ "{\"type\":\"response.created\",\"sequence_number\":0,\"response\":{\"id\":\"r\","
	  "\"status\":\"in_progress\",\"output\":[],\"usage\":null}}", SSE_EV_OTHER },
	{ "{\"type\":\"response.in_progress\",\"response\":{\"id\":\"r\",\"output\":[]}}",
	  SSE_EV_OTHER },
	{ "{\"type\":\"response.output_item.added\",\"output_index\":0,\"item\":{\"type\":"
	  "\"message\",\"id\":\"m\",\"role\":\"assistant\",\"content\":[]}}", SSE_EV_OTHER },
	{ "{\"type\":\"response.output_item.added\",\"item\":{\"type\":\"message\",\"content\":"
	  "[{\"type\":\"output_text\",\"text\":\"Hello\"}]}}", SSE_EV_TOKEN, TTF_TOK_CONTENT },
	{ "{\"type\":\"response.output_item.added\",\"item\":{\"type\":\"function_call\","
	  "\"arguments\":\"\"}}", SSE_EV_OTHER },
	{ "{\"type\":\"response.content_part.added\",\"part\":{\"type\":\"output_text\","
	  "\"text\":\"\"}}", SSE_EV_OTHER },
	{ "{\"type\":\"response.output_text.delta\",\"item_id\":\"m\",\"output_index\":0,"
	  "\"content_index\":0,\"delta\":\"Hel\"}", SSE_EV_TOKEN, TTF_TOK_CONTENT },
	{ "{\"type\":\"response.output_text.delta\",\"delta\":\"\"}", SSE_EV_OTHER },
	{ "{\"type\":\"response.refusal.delta\",\"delta\":\"no\"}", SSE_EV_TOKEN, TTF_TOK_CONTENT },
	{ "{\"type\":\"response.reasoning_text.delta\",\"delta\":\"think\"}", SSE_EV_TOKEN,
	  TTF_TOK_REASONING },
	{ "{\"type\":\"response.reasoning_summary_text.delta\",\"delta\":\"s\"}", SSE_EV_TOKEN,
	  TTF_TOK_REASONING },
	{ "{\"type\":\"response.function_call_arguments.delta\",\"delta\":\"{\\\"q\"}",
	  SSE_EV_TOKEN, TTF_TOK_TOOL },
	{ "{\"type\":\"response.output_text.done\",\"text\":\"Hello\"}", SSE_EV_OTHER },
	{ "{\"type\":\"response.completed\",\"response\":{\"status\":\"completed\",\"output\":"
	  "[{\"content\":[{\"text\":\"Hello\"}]}],\"usage\":{\"input_tokens\":11,"
	  "\"output_tokens\":5,\"total_tokens\":16}}}", SSE_EV_OTHER, 0, 1, 5, 11 },
	{ "{\"type\":\"response.failed\",\"response\":{\"status\":\"failed\",\"usage\":null}}",
	  SSE_EV_ERROR },
	{ "{\"type\":\"error\",\"code\":\"server_error\",\"message\":\"m\",\"param\":null}",
	  SSE_EV_ERROR },
	/* usage outside response.usage is not the Responses report */
	{ "{\"type\":\"response.output_text.delta\",\"delta\":\"a\",\"usage\":"
	  "{\"output_tokens\":99}}", SSE_EV_TOKEN, TTF_TOK_CONTENT },
	/* Anthropic Messages */
	{ "{\"type\":\"message_start\",\"message\":{\"id\":\"msg\",\"role\":\"assistant\","
	  "\"content\":[],\"usage\":{\"input_tokens\":25,\"output_tokens\":1}}}", SSE_EV_OTHER },
	{ "{\"type\":\"ping\"}", SSE_EV_OTHER },
	{ "{\"type\":\"content_block_start\",\"index\":0,\"content_block\":{\"type\":\"text\","
	  "\"text\":\"\"}}", SSE_EV_OTHER },
	{ "{\"type\":\"content_block_delta\",\"index\":0,\"delta\":{\"type\":\"text_delta\","
	  "\"text\":\"Hi\"}}", SSE_EV_TOKEN, TTF_TOK_CONTENT },
	{ "{\"type\":\"content_block_delta\",\"delta\":{\"type\":\"text_delta\",\"text\":\"\"}}",
	  SSE_EV_OTHER },
	{ "{\"type\":\"content_block_delta\",\"delta\":{\"type\":\"thinking_delta\","
	  "\"thinking\":\"Let me\"}}", SSE_EV_TOKEN, TTF_TOK_REASONING },
	{ "{\"type\":\"content_block_delta\",\"delta\":{\"type\":\"signature_delta\","
	  "\"signature\":\"EqQ\"}}", SSE_EV_OTHER },
	{ "{\"type\":\"content_block_delta\",\"delta\":{\"type\":\"input_json_delta\","
	  "\"partial_json\":\"{\\\"city\\\"\"}}", SSE_EV_TOKEN, TTF_TOK_TOOL },
	{ "{\"type\":\"content_block_stop\",\"index\":0}", SSE_EV_OTHER },
	{ "{\"type\":\"message_delta\",\"delta\":{\"stop_reason\":\"end_turn\"},\"usage\":"
	  "{\"output_tokens\":15}}", SSE_EV_OTHER, 0, 1, 15, 0 },
	{ "{\"type\":\"message_stop\"}", SSE_EV_OTHER },
	{ "{\"type\":\"error\",\"error\":{\"type\":\"overloaded_error\",\"message\":\"o\"}}",
	  SSE_EV_ERROR },
	/* OpenAI chat, n=2: the first visible content may be on any choice */
	{ "{\"choices\":[{\"index\":0,\"delta\":{\"role\":\"assistant\"}},{\"index\":1,"
	  "\"delta\":{\"content\":\"B\"}}]}", SSE_EV_TOKEN, TTF_TOK_CONTENT },
};

static void test_typed_rules(void **state)
{
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		const struct want *w = &cases[i];
		struct sse_event_info o;

		sse_classify(w->data, strlen(w->data), &o);
		if (o.kind != w->kind || o.token_flags != w->flags || o.has_usage != w->has_usage ||
		    o.completion_tokens != w->completion || o.prompt_tokens != w->prompt ||
		    (w->kind == SSE_EV_TOKEN && o.n_tokens != 1))
			fail_msg("%s: kind %d flags %u usage %d %u/%u n %u", w->data, o.kind,
				 o.token_flags, o.has_usage, o.completion_tokens, o.prompt_tokens,
				 o.n_tokens);
	}
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_typed_rules),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
