// SPDX-License-Identifier: GPL-2.0-only
/* Token-event array of struct ttf_request. */
#include <errno.h>
#include <stdlib.h>
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
