// SPDX-License-Identifier: GPL-2.0-only
/*
 * A client request's chain through a gateway, from the calls held for it
 * (gateway.h, docs/design.md D11, D13).
 */
#include <stdio.h>
#include <string.h>
#include "bpf/net.h"
#include "user/lib/log.h"
#include "user/model/hops/gateway_held.h"

/* Reads this close are one read (a recv that returned several events). */
#define SAME_READ_NS 1000
/* Holding tokens this long (with a later read before the first write) is buffering. */
#define BUFFERING_MIN_NS 1000000

static double mean_gap_ns(const struct ttf_request *r)
{
	if (r->n_events < 2)
		return -1;
	return (double)(r->events[r->n_events - 1].write_ns - r->events[0].write_ns) /
	       (r->n_events - 1);
}

/* Clamp t into [lo, hi]. */
static uint64_t clamp(uint64_t t, uint64_t lo, uint64_t hi)
{
	return t < lo ? lo : t > hi ? hi : t;
}

/* The upstream's own split inside [lo, hi] (lo: U's request written; hi: its first token). */
static void engine_split(struct ttf_hop_chain *c, const struct held *e, uint64_t lo, uint64_t hi)
{
	const struct ttf_attrib *a = &e->a;
	uint64_t b[TTF_ST__MAX + 1];

	for (int i = 0; i < TTF_ST__ALL; i++)
		c->up_stage_ns[i] = -1;
	c->up_kind = a->kind;
	snprintf(c->up_merged, sizeof(c->up_merged), "%s", a->merged);
	snprintf(c->up_inferred_by, sizeof(c->up_inferred_by), "%s", a->inferred_by);
	if (!a->valid)
		return;
	for (int i = 0; i <= TTF_ST__MAX; i++)
		b[i] = clamp(a->bound_ns[i], i ? b[i - 1] : lo, hi);
	b[TTF_ST__MAX] = hi;
	for (int i = 0; i < TTF_ST__MAX; i++)
		if (a->stage_ns[i] >= 0)
			c->up_stage_ns[i] = (int64_t)(b[i + 1] - b[i]);
	if (a->stage_ns[TTF_ST_SERVER] >= 0)
		c->up_stage_ns[TTF_ST_SERVER] = (int64_t)(b[TTF_ST_EMIT + 1] - b[TTF_ST_READ_WAIT + 1]);
	c->up_stage_ns[TTF_ST_TOKENIZE] = a->stage_ns[TTF_ST_TOKENIZE];
}

/* Drop the held request with this id (upstream: a call, else a server's request). */
static void drop_by_id(struct hops *h, int upstream, uint64_t id)
{
	for (size_t i = 0; i < h->n_held; i++)
		if (h->held[i].upstream == upstream && h->held[i].r.id == id) {
			gw_drop_held(h, i);
			return;
		}
}

/* What the chain says of the prefill call pf and its server's request ep (NULL: not seen). */
static void pd_part(struct ttf_hop_chain *c, const struct held *pf, const struct held *ep)
{
	c->pd.seen = 1;
	c->pd.port = pf->r.addr.rport;
	c->pd.tokens = (pf->r.flags & TTF_REQ_USAGE) ? pf->r.usage_completion_tokens :
		       pf->r.n_events;
	c->pd.server_ns = -1;
	if (!ep)
		return;
	c->pd.tgid = ep->r.tgid;
	memcpy(c->pd.comm, ep->r.comm, sizeof(c->pd.comm));
	c->pd.req_id = ep->r.id;
	if (ep->r.end_write_ns >= ep->r.read_done_ns && ep->r.read_done_ns)
		c->pd.server_ns = (int64_t)(ep->r.end_write_ns - ep->r.read_done_ns);
}

/* What one client request's chain is made of. */
struct join {
	struct held *u;		/* the upstream call that streamed its first token */
	struct held *e;		/* u's server's request; NULL not seen */
	struct held *pf, *ep;	/* disaggregated: the prefill call and its server's request */
	int n_fit, n_same;	/* calls that fit r (find_upstream) */
	int n_rw;		/* calls in r's window, its body rewritten (find_rewritten) */
	int n_d, same_thread;	/* disaggregated calls that fit (find_pd) */
	uint64_t b[TTF_HS__MAX + 1];	/* the stages' boundaries */
};

/* r's upstream call(s), by body, else a disaggregated pair. 0: none fits. */
static int find_calls(struct hops *h, const struct ttf_request *r, struct join *j)
{
	j->u = gw_find_upstream(h, r, &j->n_fit, &j->n_same);
	if (!j->u)
		j->u = gw_find_pd(h, r, &j->pf, &j->n_d, &j->same_thread);
	if (!j->u)
		j->u = gw_find_rewritten(h, r, &j->n_rw);
	if (j->u)
		return 1;
	ttf_debug("hops: request %llu (read %.3f ms, first write %.3f ms): no upstream call "
		  "fits (%zu held)", (unsigned long long)r->id, r->read_first_ns / 1e6,
		  gw_first_write_ns(r) / 1e6, h->n_held);
	for (size_t i = 0; i < h->n_held; i++)
		if (h->held[i].upstream)
			ttf_debug("hops:   call %llu: pid %u, written %.3f ms, first token read "
				  "%.3f ms", (unsigned long long)h->held[i].r.id,
				  h->held[i].r.tgid, h->held[i].r.read_first_ns / 1e6,
				  h->held[i].r.n_events ? h->held[i].r.events[0].write_ns / 1e6 : 0);
	return 0;
}

/* The chain's processes and connection, and how r and its call were joined. */
static void chain_head(struct hops *h, struct ttf_hop_chain *c, const struct ttf_request *r,
		       const struct join *j)
{
	const struct held *u = j->u;

	memset(c, 0, sizeof(*c));
	c->gw_tgid = r->tgid;
	memcpy(c->gw_comm, r->comm, sizeof(c->gw_comm));
	c->up_port = u->r.addr.rport;
	c->gw_port = u->r.addr.lport;
	c->up_addr = u->r.addr;
	c->up_unix = u->r.addr.family == TTF_AF_UNIX;
	if (c->up_unix) {
		c->gw_ino = ttf_unix_ino(u->r.addr.laddr);
		c->up_ino = ttf_unix_ino(u->r.addr.raddr);
	}
	c->exact = !j->pf && !j->n_rw && j->n_fit == 1;
	if (j->n_rw)
		snprintf(c->why, sizeof(c->why), "its body rewritten: the call written closest to "
			 "its read that streamed before its first token (%d fit)", j->n_rw);
	else if (j->pf)
		snprintf(c->why, sizeof(c->why), "disaggregated: a prefill call answered, then "
			 "the call that streamed its first token (%d fit%s)", j->n_d,
			 j->same_thread ? ", on its thread" : "");
	else if (j->n_fit == 1)
		snprintf(c->why, sizeof(c->why), "the only upstream call with its body between its read and token");
	else
		snprintf(c->why, sizeof(c->why), "written closest to its read, of %d upstream calls "
			 "that fit (%d with its %u events)", j->n_fit, j->n_same, r->n_events);
	h->stats.joined_exact += c->exact;
	h->stats.joined_inferred += !c->exact;
	h->stats.joined_pd += j->pf != NULL;
	h->stats.joined_rewritten += j->n_rw > 0;
}

/* The stages' boundaries, each clamped into [previous, first token]: they sum to TTFT. */
static void chain_stages(struct ttf_hop_chain *c, const struct ttf_request *r,
			 const struct ttf_req_metrics *m, const struct ttf_attrib *a,
			 struct join *j)
{
	const struct held *u = j->u, *pf = j->pf, *e = j->e;
	uint64_t *b = j->b, up_first = u->r.events[0].write_ns, x = m->t_first_token_ns;

	/* read_wait ends where the gateway read the request: the attribution's own boundary */
	b[TTF_HS_NET_IN] = m->t_start_ns;
	b[TTF_HS_READ_WAIT] = a->bound_ns[1];
	b[TTF_HS_GATEWAY_IN] = a->bound_ns[2];
	b[TTF_HS_PREFILL_CALL] = pf ? pf->r.read_done_ns : u->r.read_done_ns;
	b[TTF_HS_HANDOFF] = pf ? pf->r.end_write_ns : u->r.read_done_ns;
	b[TTF_HS_UPSTREAM] = u->r.read_done_ns;
	b[TTF_HS_UPSTREAM_OUT] = e && e->m.t_first_token_ns ? e->m.t_first_token_ns : up_first;
	b[TTF_HS_GATEWAY_OUT] = up_first;
	b[TTF_HS_NET_OUT] = gw_first_write_ns(r);
	b[TTF_HS__MAX] = x;
	for (int i = 1; i <= TTF_HS__MAX; i++)
		b[i] = clamp(b[i], b[i - 1], x);
	for (int i = 0; i < TTF_HS__MAX; i++)
		c->stage_ns[i] = (int64_t)(b[i + 1] - b[i]);
}

/* The upstream's process and own split, or why it has none. */
static void chain_upstream(struct hops *h, struct ttf_hop_chain *c, const struct join *j)
{
	const struct held *e = j->e;

	for (int i = 0; i < TTF_ST__ALL; i++)
		c->up_stage_ns[i] = -1;
	if (e) {
		c->up_tgid = e->r.tgid;
		memcpy(c->up_comm, e->r.comm, sizeof(c->up_comm));
		c->up_req_id = e->r.id;
		engine_split(c, e, j->b[TTF_HS_UPSTREAM], j->b[TTF_HS_UPSTREAM_OUT]);
		return;
	}
	h->stats.upstream_untraced++;
	if (c->up_unix)
		snprintf(c->up_why, sizeof(c->up_why), "upstream unix:%llu: its server's "
			 "request was not seen (not traced, or traced too late)",
			 (unsigned long long)c->up_ino);
	else
		snprintf(c->up_why, sizeof(c->up_why), "upstream port %u: its server's "
			 "request was not seen (not traced, or traced too late)", c->up_port);
}

/* Buffering: upstream reads after the first token's, before the first client write. */
static void chain_buffering(struct ttf_hop_chain *c, const struct ttf_request *r,
			    const struct ttf_request *u)
{
	uint64_t w = gw_first_write_ns(r), up_first = u->events[0].write_ns;

	for (uint32_t i = 1; i < u->n_events; i++) {
		uint64_t t = u->events[i].write_ns;

		if (t > w)
			break;
		if (t - u->events[i - 1].write_ns > SAME_READ_NS)
			c->held_reads++;
	}
	c->held_ns = w > up_first ? (int64_t)(w - up_first) : 0;
	c->buffering = c->held_reads >= 1 && c->held_ns > BUFFERING_MIN_NS;
	c->itl_in_mean_ns = mean_gap_ns(u);
	c->itl_out_mean_ns = mean_gap_ns(r);
}

/* Claimed: all go out with r (ids are unique; each removal moves the rest). */
static void drop_claimed(struct hops *h, const struct join *j)
{
	uint64_t u_id = j->u->r.id, e_id = j->e ? j->e->r.id : 0;
	uint64_t pf_id = j->pf ? j->pf->r.id : 0, ep_id = j->ep ? j->ep->r.id : 0;

	if (e_id)
		drop_by_id(h, 0, e_id);
	if (ep_id)
		drop_by_id(h, 0, ep_id);
	drop_by_id(h, 1, u_id);
	if (pf_id)
		drop_by_id(h, 1, pf_id);
}

/* Side calls in r's window (health checks) and their servers' requests go out with r. */
static void drop_side_calls(struct hops *h, const struct ttf_request *r)
{
	for (size_t i = 0; i < h->n_held;) {
		struct held *x = &h->held[i], *e;
		uint64_t id = x->r.id;

		if (!gw_in_window(r, x) || !gw_side_call(&x->r)) {
			i++;
			continue;
		}
		e = gw_find_engine(h, x);
		if (e)
			drop_by_id(h, 0, e->r.id);
		drop_by_id(h, 1, id);
		h->stats.side_calls++;
		i = 0;	/* removals moved the rest */
	}
}

int hops__join(struct hops *h, const struct ttf_request *r, const struct ttf_req_metrics *m,
	       const struct ttf_attrib *a, struct ttf_hop_chain *c)
{
	struct join j = { 0 };

	if ((r->flags & TTF_REQ_UPSTREAM) || !r->n_events || !a || !a->valid || m->ttft_ns < 0)
		return 0;
	if (!find_calls(h, r, &j))
		return 0;
	chain_head(h, c, r, &j);
	j.e = gw_find_engine(h, j.u);
	chain_stages(c, r, m, a, &j);
	if (j.pf) {
		j.ep = gw_find_engine(h, j.pf);
		pd_part(c, j.pf, j.ep);
	}
	ttf_debug("hops: request %llu joins upstream call %llu (%s) and its server's request %llu",
		  (unsigned long long)r->id, (unsigned long long)j.u->r.id, c->why,
		  j.e ? (unsigned long long)j.e->r.id : 0ull);
	chain_upstream(h, c, &j);
	chain_buffering(c, r, &j.u->r);
	drop_claimed(h, &j);
	drop_side_calls(h, r);
	return 1;
}
