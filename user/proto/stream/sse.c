// SPDX-License-Identifier: GPL-2.0-only
/*
 * SSE splitting (WHATWG HTML "event stream interpretation": lines end at
 * CRLF, LF or CR; an empty line dispatches; "data" lines are joined with LF)
 * and token classification of OpenAI and llama.cpp stream chunks.
 */
#include <errno.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <cjson/cJSON.h>
#include "user/proto/request.h"
#include "user/proto/stream/sse.h"
#include "user/proto/stream/sse_events.h"
#include "user/proto/stream/sse_json.h"
#include "user/proto/zmtp/zmtp.h"

/* An event larger than this is dropped and counted lost (bounds memory per connection). */
#define SSE_MAX_EVENT_BYTES (256u * 1024)

static bool str_nonempty(const cJSON *j)
{
	return cJSON_IsString(j) && j->valuestring && j->valuestring[0];
}

static bool array_nonempty(const cJSON *j)
{
	return cJSON_IsArray(j) && cJSON_GetArraySize(j) > 0;
}

static uint32_t num_u32(const cJSON *j)
{
	if (!cJSON_IsNumber(j) || j->valuedouble < 0)
		return 0;
	if (j->valuedouble > 4294967295.0)
		return UINT32_MAX;
	return (uint32_t)j->valuedouble;
}

static void classify_choice(const cJSON *ch, struct sse_event_info *out)
{
	const cJSON *delta, *fr;

	if (!cJSON_IsObject(ch))
		return;
	delta = cJSON_GetObjectItemCaseSensitive(ch, "delta");
	if (cJSON_IsObject(delta)) {
		if (str_nonempty(cJSON_GetObjectItemCaseSensitive(delta, "content")))
			out->token_flags |= TTF_TOK_CONTENT;
		if (str_nonempty(cJSON_GetObjectItemCaseSensitive(delta, "reasoning_content")) ||
		    str_nonempty(cJSON_GetObjectItemCaseSensitive(delta, "reasoning")))
			out->token_flags |= TTF_TOK_REASONING;
		if (array_nonempty(cJSON_GetObjectItemCaseSensitive(delta, "tool_calls")))
			out->token_flags |= TTF_TOK_TOOL;
	}
	if (str_nonempty(cJSON_GetObjectItemCaseSensitive(ch, "text")))
		out->token_flags |= TTF_TOK_CONTENT;
	fr = cJSON_GetObjectItemCaseSensitive(ch, "finish_reason");
	if (str_nonempty(fr))
		out->is_final = 1;
}

void sse_classify(const char *data, size_t len, struct sse_event_info *out)
{
	memset(out, 0, sizeof(*out));
	while (len && (*data == ' ' || *data == '\t' || *data == '\r' || *data == '\n')) {
		data++;
		len--;
	}
	while (len && (data[len - 1] == ' ' || data[len - 1] == '\t' || data[len - 1] == '\r' ||
		       data[len - 1] == '\n'))
		len--;
	if (len == 6 && !memcmp(data, "[DONE]", 6)) {
		out->kind = SSE_EV_DONE;
		return;
	}
	if (!len || data[0] != '{')
		return;
	if (sse_json__classify(data, len, out) == 0)
		return;
	sse__classify_cjson(data, len, out);
}

/* TTF_TOK_* that a Responses output item already carries (output_item.added). */
static uint32_t item_flags(const cJSON *item)
{
	const cJSON *part;
	uint32_t f = 0;

	if (!cJSON_IsObject(item))
		return 0;
	cJSON_ArrayForEach(part, cJSON_GetObjectItemCaseSensitive(item, "content"))
		if (cJSON_IsObject(part) &&
		    str_nonempty(cJSON_GetObjectItemCaseSensitive(part, "text")))
			f |= TTF_TOK_CONTENT;
	cJSON_ArrayForEach(part, cJSON_GetObjectItemCaseSensitive(item, "summary"))
		if (cJSON_IsObject(part) &&
		    str_nonempty(cJSON_GetObjectItemCaseSensitive(part, "text")))
			f |= TTF_TOK_REASONING;
	if (str_nonempty(cJSON_GetObjectItemCaseSensitive(item, "arguments")))
		f |= TTF_TOK_TOOL;
	return f;
}

static void usage_out_in(const cJSON *usage, struct sse_typed *t)
{
	const cJSON *o = cJSON_GetObjectItemCaseSensitive(usage, "output_tokens");
	const cJSON *i = cJSON_GetObjectItemCaseSensitive(usage, "input_tokens");

	if (!cJSON_IsObject(usage))
		return;
	if (cJSON_IsNumber(o)) {
		t->has_out = true;
		t->out_v = o->valuedouble;
	}
	if (cJSON_IsNumber(i)) {
		t->has_in = true;
		t->in_v = i->valuedouble;
	}
}

/* Responses and Anthropic events (sse_events.h); false: not a typed event. */
static bool classify_typed(const cJSON *root, struct sse_event_info *out)
{
	const cJSON *type = cJSON_GetObjectItemCaseSensitive(root, "type");
	const cJSON *delta, *dt, *resp;
	struct sse_typed t = {};
	enum sse_family fam;

	if (!cJSON_IsString(type) || !type->valuestring)
		return false;
	t.type = type->valuestring;
	t.type_len = strlen(t.type);
	fam = sse_events__family(t.type, t.type_len);
	if (fam == SSE_FAM_NONE)
		return false;
	delta = cJSON_GetObjectItemCaseSensitive(root, "delta");
	t.delta_str = str_nonempty(delta);
	if (cJSON_IsObject(delta)) {
		dt = cJSON_GetObjectItemCaseSensitive(delta, "type");
		if (cJSON_IsString(dt) && dt->valuestring) {
			t.delta_type = dt->valuestring;
			t.delta_type_len = strlen(dt->valuestring);
		}
		t.delta_text = str_nonempty(cJSON_GetObjectItemCaseSensitive(delta, "text"));
		t.delta_thinking = str_nonempty(cJSON_GetObjectItemCaseSensitive(delta, "thinking"));
		t.delta_json = str_nonempty(cJSON_GetObjectItemCaseSensitive(delta, "partial_json"));
	}
	if (fam == SSE_FAM_RESPONSES) {
		resp = cJSON_GetObjectItemCaseSensitive(root, "response");
		if (cJSON_IsObject(resp))
			usage_out_in(cJSON_GetObjectItemCaseSensitive(resp, "usage"), &t);
		t.item_flags = item_flags(cJSON_GetObjectItemCaseSensitive(root, "item"));
		t.failed = !strcmp(t.type, "response.failed");
	} else {
		usage_out_in(cJSON_GetObjectItemCaseSensitive(root, "usage"), &t);
	}
	sse_events__judge(fam, &t, out);
	return true;
}

void sse__classify_cjson(const char *data, size_t len, struct sse_event_info *out)
{
	const cJSON *usage, *choices, *ch, *tokens, *stop;
	cJSON *root;

	memset(out, 0, sizeof(*out));
	root = cJSON_ParseWithLength(data, len);
	if (!root)
		return;
	if (!cJSON_IsObject(root) || classify_typed(root, out))
		goto cleanup;

	usage = cJSON_GetObjectItemCaseSensitive(root, "usage");
	if (cJSON_IsObject(usage) &&
	    cJSON_IsNumber(cJSON_GetObjectItemCaseSensitive(usage, "completion_tokens"))) {
		out->has_usage = 1;
		out->completion_tokens =
			num_u32(cJSON_GetObjectItemCaseSensitive(usage, "completion_tokens"));
		out->prompt_tokens =
			num_u32(cJSON_GetObjectItemCaseSensitive(usage, "prompt_tokens"));
	}

	/* OpenAI chat / completions: any choice may carry the token, none may exist. */
	choices = cJSON_GetObjectItemCaseSensitive(root, "choices");
	if (cJSON_IsArray(choices))
		cJSON_ArrayForEach(ch, choices)
			classify_choice(ch, out);

	/* llama.cpp /completion */
	if (str_nonempty(cJSON_GetObjectItemCaseSensitive(root, "content")))
		out->token_flags |= TTF_TOK_CONTENT;
	stop = cJSON_GetObjectItemCaseSensitive(root, "stop");
	if (cJSON_IsTrue(stop))
		out->is_final = 1;
	if (cJSON_IsNumber(cJSON_GetObjectItemCaseSensitive(root, "tokens_predicted"))) {
		out->has_usage = 1;
		out->completion_tokens =
			num_u32(cJSON_GetObjectItemCaseSensitive(root, "tokens_predicted"));
		out->prompt_tokens =
			num_u32(cJSON_GetObjectItemCaseSensitive(root, "tokens_evaluated"));
	}

	if (out->token_flags) {
		out->kind = SSE_EV_TOKEN;
		out->n_tokens = 1;
		tokens = cJSON_GetObjectItemCaseSensitive(root, "tokens");
		if (array_nonempty(tokens))
			out->n_tokens = (uint32_t)cJSON_GetArraySize(tokens);
	} else if (cJSON_GetObjectItemCaseSensitive(root, "error") &&
		   !cJSON_IsNull(cJSON_GetObjectItemCaseSensitive(root, "error"))) {
		out->kind = SSE_EV_ERROR;
	}
cleanup:
	cJSON_Delete(root);
}

struct sse_splitter {
	sse_event_cb cb;
	void *ctx;
	char *line;		/* current line, without its terminator */
	size_t line_len, line_cap;
	char *data;		/* joined data lines of the current event, each + '\n' */
	size_t data_len, data_cap;
	bool has_data;
	bool oversize;		/* the current event outgrew SSE_MAX_EVENT_BYTES */
	bool last_cr;		/* the previous feed ended in CR: a leading LF belongs to it */
	bool tainted;		/* bytes of the current event were not captured */
	bool skip_line;		/* after a gap: the current line is a fragment */
	bool lines;		/* NDJSON: every non-empty line is an event (sse_splitter__set_lines) */
	uint64_t tag_cur;	/* tag of the feed in progress */
	uint64_t lost;
};

struct sse_splitter *sse_splitter__new(sse_event_cb cb, void *ctx)
{
	struct sse_splitter *s = calloc(1, sizeof(*s));

	if (!s)
		return NULL;
	s->cb = cb;
	s->ctx = ctx;
	return s;
}

void sse_splitter__free(struct sse_splitter *s)
{
	if (!s)
		return;
	free(s->line);
	free(s->data);
	free(s);
}

static int buf_append(char **buf, size_t *len, size_t *cap, const char *src, size_t n)
{
	if (*len + n > *cap) {
		size_t ncap = *cap ? *cap : 256;
		char *nb;

		while (ncap < *len + n)
			ncap *= 2;
		nb = realloc(*buf, ncap);
		if (!nb)
			return -ENOMEM;
		*buf = nb;
		*cap = ncap;
	}
	memcpy(*buf + *len, src, n);
	*len += n;
	return 0;
}

static void event_clear(struct sse_splitter *s)
{
	s->data_len = 0;
	s->has_data = false;
	s->oversize = false;
	s->tainted = false;
}

/* NDJSON: a line is an event; an optional "data: " prefix is dropped (Ollama's runner). */
static int end_json_line(struct sse_splitter *s)
{
	const char *l = s->line;
	size_t n = s->line_len;

	s->line_len = 0;
	if (s->skip_line) {
		s->skip_line = false;
		if (s->tainted)
			s->lost++;	/* the fragment after a gap */
		s->tainted = false;
		return 0;
	}
	if (s->oversize) {
		s->oversize = false;
		s->lost++;
		return 0;
	}
	if (n >= 5 && !memcmp(l, "data:", 5)) {
		l += 5;
		n -= 5;
		if (n && *l == ' ') {
			l++;
			n--;
		}
	}
	if (n)
		s->cb(s->ctx, l, n, s->tag_cur);
	return 0;
}

void sse_splitter__set_lines(struct sse_splitter *s, bool lines)
{
	s->lines = lines;
}

static int end_line(struct sse_splitter *s)
{
	const char *l = s->line, *v;
	size_t n = s->line_len, name_len, vlen;
	int err = 0;

	if (s->lines)
		return end_json_line(s);
	s->line_len = 0;
	if (s->skip_line) {
		s->skip_line = false;
		return 0;
	}
	if (!n) {
		if (s->tainted || s->oversize) {
			if (s->has_data || s->tainted)
				s->lost++;
		} else if (s->has_data) {
			s->cb(s->ctx, s->data, s->data_len ? s->data_len - 1 : 0, s->tag_cur);
		}
		event_clear(s);
		return 0;
	}
	if (l[0] == ':')
		return 0;
	v = memchr(l, ':', n);
	name_len = v ? (size_t)(v - l) : n;
	if (name_len != 4 || memcmp(l, "data", 4))
		return 0;
	if (v) {
		v++;
		vlen = n - name_len - 1;
		if (vlen && *v == ' ') {
			v++;
			vlen--;
		}
	} else {
		v = "";
		vlen = 0;
	}
	s->has_data = true;
	if (s->oversize)
		return 0;
	if (s->data_len + vlen + 1 > SSE_MAX_EVENT_BYTES) {
		s->oversize = true;
		return 0;
	}
	err = buf_append(&s->data, &s->data_len, &s->data_cap, v, vlen);
	if (!err)
		err = buf_append(&s->data, &s->data_len, &s->data_cap, "\n", 1);
	if (err)
		s->oversize = true;
	return err;
}

static int line_append(struct sse_splitter *s, const char *src, size_t n)
{
	/* A line longer than an event can be is useless: keep scanning for its end only. */
	if (s->skip_line || !n)
		return 0;
	if (s->line_len + n > SSE_MAX_EVENT_BYTES) {
		s->oversize = true;
		s->skip_line = true;
		return 0;
	}
	return buf_append(&s->line, &s->line_len, &s->line_cap, src, n);
}

/* The first '\n' or '\r' at or after i, or len (two memchr passes: SIMD, not a byte loop). */
static size_t line_end(const char *buf, size_t i, size_t len)
{
	const char *nl = memchr(buf + i, '\n', len - i);
	size_t stop = nl ? (size_t)(nl - buf) : len;
	const char *cr = memchr(buf + i, '\r', stop - i);

	return cr ? (size_t)(cr - buf) : stop;
}

int sse_splitter__feed(struct sse_splitter *s, const char *buf, size_t len, uint64_t tag)
{
	size_t i = 0, j;
	int err = 0;

	s->tag_cur = tag;
	if (s->last_cr && len && buf[0] == '\n')
		i = 1;
	s->last_cr = false;
	while (i < len) {
		j = line_end(buf, i, len);
		if (line_append(s, buf + i, j - i) < 0) {
			s->oversize = true;
			s->skip_line = true;
			err = -ENOMEM;
		}
		if (j == len)
			break;
		if (buf[j] == '\r') {
			if (j + 1 == len)
				s->last_cr = true;
			else if (buf[j + 1] == '\n')
				j++;
		}
		if (end_line(s) < 0)
			err = -ENOMEM;
		i = j + 1;
	}
	return err;
}

void sse_splitter__gap(struct sse_splitter *s, size_t missing_bytes)
{
	if (!missing_bytes)
		return;
	/*
	 * The bytes after a gap may start mid-line: drop up to the next line end,
	 * and drop the event that spans the gap at its blank line.
	 */
	s->line_len = 0;
	s->last_cr = false;
	s->skip_line = true;
	s->tainted = true;
}

void sse_splitter__reset(struct sse_splitter *s)
{
	s->line_len = 0;
	s->last_cr = false;
	s->skip_line = false;
	event_clear(s);
}

uint64_t sse_splitter__lost(const struct sse_splitter *s)
{
	return s->lost;
}

int sse_response_id(const char *data, size_t len, char *out, size_t out_len)
{
	cJSON *root, *id;
	size_t n;
	int ret = -ENOENT;

	while (len && (*data == ' ' || *data == '\t')) {
		data++;
		len--;
	}
	if (!len || *data != '{')
		return -ENOENT;
	root = cJSON_ParseWithLength(data, len);
	id = root ? cJSON_GetObjectItemCaseSensitive(root, "id") : NULL;
	if (cJSON_IsString(id) && id->valuestring) {
		n = strlen(id->valuestring);
		if (n + 1 > out_len) {
			ret = -ENOSPC;
		} else if (zmtp_id_like(id->valuestring, n)) {
			memcpy(out, id->valuestring, n + 1);
			ret = 0;
		}
	}
	cJSON_Delete(root);
	return ret;
}
