// SPDX-License-Identifier: GPL-2.0-only
/*
 * Transmit matching: which XMIT record (the device took the bytes) belongs
 * to which response write. Per connection a short ring of recent XMITs and
 * a list of writes still waiting for one; XMIT happens inside the write
 * syscall on loopback, so it usually reaches the ring before the SEND
 * record of the same write: both orders are handled. A request whose
 * response ended waits (bounded) on the table's wait list for the XMIT of
 * its last write.
 */
#include <string.h>
#include "user/proto/conn_internal.h"

static void apply_xmit(struct creq *q, uint32_t ev_from, uint32_t ev_to, uint32_t seq_end,
		       uint64_t ts)
{
	for (uint32_t i = ev_from; i < ev_to && i < q->r.n_events; i++)
		if (!q->r.events[i].xmit_ns)
			q->r.events[i].xmit_ns = ts;
	if (q->have_seq && q->last_seq_end == seq_end && !q->last_xmit_ns)
		q->last_xmit_ns = ts;
	if (q->have_first_seq && q->first_seq_end == seq_end && !q->r.resp_first_xmit_ns)
		q->r.resp_first_xmit_ns = ts;
	if (q->have_first_ev_seq && q->first_ev_seq_end == seq_end && !q->r.first_event_xmit_ns)
		q->r.first_event_xmit_ns = ts;
}

/* The first XMIT seen whose seq_end covers the write's. */
static uint64_t find_xmit(const struct conn *c, uint32_t seq_end)
{
	for (unsigned int i = 0; i < c->n_xmits; i++) {
		const struct xmit_rec *x = &c->xmits[(c->xmit_head + i) % XMIT_RING];

		if (seq_ge(x->seq_end, seq_end))
			return x->ts_ns;
	}
	return 0;
}

void xmit_note_write(struct conn *c, struct creq *q, uint32_t ev_from, uint32_t seq_end)
{
	uint64_t ts;

	q->have_seq = true;
	q->last_seq_end = seq_end;
	q->last_xmit_ns = 0;
	/* the first write seen of the response, of its first event: their XMITs too */
	if (q->r.resp_first_write_ns && !q->have_first_seq) {
		q->have_first_seq = true;
		q->first_seq_end = seq_end;
	}
	if (q->r.first_event_write_ns && !q->have_first_ev_seq) {
		q->have_first_ev_seq = true;
		q->first_ev_seq_end = seq_end;
	}
	ts = find_xmit(c, seq_end);
	if (ts) {
		apply_xmit(q, ev_from, q->r.n_events, seq_end, ts);
		return;
	}
	if (c->n_pend == PENDING_WRITES) {
		memmove(c->pend, c->pend + 1, (PENDING_WRITES - 1) * sizeof(c->pend[0]));
		c->n_pend--;
	}
	c->pend[c->n_pend++] = (struct pending_write){
		.seq_end = seq_end, .req = q, .ev_from = ev_from, .ev_to = q->r.n_events,
	};
}

void xmit_record(struct conn_table *t, struct conn *c, const struct ttf_net_event *e)
{
	struct creq *done[PENDING_WRITES];
	unsigned int i, n = 0, n_done = 0;

	for (i = 0; i < c->n_pend; i++) {
		struct pending_write *w = &c->pend[i];

		if (!seq_ge(e->seq_end, w->seq_end)) {
			c->pend[n++] = *w;
			continue;
		}
		apply_xmit(w->req, w->ev_from, w->ev_to, w->seq_end, e->ts_ns);
		if (w->req->waiting && w->req->last_xmit_ns)
			done[n_done++] = w->req;
	}
	c->n_pend = n;
	if (c->n_xmits == XMIT_RING) {
		c->xmit_head = (c->xmit_head + 1) % XMIT_RING;
		c->n_xmits--;
	}
	c->xmits[(c->xmit_head + c->n_xmits) % XMIT_RING] =
		(struct xmit_rec){ .seq_end = e->seq_end, .ts_ns = e->ts_ns };
	c->n_xmits++;
	for (i = 0; i < n_done; i++) {
		bool seen = false;

		for (unsigned int j = 0; j < i; j++)
			seen |= done[j] == done[i];
		if (!seen)
			conn_emit(t, done[i]);
	}
}

/*
 * A SEND that carries its write's device transmit (TTF_EVF_XMIT_FOLDED,
 * docs/kernel.md B1.12): the XMIT record BPF did not send, taken just
 * before the SEND, as it came before.
 */
void xmit_folded(struct conn_table *t, const struct ttf_net_event *e)
{
	struct ttf_net_event x = {
		.ts_ns = e->ts_ns - e->xmit_before_ns, .sock_cookie = e->sock_cookie,
		.tgid = e->tgid, .tid = e->tid, .seq_end = e->seq_end, .type = TTF_EV_XMIT,
	};
	struct conn *c = conn_lookup(t, e->sock_cookie);

	if (c && c->role == ROLE_SERVER)
		xmit_record(t, c, &x);
}

void xmit_wait_unlink(struct conn_table *t, struct creq *q)
{
	if (!q->waiting)
		return;
	if (q->wprev)
		q->wprev->wnext = q->wnext;
	else
		t->wait_head = q->wnext;
	if (q->wnext)
		q->wnext->wprev = q->wprev;
	else
		t->wait_tail = q->wprev;
	q->wprev = q->wnext = NULL;
	q->waiting = false;
}

/* Response ended: emit now, or wait (bounded) for the XMIT of its last write. */
void xmit_emit_or_wait(struct conn_table *t, struct creq *q)
{
	if (!t->opts.xmit_expected || q->last_xmit_ns || !q->have_seq ||
	    q->conn->role != ROLE_SERVER) {
		conn_emit(t, q);
		return;
	}
	if (q->waiting)
		return;
	q->waiting = true;
	q->deadline_ns = q->r.end_write_ns + XMIT_WAIT_NS;
	q->wprev = t->wait_tail;
	q->wnext = NULL;
	if (t->wait_tail)
		t->wait_tail->wnext = q;
	else
		t->wait_head = q;
	t->wait_tail = q;
}

void xmit_wait_expire(struct conn_table *t, uint64_t now_ns)
{
	while (t->wait_head && t->wait_head->deadline_ns < now_ns)
		conn_emit(t, t->wait_head);
}
