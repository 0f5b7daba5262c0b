// SPDX-License-Identifier: GPL-2.0-only
/* The pipeline: one entry for every record kind; see pipeline.h. */
#include <errno.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "user/core/pipeline.h"
#include "user/core/recorded_counters.h"
#include "user/lib/log.h"
#include "user/model/hops/joins.h"
#include "user/model/loop_busy.h"
#include "user/model/metrics.h"
#include "user/model/sched.h"
#include "user/model/zmtp_log.h"

/* Steps are kept this long for outlier causes of long streams. */
#define TIMELINE_HORIZON_NS (120ull * 1000000000ull)
/* GPU spans are kept this long (in watermark time) for joins, expired this often. */
#define GPU_KEEP_NS (120ull * 1000000000ull)
#define GPU_EXPIRE_EVERY_NS 200000000ull
#define COUNTERS_EVERY_NS 1000000000ull	/* sinks get the counters this often */

#define MAX_SINKS 8
#define MAX_SOURCES 8
#define MAX_COUNTERS 192
#define OWN_COUNTERS 64		/* the pipeline's own, at most (own_counters() stops there) */

struct deferred {
	struct ttf_request r;	/* deep copy: owns r.events */
	uint64_t ready_ns;	/* latest timestamp in it */
};

struct counter_source {
	ttf_counters_fn fn;
	void *ctx;
};

struct pipeline {
	struct pipeline_opts opts;
	struct ttf_sink sinks[MAX_SINKS];
	int n_sinks;
	struct counter_source sources[MAX_SOURCES];
	int n_sources;
	/* replay: the live run's counters, in their order */
	struct recorded_counters recorded;
	/* the models */
	struct conn_table *conns;
	struct timeline *tl;
	struct sched_view *sched;
	struct gpu_store *gpu;
	struct hop_joins *hops;		/* gateway and message hops (with attribution) */
	struct loop_busy *busy;		/* request windows per serving thread (with sched) */
	struct zmtp_log *zmtp;		/* the ZMTP messages of open connections */
	/* upstream calls seen, for pipeline__take_upstreams (opts.keep_upstreams) */
	struct upstream_queue upstreams;
	/* finished requests waiting for the watermark */
	struct deferred *q;
	size_t n_q, cap_q;
	/* the pipeline's own counters */
	uint64_t not_deferred;		/* ENOMEM: output before the watermark */
	uint64_t engine_dropped;	/* engine hits the timeline could not keep */
	uint64_t gpu_records;		/* GPU records stored */
	uint64_t gpu_store_drops;	/* GPU items the store could not keep */
	uint64_t next_gpu_expire_ns;
	uint64_t next_counters_ns;
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

static void to_sinks(struct pipeline *p, const struct ttf_request *r,
		     const struct ttf_req_metrics *m, const struct ttf_attrib *a)
{
	for (int i = 0; i < p->n_sinks; i++) {
		const struct ttf_sink *s = &p->sinks[i];

		if (m && s->request)
			s->request(s->ctx, r, m, a);
		else if (!m && s->rejected)
			s->rejected(s->ctx, r);
	}
}

/* A held request no client request claimed goes out on its own (hops/joins.h). */
static void hop_expired(void *ctx, const struct ttf_request *r, const struct ttf_req_metrics *m,
			const struct ttf_attrib *a)
{
	to_sinks(ctx, r, m, a);
}

/* Metrics and stage split, once, for every sink. */
static void output(struct pipeline *p, const struct ttf_request *r)
{
	struct attrib_sources src = { .tl = p->tl, .gpu = p->gpu, .link_gbps = p->opts.link_gbps };
	struct ttf_req_metrics m;
	struct ttf_attrib a;
	struct hop_chains chains;
	int have_m, have_a;

	if (p->sched) {
		src.overlay = sched__attrib_overlay;
		src.overlay_ctx = p->sched;
		src.busy = p->busy;
	}
	have_m = ttf_metrics__compute(r, &m) == 0;
	have_a = have_m && p->tl && ttf_attrib__compute(r, &m, &src, &a) == 0;
	/* held: a gateway's upstream call or its upstream's request, out with its client request */
	if (!p->hops || !hop_joins__output(p->hops, r, have_m ? &m : NULL, have_a ? &a : NULL,
					   &chains))
		to_sinks(p, r, have_m ? &m : NULL, have_a ? &a : NULL);
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
	/* No memory to wait: output it now with what the timeline has. */
	p->not_deferred++;
	output(p, r);
}

int pipeline__take_upstreams(struct pipeline *p, struct pipeline_upstream *out, int cap)
{
	return upstream_queue__take(&p->upstreams, out, cap);
}

static void on_request_read(void *ctx, const struct ttf_request *r)
{
	struct pipeline *p = ctx;

	for (int i = 0; i < p->n_sinks; i++)
		if (p->sinks[i].request_read)
			p->sinks[i].request_read(p->sinks[i].ctx, r);
	if (r->flags & TTF_REQ_UPSTREAM) {
		/* the traced process called an upstream: not a request its engine serves */
		if (p->hops)
			hop_joins__on_upstream(p->hops, r);
		if (p->tl)
			timeline__on_gateway(p->tl, r->tgid);
		if (p->opts.sz >= offsetof(struct pipeline_opts, keep_upstreams) +
				  sizeof(p->opts.keep_upstreams) && p->opts.keep_upstreams)
			upstream_queue__push(&p->upstreams, r);	/* hop discovery */
		return;
	}
	/* Only requests that carry a prompt reach an engine. */
	if (strcmp(r->method, "POST"))
		return;
	if (p->tl)
		timeline__on_request_read(p->tl, r->id, r->sock_cookie, r->rx_tid,
					  r->read_done_ns, r->tgid);
	if (p->hops)
		hop_joins__on_request_read(p->hops, r);
}

static void on_response_begin(void *ctx, const struct ttf_request *r)
{
	struct pipeline *p = ctx;

	if (p->tl)
		timeline__on_response_begin(p->tl, r->id, r->resp_first_write_ns);
}

static void on_first_token(void *ctx, const struct ttf_request *r)
{
	struct pipeline *p = ctx;
	const struct ttf_token_event *ev = &r->events[0];

	if (p->tl)
		timeline__on_first_token(p->tl, r->id, ev->write_start_ns ? ev->write_start_ns :
								ev->write_ns);
	loop_busy__add(p->busy, r->id, r->rx_tid, r->read_done_ns,
		       ev->write_start_ns ? ev->write_start_ns : ev->write_ns);
}

static void on_zmtp_msg(void *ctx, const struct ttf_zmtp_msg *m)
{
	struct pipeline *p = ctx;

	zmtp_log__add(p->zmtp, m);	/* a drop is counted there */
	if (p->hops)
		hop_joins__on_msg(p->hops, m);
}

static void on_zmtp_conn(void *ctx, const struct ttf_zmtp_conn *z)
{
	struct pipeline *p = ctx;
	struct ttf_zmtp_conn c = *z;
	size_t n;

	zmtp_log__msgs(p->zmtp, z->sock_cookie, &n, &c.msgs_dropped);
	c.msgs_kept = n;
	for (int i = 0; i < p->n_sinks; i++)
		if (p->sinks[i].zmtp_conn)
			p->sinks[i].zmtp_conn(p->sinks[i].ctx, &c);
	zmtp_log__close(p->zmtp, z->sock_cookie);
}

struct pipeline *pipeline__new(const struct pipeline_opts *opts)
{
	struct pipeline *p = calloc(1, sizeof(*p));
	struct conn_table_opts co = { .sz = sizeof(co), .on_request = on_request,
				      .on_request_read = on_request_read,
				      .on_response_begin = on_response_begin,
				      .on_first_token = on_first_token,
				      .on_zmtp_msg = on_zmtp_msg, .on_zmtp_conn = on_zmtp_conn };

	if (!p)
		return NULL;
	p->opts = *opts;
	co.ctx = p;
	co.xmit_expected = opts->xmit_expected;
	co.send_seq_exact = 1;
	co.grpc_profile = opts->sz >= offsetof(struct pipeline_opts, grpc_profile) +
				       sizeof(opts->grpc_profile) ? opts->grpc_profile : NULL;
	p->conns = conn_table__new(&co);
	p->zmtp = zmtp_log__new();
	if (opts->sched)
		p->sched = sched__new(NULL);
	if (opts->attribution) {
		p->tl = timeline__new(TIMELINE_HORIZON_NS);
		p->hops = hop_joins__new(p->sched);
	}
	if (opts->sched && opts->attribution)
		p->busy = loop_busy__new();
	if (opts->gpu)
		p->gpu = gpu_store__new();
	if (!p->conns || !p->zmtp || (opts->attribution && (!p->tl || !p->hops)) ||
	    (opts->sched && !p->sched) || (opts->sched && opts->attribution && !p->busy) ||
	    (opts->gpu && !p->gpu)) {
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
	recorded_counters__free(&p->recorded);
	conn_table__free(p->conns);
	zmtp_log__free(p->zmtp);
	timeline__free(p->tl);
	hop_joins__free(p->hops);
	sched__free(p->sched);
	loop_busy__free(p->busy);
	upstream_queue__free(&p->upstreams);
	gpu_store__free(p->gpu);
	free(p);
}

int pipeline__add_sink(struct pipeline *p, const struct ttf_sink *s)
{
	if (p->n_sinks == MAX_SINKS)
		return -ENOSPC;
	p->sinks[p->n_sinks++] = *s;
	return 0;
}

int pipeline__add_counters(struct pipeline *p, ttf_counters_fn fn, void *ctx)
{
	if (p->n_sources == MAX_SOURCES)
		return -ENOSPC;
	p->sources[p->n_sources++] = (struct counter_source){ fn, ctx };
	return 0;
}

/* ---- the four entries ---- */

int pipeline__on_net(struct pipeline *p, const struct ttf_net_event *e, size_t len)
{
	for (int i = 0; i < p->n_sinks; i++)
		if (p->sinks[i].net_event)
			p->sinks[i].net_event(p->sinks[i].ctx, e, len);
	/* a process exit ends the scheduler state of its threads */
	if (e->type == TTF_EV_EXIT && p->sched && len >= sizeof(*e))
		sched__forget_tgid(p->sched, e->tgid, e->ts_ns);
	/* a FORK names its child (tid: the child's tgid); a main thread its process */
	if (p->hops && len >= sizeof(*e) &&
	    (e->type == TTF_EV_FORK || e->type == TTF_EV_FOLLOW || e->tid == e->tgid))
		hop_joins__proc_name(p->hops, e->type == TTF_EV_FORK || e->type == TTF_EV_FOLLOW ?
					      e->tid : e->tgid, e->comm);
	return conn_table__on_event(p->conns, e, len);
}

int pipeline__on_sched(struct pipeline *p, const struct ttf_sched_event *e)
{
	for (int i = 0; i < p->n_sinks; i++)
		if (p->sinks[i].sched_event)
			p->sinks[i].sched_event(p->sinks[i].ctx, e);
	/* the view counts what it refuses (sched_threads_refused, ...) */
	return p->sched && sched__add(p->sched, e) < 0 ? -ENOMEM : 0;
}

int pipeline__on_engine(struct pipeline *p, const struct ttf_engine_event *ev)
{
	int err;

	for (int i = 0; i < p->n_sinks; i++)
		if (p->sinks[i].engine_event)
			p->sinks[i].engine_event(p->sinks[i].ctx, ev);
	err = p->tl ? timeline__on_engine_event(p->tl, ev) : 0;
	if (err)
		p->engine_dropped++;
	return err;
}

int pipeline__on_gpu(struct pipeline *p, uint32_t pid, uint32_t kind, const void *body,
		     size_t len)
{
	int err;

	for (int i = 0; i < p->n_sinks; i++)
		if (p->sinks[i].gpu_event)
			p->sinks[i].gpu_event(p->sinks[i].ctx, pid, kind, body, len);
	if (!p->gpu)
		return 0;
	err = gpu_store__add_item(p->gpu, pid, kind, body, len);
	if (!err && kind == TTF_GPU_MSG_RECORDS)
		p->gpu_records++;
	else if (err)
		p->gpu_store_drops++;
	return err;
}

static int rec_net(void *ctx, const struct ttf_net_event *e, size_t len)
{
	return pipeline__on_net(ctx, e, len);
}

static int rec_sched(void *ctx, const struct ttf_sched_event *e)
{
	return pipeline__on_sched(ctx, e);
}

static int rec_engine(void *ctx, const struct ttf_engine_event *e)
{
	return pipeline__on_engine(ctx, e);
}

static int rec_gpu(void *ctx, uint32_t pid, uint32_t kind, const void *body, size_t len)
{
	return pipeline__on_gpu(ctx, pid, kind, body, len);
}

struct ttf_records pipeline__records(struct pipeline *p)
{
	return (struct ttf_records){ .ctx = p, .net = rec_net, .sched = rec_sched,
				     .engine = rec_engine, .gpu = rec_gpu };
}

/* ---- counters ---- */

#define C(n, v)                                                                      \
	do {                                                                         \
		if (k < OWN_COUNTERS)                                                \
			c[k++] = (struct report_counter){ n, v };                    \
	} while (0)

/* The pipeline's own: what its models counted. Returns how many (<= OWN_COUNTERS). */
static int own_counters(struct pipeline *p, struct report_counter *c)
{
	const struct conn_stats *cs = conn_table__stats(p->conns);
	int k = 0;

	C("truncated_payloads", cs->truncated_events);
	C("lost_sync", cs->lost_sync);
	C("non_http_connections", cs->non_http);
	C("token_events_dropped_oom", cs->events_dropped_oom);
	C("malformed_records", cs->malformed);
	/* the recognizers' own, every protocol family's in turn (user/proto/recognizer.h) */
	for (unsigned int i = 0; i < conn_table__n_counters(p->conns); i++)
		C(conn_table__counter_name(p->conns, i), conn_table__counter(p->conns, i));
	C("zmtp_messages_dropped", zmtp_log__stats(p->zmtp)->dropped);
	C("requests_not_deferred_oom", p->not_deferred);
	if (p->tl) {
		const struct timeline_stats *ts = timeline__stats(p->tl);

		C("engine_unmatched_returns", ts->unmatched_returns);
		C("engine_orphan_prompt_steps", ts->orphan_prompt_steps);
		C("engine_chunks_claimed_late", ts->chunks_claimed_late);
		/* past the horizon: routine trimming, not data lost before use */
		C("engine_steps_trimmed", ts->dropped_old - ts->steps_capped);
		C("engine_steps_capped", ts->steps_capped);
		C("aborted_requests_seen_by_engine", ts->aborted);
		C("orphaned_engine_steps", ts->orphaned_steps);
		C("orphaned_engine_us", ts->orphaned_ns / 1000);
		C("requests_delayed_by_orphans", ts->delayed_by_orphans);
		C("delay_by_orphans_us", ts->delay_by_orphans_ns / 1000);
		C("engine_events_dropped_oom", p->engine_dropped);
	}
	if (p->hops)
		k += hop_joins__counters(p->hops, c + k, OWN_COUNTERS - k);
	/* only once it happened: recordings of fewer requests keep their counters */
	if (p->busy && loop_busy__stats(p->busy)->overwritten)
		C("loop_windows_overwritten", loop_busy__stats(p->busy)->overwritten);
	/* only once it happened: hop discovery missed an upstream call (ENOMEM) */
	if (p->upstreams.dropped)
		C("hop_upstreams_dropped_oom", p->upstreams.dropped);
	if (p->sched) {
		struct sched_stats ss;

		sched__stats(p->sched, &ss);
		C("sched_inconsistent", ss.inconsistent);
		/*
		 * Marks older than the horizon are trimmed routinely: no query
		 * reaches that far back. Only a query that reached into time a cap
		 * dropped (overlays_cut) lost data it needed.
		 */
		C("sched_marks_trimmed", ss.marks_horizon);
		C("sched_marks_capped", ss.marks_cap);
		C("sched_overlays_cut", ss.overlays_cut);
		C("sched_threads_refused", ss.threads_refused);
		C("sched_alloc_failed", ss.alloc_failed);
	}
	if (p->gpu) {
		struct ttf_gpu_stats gs = { 0 };

		gpu_store__stats(p->gpu, 0, &gs);
		C("gpu_records", p->gpu_records);
		C("gpu_store_dropped", p->gpu_store_drops);
		C("gpu_send_dropped", gs.send_dropped);
		C("gpu_cupti_dropped", gs.cupti_dropped);
		C("gpu_buffers_refused", gs.buffers_refused);
		C("gpu_buffers_discarded", gs.buffers_discarded);
		C("gpu_invalid_ts", gs.invalid_ts);
		C("gpu_duplicates", gs.duplicates);
		C("gpu_names_dropped", gs.names_dropped);
	}
	return k;
}

#undef C

int pipeline__set_recorded_counters(struct pipeline *p, const struct report_counter *c, int n)
{
	return recorded_counters__set(&p->recorded, c, n, MAX_COUNTERS);
}

/*
 * The sources' and the pipeline's own counters; in replay, the recorded
 * ones, updated, then own ones the recording lacks once they are not 0.
 */
static int model_counters(struct pipeline *p, struct report_counter *c, int cap)
{
	struct report_counter own[OWN_COUNTERS];
	int n_own = own_counters(p, own), n = 0;

	if (p->recorded.n)
		return recorded_counters__merge(&p->recorded, own, n_own, c, cap);
	for (int i = 0; i < p->n_sources && n < cap; i++)
		n += p->sources[i].fn(p->sources[i].ctx, c + n, cap - n);
	for (int j = 0; j < n_own && n < cap; j++)
		c[n++] = own[j];
	return n;
}

static int sink_stats(struct pipeline *p, struct report_counter *c, int cap)
{
	int n = 0;

	for (int i = 0; i < p->n_sinks && n < cap; i++)
		if (p->sinks[i].stats)
			n += p->sinks[i].stats(p->sinks[i].ctx, c + n, cap - n);
	return n;
}

int pipeline__counters(struct pipeline *p, struct report_counter *c, int cap)
{
	int n = model_counters(p, c, cap);

	return n + sink_stats(p, c + n, cap - n);
}

/* ---- time ---- */

void pipeline__advance(struct pipeline *p, uint64_t watermark_ns)
{
	size_t keep = 0;

	for (int i = 0; i < p->n_sinks; i++)
		if (p->sinks[i].advance)
			p->sinks[i].advance(p->sinks[i].ctx, watermark_ns);
	if (p->gpu && watermark_ns != UINT64_MAX && watermark_ns >= p->next_gpu_expire_ns) {
		p->next_gpu_expire_ns = watermark_ns + GPU_EXPIRE_EVERY_NS;
		if (watermark_ns > GPU_KEEP_NS)
			gpu_store__expire(p->gpu, watermark_ns - GPU_KEEP_NS);
	}
	if (!p->tl)
		return;
	timeline__advance(p->tl, watermark_ns);
	/*
	 * Two passes: first what hops hold (a gateway's upstream calls and
	 * their upstream's requests), then the client requests that join them;
	 * one whose upstream call is still open waits for it (bounded).
	 */
	for (int pass = 0; pass < hop_joins__passes(p->hops); pass++) {
		keep = 0;
		for (size_t i = 0; i < p->n_q; i++) {
			struct deferred *d = &p->q[i];

			if (d->ready_ns > watermark_ns ||
			    hop_joins__keep(p->hops, pass, &d->r, d->ready_ns, watermark_ns)) {
				p->q[keep++] = *d;
				continue;
			}
			output(p, &d->r);
			free(d->r.events);
		}
		p->n_q = keep;
	}
	if (p->hops)
		hop_joins__expire(p->hops, watermark_ns, hop_expired, p);
}

void pipeline__tick(struct pipeline *p, uint64_t now_ns)
{
	for (int i = 0; i < p->n_sinks; i++)
		if (p->sinks[i].tick)
			p->sinks[i].tick(p->sinks[i].ctx, now_ns);
	if (now_ns >= p->next_counters_ns) {
		struct report_counter c[MAX_COUNTERS];
		int n = 0, have = 0;

		p->next_counters_ns = now_ns + COUNTERS_EVERY_NS;
		for (int i = 0; i < p->n_sinks; i++) {
			if (!p->sinks[i].counters)
				continue;
			if (!have) {
				n = pipeline__counters(p, c, MAX_COUNTERS);
				have = 1;
			}
			p->sinks[i].counters(p->sinks[i].ctx, c, n);
		}
	}
}

void pipeline__finish(struct pipeline *p, uint64_t now_ns)
{
	conn_table__finish(p->conns, now_ns);
	pipeline__advance(p, UINT64_MAX);
}

int pipeline__finish_sinks(struct pipeline *p)
{
	struct report_counter c[MAX_COUNTERS];
	/*
	 * The sources' counters once, as every sink gets them (a system-wide one
	 * such as sched_switches moves on meanwhile, and a replay of the
	 * recording must print the same summary); the sinks' own as they are
	 * when each sink finishes, so the report shows the exporters' drops.
	 */
	int n_model = model_counters(p, c, MAX_COUNTERS), first = 0;

	for (int i = 0; i < p->n_sinks; i++) {
		int n, err;

		if (!p->sinks[i].finish)
			continue;
		n = n_model + sink_stats(p, c + n_model, MAX_COUNTERS - n_model);
		err = p->sinks[i].finish(p->sinks[i].ctx, c, n);
		if (err && !first)
			first = err;
	}
	return first;
}

const struct pipeline_opts *pipeline__opts(const struct pipeline *p)
{
	return &p->opts;
}

struct gpu_store *pipeline__gpu(struct pipeline *p)
{
	return p->gpu;
}

struct sched_view *pipeline__sched(struct pipeline *p)
{
	return p->sched;
}
