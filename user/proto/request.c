// SPDX-License-Identifier: GPL-2.0-only
/* Token-event array of struct ttf_request; the API a request path names. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include "user/proto/request.h"

int ttf_request__add_event(struct ttf_request *r, const struct ttf_token_event *ev)
{
	if (r->n_events == r->cap_events) {
		uint32_t cap = r->cap_events ? r->cap_events * 2 : 16;
		struct ttf_token_event *a;

		if (cap < r->cap_events)
			return -ENOMEM;
		a = realloc(r->events, (size_t)cap * sizeof(*a));
		if (!a)
			return -ENOMEM;
		r->events = a;
		r->cap_events = cap;
	}
	r->events[r->n_events++] = *ev;
	return 0;
}

void ttf_request__release(struct ttf_request *r)
{
	free(r->events);
	r->events = NULL;
	r->n_events = 0;
	r->cap_events = 0;
}

enum ttf_api ttf_api_of_path(const char *path)
{
	if (!strcmp(path, "/v1/chat/completions") || !strcmp(path, "/chat/completions"))
		return TTF_API_CHAT;
	if (!strcmp(path, "/v1/completions"))
		return TTF_API_COMPLETION;
	if (!strcmp(path, "/completion") || !strcmp(path, "/completions"))
		return TTF_API_LLAMACPP;
	if (!strcmp(path, "/v1/responses") || !strcmp(path, "/responses"))
		return TTF_API_RESPONSES;
	if (!strcmp(path, "/v1/messages"))
		return TTF_API_MESSAGES;
	return TTF_API_UNKNOWN;
}
