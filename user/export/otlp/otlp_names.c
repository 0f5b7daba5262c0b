// SPDX-License-Identifier: GPL-2.0-only
/*
 * Names and attribute values of the OTLP spans and metric points (otlp.h):
 * the route, the GenAI operation and provider, error.type, addresses.
 */
#include <arpa/inet.h>
#include <stdio.h>
#include <string.h>
#include <strings.h>
#include "user/export/otlp/otlp.h"

const char *otlp__route(const char *path)
{
	/* the API paths ttftrace recognises (ttf_api_of_path) and Ollama's */
	static const char *const routes[] = {
		"/v1/chat/completions", "/chat/completions", "/v1/completions", "/completion",
		"/completions", "/v1/responses", "/responses", "/v1/messages", "/api/chat",
		"/api/generate",
	};

	for (size_t i = 0; i < sizeof(routes) / sizeof(routes[0]); i++)
		if (!strcmp(path, routes[i]))
			return routes[i];
	return NULL;
}

const char *otlp__provider(const struct otlp_config *cfg, const char *comm)
{
	/* process names of the engines ttftrace has profiles or tests for */
	static const struct { const char *prefix, *provider; } known[] = {
		{ "llama-server", "llama.cpp" }, { "llama-cli", "llama.cpp" },
		{ "ollama", "ollama" }, { "vllm", "vllm" }, { "sglang", "sglang" },
		{ "text-generation", "tgi" },
	};

	if (cfg && cfg->provider[0])
		return cfg->provider;
	for (size_t i = 0; comm && i < sizeof(known) / sizeof(known[0]); i++)
		if (!strncasecmp(comm, known[i].prefix, strlen(known[i].prefix)))
			return known[i].provider;
	return NULL;
}

const char *otlp__operation(enum ttf_api api)
{
	switch (api) {
	case TTF_API_CHAT:
	case TTF_API_RESPONSES:
	case TTF_API_MESSAGES:
		return "chat";
	case TTF_API_COMPLETION:
	case TTF_API_LLAMACPP:
		return "text_completion";
	default:
		return NULL;
	}
}

const char *otlp__error_type(const struct otlp_span_src *s, char *buf, size_t len)
{
	if (s->status >= 400) {
		snprintf(buf, len, "%d", s->status);
		return buf;
	}
	if (s->flags & TTF_REQ_ABORTED) {
		snprintf(buf, len, "aborted");
		return buf;
	}
	if (s->flags & TTF_REQ_ERROR) {
		snprintf(buf, len, "stream_error");
		return buf;
	}
	return NULL;
}

void otlp__addr_str(uint8_t family, const uint8_t addr[16], char *buf, size_t len)
{
	buf[0] = '\0';
	if (family == 2)
		inet_ntop(AF_INET, addr, buf, len);
	else if (family == 10)
		inet_ntop(AF_INET6, addr, buf, len);
}

void otlp__server_address(const struct otlp_span_src *s, char *buf, size_t len)
{
	otlp__addr_str(s->addr_family, s->server_addr, buf, len);
}
