// SPDX-License-Identifier: GPL-2.0-only
/* The names the outputs print (vocab.h). */
#include <stddef.h>
#include "bpf/net.h"
#include "user/model/vocab.h"

static const char *const vflag_names[TTF_VF__MAX] = {
	[TTF_VF_STREAM] = "stream",
	[TTF_VF_NONSTREAM] = "nonstream",
	[TTF_VF_BUFFERED] = "buffered",
	[TTF_VF_ABORTED] = "aborted",
	[TTF_VF_INCOMPLETE] = "incomplete",
	[TTF_VF_TRUNC] = "trunc",
	[TTF_VF_UNKNOWN] = "unknown",
	[TTF_VF_ERROR] = "error",
	[TTF_VF_USAGE] = "usage",
	[TTF_VF_WRITE_END] = "write-end",
	[TTF_VF_NAGLE] = "nagle",
	[TTF_VF_EXPECT_100] = "expect-100",
	[TTF_VF_INTERIM] = "interim",
	[TTF_VF_DECODED] = "decoded",
	[TTF_VF_OPAQUE] = "opaque",
	[TTF_VF_HPACK_UNKNOWN] = "hpack-unsynced",
	[TTF_VF_CHUNKS] = "chunks",
	[TTF_VF_UPSTREAM] = "upstream",
	[TTF_VF_TLS] = "tls",
};

/* Printed flags that are the request's own bits, one to one. */
static const struct {
	uint32_t req_bit;
	enum ttf_vflag vf;
} req_flags[] = {
	{ TTF_REQ_STREAM, TTF_VF_STREAM },	   { TTF_REQ_NONSTREAM, TTF_VF_NONSTREAM },
	{ TTF_REQ_BUFFERED, TTF_VF_BUFFERED },	   { TTF_REQ_ABORTED, TTF_VF_ABORTED },
	{ TTF_REQ_INCOMPLETE, TTF_VF_INCOMPLETE }, { TTF_REQ_TRUNCATED, TTF_VF_TRUNC },
	{ TTF_REQ_UNKNOWN, TTF_VF_UNKNOWN },	   { TTF_REQ_ERROR, TTF_VF_ERROR },
	{ TTF_REQ_EXPECT_100, TTF_VF_EXPECT_100 }, { TTF_REQ_INTERIM, TTF_VF_INTERIM },
	{ TTF_REQ_DECODED, TTF_VF_DECODED },	   { TTF_REQ_OPAQUE, TTF_VF_OPAQUE },
	{ TTF_REQ_HPACK_UNKNOWN, TTF_VF_HPACK_UNKNOWN }, { TTF_REQ_CHUNKS, TTF_VF_CHUNKS },
	{ TTF_REQ_UPSTREAM, TTF_VF_UPSTREAM }, { TTF_REQ_TLS, TTF_VF_TLS },
};

static const char *const outcome_names[TTF_OC__MAX] = {
	[TTF_OC_OK] = "ok",
	[TTF_OC_ABORTED] = "aborted",
	[TTF_OC_INCOMPLETE] = "incomplete",
	[TTF_OC_ERROR] = "error",
	[TTF_OC_UNKNOWN] = "unknown",
	[TTF_OC_NONSTREAM] = "nonstream",
	[TTF_OC_BUFFERED] = "buffered",
	[TTF_OC_TRUNCATED] = "truncated",
};

static const char *const stage_names[TTF_ST__ALL] = {
	[TTF_ST_NET_IN] = "net_in",	[TTF_ST_READ_WAIT] = "read_wait",
	[TTF_ST_FRONTEND] = "frontend", [TTF_ST_QUEUE] = "queue",
	[TTF_ST_PREFILL] = "prefill",	[TTF_ST_EMIT] = "emit",
	[TTF_ST_NET_OUT] = "net_out",	[TTF_ST_TOKENIZE] = "tokenize",
	[TTF_ST_SERVER] = "server",	[TTF_ST_COPY] = "copy",
};

const enum ttf_stage ttf_stage_order[TTF_STAGE_ORDER_N] = {
	TTF_ST_NET_IN, TTF_ST_READ_WAIT, TTF_ST_FRONTEND, TTF_ST_TOKENIZE, TTF_ST_QUEUE,
	TTF_ST_PREFILL, TTF_ST_COPY, TTF_ST_EMIT, TTF_ST_NET_OUT, TTF_ST_SERVER,
};

const enum ttf_stage ttf_stage_time_order[TTF_STAGE_ORDER_N] = {
	TTF_ST_NET_IN, TTF_ST_READ_WAIT, TTF_ST_FRONTEND, TTF_ST_TOKENIZE, TTF_ST_SERVER,
	TTF_ST_QUEUE, TTF_ST_PREFILL, TTF_ST_COPY, TTF_ST_EMIT, TTF_ST_NET_OUT,
};

const char *ttf_vflag_name(enum ttf_vflag f)
{
	return f >= 0 && f < TTF_VF__MAX ? vflag_names[f] : "?";
}

uint32_t ttf_vocab__flags(const struct ttf_request *r, const struct ttf_req_metrics *m)
{
	uint32_t vf = 0;

	for (size_t i = 0; i < sizeof(req_flags) / sizeof(req_flags[0]); i++)
		if (r->flags & req_flags[i].req_bit)
			vf |= TTF_VF_BIT(req_flags[i].vf);
	if (m->buffered)
		vf |= TTF_VF_BIT(TTF_VF_BUFFERED);
	if (m->tokens_from_usage)
		vf |= TTF_VF_BIT(TTF_VF_USAGE);
	if (m->ttft_ns >= 0 && !m->ttft_end_is_xmit)
		vf |= TTF_VF_BIT(TTF_VF_WRITE_END);
	/* Nagle can hold a small SSE write back until the previous one is acked (TCP only). */
	if (r->flags & TTF_REQ_STREAM && m->ttft_ns >= 0 && !(r->flags & TTF_REQ_NODELAY) &&
	    r->addr.family != TTF_AF_UNIX)
		vf |= TTF_VF_BIT(TTF_VF_NAGLE);
	return vf;
}

int ttf_vocab__flag_names(uint32_t vflags, const char **names, int cap)
{
	int n = 0;

	for (int f = 0; f < TTF_VF__MAX; f++)
		if (vflags & TTF_VF_BIT(f) && n < cap)
			names[n++] = vflag_names[f];
	return n;
}

const char *ttf_outcome_name(enum ttf_outcome o)
{
	return o >= 0 && o < TTF_OC__MAX ? outcome_names[o] : "?";
}

const char *ttf_stage_name(enum ttf_stage s)
{
	return s >= 0 && s < TTF_ST__ALL ? stage_names[s] : "?";
}

const char *ttf_attrib_kind_name(enum ttf_attrib_kind k)
{
	return k == TTF_ATTR_EXACT ? "exact" : k == TTF_ATTR_INFERRED ? "inferred" : "merged";
}

const char *ttf_ttft_end_name(int is_xmit)
{
	return is_xmit ? "xmit" : "write";
}

const char *ttf_token_source_name(int from_usage)
{
	return from_usage ? "usage" : "events";
}

const char *ttf_api_name(enum ttf_api api)
{
	switch (api) {
	case TTF_API_CHAT:
		return "chat";
	case TTF_API_COMPLETION:
		return "completion";
	case TTF_API_LLAMACPP:
		return "llamacpp";
	case TTF_API_RESPONSES:
		return "responses";
	case TTF_API_MESSAGES:
		return "messages";
	default:
		return "unknown";
	}
}

int ttf_vocab__success(const struct ttf_request *r)
{
	return !(r->flags & (TTF_REQ_ABORTED | TTF_REQ_INCOMPLETE | TTF_REQ_ERROR |
			     TTF_REQ_UNKNOWN)) &&
	       r->status >= 200 && r->status <= 299;
}
