// SPDX-License-Identifier: GPL-2.0-only
/*
 * Token rules of typed SSE event streams, OpenAI Responses and Anthropic
 * Messages (sse_events.h; the event names are those of the two APIs'
 * streaming references, docs/metrics.md "Stream formats").
 */
#include <string.h>
#include "user/proto/request.h"
#include "user/proto/stream/sse_events.h"

static bool eq(const char *s, size_t n, const char *lit)
{
	return n == strlen(lit) && !memcmp(s, lit, n);
}

static bool has(const char *s, size_t n, const char *lit)
{
	return memmem(s, n, lit, strlen(lit)) != NULL;
}

static const char *const anthropic_types[] = {
	"message_start", "message_delta", "message_stop", "content_block_start",
	"content_block_delta", "content_block_stop", "ping",
};

enum sse_family sse_events__family(const char *type, size_t type_len)
{
	if (!type)
		return SSE_FAM_NONE;
	if (type_len > 9 && !memcmp(type, "response.", 9))
		return SSE_FAM_RESPONSES;
	for (size_t i = 0; i < sizeof(anthropic_types) / sizeof(anthropic_types[0]); i++)
		if (eq(type, type_len, anthropic_types[i]))
			return SSE_FAM_ANTHROPIC;
	if (eq(type, type_len, "error"))
		return SSE_FAM_ERROR;
	return SSE_FAM_NONE;
}

bool sse_events__is_delta(const char *type, size_t type_len)
{
	return type_len > 6 && !memcmp(type + type_len - 6, ".delta", 6);
}

static uint32_t to_u32(double d)
{
	if (d < 0)
		return 0;
	return d > 4294967295.0 ? UINT32_MAX : (uint32_t)d;
}

void sse_events__judge(enum sse_family fam, const struct sse_typed *t, struct sse_event_info *out)
{
	memset(out, 0, sizeof(*out));
	if (fam == SSE_FAM_ERROR) {
		out->kind = SSE_EV_ERROR;
		return;
	}
	if (fam == SSE_FAM_RESPONSES) {
		if (sse_events__is_delta(t->type, t->type_len)) {
			if (t->delta_str)
				out->token_flags = has(t->type, t->type_len, "reasoning") ?
					TTF_TOK_REASONING :
					has(t->type, t->type_len, "_call") ? TTF_TOK_TOOL : TTF_TOK_CONTENT;
		} else if (eq(t->type, t->type_len, "response.output_item.added")) {
			out->token_flags = t->item_flags;
		}
		if (t->failed)
			out->kind = SSE_EV_ERROR;
	} else if (fam == SSE_FAM_ANTHROPIC) {
		if (eq(t->type, t->type_len, "content_block_delta") && t->delta_type) {
			if (t->delta_text && eq(t->delta_type, t->delta_type_len, "text_delta"))
				out->token_flags = TTF_TOK_CONTENT;
			else if (t->delta_thinking &&
				 eq(t->delta_type, t->delta_type_len, "thinking_delta"))
				out->token_flags = TTF_TOK_REASONING;
			else if (t->delta_json &&
				 eq(t->delta_type, t->delta_type_len, "input_json_delta"))
				out->token_flags = TTF_TOK_TOOL;
		}
	}
	/* message_start's usage counts 1 output token before any: only message_delta's */
	if (t->has_out && (fam == SSE_FAM_RESPONSES || eq(t->type, t->type_len, "message_delta"))) {
		out->has_usage = 1;
		out->completion_tokens = to_u32(t->out_v);
		out->prompt_tokens = t->has_in ? to_u32(t->in_v) : 0;
	}
	if (out->token_flags) {
		out->kind = SSE_EV_TOKEN;
		out->n_tokens = 1;
	}
}
