// SPDX-License-Identifier: GPL-2.0-only
/* Upstream calls kept for hop discovery (upstreams.h). */
#include <stdlib.h>
#include <string.h>
#include "user/core/upstreams.h"

void upstream_queue__push(struct upstream_queue *uq, const struct ttf_request *u)
{
	struct pipeline_upstream *up;

	if (uq->n == uq->cap) {
		size_t cap = uq->cap ? uq->cap * 2 : 8;
		struct pipeline_upstream *n = realloc(uq->q, cap * sizeof(*n));

		if (!n) {
			uq->dropped++;
			return;
		}
		uq->q = n;
		uq->cap = cap;
	}
	up = &uq->q[uq->n++];
	up->addr = u->addr;
	up->tgid = u->tgid;
	memcpy(up->comm, u->comm, sizeof(up->comm));
	up->read_first_ns = u->read_first_ns;
}

int upstream_queue__take(struct upstream_queue *uq, struct pipeline_upstream *out, int cap)
{
	size_t n = uq->n < (size_t)cap ? uq->n : (size_t)cap;

	if (!n)
		return 0;
	memcpy(out, uq->q, n * sizeof(*out));
	memmove(uq->q, uq->q + n, (uq->n - n) * sizeof(*out));
	uq->n -= n;
	return (int)n;
}

void upstream_queue__free(struct upstream_queue *uq)
{
	free(uq->q);
	*uq = (struct upstream_queue){ 0 };
}
