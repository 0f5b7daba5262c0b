// SPDX-License-Identifier: GPL-2.0-only
/* A request's hops, held, joined and split, as the pipeline calls them (joins.h). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "user/lib/log.h"
#include "user/model/hops/gateway.h"
#include "user/model/hops/msg.h"
#include "user/model/hops/joins.h"
#include "user/model/proc_names.h"
#include "user/model/sched.h"

struct hop_joins {
	struct hops *gw;		/* gateway -> upstream joins */
	struct msg_hops *msg;		/* ZMQ message hops by request id */
	struct proc_names *names;	/* process names, for a message hop's engine */
	struct sched_view *sched;	/* the take windows' overlay; NULL: none (not owned) */
};

/* Stack profiles name the processes of message hops; a bad file: a warning, the rest kept. */
static void load_stacks(struct msg_hops *mh)
{
	struct stack_profiles *sp = calloc(1, sizeof(*sp));
	char err[512];

	if (!sp)
		return;
	if (stack_profiles__load_default(sp, err, sizeof(err)))
		ttf_warn("stack profile %s (message hops name their processes without it)", err);
	msg_hops__set_stacks(mh, sp);
	free(sp);
}

struct hop_joins *hop_joins__new(struct sched_view *sched)
{
	struct hop_joins *s = calloc(1, sizeof(*s));

	if (!s)
		return NULL;
	s->sched = sched;
	s->gw = hops__new();
	s->msg = msg_hops__new();
	s->names = proc_names__new();
	if (s->msg)
		load_stacks(s->msg);
	if (!s->gw || !s->msg || !s->names) {
		hop_joins__free(s);
		return NULL;
	}
	return s;
}

void hop_joins__free(struct hop_joins *s)
{
	if (!s)
		return;
	hops__free(s->gw);
	msg_hops__free(s->msg);
	proc_names__free(s->names);
	free(s);
}

void hop_joins__proc_name(struct hop_joins *s, uint32_t tgid, const char *comm)
{
	proc_names__set(s->names, tgid, comm);
}

void hop_joins__on_upstream(struct hop_joins *s, const struct ttf_request *u)
{
	hops__on_upstream_conn(s->gw, u);
}

void hop_joins__on_request_read(struct hop_joins *s, const struct ttf_request *r)
{
	msg_hops__on_read(s->msg, r->tgid, r->id, r->read_done_ns);
}

void hop_joins__on_msg(struct hop_joins *s, const struct ttf_zmtp_msg *m)
{
	/* with ids or without: the inferred join pairs them all (D17); ENOMEM counted there */
	msg_hops__on_msg(s->msg, m);
}

/* r's message chain into *c, its processes named, its take windows overlaid. 1 joined. */
static int msg_join(struct hop_joins *s, const struct ttf_request *r,
		    const struct ttf_req_metrics *m, const struct ttf_attrib *a,
		    struct ttf_msg_chain *c)
{
	if (!msg_hops__join(s->msg, r, m, a, c))
		return 0;
	for (int k = 1; k < c->n_procs; k++)
		proc_names__get(s->names, c->tgid[k], c->comm[k], sizeof(c->comm[k]));
	for (int i = 0; s->sched && i < TTF_MT__MAX; i++) {
		struct ttf_msg_take_gap *g = &c->take[i];

		g->valid = g->tid && sched__attrib_overlay(s->sched, g->tid, g->start_ns,
							   g->end_ns, &g->ov) == 0;
	}
	return 1;
}

int hop_joins__output(struct hop_joins *s, const struct ttf_request *r,
		      const struct ttf_req_metrics *m, struct ttf_attrib *a,
		      struct hop_chains *c)
{
	int held = 0;

	if (a) {
		a->hops = NULL;
		a->msg = NULL;
		if (msg_join(s, r, m, a, &c->msg))
			a->msg = &c->msg;
	}
	/* A gateway's upstream call and its upstream's request wait for their client request. */
	if (m && hops__hold(s->gw, r, m, a) == 1) {
		held = 1;
	} else if (a && hops__join(s->gw, r, m, a, &c->gw)) {
		a->hops = &c->gw;
		if (a->kind == TTF_ATTR_MERGED)	/* a gateway has no engine steps of its own */
			snprintf(a->inferred_by, sizeof(a->inferred_by),
				 "a gateway: the split per hop is in hops");
	}
	msg_hops__request_done(s->msg, r->id);
	return held;
}

int hop_joins__passes(const struct hop_joins *s)
{
	return s ? 2 : 1;
}

int hop_joins__keep(const struct hop_joins *s, int pass, const struct ttf_request *r,
		    uint64_t ready_ns, uint64_t watermark_ns)
{
	if (!s || hops__holds(s->gw, r))
		return 0;
	if (pass == 0)
		return 1;
	return watermark_ns != UINT64_MAX && watermark_ns < ready_ns + HOPS_WAIT_NS &&
	       hops__wait(s->gw, r);
}

void hop_joins__expire(struct hop_joins *s, uint64_t watermark_ns, hop_joins_out_fn fn,
		       void *ctx)
{
	hops__expire(s->gw, watermark_ns, fn, ctx);
}

#define C(n, v)                                                                      \
	do {                                                                         \
		if (k < cap)                                                         \
			c[k++] = (struct report_counter){ n, v };                    \
	} while (0)

int hop_joins__counters(const struct hop_joins *s, struct report_counter *c, int cap)
{
	const struct hops_stats *hs = hops__stats(s->gw);
	const struct msg_hops_stats *ms = msg_hops__stats(s->msg);
	int k = 0;

	C("hop_upstream_conns", hs->upstream_conns);
	C("hop_joins_exact", hs->joined_exact);
	C("hop_joins_inferred", hs->joined_inferred);
	C("hop_joins_disaggregated", hs->joined_pd);
	C("hop_joins_rewritten", hs->joined_rewritten);
	C("hop_side_calls", hs->side_calls);
	C("hop_upstream_untraced", hs->upstream_untraced);
	C("hop_held_unclaimed", hs->expired);
	C("hop_hold_dropped_oom", hs->dropped_oom);
	if (ms->ids) {	/* only with message hops */
		C("msg_hop_joins", ms->joined);
		C("msg_hop_unjoined", ms->unjoined);
		C("msg_hop_out_after_in", ms->out_after_in);
		C("msg_hop_ids_evicted", ms->ids_evicted);
	}
	/* only once it happened: recordings made before D17 keep their counters */
	if (ms->joined_inferred)
		C("msg_hop_joins_inferred", ms->joined_inferred);
	if (ms->reads_dropped)
		C("msg_hop_reads_dropped", ms->reads_dropped);
	if (ms->inferred_id_incomplete)
		C("msg_hop_joins_inferred_id_incomplete", ms->inferred_id_incomplete);
	if (ms->inferred_ambiguous)
		C("msg_hop_joins_inferred_ambiguous", ms->inferred_ambiguous);
	if (ms->joined_by_rule[TTF_MID_SUFFIX])
		C("msg_hop_joins_id_suffix", ms->joined_by_rule[TTF_MID_SUFFIX]);
	if (ms->joined_by_rule[TTF_MID_CHILD])
		C("msg_hop_joins_id_child", ms->joined_by_rule[TTF_MID_CHILD]);
	if (ms->joined_by_rule[TTF_MID_CORE])
		C("msg_hop_joins_id_core", ms->joined_by_rule[TTF_MID_CORE]);
	return k;
}

#undef C
