/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * Fast path of sse_classify(): classify one JSON payload without building a
 * tree. Returns 0 with *out filled exactly as the cJSON path would, or
 * -EINVAL for input it does not handle (malformed JSON, escaped keys,
 * "\u0000", nesting deeper than 64): the caller then uses cJSON.
 */
#ifndef TTFTRACE_SSE_JSON_H
#define TTFTRACE_SSE_JSON_H

#include <stddef.h>
#include "user/proto/stream/sse.h"

int sse_json__classify(const char *data, size_t len, struct sse_event_info *out);
/* The reference path on a cJSON tree (trimmed payload starting with '{'). */
void sse__classify_cjson(const char *data, size_t len, struct sse_event_info *out);

#endif /* TTFTRACE_SSE_JSON_H */
