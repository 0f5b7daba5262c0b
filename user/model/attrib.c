// SPDX-License-Identifier: GPL-2.0-only
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include "user/model/attrib.h"
#include "user/model/loop_busy.h"
#include "user/model/gpu_join.h"
#include "user/model/vocab.h"
#include "user/lib/log.h"

static void set_inferred(struct ttf_attrib *a, const char *why)
{
	if (a->kind == TTF_ATTR_EXACT)
		a->kind = TTF_ATTR_INFERRED;
	if (!a->inferred_by[0])
		snprintf(a->inferred_by, sizeof(a->inferred_by), "%s", why);
}

static void overlay_stage(struct ttf_attrib *a, const struct attrib_sources *src,
			  enum ttf_stage st, uint32_t tid, uint64_t start, uint64_t end)
{
	if (!src->overlay || !tid || end <= start)
		return;
	if (src->overlay(src->overlay_ctx, tid, start, end, &a->overlay[st]) == 0)
		a->have_overlay[st] = 1;
}

#define GAP_NAMES 4	/* requests named in one cause; more are counted */

struct gap_scan {
	uint64_t self_id;
	uint64_t ids[GAP_NAMES];
	int n_ids;		/* distinct requests named (ids[] holds the first) */
	int unknown;		/* a prompt step of an unknown request */
};

static void gap_add(struct gap_scan *g, uint64_t id)
{
	if (!id || id == g->self_id) {
		g->unknown |= !id;
		return;
	}
	for (int i = 0; i < g->n_ids && i < GAP_NAMES; i++)
		if (g->ids[i] == id)
			return;
	if (g->n_ids < GAP_NAMES)
		g->ids[g->n_ids] = id;
	g->n_ids++;
}

/* Every other request prefilling in a step of the gap. */
static int find_other_prefill(void *ctx, const struct tl_step *s)
{
	struct gap_scan *g = ctx;
	int n = s->n_prompt_reqs < TL_STEP_REQS ? s->n_prompt_reqs : TL_STEP_REQS;

	if (!s->is_prompt)
		return 0;
	if (!s->n_prompt_reqs)
		gap_add(g, s->req_id);
	for (int i = 0; i < n; i++)
		gap_add(g, s->prompt_reqs[i]);
	if (s->n_prompt_reqs > TL_STEP_REQS)
		g->n_ids += s->n_prompt_reqs - TL_STEP_REQS;	/* named nowhere: counted */
	return 0;
}

/* "prefill of request 12", "prefill of requests 12, 15 +2", "prefill of another request" */
static void gap_cause(const struct gap_scan *g, char *out, size_t n)
{
	size_t len;

	if (!g->n_ids) {
		snprintf(out, n, "prefill of another request");
		return;
	}
	len = snprintf(out, n, "prefill of request%s", g->n_ids > 1 ? "s" : "");
	for (int i = 0; i < g->n_ids && i < GAP_NAMES && len < n; i++)
		len += snprintf(out + len, n - len, "%s %llu", i ? "," : "",
				(unsigned long long)g->ids[i]);
	if (g->n_ids > GAP_NAMES && len < n)
		snprintf(out + len, n - len, " +%d", g->n_ids - GAP_NAMES);
}

/* Name the visible cause of one ITL outlier between token events i and i+1. */
static void outlier_cause(const struct ttf_request *r, const struct ttf_req_metrics *m,
			  const struct attrib_sources *src, const struct tl_ticket *k,
			  uint32_t i, uint64_t itl_ns, char *out, size_t n)
{
	const struct ttf_token_event *ev0 = &r->events[i], *ev1 = &r->events[i + 1];
	uint64_t t0 = ttf_metrics__event_time(ev0), t1 = ttf_metrics__event_time(ev1);
	double excess = itl_ns - (m->itl_mean_ns > 0 ? m->itl_mean_ns : 0);
	uint64_t other, overlap;
	struct ttf_overlay ov;

	if (src->tl) {
		struct gap_scan g = { .self_id = r->id };

		timeline__steps_in(src->tl, t0, t1, find_other_prefill, &g);
		if (g.n_ids || g.unknown) {
			gap_cause(&g, out, n);
			return;
		}
	}
	if (ev1->xmit_ns && ev1->xmit_ns > ev1->write_ns &&
	    ev1->xmit_ns - ev1->write_ns > excess / 2) {
		snprintf(out, n, "send queued");
		return;
	}
	if (src->overlay) {
		uint32_t tids[2] = { r->tx_tid, k ? k->step_tid : 0 };

		for (int j = 0; j < 2; j++) {
			if (!tids[j] || src->overlay(src->overlay_ctx, tids[j], t0, t1, &ov))
				continue;
			if (ov.runnable_ns > excess / 2) {
				snprintf(out, n, "runqueue wait");
				return;
			}
		}
		/* its writer ran other work: an event loop busy with another request (D14) */
		if (src->busy && r->tx_tid &&
		    !src->overlay(src->overlay_ctx, r->tx_tid, t0, t1, &ov) &&
		    ov.on_cpu_ns > excess / 2 &&
		    !loop_busy__who(src->busy, r->tx_tid, t0, t1, r->id, &other, &overlap) &&
		    overlap > excess / 2) {
			snprintf(out, n, "frontend loop busy with request %llu",
				 (unsigned long long)other);
			return;
		}
		if (k && k->step_tid &&
		    !src->overlay(src->overlay_ctx, k->step_tid, t0, t1, &ov) &&
		    ov.blocked_ns > excess / 2) {
			snprintf(out, n, "off-CPU");
			return;
		}
	}
	snprintf(out, n, "none visible");
}

static void name_outliers(const struct ttf_request *r, const struct ttf_req_metrics *m,
			  const struct attrib_sources *src, const struct tl_ticket *k,
			  struct ttf_attrib *a)
{
	for (uint32_t i = 0; i + 1 < r->n_events && a->n_causes < TTF_MAX_CAUSES; i++) {
		struct ttf_outlier_cause *c;
		uint64_t itl;

		if (ttf_metrics__itl_one(r, i, &itl) || !ttf_metrics__is_outlier(m, itl))
			continue;
		c = &a->causes[a->n_causes++];
		c->index = i;
		c->itl_ns = itl;
		outlier_cause(r, m, src, k, i, itl, c->cause, sizeof(c->cause));
	}
}

/*
 * Kernels and copies of the engine process inside [start, end). @tid != 0:
 * the request's own thread; when it launched GPU work in the window (a
 * thread-per-request server), only that work is the request's, since other
 * requests' work overlaps the window; else the whole process's.
 */
static void gpu_part(struct ttf_attrib *a, const struct attrib_sources *src, uint32_t pid,
		     uint32_t tid, uint64_t start, uint64_t end)
{
	struct gpu_copy_bw bw[TTF_MAX_COPIES];
	struct gpu_prefill gp;
	int n = -1;

	if (!src->gpu || !pid || end <= start)
		return;
	if (tid)
		n = gpu_join__prefill(src->gpu, pid, tid, start, end, &gp, bw, TTF_MAX_COPIES);
	if (n < 0 || gp.split.kernels == gp.split.unjoined)
		n = gpu_join__prefill(src->gpu, pid, 0, start, end, &gp, bw, TTF_MAX_COPIES);
	if (n < 0 || (!gp.split.kernels && !gp.split.copies))
		return;
	a->gpu.have = 1;
	a->gpu.compute_ns = gp.split.compute_ns;
	a->gpu.copy_ns = gp.split.copy_ns;
	a->gpu.host_gap_ns = gp.split.host_gap_ns;
	a->gpu.kernels = gp.split.kernels;
	a->gpu.n_copies = n;
	a->gpu.link_gbps = src->link_gbps;
	for (int i = 0; i < n && i < TTF_MAX_COPIES; i++) {
		a->gpu.copies[i] = (struct ttf_copy){
			.bytes = bw[i].bytes, .dur_ns = bw[i].end_ns - bw[i].start_ns,
			.copy_kind = bw[i].copy_kind, .pageable = bw[i].pageable,
			.gbps = bw[i].gbps,
		};
	}
}

struct step_collect {
	struct ttf_attrib *a;
	const struct attrib_sources *src;
	uint64_t req_id;
	uint32_t pid;
};

/* Does step st prefill request req_id (the first of its batch, or another)? */
static bool step_prefills(const struct tl_step *st, uint64_t req_id)
{
	if (st->req_id == req_id)
		return true;
	for (int i = 0; i < st->n_prompt_reqs && i < TL_STEP_REQS; i++)
		if (st->prompt_reqs[i] == req_id)
			return true;
	return false;
}

static int collect_step(void *ctx, const struct tl_step *st)
{
	struct step_collect *c = ctx;
	struct ttf_step_span *sp;
	struct gpu_split split;

	/* a batch's second prompt has the step too (before, only the first had it) */
	if (!st->is_prompt || !step_prefills(st, c->req_id))
		return 0;
	if (c->a->n_step_spans == TTF_MAX_STEP_SPANS)
		return 1;
	sp = &c->a->step_spans[c->a->n_step_spans++];
	sp->start_ns = st->start_ns;
	sp->end_ns = st->end_ns;
	sp->n_tokens = st->n_tokens;
	sp->tid = st->tid;
	if (c->src->gpu && st->end_ns > st->start_ns &&
	    !gpu_join__step(c->src->gpu, c->pid,
			    &(struct gpu_step){ st->start_ns, st->end_ns, st->tid }, &split) &&
	    (split.kernels || split.copies)) {
		sp->have_gpu = 1;
		sp->compute_ns = split.compute_ns;
		sp->copy_ns = split.copy_ns;
		sp->host_gap_ns = split.host_gap_ns;
		sp->kernels = split.kernels;
		sp->copies = split.copies;
	}
	return 0;
}

/* Nothing known yet: every stage and count unknown (-1). */
static void attrib_reset(struct ttf_attrib *a)
{
	memset(a, 0, sizeof(*a));
	a->cached_tokens = -1;
	a->prefill_token_share = -1;
	for (int i = 0; i < TTF_ST__ALL; i++)
		a->stage_ns[i] = -1;
	a->expect_wait_ns = -1;
}

/*
 * Keep every boundary in [previous boundary, first token]. Returns 1 when
 * one moved by more than clock jitter.
 */
static int clamp_bounds(const struct ttf_request *r, uint64_t b[TTF_ST__MAX + 1])
{
	uint64_t x = b[TTF_ST__MAX];
	int clamped = 0;

	for (int i = 1; i <= TTF_ST__MAX; i++) {
		uint64_t lo = b[i - 1], v = b[i];

		if (v < lo || v > x) {
			/* Jitter of a few us between clocks of two CPUs is not worth a flag. */
			if ((v < lo && lo - v > 50000) || (v > x && v - x > 50000)) {
				clamped = 1;
				ttf_debug("request %llu: stage boundary %d at %llu clamped to [%llu, %llu]",
					  (unsigned long long)r->id, i, (unsigned long long)v,
					  (unsigned long long)lo, (unsigned long long)x);
			}
			b[i] = v < lo ? lo : (v > x ? x : v);
		}
	}
	return clamped;
}

/*
 * The stage boundaries, from the request's start to its first token; those
 * the engine's steps give (k) fall back to the previous one without them.
 * Returns 1 when one was clamped into order.
 */
static int stage_bounds(const struct ttf_request *r, const struct ttf_req_metrics *m,
			const struct tl_ticket *k, int have_steps, int have_tok,
			uint64_t b[TTF_ST__MAX + 1])
{
	uint64_t x = m->t_first_token_ns;

	b[0] = m->t_start_ns;
	b[1] = r->arrival_last_ns ? r->arrival_last_ns : b[0];
	b[2] = r->read_done_ns ? r->read_done_ns : b[1];
	b[3] = have_tok ? k->tok_end_ns : b[2];
	b[4] = have_steps ? k->prefill_start_ns : b[3];
	b[5] = have_steps ? k->prefill_end_ns : b[4];
	/*
	 * emit ends when the first-token write begins: on a free connection the
	 * segment reaches the device inside that syscall, before it returns.
	 */
	b[6] = r->events[0].write_start_ns ? r->events[0].write_start_ns :
	       r->events[0].write_ns ? r->events[0].write_ns : x;
	b[7] = x;
	return clamp_bounds(r, b);
}

/* No prompt step of this request: frontend to emit is one server stage. */
static void merge_server(struct ttf_attrib *a, const struct attrib_sources *src,
			 const uint64_t b[TTF_ST__MAX + 1])
{
	a->stage_ns[TTF_ST_SERVER] = b[6] - b[2];
	a->stage_ns[TTF_ST_FRONTEND] = a->stage_ns[TTF_ST_QUEUE] = -1;
	a->stage_ns[TTF_ST_PREFILL] = a->stage_ns[TTF_ST_EMIT] = -1;
	a->kind = TTF_ATTR_MERGED;
	snprintf(a->merged, sizeof(a->merged), "%s+%s+%s+%s",
		 ttf_stage_name(TTF_ST_FRONTEND), ttf_stage_name(TTF_ST_QUEUE),
		 ttf_stage_name(TTF_ST_PREFILL), ttf_stage_name(TTF_ST_EMIT));
	snprintf(a->inferred_by, sizeof(a->inferred_by), "%s",
		 !src->tl || !timeline__has_steps(src->tl) ?
		 "no engine step probe" : "no prompt step matched this request");
}

/* A step matched by arrival order, not by id: say how it was chosen. */
static void match_inferred(struct ttf_attrib *a, const struct tl_ticket *k)
{
	char why[96];

	if (k->match != TL_MATCH_TIE && k->match != TL_MATCH_FIFO)
		return;
	if (k->match == TL_MATCH_TIE && k->by_first_chunk)
		snprintf(why, sizeof(why), "chunked prefill: arrival order among %d"
			 " longer prompts of %d waiting requests", k->n_tied, k->n_waiting);
	else if (k->match == TL_MATCH_TIE)
		snprintf(why, sizeof(why), "equal prompt lengths: arrival order among %d"
			 " of %d waiting requests", k->n_tied, k->n_waiting);
	else
		snprintf(why, sizeof(why), "FIFO order among %d waiting requests", k->n_waiting);
	set_inferred(a, why);
}

/* The engine's prompt steps of request r (ticket k): prefill, its steps and tokenize. */
static void from_steps(struct ttf_attrib *a, const struct attrib_sources *src,
		       const struct ttf_request *r, const struct tl_ticket *k, int have_tok,
		       const uint64_t b[TTF_ST__MAX + 1])
{
	struct step_collect sc = { a, src, r->id, k->step_tgid };

	a->engine_tgid = k->step_tgid;
	a->prefill_steps = k->prefill_steps;
	a->prefill_tokens = k->prefill_tokens;
	timeline__steps_in(src->tl, k->prefill_start_ns, k->prefill_end_ns, collect_step, &sc);
	a->queued_behind_aborted_ns = k->queued_behind_orphan_ns;
	if (!have_tok) {
		a->stage_ns[TTF_ST_FRONTEND] = -1;
		a->kind = TTF_ATTR_MERGED;
		snprintf(a->merged, sizeof(a->merged), "%s+%s",
			 ttf_stage_name(TTF_ST_FRONTEND), ttf_stage_name(TTF_ST_QUEUE));
	} else {
		uint64_t ts = k->tok_start_ns < b[2] ? b[2] : k->tok_start_ns;

		a->stage_ns[TTF_ST_TOKENIZE] = b[3] > ts ? b[3] - ts : 0;
	}
	a->cached_tokens = k->cached_tokens;
	a->prefill_shared_with = k->max_sharing > 1 ? k->max_sharing - 1 : 0;
	a->prefill_token_share = k->step_tokens && k->prefill_tokens ?
				 (double)k->prefill_tokens / k->step_tokens : -1;
	match_inferred(a, k);
}

/* Where each stage's thread was: on CPU, runnable, blocked. */
static void overlay_stages(struct ttf_attrib *a, const struct attrib_sources *src,
			   const struct ttf_request *r, const struct tl_ticket *k,
			   const uint64_t b[TTF_ST__MAX + 1])
{
	overlay_stage(a, src, TTF_ST_READ_WAIT, r->rx_tid, b[1], b[2]);
	overlay_stage(a, src, TTF_ST_FRONTEND, r->rx_tid, b[2], b[3]);
	if (k) {
		overlay_stage(a, src, TTF_ST_QUEUE, k->step_tid, b[3], b[4]);
		overlay_stage(a, src, TTF_ST_PREFILL, k->step_tid, b[4], b[5]);
	}
	overlay_stage(a, src, TTF_ST_EMIT, r->tx_tid, b[5], b[6]);
}

int ttf_attrib__compute(const struct ttf_request *r, const struct ttf_req_metrics *m,
			const struct attrib_sources *src, struct ttf_attrib *a)
{
	const struct tl_ticket *k = NULL;
	uint64_t b[TTF_ST__MAX + 1];
	int have_steps, have_tok, clamped;

	if (!r || !m || !src || !a)
		return -EINVAL;
	attrib_reset(a);
	if (m->ttft_ns < 0 || !m->t_start_ns || !m->t_first_token_ns || !r->n_events)
		return 0;
	a->valid = 1;
	if (src->tl)
		k = timeline__ticket(src->tl, r->id);
	have_steps = k && k->done;
	have_tok = have_steps && k->tok_end_ns;

	clamped = stage_bounds(r, m, k, have_steps, have_tok, b);
	for (int i = 0; i < TTF_ST__MAX; i++)
		a->stage_ns[i] = b[i + 1] - b[i];
	memcpy(a->bound_ns, b, sizeof(a->bound_ns));
	/* Expect: 100-continue: the client's wait is inside net_in, and labelled */
	if (r->expect_wait_known)
		a->expect_wait_ns = (int64_t)r->expect_wait_ns < a->stage_ns[TTF_ST_NET_IN] ?
				    (int64_t)r->expect_wait_ns : a->stage_ns[TTF_ST_NET_IN];
	if (have_steps)
		from_steps(a, src, r, k, have_tok, b);
	else
		merge_server(a, src, b);
	if (clamped)
		set_inferred(a, "event order clamped");

	/* GPU spans: the prefill window, or the whole server stage without step probes. */
	gpu_part(a, src, have_steps ? k->step_tgid : r->tgid, have_steps ? 0 : r->tx_tid,
		 have_steps ? b[4] : b[2], have_steps ? b[5] : b[6]);
	if (a->gpu.have && have_steps && a->gpu.copy_ns) {
		uint64_t c = a->gpu.copy_ns;

		if (c > (uint64_t)a->stage_ns[TTF_ST_PREFILL])
			c = a->stage_ns[TTF_ST_PREFILL];
		a->stage_ns[TTF_ST_COPY] = c;
		a->stage_ns[TTF_ST_PREFILL] -= c;
	}
	overlay_stages(a, src, r, have_steps ? k : NULL, b);
	name_outliers(r, m, src, k, a);
	return 0;
}
