/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * The upstream calls traced processes wrote (TTF_REQ_UPSTREAM), kept in
 * the order seen until the tracer takes them for hop discovery
 * (pipeline__take_upstreams). The pipeline never calls up into the
 * tracer: the event loop pulls these after feeding it records.
 */
#ifndef TTFTRACE_UPSTREAMS_H
#define TTFTRACE_UPSTREAMS_H

#include <stddef.h>
#include <stdint.h>
#include "user/proto/request.h"

/* An upstream call a traced process wrote: where hop discovery looks. */
struct pipeline_upstream {
	struct ttf_conn_addr addr;	/* its connection, as the caller's socket has it */
	uint32_t tgid;			/* the caller */
	char comm[16];
	uint64_t read_first_ns;		/* its request written (record time) */
};

struct upstream_queue {
	struct pipeline_upstream *q;
	size_t n, cap;
	uint64_t dropped;	/* not kept for want of memory (the next call there is looked at) */
};

/* Keep upstream call u; without memory it is counted in uq->dropped instead. */
void upstream_queue__push(struct upstream_queue *uq, const struct ttf_request *u);
/* The oldest ones into out[0..cap), removed; returns how many. */
int upstream_queue__take(struct upstream_queue *uq, struct pipeline_upstream *out, int cap);
void upstream_queue__free(struct upstream_queue *uq);

#endif /* TTFTRACE_UPSTREAMS_H */
