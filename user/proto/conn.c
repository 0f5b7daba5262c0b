// SPDX-License-Identifier: GPL-2.0-only
/*
 * Connection tracker: ring-buffer records -> requests with token events.
 *
 * Per connection: a role (server: requests arrive on RECV; client: requests
 * leave on SEND), the protocol recognizer that parses its bytes and reports
 * through track.h (recognizer.h; HTTP/1.1 in http1.c), the requests in
 * flight in arrival order, and a short memory of XMIT records and of writes
 * still waiting for one. XMIT happens inside the write syscall on loopback,
 * so it usually reaches the ring before the SEND record of the same write;
 * both orders are handled.
 */
#include <errno.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include "user/lib/hash.h"
#include "user/proto/conn.h"
#include "user/proto/recognizer.h"
#include "user/proto/track.h"

/* How long (in later event timestamps) an ended request waits for its last XMIT. */
#define XMIT_WAIT_NS (200ull * 1000 * 1000)
#define XMIT_RING 16		/* recent XMITs kept per connection */
#define PENDING_WRITES 32	/* writes waiting for their XMIT per connection */
#define TOMBSTONES 256		/* recently closed cookies whose late records are ignored */
#define TOUCHED_MAX 32	/* requests one record may write to (HTTP/2 multiplexes) */
/*
 * A TLS connection's close that came before the plaintext record of its last
 * ciphertext write (that record is submitted at the library call's return,
 * after the peer may have seen the bytes and closed) waits this long, in
 * later event timestamps, for it.
 */
#define TLS_CLOSE_WAIT_NS (50ull * 1000 * 1000)
#define TLS_CLOSES 16		/* closes waiting at once; more close at once */

/* ROLE_NON_HTTP: no recognizer took the connection */
enum conn_role { ROLE_UNKNOWN, ROLE_SERVER, ROLE_CLIENT, ROLE_NON_HTTP };

struct conn;

struct creq {
	struct ttf_request r;
	struct conn *conn;
	struct creq *prev, *next;	/* conn->reqs, oldest first */
	struct creq *wprev, *wnext;	/* table wait list */
	bool resp_started;
	bool resp_ended;
	bool waiting;
	bool have_seq;
	uint32_t last_seq_end;		/* seq_end of the latest response write */
	uint64_t last_xmit_ns;		/* XMIT of that write; 0 unknown */
	bool have_first_seq, have_first_ev_seq;
	uint32_t first_seq_end;		/* seq_end of the write of the first response byte */
	uint32_t first_ev_seq_end;	/* ... of the write that completed the first event */
	uint64_t deadline_ns;
};

struct xmit_rec {
	uint32_t seq_end;
	uint64_t ts_ns;
};

struct pending_write {
	uint32_t seq_end;
	struct creq *req;
	uint32_t ev_from, ev_to;
};

struct touched {
	struct creq *req;
	uint32_t ev_from;
};

struct conn {
	uint64_t cookie;
	struct conn_table *t;
	enum conn_role role;
	uint32_t tgid;
	uint32_t undecided;
	uint32_t ruled_out;		/* bit i: proto_recognizers[i] said no */
	uint32_t next_seq;
	struct ttf_conn_addr addr;
	const struct proto_recognizer *rec;	/* set with the role */
	void *st;			/* rec's state */
	struct creq *head, *tail;	/* all live requests, oldest first */
	const struct ttf_net_event *cur;	/* record being fed */
	struct touched touched[TOUCHED_MAX];
	int n_touched;
	struct xmit_rec xmits[XMIT_RING];
	unsigned int xmit_head, n_xmits;	/* ring, oldest at xmit_head */
	struct pending_write pend[PENDING_WRITES];
	unsigned int n_pend;
	bool have_tx_seq;
	uint32_t tx_seq_end;		/* tcp write_seq after this connection's last SEND */
	bool tls;			/* carries TLS: only plaintext records are parsed */
	bool tls_plain;			/* a plaintext record came */
	bool have_cipher_seq, have_plain_seq;
	uint32_t cipher_seq;		/* write_seq after the last ciphertext write inside a TLS call */
	uint32_t plain_seq;		/* the same, as the plaintext records have reached */
	uint64_t close_ns;		/* a close waits (TLS_CLOSE_WAIT_NS); 0 none */
	uint32_t close_flag;
	/* the close waits for the SEND record that reaches close_seq, not for plaintext */
	bool close_for_send;
	uint32_t close_seq;		/* write_seq at the CLOSE (TTF_EVF_CLOSE_SEQ) */
	UT_hash_handle hh;		/* conn_table.conns, keyed by cookie */
};

struct conn_table {
	struct conn_table_opts opts;
	struct conn_stats stats;
	struct conn *conns;		/* uthash by cookie, oldest first */
	uint64_t tomb[TOMBSTONES];
	unsigned int tomb_next;
	struct creq *wait_head, *wait_tail;
	uint64_t next_id;
	struct conn *tls_closes[TLS_CLOSES];	/* connections whose close waits */
	unsigned int n_tls_closes;
};

static bool seq_ge(uint32_t a, uint32_t b)
{
	return (int32_t)(a - b) >= 0;
}

/* ---- connections by cookie ---- */

static struct conn *conn_lookup(const struct conn_table *t, uint64_t cookie)
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

static void wait_unlink(struct conn_table *t, struct creq *q)
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

static void emit(struct conn_table *t, struct creq *q)
{
	struct conn *c = q->conn;
	unsigned int i, n = 0;

	wait_unlink(t, q);
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

static uint64_t or_ts(uint64_t v, uint64_t ts)
{
	return v ? v : ts;
}

/* ---- xmit matching ---- */

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

static void note_write(struct conn *c, struct creq *q, uint32_t ev_from, uint32_t seq_end)
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

static void on_xmit(struct conn_table *t, struct conn *c, const struct ttf_net_event *e)
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
			emit(t, done[i]);
	}
}

/*
 * A SEND that carries its write's device transmit (TTF_EVF_XMIT_FOLDED,
 * docs/kernel.md B1.12): the XMIT record BPF did not send, taken just
 * before the SEND, as it came before.
 */
static void folded_xmit(struct conn_table *t, const struct ttf_net_event *e)
{
	struct ttf_net_event x = {
		.ts_ns = e->ts_ns - e->xmit_before_ns, .sock_cookie = e->sock_cookie,
		.tgid = e->tgid, .tid = e->tid, .seq_end = e->seq_end, .type = TTF_EV_XMIT,
	};
	struct conn *c = conn_lookup(t, e->sock_cookie);

	if (c && c->role == ROLE_SERVER)
		on_xmit(t, c, &x);
}

/* Response ended: emit now, or wait (bounded) for the XMIT of its last write. */
static void maybe_emit(struct conn_table *t, struct creq *q)
{
	if (!t->opts.xmit_expected || q->last_xmit_ns || !q->have_seq ||
	    q->conn->role != ROLE_SERVER) {
		emit(t, q);
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

static void touch(struct conn *c, struct creq *q)
{
	int i;

	for (i = 0; i < c->n_touched; i++)
		if (c->touched[i].req == q)
			return;
	if (c->n_touched == TOUCHED_MAX)
		return;
	q->r.end_write_ns = c->cur->ts_ns;
	c->touched[c->n_touched++] = (struct touched){ .req = q, .ev_from = q->r.n_events };
}

/* ---- what recognizers call (track.h) ---- */

/* struct track_conn and struct track_req are struct conn and struct creq. */
static struct conn *conn_of(struct track_conn *tc)
{
	return (struct conn *)tc;
}

static struct creq *creq_of(struct track_req *q)
{
	return (struct creq *)q;
}

const struct ttf_net_event *track_cur(const struct track_conn *tc)
{
	return ((const struct conn *)tc)->cur;
}

const struct ttf_request *track_req_info(const struct track_req *q)
{
	return &((const struct creq *)q)->r;
}

struct track_req *track_req_begin(struct track_conn *tc)
{
	struct conn *c = conn_of(tc);
	struct conn_table *t = c->t;
	const struct ttf_net_event *e = c->cur;
	struct creq *q;

	q = calloc(1, sizeof(*q));
	if (!q) {
		t->stats.events_dropped_oom++;
		return NULL;
	}
	q->conn = c;
	q->r.id = ++t->next_id;
	q->r.sock_cookie = c->cookie;
	q->r.conn_seq = c->next_seq++;
	q->r.tgid = e->tgid;
	q->r.rx_tid = e->tid;
	memcpy(q->r.comm, e->comm, sizeof(q->r.comm));
	q->r.comm[sizeof(q->r.comm) - 1] = 0;
	q->r.addr = c->addr;
	if (c->tls)
		q->r.flags |= TTF_REQ_TLS;
	if (c->role == ROLE_SERVER) {
		q->r.arrival_first_ns = or_ts(e->arrival_first_ns, e->ts_ns);
		q->r.arrival_last_ns = or_ts(e->arrival_last_ns, e->ts_ns);
	} else {
		q->r.flags |= TTF_REQ_UPSTREAM;
	}
	q->r.read_first_ns = e->ts_ns;
	q->r.read_done_ns = e->ts_ns;
	q->prev = c->tail;
	if (c->tail)
		c->tail->next = q;
	else
		c->head = q;
	c->tail = q;
	return (struct track_req *)q;
}

void track_req_head(struct track_req *tq, const char *method, const char *path,
		    enum ttf_api api)
{
	struct creq *q = creq_of(tq);

	snprintf(q->r.method, sizeof(q->r.method), "%s", method);
	snprintf(q->r.path, sizeof(q->r.path), "%s", path);
	q->r.api = api;
}

void track_req_model(struct track_req *tq, const char *model)
{
	struct creq *q = creq_of(tq);

	snprintf(q->r.model, sizeof(q->r.model), "%s", model);
}

void track_resp_id(struct track_req *tq, const char *id, size_t len)
{
	struct creq *q = creq_of(tq);

	if (len < sizeof(q->r.resp_id)) {
		memcpy(q->r.resp_id, id, len);
		q->r.resp_id[len] = '\0';
	}
}

void track_req_body(struct track_req *tq, uint64_t body_bytes, uint32_t body_hash)
{
	struct creq *q = creq_of(tq);

	q->r.body_bytes = body_bytes;
	q->r.body_hash = body_hash;
}

void track_req_end(struct track_conn *tc, struct track_req *tq, uint64_t bytes)
{
	struct conn *c = conn_of(tc);
	struct conn_table *t = c->t;
	struct creq *q = creq_of(tq);
	const struct ttf_net_event *e = c->cur;

	q->r.flags |= TTF_REQ_READ;
	q->r.req_bytes = bytes;
	q->r.read_done_ns = e->ts_ns;
	if (c->role == ROLE_SERVER)
		q->r.arrival_last_ns = or_ts(e->arrival_last_ns, e->ts_ns);
	if (t->opts.on_request_read)
		t->opts.on_request_read(t->opts.ctx, &q->r);
}

void track_req_traceparent(struct track_conn *tc, struct track_req *tq, int n_seen,
			   const struct ttf_trace_parent *tp)
{
	if (!n_seen)
		return;
	if (n_seen == 1 && tp->valid)
		creq_of(tq)->r.traceparent = *tp;
	else
		track_count(tc, TRACK_CNT_TRACEPARENT_INVALID, 1);
}

void track_req_expect(struct track_req *tq, bool wait_known, uint64_t wait_ns)
{
	struct creq *q = creq_of(tq);

	q->r.flags |= TTF_REQ_EXPECT_100;
	q->r.expect_wait_known = wait_known;
	q->r.expect_wait_ns = wait_known ? wait_ns : 0;
}

void track_req_bytes(struct track_req *q, uint64_t bytes)
{
	creq_of(q)->r.req_bytes = bytes;
}

struct track_req *track_resp_begin(struct track_conn *tc)
{
	struct conn *c = conn_of(tc);
	struct creq *q;

	for (q = c->head; q && q->resp_started; q = q->next)
		;
	if (!q)
		return NULL;
	q->resp_started = true;
	q->r.resp_first_write_ns = c->cur->ts_ns;
	touch(c, q);
	if (c->t->opts.on_response_begin)
		c->t->opts.on_response_begin(c->t->opts.ctx, &q->r);
	return (struct track_req *)q;
}

bool track_resp_begin_for(struct track_conn *tc, struct track_req *tq)
{
	struct conn *c = conn_of(tc);
	struct creq *q = creq_of(tq);

	if (q->resp_started)
		return false;
	q->resp_started = true;
	q->r.resp_first_write_ns = c->cur->ts_ns;
	touch(c, q);
	if (c->t->opts.on_response_begin)
		c->t->opts.on_response_begin(c->t->opts.ctx, &q->r);
	return true;
}

void track_resp_touch(struct track_conn *tc, struct track_req *q)
{
	touch(conn_of(tc), creq_of(q));
}

void track_resp_interim(struct track_conn *tc, struct track_req *tq)
{
	struct conn *c = conn_of(tc);
	struct creq *q = creq_of(tq);

	q->r.flags |= TTF_REQ_INTERIM;
	q->r.n_interim++;
	if (!q->r.interim_write_ns && c->cur)
		q->r.interim_write_ns = c->cur->ts_ns;
	q->resp_started = false;
	q->r.resp_first_write_ns = 0;
	q->r.resp_first_xmit_ns = 0;
	q->have_first_seq = false;
	q->r.end_write_ns = 0;
}

void track_resp_head(struct track_req *tq, int status, bool streamed)
{
	struct creq *q = creq_of(tq);

	q->r.status = status;
	q->r.flags &= ~(TTF_REQ_STREAM | TTF_REQ_NONSTREAM);	/* said again: the last word */
	q->r.flags |= streamed ? TTF_REQ_STREAM : TTF_REQ_NONSTREAM;
}

void track_resp_event(struct track_conn *tc, struct track_req *tq,
		      const struct ttf_token_event *tok)
{
	struct conn *c = conn_of(tc);
	struct creq *q = creq_of(tq);

	q->r.n_sse_events++;
	if (!q->r.first_event_write_ns && c->cur)
		q->r.first_event_write_ns = c->cur->ts_ns;
	if (!tok)
		return;
	if (!q->r.n_events) {
		q->r.tx_tid = c->cur ? c->cur->tid : 0;
		if (c->cur && (c->cur->flags & TTF_EVF_NODELAY))
			q->r.flags |= TTF_REQ_NODELAY;
	}
	if (ttf_request__add_event(&q->r, tok))
		c->t->stats.events_dropped_oom++;
	else if (q->r.n_events == 1 && c->t->opts.on_first_token)
		c->t->opts.on_first_token(c->t->opts.ctx, &q->r);
}

void track_resp_whole(struct track_conn *tc, struct track_req *tq)
{
	struct conn *c = conn_of(tc);
	struct creq *q = creq_of(tq);
	struct ttf_token_event ev = { .n_tokens = 1, .flags = TTF_TOK_CONTENT };

	ev.write_ns = c->cur ? c->cur->ts_ns : q->r.end_write_ns;
	ev.write_start_ns = c->cur ? c->cur->enter_ns : 0;
	q->r.tx_tid = c->cur ? c->cur->tid : q->r.tx_tid;
	if (ttf_request__add_event(&q->r, &ev))
		c->t->stats.events_dropped_oom++;
}

void track_resp_opaque(struct track_req *tq, uint64_t first_body_write_ns)
{
	struct creq *q = creq_of(tq);
	struct ttf_token_event ev = { .write_ns = first_body_write_ns, .n_tokens = 1 };

	q->r.flags |= TTF_REQ_OPAQUE;
	q->r.flags &= ~TTF_REQ_USAGE;
	q->r.usage_completion_tokens = q->r.usage_prompt_tokens = 0;
	if (q->r.n_events > 1)
		q->r.n_events = 1;
	if (!q->r.n_events && first_body_write_ns && ttf_request__add_event(&q->r, &ev))
		q->conn->t->stats.events_dropped_oom++;
}

void track_resp_opaque_first(struct track_conn *tc, struct track_req *tq)
{
	struct conn *c = conn_of(tc);
	struct creq *q = creq_of(tq);
	struct ttf_token_event ev = { .n_tokens = 1 };

	q->r.flags |= TTF_REQ_OPAQUE;
	if (q->r.n_events || !c->cur)
		return;
	ev.write_ns = c->cur->ts_ns;
	ev.write_start_ns = c->cur->enter_ns;
	q->r.tx_tid = c->cur->tid;
	if (c->cur->flags & TTF_EVF_NODELAY)
		q->r.flags |= TTF_REQ_NODELAY;
	if (ttf_request__add_event(&q->r, &ev))
		c->t->stats.events_dropped_oom++;
}

void track_req_usage(struct track_req *tq, uint32_t completion_tokens, uint32_t prompt_tokens)
{
	struct creq *q = creq_of(tq);

	q->r.flags |= TTF_REQ_USAGE;
	q->r.usage_completion_tokens = completion_tokens;
	q->r.usage_prompt_tokens = prompt_tokens;
}

void track_resp_end(struct track_conn *tc, struct track_req *tq, uint64_t bytes)
{
	struct conn *c = conn_of(tc);
	struct creq *q = creq_of(tq);

	q->r.resp_bytes = bytes;
	if (c->cur)
		q->r.end_write_ns = c->cur->ts_ns;
	q->resp_ended = true;
}

void track_resp_cut(struct track_conn *tc, struct track_req *tq)
{
	struct conn *c = conn_of(tc);
	struct creq *q = creq_of(tq);

	q->resp_ended = true;
	maybe_emit(c->t, q);
}

void track_resp_bytes(struct track_req *q, uint64_t bytes)
{
	creq_of(q)->r.resp_bytes = bytes;
}

void track_req_flag(struct track_req *q, uint32_t flags)
{
	creq_of(q)->r.flags |= flags;
}

void track_lost_sync(struct track_conn *tc)
{
	conn_of(tc)->t->stats.lost_sync++;
}

void track_oom(struct track_conn *tc)
{
	conn_of(tc)->t->stats.events_dropped_oom++;
}

void track_count(struct track_conn *tc, enum track_counter k, uint64_t n)
{
	struct conn_stats *st = &conn_of(tc)->t->stats;

	switch (k) {
	case TRACK_CNT_H2_FRAMES_SKIPPED: st->h2_frames_skipped += n; break;
	case TRACK_CNT_H2_STREAMS_UNSEEN: st->h2_streams_unseen += n; break;
	case TRACK_CNT_HPACK_UNKNOWN: st->hpack_unknown += n; break;
	case TRACK_CNT_HPACK_ERRORS: st->hpack_errors += n; break;
	case TRACK_CNT_GRPC_LOST: st->grpc_lost += n; break;
	case TRACK_CNT_TRACEPARENT_INVALID: st->traceparent_invalid += n; break;
	case TRACK_CNT_ZMTP_LOST_SYNC: st->zmtp_lost_sync += n; break;
	case TRACK_CNT_ZMTP_PARTIAL: st->zmtp_partial += n; break;
	case TRACK_CNT_ZMTP_IDS: st->zmtp_ids += n; break;
	case TRACK_CNT_ZMTP_MID_STREAM: st->zmtp_mid_stream += n; break;
	case TRACK_CNT_LEN32_CONNS: st->len32_conns += n; break;
	default: break;
	}
}

void track_zmtp_msg(struct track_conn *tc, struct ttf_zmtp_msg *m)
{
	struct conn *c = conn_of(tc);

	m->sock_cookie = c->cookie;
	m->addr = c->addr;
	m->tgid = c->cur ? c->cur->tgid : c->tgid;
	m->tid = c->cur ? c->cur->tid : 0;
	m->ts_ns = c->cur ? c->cur->ts_ns : 0;
	if (m->dir == ZMTP_DIR_IN)
		c->t->stats.zmtp_msgs_in++;
	else
		c->t->stats.zmtp_msgs_out++;
	if (c->t->opts.on_zmtp_msg)
		c->t->opts.on_zmtp_msg(c->t->opts.ctx, m);
}

void track_zmtp_conn(struct track_conn *tc, struct ttf_zmtp_conn *z)
{
	struct conn *c = conn_of(tc);

	z->sock_cookie = c->cookie;
	z->tgid = c->tgid;
	z->addr = c->addr;
	c->t->stats.zmtp_conns++;
	if (c->t->opts.on_zmtp_conn)
		c->t->opts.on_zmtp_conn(c->t->opts.ctx, z);
}

const struct grpc_profile *track_grpc_profile(const struct track_conn *tc)
{
	return ((const struct conn *)tc)->t->opts.grpc_profile;
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
static void conn_close(struct conn_table *t, struct conn *c, uint32_t open_flag,
		       bool until_close_ends, uint64_t close_ns)
{
	struct creq *q;

	for (unsigned int i = 0; c->close_ns && i < t->n_tls_closes; i++)
		if (t->tls_closes[i] == c)
			t->tls_closes[i--] = t->tls_closes[--t->n_tls_closes];
	c->cur = NULL;
	if (c->st)
		c->rec->close(c->st, until_close_ends);
	while ((q = c->head)) {
		if (!q->resp_ended) {
			q->r.flags |= open_flag;
			q->r.closed_ns = close_ns;
		}
		emit(t, q);
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
			note_write(c, q, c->touched[i].ev_from, e->seq_end);
		if (q->resp_ended)
			maybe_emit(t, q);
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

/* Should the close of c wait for the plaintext of its last ciphertext write? Then it does. */
static bool tls_close_waits(struct conn_table *t, struct conn *c, uint64_t close_ns)
{
	if (!c->tls || !c->have_cipher_seq || t->n_tls_closes == TLS_CLOSES ||
	    (c->have_plain_seq && seq_ge(c->plain_seq, c->cipher_seq)))
		return false;
	if (!c->close_ns)
		t->tls_closes[t->n_tls_closes++] = c;
	c->close_ns = close_ns ? close_ns : 1;
	c->close_flag = TTF_REQ_ABORTED;
	return true;
}

/*
 * A CLOSE of a server connection whose process had written more (its
 * write_seq, TTF_EVF_CLOSE_SEQ) than the SEND records seen so far: the peer
 * read the last write and closed before that write's SEND record reached
 * the ring (the writer was preempted between its transmit and
 * sock_send_length). Wait for that record, bounded like a TLS close.
 */
static bool send_close_waits(struct conn_table *t, struct conn *c, const struct ttf_net_event *e)
{
	if (!(e->flags & TTF_EVF_CLOSE_SEQ) || c->tls || !c->have_tx_seq ||
	    seq_ge(c->tx_seq_end, e->seq_end) || t->n_tls_closes == TLS_CLOSES || c->close_ns)
		return false;
	t->tls_closes[t->n_tls_closes++] = c;
	c->close_ns = e->ts_ns ? e->ts_ns : 1;
	c->close_flag = TTF_REQ_ABORTED;
	c->close_for_send = true;
	c->close_seq = e->seq_end;
	return true;
}

/* Has a waiting close what it waits for: the plaintext, or the SEND record. */
static bool close_wait_met(const struct conn *c)
{
	if (c->close_for_send)
		return seq_ge(c->tx_seq_end, c->close_seq);
	return c->have_plain_seq && seq_ge(c->plain_seq, c->cipher_seq);
}

/* Waiting closes whose record came, or whose wait is over at now_ns. */
static void tls_closes_due(struct conn_table *t, uint64_t now_ns)
{
	for (unsigned int i = 0; i < t->n_tls_closes; i++) {
		struct conn *c = t->tls_closes[i];

		if (close_wait_met(c) || c->close_ns + TLS_CLOSE_WAIT_NS < now_ns) {
			conn_close(t, c, c->close_flag, true, c->close_ns);
			i--;	/* conn_close moved the last one here */
		}
	}
}

static void expire_waiting(struct conn_table *t, uint64_t now_ns)
{
	while (t->wait_head && t->wait_head->deadline_ns < now_ns)
		emit(t, t->wait_head);
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
	expire_waiting(t, e->ts_ns);
	if (t->n_tls_closes)
		tls_closes_due(t, e->ts_ns);

	if (e->type == TTF_EV_SEND && (e->flags & TTF_EVF_XMIT_FOLDED))
		folded_xmit(t, e);
	switch (e->type) {
	case TTF_EV_RECV:
	case TTF_EV_SEND:
		if (e->flags & TTF_EVF_TLS_CIPHER) {
			c = conn_lookup(t, e->sock_cookie);
			if (c)
				c->tls = true;
			if (c && e->type == TTF_EV_SEND && (e->flags & TTF_EVF_TLS_IN_CALL) &&
			    e->seq_end) {
				c->cipher_seq = e->seq_end;
				c->have_cipher_seq = true;
			}
			return 0;	/* ciphertext: never parsed */
		}
		if (e->cap_len < e->bytes)
			t->stats.truncated_events++;
		c = conn_lookup(t, e->sock_cookie);
		if (!c) {
			if (tomb_has(t, e->sock_cookie))
				return 0;
			c = conn_new(t, e);
			if (!c) {
				t->stats.events_dropped_oom++;
				return 0;
			}
		}
		if (c->addr.family == TTF_AF_UNIX && !ttf_unix_ino(c->addr.raddr))
			unix_peer_known(c, e);
		if (e->flags & TTF_EVF_TLS_PLAIN)
			tls_plaintext(t, c);
		else if (c->tls)
			return 0;	/* ciphertext the TLS probes did not see as such */
		if (c->role != ROLE_NON_HTTP && (c->role != ROLE_UNKNOWN || !decide_role(t, c, e)))
			on_data(t, c, e);
		if ((e->flags & TTF_EVF_TLS_PLAIN) && e->type == TTF_EV_SEND && e->seq_end &&
		    (!c->have_plain_seq || seq_ge(e->seq_end, c->plain_seq))) {
			c->plain_seq = e->seq_end;
			c->have_plain_seq = true;
			if (c->close_ns)
				tls_closes_due(t, e->ts_ns);
		}
		/* the socket had closed already: no CLOSE record comes for it */
		if (e->flags & TTF_EVF_CLOSED)
			conn_close(t, c, TTF_REQ_ABORTED, true, e->ts_ns);
		else if (c->close_for_send)
			tls_closes_due(t, e->ts_ns);	/* this SEND may be the one it waits for */
		return 0;
	case TTF_EV_XMIT:
		c = conn_lookup(t, e->sock_cookie);
		if (c && c->role == ROLE_SERVER)
			on_xmit(t, c, e);
		return 0;
	case TTF_EV_CLOSE:
		c = conn_lookup(t, e->sock_cookie);
		if (c && !tls_close_waits(t, c, e->ts_ns) && !send_close_waits(t, c, e))
			conn_close(t, c, TTF_REQ_ABORTED, true, e->ts_ns);
		return 0;
	case TTF_EV_EXIT:
		HASH_ITER(hh, t->conns, c, tmp)
			if (c->tgid == e->tgid)
				conn_close(t, c, TTF_REQ_ABORTED, true, e->ts_ns);
		return 0;
	case TTF_EV_FORK:
		return 0;
	default:
		t->stats.malformed++;
		return -EINVAL;
	}
}

void conn_table__finish(struct conn_table *t, uint64_t now_ns)
{
	struct conn *c, *tmp;

	expire_waiting(t, now_ns);
	while (t->wait_head)
		emit(t, t->wait_head);
	/* closed already, waiting for plaintext that did not come */
	while (t->n_tls_closes)
		conn_close(t, t->tls_closes[0], t->tls_closes[0]->close_flag, true,
			   t->tls_closes[0]->close_ns);
	/* tracing stops, the connection lives on: an until-close body is cut, not ended */
	HASH_ITER(hh, t->conns, c, tmp)
		conn_close(t, c, TTF_REQ_INCOMPLETE, false, 0);
}

const struct conn_stats *conn_table__stats(const struct conn_table *t)
{
	return &t->stats;
}
