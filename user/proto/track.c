// SPDX-License-Identifier: GPL-2.0-only
/*
 * What recognizers call (track.h): requests begun, read, answered, their
 * token events, flags and counters, and ZMTP messages, written into the
 * tracker's struct creq and struct conn (conn_internal.h).
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "user/proto/conn_internal.h"

/* What requests of every protocol share (track_req_counters). */
enum { TRACK_CNT_TRACEPARENT_INVALID };

static const char *const track_req_counter_names[] = {
	[TRACK_CNT_TRACEPARENT_INVALID] = "traceparent_invalid",
};

const struct proto_counters track_req_counters = {
	.names = track_req_counter_names,
	.n = sizeof(track_req_counter_names) / sizeof(track_req_counter_names[0]),
};

static uint64_t or_ts(uint64_t v, uint64_t ts)
{
	return v ? v : ts;
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
		track_count(tc, &track_req_counters, TRACK_CNT_TRACEPARENT_INVALID, 1);
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
	xmit_emit_or_wait(c->t, q);
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

/* Where g's counters begin in t->proto_counts; -1 when g is not in the table. */
static int counter_base(const struct conn_table *t, const struct proto_counters *g)
{
	unsigned int base = 0;

	for (unsigned int k = 0; k < proto_n_counter_groups; k++) {
		if (proto_counter_groups[k] == g)
			return base;
		base += proto_counter_groups[k]->n;
	}
	return -1;
}

void track_count(struct track_conn *tc, const struct proto_counters *g, unsigned int i,
		 uint64_t n)
{
	struct conn_table *t = conn_of(tc)->t;
	int base = counter_base(t, g);

	if (base >= 0 && i < g->n)
		t->proto_counts[base + i] += n;
}

void track_zmtp_msg(struct track_conn *tc, struct ttf_zmtp_msg *m)
{
	struct conn *c = conn_of(tc);

	m->sock_cookie = c->cookie;
	m->addr = c->addr;
	m->tgid = c->cur ? c->cur->tgid : c->tgid;
	m->tid = c->cur ? c->cur->tid : 0;
	m->ts_ns = c->cur ? c->cur->ts_ns : 0;
	if (c->t->opts.on_zmtp_msg)
		c->t->opts.on_zmtp_msg(c->t->opts.ctx, m);
}

void track_zmtp_conn(struct track_conn *tc, struct ttf_zmtp_conn *z)
{
	struct conn *c = conn_of(tc);

	z->sock_cookie = c->cookie;
	z->tgid = c->tgid;
	z->addr = c->addr;
	if (c->t->opts.on_zmtp_conn)
		c->t->opts.on_zmtp_conn(c->t->opts.ctx, z);
}

const struct grpc_profile *track_grpc_profile(const struct track_conn *tc)
{
	return ((const struct conn *)tc)->t->opts.grpc_profile;
}

/* ---- the recognizers' counters (conn.h) ---- */

int track_counts_new(struct conn_table *t)
{
	unsigned int n = 0;

	for (unsigned int k = 0; k < proto_n_counter_groups; k++)
		n += proto_counter_groups[k]->n;
	t->proto_counts = calloc(n ? n : 1, sizeof(*t->proto_counts));
	return t->proto_counts ? 0 : -ENOMEM;
}

void track_counts_free(struct conn_table *t)
{
	free(t->proto_counts);
	t->proto_counts = NULL;
}

unsigned int conn_table__n_counters(const struct conn_table *t)
{
	unsigned int n = 0;

	for (unsigned int k = 0; k < proto_n_counter_groups; k++)
		n += proto_counter_groups[k]->n;
	return n;
}

const char *conn_table__counter_name(const struct conn_table *t, unsigned int i)
{
	for (unsigned int k = 0; k < proto_n_counter_groups; k++) {
		if (i < proto_counter_groups[k]->n)
			return proto_counter_groups[k]->names[i];
		i -= proto_counter_groups[k]->n;
	}
	return NULL;
}

uint64_t conn_table__counter(const struct conn_table *t, unsigned int i)
{
	return i < conn_table__n_counters(t) ? t->proto_counts[i] : 0;
}

uint64_t conn_table__count(const struct conn_table *t, const char *name)
{
	for (unsigned int i = 0; i < conn_table__n_counters(t); i++)
		if (!strcmp(conn_table__counter_name(t, i), name))
			return t->proto_counts[i];
	return 0;
}
