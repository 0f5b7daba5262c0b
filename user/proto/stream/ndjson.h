/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * NDJSON token streams (Content-Type: application/x-ndjson), as Ollama
 * streams /api/chat and /api/generate and as its runner answers the server:
 * one JSON object per line (user/proto/stream/sse.h splits them).
 *   token: message.content, message.thinking (reasoning), message.tool_calls
 *          (/api/chat), response or thinking (/api/generate), or a top-level
 *          content (the runner's lines) that is non-empty;
 *   final: "done": true (a line without token text is SSE_EV_DONE);
 *   usage: eval_count (completion tokens), prompt_eval_count;
 *   error: a top-level "error".
 * Fields: Ollama's API reference (api.md in ollama/ollama), its llm/server.go for
 * the runner's lines (docs/protocols.md P7).
 */
#ifndef TTFTRACE_NDJSON_H
#define TTFTRACE_NDJSON_H

#include <stddef.h>
#include "user/proto/stream/sse.h"

/* Classify one line (without its newline). */
void ndjson_classify(const char *line, size_t len, struct sse_event_info *out);

#endif /* TTFTRACE_NDJSON_H */
