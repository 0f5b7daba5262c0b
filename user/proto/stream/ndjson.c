// SPDX-License-Identifier: GPL-2.0-only
/* NDJSON token lines (ndjson.h). */
#include <cjson/cJSON.h>
#include <string.h>
#include "user/proto/stream/ndjson.h"
#include "user/proto/request.h"

static int nonempty_str(const cJSON *o, const char *key)
{
	const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, key);

	return cJSON_IsString(v) && v->valuestring[0];
}

static void count(const cJSON *o, const char *key, uint32_t *out, int *have)
{
	const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, key);

	if (cJSON_IsNumber(v) && v->valuedouble >= 0 && v->valuedouble < 4294967296.0) {
		*out = (uint32_t)v->valuedouble;
		*have = 1;
	}
}

void ndjson_classify(const char *line, size_t len, struct sse_event_info *out)
{
	cJSON *j = cJSON_ParseWithLength(line, len), *msg, *tools, *done;

	memset(out, 0, sizeof(*out));
	out->kind = SSE_EV_OTHER;
	if (!cJSON_IsObject(j)) {
		cJSON_Delete(j);
		return;
	}
	if (cJSON_GetObjectItemCaseSensitive(j, "error")) {
		out->kind = SSE_EV_ERROR;
		cJSON_Delete(j);
		return;
	}
	msg = cJSON_GetObjectItemCaseSensitive(j, "message");
	if (cJSON_IsObject(msg)) {
		tools = cJSON_GetObjectItemCaseSensitive(msg, "tool_calls");
		if (nonempty_str(msg, "content"))
			out->token_flags |= TTF_TOK_CONTENT;
		if (nonempty_str(msg, "thinking"))
			out->token_flags |= TTF_TOK_REASONING;
		if (cJSON_IsArray(tools) && cJSON_GetArraySize(tools) > 0)
			out->token_flags |= TTF_TOK_TOOL;
	}
	if (nonempty_str(j, "response") || nonempty_str(j, "content"))
		out->token_flags |= TTF_TOK_CONTENT;
	if (nonempty_str(j, "thinking"))
		out->token_flags |= TTF_TOK_REASONING;
	done = cJSON_GetObjectItemCaseSensitive(j, "done");
	out->is_final = cJSON_IsTrue(done);
	if (out->token_flags) {
		out->kind = SSE_EV_TOKEN;
		out->n_tokens = 1;
	} else if (out->is_final) {
		out->kind = SSE_EV_DONE;
	}
	count(j, "eval_count", &out->completion_tokens, &out->has_usage);
	count(j, "prompt_eval_count", &out->prompt_tokens, &out->has_usage);
	cJSON_Delete(j);
}
