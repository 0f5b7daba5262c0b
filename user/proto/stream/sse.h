/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * Server-sent events (text/event-stream) splitting and token classification.
 *
 * An SSE event ends at a blank line ("\n\n" or "\r\n\r\n"). Its data lines
 * are joined and classified:
 *   token: JSON whose choices[i].delta.content / .reasoning_content /
 *          .tool_calls, choices[i].text, or top-level "content" (llama.cpp
 *          /completion) is non-empty;
 *   not a token: role-only deltas, content null or "", usage-only chunks
 *          (choices: []), comments (":"), keep-alives, "[DONE]".
 * Usage (usage.completion_tokens / prompt_tokens, or llama.cpp
 * tokens_predicted / tokens_evaluated) is extracted when present.
 */
#ifndef TTFTRACE_SSE_H
#define TTFTRACE_SSE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

enum sse_kind {
	SSE_EV_OTHER = 0,  /* not a token (role-only, empty, keep-alive, comment, unparseable) */
	SSE_EV_TOKEN,      /* carries token text */
	SSE_EV_DONE,       /* data: [DONE] */
	SSE_EV_ERROR,      /* {"error": ...} */
};

struct sse_event_info {
	enum sse_kind kind;
	uint32_t token_flags;       /* TTF_TOK_* from request.h */
	uint32_t n_tokens;          /* tokens this event carries when the server says, else 1 (tokens only) */
	int has_usage;
	uint32_t completion_tokens; /* valid when has_usage */
	uint32_t prompt_tokens;
	int is_final;               /* finish_reason set / llama.cpp "stop": true */
};

/*
 * The top-level "id" string of one event's JSON payload when it looks like a
 * request id (zmtp_id_like(), docs/protocols.md P8): OpenAI-style servers
 * (vLLM, SGLang) send the request id as every chunk's "id". 0 with out
 * (NUL-terminated) filled, -ENOENT none or not an id, -ENOSPC too long.
 */
int sse_response_id(const char *data, size_t len, char *out, size_t out_len);

/* Classify one complete event's joined data payload (without "data: " prefixes). */
void sse_classify(const char *data, size_t len, struct sse_event_info *out);

/*
 * Incremental splitter: feed body bytes in order; for each complete event the
 * callback gets its joined data and the caller's tag of the feed that
 * completed it (e.g. the write's timestamp). sse_splitter__gap() tells it
 * bytes were not captured: a partial event is discarded and counted.
 */
struct sse_splitter;
typedef void (*sse_event_cb)(void *ctx, const char *data, size_t len, uint64_t tag);

struct sse_splitter *sse_splitter__new(sse_event_cb cb, void *ctx);
void sse_splitter__free(struct sse_splitter *s);
/* Returns 0 or -ENOMEM. */
int sse_splitter__feed(struct sse_splitter *s, const char *buf, size_t len, uint64_t tag);
void sse_splitter__gap(struct sse_splitter *s, size_t missing_bytes);
void sse_splitter__reset(struct sse_splitter *s);
/*
 * lines: split NDJSON instead (application/x-ndjson, Ollama): every
 * non-empty line is one event, an optional "data: " prefix dropped; a line
 * cut by a gap is dropped and counted. Kept across resets.
 */
void sse_splitter__set_lines(struct sse_splitter *s, bool lines);
/* Events discarded because bytes were missing. */
uint64_t sse_splitter__lost(const struct sse_splitter *s);

#endif /* TTFTRACE_SSE_H */
