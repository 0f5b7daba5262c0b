/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * Typed event streams: the token rules of the SSE formats whose data objects
 * name their event in a top-level "type" (docs/metrics.md "Stream formats"):
 *
 *   OpenAI Responses ("type": "response.*"):
 *     token: every "response.*.delta" event with a non-empty string "delta"
 *            (output_text, refusal, audio_transcript: content; reasoning_*:
 *            reasoning; *_call_*: tool), and a response.output_item.added
 *            whose item already carries text or arguments;
 *     not:   response.created, response.in_progress, an empty
 *            response.output_item.added, *.done, response.completed;
 *     usage: response.usage.output_tokens / input_tokens (response.completed,
 *            .incomplete); error: "error", response.failed.
 *   Anthropic Messages (message_start, content_block_*, message_delta,
 *   message_stop, ping, error):
 *     token: content_block_delta whose delta is a text_delta with non-empty
 *            "text" (content), a thinking_delta with "thinking" (reasoning),
 *            or an input_json_delta with "partial_json" (tool);
 *     not:   message_start, content_block_start/stop, ping, message_stop,
 *            signature_delta, citations_delta;
 *     usage: message_delta usage.output_tokens / input_tokens; error: "error".
 *   Usage is read from response.usage (Responses) and the top-level usage
 *   (Anthropic) only; "type": "error" is an error event in both.
 *
 * Both JSON readers (the fast scanner in sse_json.c and the cJSON path in
 * sse.c) gather the facts below and judge them here, so that they agree.
 */
#ifndef TTFTRACE_SSE_EVENTS_H
#define TTFTRACE_SSE_EVENTS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include "user/proto/stream/sse.h"

enum sse_family {
	SSE_FAM_NONE = 0,	/* no "type", or one neither format uses: OpenAI chunk rules */
	SSE_FAM_RESPONSES,	/* OpenAI Responses */
	SSE_FAM_ANTHROPIC,	/* Anthropic Messages */
	SSE_FAM_ERROR,		/* "type": "error" (both formats): an error event */
};

/* What a typed event says; raw string bytes (no escapes), lengths in bytes. */
struct sse_typed {
	const char *type;		/* top-level "type" */
	size_t type_len;
	bool delta_str;			/* top-level "delta" is a non-empty string */
	const char *delta_type;		/* "delta" is an object: its "type" */
	size_t delta_type_len;
	bool delta_text, delta_thinking, delta_json; /* its non-empty "text", "thinking", "partial_json" */
	uint32_t item_flags;		/* output_item.added: TTF_TOK_* its item already carries */
	bool has_out, has_in;		/* usage.output_tokens / input_tokens are numbers */
	double out_v, in_v;
	bool failed;			/* Responses: "response.failed" */
};

/* The family a top-level "type" value belongs to. */
enum sse_family sse_events__family(const char *type, size_t type_len);
/* Whether a Responses type ends in ".delta" (the events the fast scanner judges itself). */
bool sse_events__is_delta(const char *type, size_t type_len);
/* Fill *out (zeroed first) from the facts of an event of family fam != SSE_FAM_NONE. */
void sse_events__judge(enum sse_family fam, const struct sse_typed *t, struct sse_event_info *out);

#endif /* TTFTRACE_SSE_EVENTS_H */
