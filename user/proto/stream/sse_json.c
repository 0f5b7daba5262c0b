// SPDX-License-Identifier: GPL-2.0-only
/*
 * Allocation-free classification of one SSE data payload (RFC 8259 JSON):
 * a strict scanner that validates the whole value and reads only the keys
 * sse_classify() needs, with cJSON's semantics (first of duplicate keys
 * wins; trailing bytes after the value are ignored). Anything it does not
 * handle returns -EINVAL and the caller falls back to cJSON. Every token
 * event goes through here, so it is the tracer's per-event hot path.
 */
#include <errno.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include "user/proto/request.h"
#include "user/proto/stream/sse.h"
#include "user/proto/stream/sse_events.h"
#include "user/proto/stream/sse_json.h"

#define MAX_DEPTH 64

enum jtype { J_BAD = 0, J_STR, J_NUM, J_TRUE, J_FALSE, J_NULL, J_OBJ, J_ARR };

struct jval {
	enum jtype type;
	const char *start, *end;	/* the whole value */
	size_t str_len;			/* J_STR: raw bytes between the quotes */
	size_t count;			/* J_ARR: elements */
};

struct scan {
	const char *p, *end;
	int depth;
	bool escaped_key;	/* cJSON would match unescaped keys: leave those to it */
};

static void ws(struct scan *s)
{
	while (s->p < s->end && (*s->p == ' ' || *s->p == '\t' || *s->p == '\n' || *s->p == '\r'))
		s->p++;
}

static bool lit(struct scan *s, const char *w, size_t n)
{
	if ((size_t)(s->end - s->p) < n || memcmp(s->p, w, n))
		return false;
	s->p += n;
	return true;
}

static int hexval(char c)
{
	if (c >= '0' && c <= '9')
		return c - '0';
	c |= 0x20;
	return c >= 'a' && c <= 'f' ? c - 'a' + 10 : -1;
}

/* A string at s->p (the opening quote); *raw_len = bytes between the quotes. */
static bool str(struct scan *s, size_t *raw_len)
{
	const char *b;

	if (s->p >= s->end || *s->p != '"')
		return false;
	b = ++s->p;
	while (s->p < s->end) {
		unsigned char c = *s->p;

		if (c == '"') {
			*raw_len = s->p - b;
			s->p++;
			return true;
		}
		if (c < 0x20)
			return false;
		if (c == '\\') {
			if (++s->p >= s->end)
				return false;
			switch (*s->p) {
			case '"': case '\\': case '/': case 'b': case 'f': case 'n': case 'r': case 't':
				break;
			case 'u':
				if (s->end - s->p < 5)
					return false;
				for (int i = 1; i <= 4; i++)
					if (hexval(s->p[i]) < 0)
						return false;
				/* "\u0000" would be an empty C string for cJSON: not ours */
				if (!memcmp(s->p + 1, "0000", 4))
					return false;
				s->p += 4;
				break;
			default:
				return false;
			}
		}
		s->p++;
	}
	return false;
}

/* Validate a number; its value is read only when needed (num_value). */
static bool num(struct scan *s)
{
	if (s->p < s->end && *s->p == '-')
		s->p++;
	if (s->p >= s->end || *s->p < '0' || *s->p > '9')
		return false;
	if (*s->p == '0')
		s->p++;
	else
		while (s->p < s->end && *s->p >= '0' && *s->p <= '9')
			s->p++;
	if (s->p < s->end && *s->p == '.') {
		if (++s->p >= s->end || *s->p < '0' || *s->p > '9')
			return false;
		while (s->p < s->end && *s->p >= '0' && *s->p <= '9')
			s->p++;
	}
	if (s->p < s->end && (*s->p == 'e' || *s->p == 'E')) {
		s->p++;
		if (s->p < s->end && (*s->p == '+' || *s->p == '-'))
			s->p++;
		if (s->p >= s->end || *s->p < '0' || *s->p > '9')
			return false;
		while (s->p < s->end && *s->p >= '0' && *s->p <= '9')
			s->p++;
	}
	return true;
}

static double num_value(const struct jval *v)
{
	size_t n = v->end - v->start;
	char buf[64];

	if (n >= sizeof(buf))
		return -1;	/* absurdly long: no sane token count */
	memcpy(buf, v->start, n);
	buf[n] = '\0';
	return strtod(buf, NULL);
}

static bool value(struct scan *s, struct jval *v);

/* Skip an object or array body after its opening bracket; counts array elements. */
static bool container(struct scan *s, bool is_obj, size_t *count)
{
	struct jval tmp;
	size_t klen;

	if (++s->depth > MAX_DEPTH)
		return false;
	s->p++;
	ws(s);
	*count = 0;
	if (s->p < s->end && *s->p == (is_obj ? '}' : ']')) {
		s->p++;
		s->depth--;
		return true;
	}
	for (;;) {
		if (is_obj) {
			const char *k = s->p + 1;

			if (!str(s, &klen))
				return false;
			if (memchr(k, '\\', klen))
				s->escaped_key = true;
			ws(s);
			if (s->p >= s->end || *s->p++ != ':')
				return false;
		}
		if (!value(s, &tmp))
			return false;
		(*count)++;
		ws(s);
		if (s->p >= s->end)
			return false;
		if (*s->p == ',') {
			s->p++;
			ws(s);
			continue;
		}
		if (*s->p++ != (is_obj ? '}' : ']'))
			return false;
		s->depth--;
		return true;
	}
}

static bool value(struct scan *s, struct jval *v)
{
	memset(v, 0, sizeof(*v));
	ws(s);
	if (s->p >= s->end)
		return false;
	v->start = s->p;
	switch (*s->p) {
	case '"':
		v->type = J_STR;
		if (!str(s, &v->str_len))
			return false;
		break;
	case '{':
	case '[':
		v->type = *s->p == '{' ? J_OBJ : J_ARR;
		if (!container(s, v->type == J_OBJ, &v->count))
			return false;
		break;
	case 't':
		v->type = J_TRUE;
		if (!lit(s, "true", 4))
			return false;
		break;
	case 'f':
		v->type = J_FALSE;
		if (!lit(s, "false", 5))
			return false;
		break;
	case 'n':
		v->type = J_NULL;
		if (!lit(s, "null", 4))
			return false;
		break;
	default:
		v->type = J_NUM;
		if (!num(s))
			return false;
	}
	v->end = s->p;
	return true;
}

/*
 * One pass over an object at s->p ('{'): for each member whose key is in
 * keys[] and not seen before (cJSON: the first of duplicates wins), cb()
 * parses the value; every other value is skipped (and validated).
 */
typedef bool (*member_cb)(struct scan *s, int key, void *ctx);

static bool walk(struct scan *s, const char *const *keys, int n_keys, member_cb cb, void *ctx)
{
	uint32_t seen = 0;
	struct jval skip;
	size_t klen;

	if (s->p >= s->end || *s->p != '{' || ++s->depth > MAX_DEPTH)
		return false;
	s->p++;
	ws(s);
	if (s->p < s->end && *s->p == '}') {
		s->p++;
		s->depth--;
		return true;
	}
	for (;;) {
		const char *k = s->p + 1;
		int hit = -1;

		if (!str(s, &klen))
			return false;
		if (memchr(k, '\\', klen))
			s->escaped_key = true;
		for (int i = 0; i < n_keys; i++)
			if (klen && keys[i][0] == k[0] && !strncmp(keys[i], k, klen) &&
			    !keys[i][klen]) {
				hit = i;
				break;
			}
		ws(s);
		if (s->p >= s->end || *s->p++ != ':')
			return false;
		ws(s);
		if (hit >= 0 && !(seen & (1u << hit))) {
			seen |= 1u << hit;
			if (!cb(s, hit, ctx))
				return false;
		} else if (!value(s, &skip)) {
			return false;
		}
		ws(s);
		if (s->p >= s->end)
			return false;
		if (*s->p == ',') {
			s->p++;
			ws(s);
			continue;
		}
		if (*s->p++ != '}')
			return false;
		s->depth--;
		return true;
	}
}

static uint32_t to_u32(double d)
{
	if (d < 0)
		return 0;
	return d > 4294967295.0 ? UINT32_MAX : (uint32_t)d;
}

static bool nonempty_str(const struct jval *v)
{
	return v->type == J_STR && v->str_len > 0;
}

/* What the root object says, gathered in one pass, judged afterwards. */
struct facts {
	struct sse_event_info *out;
	bool usage_ct, usage_pt, tp, te, content, stop, error;
	double usage_ct_v, usage_pt_v, tp_v, te_v;
	size_t tokens;
	struct sse_typed typed;		/* "type", "delta", usage output/input_tokens */
	bool response_obj;		/* a top-level "response" (left to cJSON) */
};

static const char *const delta_keys[] = { "content", "reasoning_content", "reasoning", "tool_calls" };

static bool on_delta(struct scan *s, int key, void *ctx)
{
	struct sse_event_info *out = ctx;
	struct jval v;

	if (!value(s, &v))
		return false;
	if (key == 0 && nonempty_str(&v))
		out->token_flags |= TTF_TOK_CONTENT;
	if ((key == 1 || key == 2) && nonempty_str(&v))
		out->token_flags |= TTF_TOK_REASONING;
	if (key == 3 && v.type == J_ARR && v.count > 0)
		out->token_flags |= TTF_TOK_TOOL;
	return true;
}

static const char *const choice_keys[] = { "delta", "text", "finish_reason" };

static bool on_choice(struct scan *s, int key, void *ctx)
{
	struct sse_event_info *out = ctx;
	struct jval v;

	if (key == 0 && s->p < s->end && *s->p == '{')
		return walk(s, delta_keys, 4, on_delta, out);
	if (!value(s, &v))
		return false;
	if (key == 1 && nonempty_str(&v))
		out->token_flags |= TTF_TOK_CONTENT;
	if (key == 2 && nonempty_str(&v))
		out->is_final = 1;
	return true;
}

static const char *const usage_keys[] = { "completion_tokens", "prompt_tokens",
					  "output_tokens", "input_tokens" };

static bool on_usage(struct scan *s, int key, void *ctx)
{
	struct facts *f = ctx;
	struct jval v;

	if (!value(s, &v))
		return false;
	if (v.type != J_NUM)
		return true;
	switch (key) {
	case 0:
		f->usage_ct = true;
		f->usage_ct_v = num_value(&v);
		break;
	case 1:
		f->usage_pt = true;
		f->usage_pt_v = num_value(&v);
		break;
	case 2:
		f->typed.has_out = true;
		f->typed.out_v = num_value(&v);
		break;
	default:
		f->typed.has_in = true;
		f->typed.in_v = num_value(&v);
	}
	return true;
}

/* A string value's raw bytes; false when it holds an escape (cJSON would decode it). */
static bool raw_str(const struct jval *v, const char **p, size_t *n)
{
	if (v->type != J_STR || memchr(v->start + 1, '\\', v->str_len))
		return false;
	*p = v->start + 1;
	*n = v->str_len;
	return true;
}

static const char *const tdelta_keys[] = { "type", "text", "thinking", "partial_json" };

/* A top-level "delta" object (Anthropic content_block_delta, message_delta). */
static bool on_tdelta(struct scan *s, int key, void *ctx)
{
	struct facts *f = ctx;
	struct jval v;

	if (!value(s, &v))
		return false;
	switch (key) {
	case 0:
		if (v.type == J_STR && !raw_str(&v, &f->typed.delta_type, &f->typed.delta_type_len))
			s->escaped_key = true;	/* an escaped type name: cJSON's job */
		break;
	case 1:
		f->typed.delta_text = nonempty_str(&v);
		break;
	case 2:
		f->typed.delta_thinking = nonempty_str(&v);
		break;
	default:
		f->typed.delta_json = nonempty_str(&v);
	}
	return true;
}

/* The elements of "choices": objects are walked, anything else skipped. */
static bool choices(struct scan *s, struct sse_event_info *out)
{
	struct jval v;

	if (++s->depth > MAX_DEPTH)
		return false;
	s->p++;
	ws(s);
	if (s->p < s->end && *s->p == ']') {
		s->p++;
		s->depth--;
		return true;
	}
	for (;;) {
		ws(s);
		if (s->p < s->end && *s->p == '{') {
			if (!walk(s, choice_keys, 3, on_choice, out))
				return false;
		} else if (!value(s, &v)) {
			return false;
		}
		ws(s);
		if (s->p >= s->end)
			return false;
		if (*s->p == ',') {
			s->p++;
			continue;
		}
		if (*s->p++ != ']')
			return false;
		s->depth--;
		return true;
	}
}

enum { K_USAGE, K_CHOICES, K_CONTENT, K_STOP, K_TP, K_TE, K_TOKENS, K_ERROR, K_TYPE,
       K_DELTA, K_RESPONSE, K__N };
static const char *const root_keys[K__N] = { "usage", "choices", "content", "stop",
					     "tokens_predicted", "tokens_evaluated", "tokens",
					     "error", "type", "delta", "response" };

static bool on_root(struct scan *s, int key, void *ctx)
{
	struct facts *f = ctx;
	struct jval v;

	if (key == K_USAGE && s->p < s->end && *s->p == '{')
		return walk(s, usage_keys, 4, on_usage, f);
	if (key == K_CHOICES && s->p < s->end && *s->p == '[')
		return choices(s, f->out);
	if (key == K_DELTA && s->p < s->end && *s->p == '{')
		return walk(s, tdelta_keys, 4, on_tdelta, f);
	if (!value(s, &v))
		return false;
	switch (key) {
	case K_CONTENT:
		f->content = nonempty_str(&v);
		break;
	case K_STOP:
		f->stop = v.type == J_TRUE;
		break;
	case K_TP:
		f->tp = v.type == J_NUM;
		f->tp_v = f->tp ? num_value(&v) : 0;
		break;
	case K_TE:
		f->te = v.type == J_NUM;
		f->te_v = f->te ? num_value(&v) : 0;
		break;
	case K_TOKENS:
		f->tokens = v.type == J_ARR ? v.count : 0;
		break;
	case K_ERROR:
		f->error = v.type != J_NULL;
		break;
	case K_TYPE:
		if (v.type == J_STR && !raw_str(&v, &f->typed.type, &f->typed.type_len))
			s->escaped_key = true;	/* an escaped event name: cJSON's job */
		break;
	case K_DELTA:
		f->typed.delta_str = nonempty_str(&v);
		break;
	case K_RESPONSE:
		f->response_obj = true;
		break;
	}
	return true;
}

int sse_json__classify(const char *data, size_t len, struct sse_event_info *out)
{
	struct scan s = { data, data + len, 0, false };
	struct facts f = { .out = out };

	memset(out, 0, sizeof(*out));
	ws(&s);
	enum sse_family fam;

	if (!walk(&s, root_keys, K__N, on_root, &f) || s.escaped_key)
		return -EINVAL;
	fam = sse_events__family(f.typed.type, f.typed.type_len);
	if (fam == SSE_FAM_RESPONSES) {
		/* only the delta events here; the rest (nested usage, items) in cJSON */
		if (!sse_events__is_delta(f.typed.type, f.typed.type_len) || f.response_obj)
			return -EINVAL;
		f.typed.has_out = f.typed.has_in = false;	/* usage is response.usage */
	}
	if (fam != SSE_FAM_NONE) {
		sse_events__judge(fam, &f.typed, out);
		return 0;
	}
	/* the same order of rules as the cJSON path */
	if (f.usage_ct) {
		out->has_usage = 1;
		out->completion_tokens = to_u32(f.usage_ct_v);
		out->prompt_tokens = f.usage_pt ? to_u32(f.usage_pt_v) : 0;
	}
	if (f.content)
		out->token_flags |= TTF_TOK_CONTENT;
	if (f.stop)
		out->is_final = 1;
	if (f.tp) {
		out->has_usage = 1;
		out->completion_tokens = to_u32(f.tp_v);
		out->prompt_tokens = f.te ? to_u32(f.te_v) : 0;
	}
	if (out->token_flags) {
		out->kind = SSE_EV_TOKEN;
		out->n_tokens = f.tokens ? f.tokens : 1;
	} else if (f.error) {
		out->kind = SSE_EV_ERROR;
	}
	return 0;
}
