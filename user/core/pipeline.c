// SPDX-License-Identifier: GPL-2.0-only
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include "user/model/metrics.h"
#include "user/core/pipeline.h"

/* Steps are kept this long for outlier causes of long streams. */
#define TIMELINE_HORIZON_NS (120ull * 1000000000ull)

struct deferred {
	struct ttf_request r;	/* deep copy: owns r.events */
	uint64_t ready_ns;	/* latest timestamp in it */
};

#define MAX_SINKS 8

struct pipeline {
	struct pipeline_opts opts;
	struct ttf_sink sinks[MAX_SINKS];
	int n_sinks;
	struct conn_table *conns;
	struct timeline *tl;
	struct deferred *q;
	size_t n_q, cap_q;
	uint64_t dropped;
};

static uint64_t max_ts(const struct ttf_request *r)
{
	uint64_t t = r->read_done_ns;

	if (r->end_write_ns > t)
		t = r->end_write_ns;
	if (r->end_xmit_ns > t)
		t = r->end_xmit_ns;
	for (uint32_t i = 0; i < r->n_events; i++) {
		if (r->events[i].write_ns > t)
			t = r->events[i].write_ns;
		if (r->events[i].xmit_ns > t)
			t = r->events[i].xmit_ns;
	}
	return t;
}

static void output(struct pipeline *p, const struct ttf_request *r)
{
	struct attrib_sources src = { .tl = p->tl, .overlay = p->opts.overlay,
				      .overlay_ctx = p->opts.overlay_ctx, .gpu = p->opts.gpu,
				      .link_gbps = p->opts.link_gbps };
	struct ttf_req_metrics m;
	struct ttf_attrib a;

	int have_m = ttf_metrics__compute(r, &m) == 0;
	int have_a = have_m && p->tl && ttf_attrib__compute(r, &m, &src, &a) == 0;

	if (have_a)
		report__request_attrib(p->opts.report, r, &a);
	else
		report__request(p->opts.report, r);
	for (int i = 0; have_m && i < p->n_sinks; i++)
		if (p->sinks[i].request)
			p->sinks[i].request(p->sinks[i].ctx, r, &m, have_a ? &a : NULL);
	if (p->tl)
		timeline__release(p->tl, r->id);
}

static void on_request(void *ctx, const struct ttf_request *r)
{
	struct pipeline *p = ctx;
	struct deferred *d;

	if (p->tl && (r->flags & TTF_REQ_ABORTED))
		timeline__on_abort(p->tl, r->id, r->closed_ns);

	if (!p->tl) {
		output(p, r);
		return;
	}
	if (p->n_q == p->cap_q) {
		size_t cap = p->cap_q ? p->cap_q * 2 : 32;
		struct deferred *n = realloc(p->q, cap * sizeof(*n));

		if (!n)
			goto now;
		p->q = n;
		p->cap_q = cap;
	}
	d = &p->q[p->n_q];
	d->r = *r;
	d->r.events = NULL;
	if (r->n_events) {
		d->r.events = malloc(r->n_events * sizeof(*r->events));
		if (!d->r.events)
			goto now;
		memcpy(d->r.events, r->events, r->n_events * sizeof(*r->events));
	}
	d->r.cap_events = r->n_events;
	d->ready_ns = max_ts(r);
	p->n_q++;
	return;
now:
	/* No memory to wait: print it now with what the timeline has. */
	p->dropped++;
	output(p, r);
}

static void on_request_read(void *ctx, const struct ttf_request *r)
{
	struct pipeline *p = ctx;

	/* Only requests that carry a prompt reach an engine. */
	if (p->tl && strcmp(r->method, "POST") == 0)
		timeline__on_request_read(p->tl, r->id, r->sock_cookie, r->rx_tid,
					  r->read_done_ns);
}

struct pipeline *pipeline__new(const struct pipeline_opts *opts)
{
	struct pipeline *p = calloc(1, sizeof(*p));
	struct conn_table_opts co = { .sz = sizeof(co), .on_request = on_request,
				      .on_request_read = on_request_read };

	if (!p)
		return NULL;
	p->opts = *opts;
	co.ctx = p;
	co.xmit_expected = opts->xmit_expected;
	co.send_seq_exact = 1;
	p->conns = conn_table__new(&co);
	if (opts->attribution)
		p->tl = timeline__new(TIMELINE_HORIZON_NS);
	if (!p->conns || (opts->attribution && !p->tl)) {
		pipeline__free(p);
		errno = ENOMEM;
		return NULL;
	}
	return p;
}

void pipeline__free(struct pipeline *p)
{
	if (!p)
		return;
	for (int i = 0; i < p->n_sinks; i++)
		if (p->sinks[i].destroy)
			p->sinks[i].destroy(p->sinks[i].ctx);
	for (size_t i = 0; i < p->n_q; i++)
		free(p->q[i].r.events);
	free(p->q);
	conn_table__free(p->conns);
	timeline__free(p->tl);
	free(p);
}

int pipeline__add_sink(struct pipeline *p, const struct ttf_sink *s)
{
	if (p->n_sinks == MAX_SINKS)
		return -ENOSPC;
	p->sinks[p->n_sinks++] = *s;
	return 0;
}

int pipeline__on_net_event(struct pipeline *p, const struct ttf_net_event *e, size_t len)
{
	for (int i = 0; i < p->n_sinks; i++)
		if (p->sinks[i].net_event)
			p->sinks[i].net_event(p->sinks[i].ctx, e, len);
	return conn_table__on_event(p->conns, e, len);
}

int pipeline__on_engine_event(struct pipeline *p, const struct tl_event *ev)
{
	for (int i = 0; i < p->n_sinks; i++)
		if (p->sinks[i].engine_event)
			p->sinks[i].engine_event(p->sinks[i].ctx, ev);
	return p->tl ? timeline__on_engine_event(p->tl, ev) : 0;
}

void pipeline__on_sched_event(struct pipeline *p, const struct ttf_sched_event *e)
{
	for (int i = 0; i < p->n_sinks; i++)
		if (p->sinks[i].sched_event)
			p->sinks[i].sched_event(p->sinks[i].ctx, e);
}

void pipeline__tick(struct pipeline *p, uint64_t now_ns)
{
	for (int i = 0; i < p->n_sinks; i++)
		if (p->sinks[i].tick)
			p->sinks[i].tick(p->sinks[i].ctx, now_ns);
}

void pipeline__counters(struct pipeline *p, const struct report_counter *c, int n)
{
	for (int i = 0; i < p->n_sinks; i++)
		if (p->sinks[i].counters)
			p->sinks[i].counters(p->sinks[i].ctx, c, n);
}

int pipeline__finish_sinks(struct pipeline *p, const struct report_counter *c, int n)
{
	int first = 0;

	for (int i = 0; i < p->n_sinks; i++) {
		int err = p->sinks[i].finish ? p->sinks[i].finish(p->sinks[i].ctx, c, n) : 0;

		if (err && !first)
			first = err;
	}
	return first;
}

int pipeline__sink_stats(struct pipeline *p, struct report_counter *c, int cap)
{
	int n = 0;

	for (int i = 0; i < p->n_sinks; i++)
		if (p->sinks[i].stats)
			n += p->sinks[i].stats(p->sinks[i].ctx, c + n, cap - n);
	return n;
}

void pipeline__advance(struct pipeline *p, uint64_t watermark_ns)
{
	size_t keep = 0;

	for (int i = 0; i < p->n_sinks; i++)
		if (p->sinks[i].advance)
			p->sinks[i].advance(p->sinks[i].ctx, watermark_ns);
	if (!p->tl)
		return;
	timeline__advance(p->tl, watermark_ns);
	for (size_t i = 0; i < p->n_q; i++) {
		struct deferred *d = &p->q[i];

		if (d->ready_ns > watermark_ns) {
			p->q[keep++] = *d;
			continue;
		}
		output(p, &d->r);
		free(d->r.events);
	}
	p->n_q = keep;
}

void pipeline__finish(struct pipeline *p, uint64_t now_ns)
{
	conn_table__finish(p->conns, now_ns);
	pipeline__advance(p, UINT64_MAX);
}

const struct conn_stats *pipeline__conn_stats(const struct pipeline *p)
{
	return conn_table__stats(p->conns);
}

const struct timeline_stats *pipeline__timeline_stats(const struct pipeline *p)
{
	static const struct timeline_stats none;

	return p->tl ? timeline__stats(p->tl) : &none;
}

const struct pipeline_opts *pipeline__opts(const struct pipeline *p)
{
	return &p->opts;
}

uint64_t pipeline__dropped(const struct pipeline *p)
{
	return p->dropped;
}
