// SPDX-License-Identifier: GPL-2.0-only
/*
 * Connection tracker: ring-buffer records -> requests with token events.
 *
 * This part keeps the table of connections by socket cookie and dispatches
 * each record. Per connection: a role (server: requests arrive on RECV;
 * client: requests leave on SEND), the protocol recognizer that parses its
 * bytes and reports through track.h (track.c; recognizer.h), and the
 * requests in flight in arrival order, emitted from here once ended.
 * Pairing writes with XMIT records is conn_xmit.c's, closes that wait for
 * a late record close_wait.c's.
 */
#include <errno.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include "user/proto/conn_internal.h"

/* ---- connections by cookie ---- */

struct conn *conn_lookup(const struct conn_table *t, uint64_t cookie)
{
	struct conn *c;

	HASH_FIND(hh, t->conns, &cookie, sizeof(cookie), c);
	return c;
}

static bool tomb_has(const struct conn_table *t, uint64_t cookie)
{
	for (unsigned int i = 0; i < TOMBSTONES; i++)
		if (t->tomb[i] == cookie)
			return true;
	return false;
}

/* ---- requests ---- */

/* Hand q to on_request and free it; the recognizer forgets it first. */
void conn_emit(struct conn_table *t, struct creq *q)
{
	struct conn *c = q->conn;
	unsigned int i, n = 0;

	xmit_wait_unlink(t, q);
	if (c->st)
		c->rec->forget(c->st, (struct track_req *)q);
	if (q->prev)
		q->prev->next = q->next;
	else
		c->head = q->next;
	if (q->next)
		q->next->prev = q->prev;
	else
		c->tail = q->prev;
	for (i = 0; i < c->n_pend; i++)
		if (c->pend[i].req != q)
			c->pend[n++] = c->pend[i];
	c->n_pend = n;
	for (i = 0; i < (unsigned int)c->n_touched; i++)
		if (c->touched[i].req == q)
			c->touched[i].req = NULL;

	if (q->resp_ended)
		q->r.end_xmit_ns = q->last_xmit_ns;
	if (q->r.n_events && q->r.events[0].xmit_ns)
		q->r.flags |= TTF_REQ_XMIT;
	t->stats.requests++;
	if (t->opts.on_request)
		t->opts.on_request(t->opts.ctx, &q->r);
	ttf_request__release(&q->r);
	free(q);
}

/* The recognizer's state, if it has one. */
static void conn_free_state(struct conn *c)
{
	if (c->st)
		c->rec->free(c->st);
	c->st = NULL;
}

/* ---- connections ---- */

static struct conn *conn_new(struct conn_table *t, const struct ttf_net_event *e)
{
	struct conn *c = calloc(1, sizeof(*c));

	if (!c)
		return NULL;
	c->cookie = e->sock_cookie;
	c->t = t;
	c->tgid = e->tgid;
	c->addr.family = e->family;
	c->addr.lport = e->lport;
	c->addr.rport = e->rport;
	memcpy(c->addr.laddr, e->laddr, sizeof(c->addr.laddr));
	memcpy(c->addr.raddr, e->raddr, sizeof(c->addr.raddr));
	HASH_ADD(hh, t->conns, cookie, sizeof(c->cookie), c);
	if (!ttf_hash_added(c)) {
		free(c);
		return NULL;
	}
	t->stats.connections++;
	return c;
}

/*
 * A unix connection's records before its server accepted it carry peer
 * inode 0 (bpf/net.h): take it from a later one, for c and its live requests.
 */
static void unix_peer_known(struct conn *c, const struct ttf_net_event *e)
{
	if (e->family != TTF_AF_UNIX || !ttf_unix_ino(e->raddr))
		return;
	memcpy(c->addr.raddr, e->raddr, sizeof(c->addr.raddr));
	for (struct creq *q = c->head; q; q = q->next)
		memcpy(q->r.addr.raddr, e->raddr, sizeof(q->r.addr.raddr));
}

/* Emit every live request of c (aborted unless its response ended) and free c. */
void conn_close(struct conn_table *t, struct conn *c, uint32_t open_flag,
		bool until_close_ends, uint64_t close_ns)
{
	struct creq *q;

	close_wait_drop(t, c);
	c->cur = NULL;
	/*
	 * Bytes no recognizer took, the connection ended before one could
	 * decide (a scanner's garbage, a request line that is not one): not
	 * HTTP as far as the tracer can tell, and counted, not lost unseen.
	 */
	if (c->role == ROLE_UNKNOWN && c->undecided_bytes)
		t->stats.non_http++;
	if (c->st)
		c->rec->close(c->st, until_close_ends);
	while ((q = c->head)) {
		if (!q->resp_ended) {
			q->r.flags |= open_flag;
			q->r.closed_ns = close_ns;
		}
		conn_emit(t, q);
	}
	HASH_DEL(t->conns, c);
	t->tomb[t->tomb_next] = c->cookie;
	t->tomb_next = (t->tomb_next + 1) % TOMBSTONES;
	conn_free_state(c);
	free(c);
}

/*
 * Ask the recognizers not yet ruled out about this record; the first yes
 * decides the role and opens its state. 0, or -EAGAIN (undecided, or not
 * recognized: ROLE_NON_HTTP), or -ENOMEM.
 */
static int decide_role(struct conn_table *t, struct conn *c, const struct ttf_net_event *e)
{
	const char *pl = (const char *)e->payload;
	const struct proto_recognizer *rec = NULL;
	enum track_role role = TRACK_ROLE_SERVER;
	bool maybe = false;

	c->undecided_bytes |= e->bytes > 0;
	for (unsigned int i = 0; i < proto_n_recognizers; i++) {
		enum proto_verdict v;

		if (c->ruled_out & (1u << i))
			continue;
		v = proto_recognizers[i]->detect(pl, e->cap_len, e->type == TTF_EV_RECV, &role);
		if (v == PROTO_YES) {
			rec = proto_recognizers[i];
			break;
		}
		if (v == PROTO_NO)
			c->ruled_out |= 1u << i;
		else
			maybe = true;
	}
	if (rec)
		c->role = role == TRACK_ROLE_SERVER ? ROLE_SERVER : ROLE_CLIENT;
	else if (!maybe || ++c->undecided > PROTO_UNDECIDED_MAX)
		c->role = ROLE_NON_HTTP;
	if (c->role == ROLE_NON_HTTP)
		t->stats.non_http++;
	if (c->role != ROLE_SERVER && c->role != ROLE_CLIENT)
		return -EAGAIN;
	c->rec = rec;
	c->st = rec->open((struct track_conn *)c, role);
	if (!c->st) {
		t->stats.events_dropped_oom++;
		c->role = ROLE_NON_HTTP;
		return -ENOMEM;
	}
	return 0;
}

static void on_data(struct conn_table *t, struct conn *c, const struct ttf_net_event *e)
{
	bool req_side = (e->type == TTF_EV_RECV) == (c->role == ROLE_SERVER);
	size_t missing = e->bytes > e->cap_len ? e->bytes - e->cap_len : 0;
	uint32_t unseen = 0;
	int i;

	/*
	 * Bytes written between the previous SEND and this one that no record
	 * carried (the ring buffer was full): a gap before this payload, so
	 * that a lost write costs its events, not the parser's framing.
	 */
	/* TLS plaintext: seq_end counts ciphertext bytes, not these */
	if (t->opts.send_seq_exact && e->type == TTF_EV_SEND && e->seq_end &&
	    !(e->flags & TTF_EVF_TLS_PLAIN)) {
		uint32_t start = e->seq_end - e->bytes;

		if (c->have_tx_seq && start != c->tx_seq_end && seq_ge(start, c->tx_seq_end))
			unseen = start - c->tx_seq_end;
		/* never backwards: two writers' records may reach the ring swapped */
		if (!c->have_tx_seq || seq_ge(e->seq_end, c->tx_seq_end))
			c->tx_seq_end = e->seq_end;
		c->have_tx_seq = true;
	}
	c->cur = e;
	c->n_touched = 0;
	c->rec->feed(c->st, req_side ? TRACK_SIDE_REQ : TRACK_SIDE_RESP, unseen,
		     (const char *)e->payload, e->cap_len, missing);
	if (req_side)
		return;

	/* the requests whose response this record wrote: XMIT matching, emit the ended */
	for (i = 0; i < c->n_touched; i++) {
		struct creq *q = c->touched[i].req;

		if (!q)
			continue;
		/*
		 * a TLS write with no ciphertext seen (seq_end 0) has no XMIT to
		 * pair, nor has a unix socket's write (no device)
		 */
		if (c->role == ROLE_SERVER && c->addr.family != TTF_AF_UNIX &&
		    (e->seq_end || !(e->flags & TTF_EVF_TLS_PLAIN)))
			xmit_note_write(c, q, c->touched[i].ev_from, e->seq_end);
		if (q->resp_ended)
			xmit_emit_or_wait(t, q);
	}
	c->n_touched = 0;
}

struct conn_table *conn_table__new(const struct conn_table_opts *opts)
{
	struct conn_table *t;

	if (!opts || opts->sz < sizeof(*opts)) {
		errno = EINVAL;
		return NULL;
	}
	t = calloc(1, sizeof(*t));
	if (!t)
		return NULL;
	t->opts = *opts;
	if (track_counts_new(t)) {
		free(t);
		return NULL;
	}
	return t;
}

void conn_table__free(struct conn_table *t)
{
	if (!t)
		return;
	struct conn *c, *tmp;

	HASH_ITER(hh, t->conns, c, tmp) {
		struct creq *q, *n;

		HASH_DEL(t->conns, c);
		for (q = c->head; q; q = n) {
			n = q->next;
			ttf_request__release(&q->r);
			free(q);
		}
		conn_free_state(c);
		free(c);
	}
	track_counts_free(t);
	free(t);
}

/*
 * The first plaintext of a TLS connection: from now on only plaintext is
 * parsed. Ciphertext that came before it unflagged (a handshake outside the
 * probed calls) made the connection non-HTTP: decide again, from this.
 */
static void tls_plaintext(struct conn_table *t, struct conn *c)
{
	if (c->tls_plain)
		return;
	c->tls = c->tls_plain = true;
	if (c->role == ROLE_NON_HTTP) {
		c->role = ROLE_UNKNOWN;
		c->ruled_out = 0;
		c->undecided = 0;
		t->stats.non_http--;
	}
}

/* A RECV or SEND record: ciphertext noted, plaintext fed to the connection's recognizer. */
static void on_payload(struct conn_table *t, const struct ttf_net_event *e)
{
	struct conn *c;

	if (e->flags & TTF_EVF_TLS_CIPHER) {
		c = conn_lookup(t, e->sock_cookie);
		if (c)
			c->tls = true;
		if (c && e->type == TTF_EV_SEND && (e->flags & TTF_EVF_TLS_IN_CALL) &&
		    e->seq_end) {
			c->cipher_seq = e->seq_end;
			c->have_cipher_seq = true;
		}
		return;	/* ciphertext: never parsed */
	}
	if (e->cap_len < e->bytes)
		t->stats.truncated_events++;
	c = conn_lookup(t, e->sock_cookie);
	if (!c) {
		if (tomb_has(t, e->sock_cookie))
			return;
		c = conn_new(t, e);
		if (!c) {
			t->stats.events_dropped_oom++;
			return;
		}
	}
	if (c->addr.family == TTF_AF_UNIX && !ttf_unix_ino(c->addr.raddr))
		unix_peer_known(c, e);
	if (e->flags & TTF_EVF_TLS_PLAIN)
		tls_plaintext(t, c);
	else if (c->tls)
		return;	/* ciphertext the TLS probes did not see as such */
	if (c->role != ROLE_NON_HTTP && (c->role != ROLE_UNKNOWN || !decide_role(t, c, e)))
		on_data(t, c, e);
	if ((e->flags & TTF_EVF_TLS_PLAIN) && e->type == TTF_EV_SEND && e->seq_end &&
	    (!c->have_plain_seq || seq_ge(e->seq_end, c->plain_seq))) {
		c->plain_seq = e->seq_end;
		c->have_plain_seq = true;
		if (c->close_ns)
			close_waits_due(t, e->ts_ns);
	}
	/* the socket had closed already: no CLOSE record comes for it */
	if ((e->flags & TTF_EVF_CLOSED) && !c->close_for_read)
		conn_close(t, c, TTF_REQ_ABORTED, true, e->ts_ns);
	else if (c->close_for_send || c->close_for_resp)
		close_waits_due(t, e->ts_ns);	/* this SEND may be the one it waits for */
	else if (c->close_for_read)
		close_wait_read(t, c, e);	/* this RECV may read what it waits for */
}

int conn_table__on_event(struct conn_table *t, const struct ttf_net_event *e, size_t len)
{
	struct conn *c, *tmp;

	if (len < sizeof(*e) || len < sizeof(*e) + e->cap_len ||
	    ((e->type == TTF_EV_RECV || e->type == TTF_EV_SEND) && e->cap_len > e->bytes)) {
		t->stats.malformed++;
		return -EINVAL;
	}
	t->stats.events++;
	xmit_wait_expire(t, e->ts_ns);
	if (t->n_closing)
		close_waits_due(t, e->ts_ns);

	if (e->type == TTF_EV_SEND && (e->flags & TTF_EVF_XMIT_FOLDED))
		xmit_folded(t, e);
	switch (e->type) {
	case TTF_EV_RECV:
	case TTF_EV_SEND:
		on_payload(t, e);
		return 0;
	case TTF_EV_XMIT:
		c = conn_lookup(t, e->sock_cookie);
		if (c && c->role == ROLE_SERVER)
			xmit_record(t, c, e);
		return 0;
	case TTF_EV_CLOSE:
		c = conn_lookup(t, e->sock_cookie);
		if (c && !close_waits(t, c, e))
			conn_close(t, c, TTF_REQ_ABORTED, true, e->ts_ns);
		return 0;
	case TTF_EV_EXIT:
		HASH_ITER(hh, t->conns, c, tmp)
			if (c->tgid == e->tgid)
				conn_close(t, c, TTF_REQ_ABORTED, true, e->ts_ns);
		return 0;
	case TTF_EV_FORK:
	case TTF_EV_FOLLOW:
		return 0;
	default:
		t->stats.malformed++;
		return -EINVAL;
	}
}

void conn_table__finish(struct conn_table *t, uint64_t now_ns)
{
	struct conn *c, *tmp;

	xmit_wait_expire(t, now_ns);
	while (t->wait_head)
		conn_emit(t, t->wait_head);
	/* closed already, waiting for a record that did not come */
	close_waits_finish(t);
	/* tracing stops, the connection lives on: an until-close body is cut, not ended */
	HASH_ITER(hh, t->conns, c, tmp)
		conn_close(t, c, TTF_REQ_INCOMPLETE, false, 0);
}

const struct conn_stats *conn_table__stats(const struct conn_table *t)
{
	return &t->stats;
}
