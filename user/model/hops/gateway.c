// SPDX-License-Identifier: GPL-2.0-only
/* Gateway -> upstream joins on one host (gateway.h, docs/design.md D11). */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "user/lib/log.h"
#include "bpf/net.h"
#include "user/model/hops/gateway_held.h"

static int port_traced(const struct hops *h, uint16_t port);

struct hops *hops__new(void)
{
	return calloc(1, sizeof(struct hops));
}

void hops__free(struct hops *h)
{
	if (!h)
		return;
	for (size_t i = 0; i < h->n_held; i++)
		free(h->held[i].r.events);
	free(h->held);
	free(h);
}

const struct hops_stats *hops__stats(const struct hops *h)
{
	return &h->stats;
}

static int same_conn(const struct ttf_conn_addr *a, const struct ttf_conn_addr *b)
{
	return a->family == b->family && a->lport == b->lport && a->rport == b->rport &&
	       !memcmp(a->laddr, b->laddr, sizeof(a->laddr)) &&
	       !memcmp(a->raddr, b->raddr, sizeof(a->raddr));
}

/*
 * b is a seen from its other end. A unix stream socket has one peer for its
 * life, so either end's inode names the connection (bpf/net.h): a peer
 * inode may be 0 where that record came before the accept.
 */
static int reversed(const struct ttf_conn_addr *a, const struct ttf_conn_addr *b)
{
	if (a->family == TTF_AF_UNIX && b->family == TTF_AF_UNIX)
		return (ttf_unix_ino(a->laddr) && ttf_unix_ino(a->laddr) == ttf_unix_ino(b->raddr)) ||
		       (ttf_unix_ino(b->laddr) && ttf_unix_ino(b->laddr) == ttf_unix_ino(a->raddr));
	return a->family == b->family && a->lport == b->rport && a->rport == b->lport &&
	       !memcmp(a->laddr, b->raddr, sizeof(a->laddr)) &&
	       !memcmp(a->raddr, b->laddr, sizeof(a->raddr));
}

int hops__on_upstream_conn(struct hops *h, const struct ttf_request *u)
{
	if (h->n_open == MAX_OPEN) {	/* never ended (lost): forget the oldest */
		memmove(h->open, h->open + 1, (MAX_OPEN - 1) * sizeof(h->open[0]));
		h->n_open--;
	}
	h->open[h->n_open++] = (struct open_call){ u->id, u->tgid, u->read_first_ns };
	ttf_debug("hops: upstream call %llu written at %.3f ms (port %u->%u)",
		  (unsigned long long)u->id, u->read_first_ns / 1e6, u->addr.lport, u->addr.rport);
	for (size_t i = 0; i < h->n_up; i++)
		if (same_conn(&h->up[i], &u->addr))
			return 0;
	h->stats.upstream_conns++;
	if (h->n_up < MAX_UP_CONNS) {
		h->up[h->n_up++] = u->addr;
	} else {
		h->up[h->up_head] = u->addr;
		h->up_head = (h->up_head + 1) % MAX_UP_CONNS;
	}
	return 0;
}

static int over_upstream_conn(const struct hops *h, const struct ttf_request *r)
{
	for (size_t i = 0; i < h->n_up; i++)
		if (reversed(&h->up[i], &r->addr))
			return 1;
	return 0;
}

static uint64_t latest_ts(const struct ttf_request *r)
{
	uint64_t t = r->read_done_ns > r->end_write_ns ? r->read_done_ns : r->end_write_ns;

	for (uint32_t i = 0; i < r->n_events; i++)
		if (r->events[i].write_ns > t)
			t = r->events[i].write_ns;
	return t;
}

int hops__holds(const struct hops *h, const struct ttf_request *r)
{
	return (r->flags & TTF_REQ_UPSTREAM) || over_upstream_conn(h, r);
}

static void close_call(struct hops *h, uint64_t id)
{
	for (size_t i = 0; i < h->n_open; i++)
		if (h->open[i].id == id) {
			h->open[i] = h->open[--h->n_open];
			return;
		}
}

int hops__hold(struct hops *h, const struct ttf_request *r, const struct ttf_req_metrics *m,
	       const struct ttf_attrib *a)
{
	struct held *d;
	int upstream = !!(r->flags & TTF_REQ_UPSTREAM);

	if (upstream)
		close_call(h, r->id);
	if (!upstream && !over_upstream_conn(h, r))
		return 0;
	if (h->n_held == h->cap_held) {
		size_t cap = h->cap_held ? h->cap_held * 2 : 32;
		struct held *n = cap <= MAX_HELD ? realloc(h->held, cap * sizeof(*n)) : NULL;

		if (!n) {
			h->stats.dropped_oom++;
			return -ENOMEM;
		}
		h->held = n;
		h->cap_held = cap;
	}
	d = &h->held[h->n_held];
	memset(d, 0, sizeof(*d));
	d->r = *r;
	d->r.events = NULL;
	d->r.cap_events = 0;
	if (r->n_events) {
		d->r.events = malloc(r->n_events * sizeof(*r->events));
		if (!d->r.events) {
			h->stats.dropped_oom++;
			return -ENOMEM;
		}
		memcpy(d->r.events, r->events, r->n_events * sizeof(*r->events));
		d->r.cap_events = r->n_events;
	}
	d->m = *m;
	d->have_a = a != NULL;
	if (a)
		d->a = *a;
	d->a.hops = NULL;
	d->ready_ns = latest_ts(r);
	d->upstream = upstream;
	ttf_debug("hops: holding request %llu (%s, port %u->%u, %u events)",
		  (unsigned long long)r->id, upstream ? "upstream call" : "upstream's request",
		  r->addr.lport, r->addr.rport, r->n_events);
	if (!upstream && !port_traced(h, r->addr.lport) && h->n_traced_ports < 64)
		h->traced_ports[h->n_traced_ports++] = r->addr.lport;
	h->n_held++;
	return 1;
}

void gw_drop_held(struct hops *h, size_t i)
{
	free(h->held[i].r.events);
	memmove(&h->held[i], &h->held[i + 1], (h->n_held - i - 1) * sizeof(h->held[0]));
	h->n_held--;
}

uint64_t gw_first_write_ns(const struct ttf_request *r)
{
	const struct ttf_token_event *ev = &r->events[0];

	return ev->write_start_ns ? ev->write_start_ns : ev->write_ns;
}

/*
 * U fits r: same process, written after r's request began to be read and
 * before r's first token was written, with the same body (size and first
 * bytes' hash, where both sides know them). (Its first token read is not
 * required before that write: a read whose payload was not captured loses
 * its event, and U's first event is then a later one.)
 */
static int fits(const struct ttf_request *r, const struct held *d)
{
	const struct ttf_request *u = &d->r;
	uint64_t w = gw_first_write_ns(r);

	if (!d->upstream || gw_side_call(u) || u->tgid != r->tgid || !u->n_events ||
	    u->read_first_ns < r->read_first_ns || u->read_first_ns > w)
		return 0;
	/* a gateway forwards the body as it is: known sizes and hashes must agree */
	if (u->body_bytes && r->body_bytes && u->body_bytes != r->body_bytes)
		return 0;
	return !u->body_hash || !r->body_hash || u->body_hash == r->body_hash;
}

int gw_side_call(const struct ttf_request *u)
{
	return !strcmp(u->method, "GET") || !strcmp(u->method, "HEAD");
}

static uint64_t gap(uint64_t a, uint64_t b)
{
	return a > b ? a - b : b - a;
}

/*
 * The upstream call of r: of those that fit, the one written closest to the
 * end of r's read (a gateway forwards a request as soon as it has read it;
 * the calls of requests read before r, still unclaimed because their
 * responses end later, were written earlier). *n_same counts the fits with
 * as many token events as r.
 */
struct held *gw_find_upstream(struct hops *h, const struct ttf_request *r, int *n_fit,
			      int *n_same)
{
	struct held *best = NULL;

	*n_fit = *n_same = 0;
	for (size_t i = 0; i < h->n_held; i++) {
		struct held *d = &h->held[i];

		if (!fits(r, d))
			continue;
		(*n_fit)++;
		*n_same += d->r.n_events == r->n_events;
		if (!best || gap(d->r.read_first_ns, r->read_done_ns) <
			     gap(best->r.read_first_ns, r->read_done_ns))
			best = d;
	}
	return best;
}

/*
 * A call of r's process written inside r's window (after its read began,
 * before its first token was written), whatever its body: a proxy that
 * splits prefill from decode rewrites both (docs/design.md D13).
 */
int gw_in_window(const struct ttf_request *r, const struct held *d)
{
	const struct ttf_request *u = &d->r;

	return d->upstream && u->tgid == r->tgid && u->read_first_ns >= r->read_first_ns &&
	       u->read_first_ns <= gw_first_write_ns(r);
}

/* A call in r's window that can carry r (not a side call). */
static int in_window(const struct ttf_request *r, const struct held *d)
{
	return gw_in_window(r, d) && !gw_side_call(&d->r);
}

/* A relaying gateway writes its client's first token this soon after reading its call's. */
#define RELAY_NS 20000000ull

struct held *gw_find_rewritten(struct hops *h, const struct ttf_request *r, int *n_fit)
{
	struct held *best = NULL;
	uint64_t w = gw_first_write_ns(r);

	*n_fit = 0;
	for (size_t i = 0; i < h->n_held; i++) {
		struct held *x = &h->held[i];
		uint64_t t = x->r.n_events ? x->r.events[0].write_ns : 0;

		if (!in_window(r, x) || !t || t > w || w - t > RELAY_NS)
			continue;
		(*n_fit)++;
		if (!best || t > best->r.events[0].write_ns)
			best = x;
	}
	return best;
}

/*
 * Disaggregated prefill and decode: no call carries r's body, but two do
 * fit its window: a prefill call P whose response was read to its end
 * before the decode call D was written, and D, which streamed r's first
 * token (its first token read before r's first write). Of several, the D
 * whose first token was read last before r's first write (the prefill
 * call's one-token answer is read earlier), and the P written closest to
 * the end of r's read (a proxy calls prefill as soon as it has read r).
 * tid: only calls written by this thread (a threaded proxy makes a
 * request's calls on the thread that read it); 0 any. *n_d: how many calls
 * with a token before that write fit.
 */
static struct held *find_pd_by(struct hops *h, const struct ttf_request *r, uint32_t tid,
			       struct held **p_out, int *n_d)
{
	struct held *d = NULL, *p = NULL;
	uint64_t w = gw_first_write_ns(r);

	*n_d = 0;
	for (size_t i = 0; i < h->n_held; i++) {
		struct held *x = &h->held[i];

		if (!in_window(r, x) || !x->r.n_events || x->r.events[0].write_ns > w ||
		    (tid && x->r.rx_tid != tid))
			continue;
		(*n_d)++;
		if (!d || x->r.events[0].write_ns > d->r.events[0].write_ns)
			d = x;
	}
	for (size_t i = 0; d && i < h->n_held; i++) {
		struct held *x = &h->held[i];

		if (x == d || !in_window(r, x) || !x->r.end_write_ns ||
		    x->r.end_write_ns > d->r.read_first_ns || (tid && x->r.rx_tid != tid))
			continue;
		if (!p || gap(x->r.read_first_ns, r->read_done_ns) <
			  gap(p->r.read_first_ns, r->read_done_ns))
			p = x;
	}
	if (!p)
		return NULL;
	*p_out = p;
	return d;
}

struct held *gw_find_pd(struct hops *h, const struct ttf_request *r, struct held **p_out,
			int *n_d, int *same_thread)
{
	struct held *d = r->rx_tid ? find_pd_by(h, r, r->rx_tid, p_out, n_d) : NULL;

	*same_thread = d != NULL;
	return d ? d : find_pd_by(h, r, 0, p_out, n_d);
}

/*
 * Its read may return before the gateway's write does (loopback delivers
 * inside the write): an E read this much before U's write still counts.
 */
#define READ_BEFORE_WRITE_NS 10000000ull

struct held *gw_find_engine(const struct hops *h, const struct held *u)
{
	struct held *best = NULL;
	uint64_t best_d = 0;

	for (size_t i = 0; i < h->n_held; i++) {
		struct held *d = &h->held[i];
		uint64_t t = d->r.read_done_ns, w = u->r.read_first_ns, dist;

		if (d->upstream || !reversed(&d->r.addr, &u->r.addr) ||
		    t + READ_BEFORE_WRITE_NS < w)
			continue;
		dist = t > w ? t - w : w - t;
		if (!best || dist < best_d) {
			best = d;
			best_d = dist;
		}
	}
	return best;
}

static int port_traced(const struct hops *h, uint16_t port)
{
	for (int i = 0; i < h->n_traced_ports; i++)
		if (h->traced_ports[i] == port)
			return 1;
	return 0;
}

int hops__wait(const struct hops *h, const struct ttf_request *r)
{
	int any_fit = 0;
	uint64_t w;

	if ((r->flags & TTF_REQ_UPSTREAM) || !r->n_events)
		return 0;
	w = gw_first_write_ns(r);
	for (size_t i = 0; i < h->n_open; i++)
		if (h->open[i].tgid == r->tgid && h->open[i].read_first_ns >= r->read_first_ns &&
		    h->open[i].read_first_ns <= w)
			return 1;
	/* its upstream call is here, but not yet the request its (traced) upstream served */
	for (size_t i = 0; i < h->n_held; i++) {
		const struct held *d = &h->held[i];

		if (!fits(r, d))
			continue;
		any_fit = 1;
		if (port_traced(h, d->r.addr.rport) && !gw_find_engine(h, d))
			return 1;
	}
	/* none carries its body: a disaggregated chain's calls (find_pd) may be its */
	for (size_t i = 0; !any_fit && i < h->n_held; i++) {
		const struct held *d = &h->held[i];

		if (in_window(r, d) && port_traced(h, d->r.addr.rport) && !gw_find_engine(h, d))
			return 1;
	}
	return 0;
}

void hops__expire(struct hops *h, uint64_t watermark_ns, hops_out_fn fn, void *ctx)
{
	for (size_t i = 0; i < h->n_held;) {
		struct held *d = &h->held[i];

		if (watermark_ns != UINT64_MAX &&
		    (watermark_ns < HOPS_HOLD_NS || d->ready_ns > watermark_ns - HOPS_HOLD_NS)) {
			i++;
			continue;
		}
		h->stats.expired++;
		fn(ctx, &d->r, &d->m, d->have_a ? &d->a : NULL);
		gw_drop_held(h, i);
	}
}
