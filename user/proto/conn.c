// SPDX-License-Identifier: GPL-2.0-only
/*
 * Connection tracker: ring-buffer records -> HTTP requests with token events.
 *
 * Per connection: a role (server: requests arrive on RECV; client: requests
 * leave on SEND), one HTTP parser per direction, the requests in flight in
 * arrival order, and a short memory of XMIT records and of writes still
 * waiting for one. XMIT happens inside the write syscall on loopback, so it
 * usually reaches the ring before the SEND record of the same write; both
 * orders are handled.
 */
#include <errno.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include "user/lib/hash.h"
#include "user/proto/conn.h"
#include "user/proto/http.h"
#include "user/proto/sse.h"

/* How long (in later event timestamps) an ended request waits for its last XMIT. */
#define XMIT_WAIT_NS (200ull * 1000 * 1000)
#define XMIT_RING 16		/* recent XMITs kept per connection */
#define PENDING_WRITES 32	/* writes waiting for their XMIT per connection */
#define TOMBSTONES 256		/* recently closed cookies whose late records are ignored */
#define UNDECIDED_MAX 16	/* payload records without a request line before "not HTTP" */
#define BODY_MAX_BYTES (64u * 1024) /* non-streamed body kept to read its usage */
#define TOUCHED_MAX 4

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
	uint64_t deadline_ns;
	bool body_incomplete;		/* non-streamed body not fully kept */
	char *body;
	size_t body_len;
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
	uint32_t next_seq;
	struct ttf_conn_addr addr;
	struct http_parser *reqp, *respp;
	struct sse_splitter *sse;
	struct creq *head, *tail;	/* all live requests, oldest first */
	struct creq *rx_req;		/* request whose bytes are being parsed */
	struct creq *tx_req;		/* request whose response is being parsed */
	const struct ttf_net_event *cur;	/* record being fed */
	struct touched touched[TOUCHED_MAX];
	int n_touched;
	struct xmit_rec xmits[XMIT_RING];
	unsigned int xmit_head, n_xmits;	/* ring, oldest at xmit_head */
	struct pending_write pend[PENDING_WRITES];
	unsigned int n_pend;
	uint64_t sse_lost_seen;
	bool have_tx_seq;
	uint32_t tx_seq_end;		/* tcp write_seq after this connection's last SEND */
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
	if (q->prev)
		q->prev->next = q->next;
	else
		c->head = q->next;
	if (q->next)
		q->next->prev = q->prev;
	else
		c->tail = q->prev;
	if (c->rx_req == q)
		c->rx_req = NULL;
	if (c->tx_req == q)
		c->tx_req = NULL;
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
	free(q->body);
	free(q);
}

static enum ttf_api api_of(const char *path)
{
	if (!strcmp(path, "/v1/chat/completions") || !strcmp(path, "/chat/completions"))
		return TTF_API_CHAT;
	if (!strcmp(path, "/v1/completions"))
		return TTF_API_COMPLETION;
	if (!strcmp(path, "/completion") || !strcmp(path, "/completions"))
		return TTF_API_LLAMACPP;
	return TTF_API_UNKNOWN;
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

/* ---- request side ---- */

static void force_end(struct conn_table *t, struct conn *c, struct creq *q)
{
	/* the response ends where its last byte was seen */
	if (c->respp && c->tx_req == q && http_parser__in_message(c->respp))
		q->r.resp_bytes = http_parser__msg_bytes(c->respp);
	if (c->respp)
		http_parser__resync(c->respp);
	if (c->sse)
		sse_splitter__reset(c->sse);
	c->tx_req = NULL;
	q->resp_ended = true;
	maybe_emit(t, q);
}

static void req_begin(void *ctx)
{
	struct conn *c = ctx;
	struct conn_table *t = c->t;
	const struct ttf_net_event *e = c->cur;
	struct creq *q, *tx = c->tx_req;

	/*
	 * A new request while the previous response can only end at close, lost
	 * sync, or already said [DONE]: the client is done reading it.
	 */
	if (tx && (tx->r.flags & TTF_REQ_DONE_MARKER || http_parser__lost(c->respp) ||
		   http_parser__body_mode(c->respp) == HTTP_BODY_CLOSE))
		force_end(t, c, tx);

	q = calloc(1, sizeof(*q));
	if (!q) {
		t->stats.events_dropped_oom++;
		return;
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
	if (c->role == ROLE_SERVER) {
		q->r.arrival_first_ns = or_ts(e->arrival_first_ns, e->ts_ns);
		q->r.arrival_last_ns = or_ts(e->arrival_last_ns, e->ts_ns);
	}
	q->r.read_first_ns = e->ts_ns;
	q->r.read_done_ns = e->ts_ns;
	q->prev = c->tail;
	if (c->tail)
		c->tail->next = q;
	else
		c->head = q;
	c->tail = q;
	c->rx_req = q;
}

static void req_head(void *ctx, struct http_head *h)
{
	struct conn *c = ctx;
	struct creq *q = c->rx_req;

	if (!q)
		return;
	snprintf(q->r.method, sizeof(q->r.method), "%s", h->method);
	snprintf(q->r.path, sizeof(q->r.path), "%s", h->path);
	q->r.api = api_of(q->r.path);
}

static void req_end(void *ctx, uint64_t msg_bytes)
{
	struct conn *c = ctx;
	struct conn_table *t = c->t;
	struct creq *q = c->rx_req;
	const struct ttf_net_event *e = c->cur;

	if (!q)
		return;
	q->r.req_bytes = msg_bytes;
	q->r.read_done_ns = e->ts_ns;
	if (c->role == ROLE_SERVER)
		q->r.arrival_last_ns = or_ts(e->arrival_last_ns, e->ts_ns);
	c->rx_req = NULL;
	if (t->opts.on_request_read)
		t->opts.on_request_read(t->opts.ctx, &q->r);
}

/* ---- response side ---- */

static void resp_begin(void *ctx)
{
	struct conn *c = ctx;
	struct creq *q;

	for (q = c->head; q && q->resp_started; q = q->next)
		;
	c->tx_req = q;
	if (!q)
		return;
	q->resp_started = true;
	q->r.resp_first_write_ns = c->cur->ts_ns;
	touch(c, q);
}

static void sse_event(void *ctx, const char *data, size_t len, uint64_t tag)
{
	struct conn *c = ctx;
	struct creq *q = c->tx_req;
	struct sse_event_info info;
	struct ttf_token_event ev = {};

	if (!q)
		return;
	q->r.n_sse_events++;
	sse_classify(data, len, &info);
	if (info.has_usage) {
		q->r.flags |= TTF_REQ_USAGE;
		q->r.usage_completion_tokens = info.completion_tokens;
		q->r.usage_prompt_tokens = info.prompt_tokens;
	}
	switch (info.kind) {
	case SSE_EV_TOKEN:
		ev.write_ns = tag;
		ev.write_start_ns = c->cur && c->cur->ts_ns == tag ? c->cur->enter_ns : 0;
		ev.n_tokens = info.n_tokens;
		ev.flags = info.token_flags;
		if (!q->r.n_events) {
			q->r.tx_tid = c->cur ? c->cur->tid : 0;
			if (c->cur && (c->cur->flags & TTF_EVF_NODELAY))
				q->r.flags |= TTF_REQ_NODELAY;
		}
		if (ttf_request__add_event(&q->r, &ev))
			c->t->stats.events_dropped_oom++;
		break;
	case SSE_EV_DONE:
		q->r.flags |= TTF_REQ_DONE_MARKER;
		break;
	case SSE_EV_ERROR:
		q->r.flags |= TTF_REQ_ERROR;
		break;
	default:
		break;
	}
}

static void resp_head(void *ctx, struct http_head *h)
{
	struct conn *c = ctx;
	struct creq *q = c->tx_req;

	if (!q)
		return;
	if (h->status < 200) {
		/* interim (100 Continue): the real response is still to come */
		q->resp_started = false;
		q->r.resp_first_write_ns = 0;
		q->r.end_write_ns = 0;
		c->tx_req = NULL;
		return;
	}
	q->r.status = h->status;
	if (h->status >= 400)
		q->r.flags |= TTF_REQ_ERROR;
	if (!strcmp(q->r.method, "HEAD"))
		h->no_body = true;
	if (h->event_stream) {
		q->r.flags |= TTF_REQ_STREAM;
		if (!c->sse) {
			c->sse = sse_splitter__new(sse_event, c);
			if (!c->sse)
				c->t->stats.events_dropped_oom++;
		} else {
			sse_splitter__reset(c->sse);
		}
	} else {
		q->r.flags |= TTF_REQ_NONSTREAM;
	}
}

static void resp_body(void *ctx, const char *data, size_t len)
{
	struct conn *c = ctx;
	struct creq *q = c->tx_req;
	char *b;

	if (!q)
		return;
	if (q->r.flags & TTF_REQ_STREAM) {
		if (c->sse && sse_splitter__feed(c->sse, data, len, c->cur->ts_ns))
			c->t->stats.events_dropped_oom++;
		return;
	}
	if (q->body_incomplete)
		return;
	if (q->body_len + len > BODY_MAX_BYTES) {
		q->body_incomplete = true;
		return;
	}
	b = realloc(q->body, q->body_len + len);
	if (!b) {
		q->body_incomplete = true;
		return;
	}
	memcpy(b + q->body_len, data, len);
	q->body = b;
	q->body_len += len;
}

static void resp_body_gap(void *ctx, size_t len)
{
	struct conn *c = ctx;
	struct creq *q = c->tx_req;

	if (!q)
		return;
	q->r.flags |= TTF_REQ_TRUNCATED;
	if (q->r.flags & TTF_REQ_STREAM) {
		if (c->sse)
			sse_splitter__gap(c->sse, len);
	} else {
		q->body_incomplete = true;
	}
}

static void resp_end(void *ctx, uint64_t msg_bytes)
{
	struct conn *c = ctx;
	struct creq *q = c->tx_req;
	struct ttf_token_event ev = { .n_tokens = 1, .flags = TTF_TOK_CONTENT };
	struct sse_event_info info;

	if (!q)
		return;
	q->r.resp_bytes = msg_bytes;
	if (c->cur)
		q->r.end_write_ns = c->cur->ts_ns;
	if (q->r.flags & TTF_REQ_NONSTREAM) {
		if (!q->body_incomplete && q->body_len) {
			sse_classify(q->body, q->body_len, &info);
			if (info.has_usage) {
				q->r.flags |= TTF_REQ_USAGE;
				q->r.usage_completion_tokens = info.completion_tokens;
				q->r.usage_prompt_tokens = info.prompt_tokens;
			}
			if (info.kind == SSE_EV_ERROR)
				q->r.flags |= TTF_REQ_ERROR;
		}
		if (q->r.status < 400 && q->r.status != 0) {
			ev.write_ns = q->r.end_write_ns;
			ev.write_start_ns = c->cur ? c->cur->enter_ns : 0;
			q->r.tx_tid = c->cur ? c->cur->tid : q->r.tx_tid;
			if (ttf_request__add_event(&q->r, &ev))
				c->t->stats.events_dropped_oom++;
		}
	} else if (c->sse) {
		sse_splitter__reset(c->sse);
	}
	free(q->body);
	q->body = NULL;
	q->body_len = 0;
	q->resp_ended = true;
	c->tx_req = NULL;
}

/* ---- connections ---- */

static const struct http_parser_cbs req_cbs = {
	.on_begin = req_begin,
	.on_head = req_head,
	.on_end = req_end,
};

static const struct http_parser_cbs resp_cbs = {
	.on_begin = resp_begin,
	.on_head = resp_head,
	.on_body = resp_body,
	.on_body_gap = resp_body_gap,
	.on_end = resp_end,
};

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

/* Emit every live request of c (aborted unless its response ended) and free c. */
static void conn_close(struct conn_table *t, struct conn *c, uint32_t open_flag,
		       bool until_close_ends, uint64_t close_ns)
{
	struct creq *q;

	c->cur = NULL;
	/* byte counts of the messages cut short, before eof forgets them */
	if (c->tx_req && http_parser__in_message(c->respp))
		c->tx_req->r.resp_bytes = http_parser__msg_bytes(c->respp);
	if (c->rx_req && http_parser__in_message(c->reqp))
		c->rx_req->r.req_bytes = http_parser__msg_bytes(c->reqp);
	if (c->respp && !until_close_ends)
		http_parser__resync(c->respp);
	if (c->respp)
		http_parser__eof(c->respp);	/* a body that lasts until close ends here */
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
	http_parser__free(c->reqp);
	http_parser__free(c->respp);
	sse_splitter__free(c->sse);
	free(c);
}

static bool looks_binary(const uint8_t *p, size_t n)
{
	for (size_t i = 0; i < n && i < 16; i++)
		if (p[i] < 0x20 && p[i] != '\r' && p[i] != '\n' && p[i] != '\t')
			return true;
	return false;
}

static int decide_role(struct conn_table *t, struct conn *c, const struct ttf_net_event *e)
{
	const char *pl = (const char *)e->payload;

	if (e->cap_len && http_looks_like_request(pl, e->cap_len))
		c->role = e->type == TTF_EV_RECV ? ROLE_SERVER : ROLE_CLIENT;
	else if ((e->cap_len && looks_binary((const uint8_t *)e->payload, e->cap_len)) ||
		 ++c->undecided > UNDECIDED_MAX)
		c->role = ROLE_NON_HTTP;
	if (c->role == ROLE_NON_HTTP)
		t->stats.non_http++;
	if (c->role != ROLE_SERVER && c->role != ROLE_CLIENT)
		return -EAGAIN;
	c->reqp = http_parser__new(true, &req_cbs, c);
	c->respp = http_parser__new(false, &resp_cbs, c);
	if (!c->reqp || !c->respp) {
		t->stats.events_dropped_oom++;
		c->role = ROLE_NON_HTTP;
		return -ENOMEM;
	}
	return 0;
}

static void on_data(struct conn_table *t, struct conn *c, const struct ttf_net_event *e)
{
	bool req_side = (e->type == TTF_EV_RECV) == (c->role == ROLE_SERVER);
	struct http_parser *p = req_side ? c->reqp : c->respp;
	const char *pl = (const char *)e->payload;
	size_t missing = e->bytes > e->cap_len ? e->bytes - e->cap_len : 0;
	uint32_t unseen = 0;
	struct creq *victim;
	int err = 0, i;

	/*
	 * Bytes written between the previous SEND and this one that no record
	 * carried (the ring buffer was full): a gap before this payload, so
	 * that a lost write costs its events, not the parser's framing.
	 */
	if (t->opts.send_seq_exact && e->type == TTF_EV_SEND && e->seq_end) {
		uint32_t start = e->seq_end - e->bytes;

		if (c->have_tx_seq && start != c->tx_seq_end && seq_ge(start, c->tx_seq_end))
			unseen = start - c->tx_seq_end;
		/* never backwards: two writers' records may reach the ring swapped */
		if (!c->have_tx_seq || seq_ge(e->seq_end, c->tx_seq_end))
			c->tx_seq_end = e->seq_end;
		c->have_tx_seq = true;
	}
	c->cur = e;
	if (http_parser__lost(p)) {
		if (req_side ? !http_looks_like_request(pl, e->cap_len) :
			       !http_looks_like_response(pl, e->cap_len))
			return;
		if (req_side) {
			c->rx_req = NULL;
		} else if (c->tx_req) {
			force_end(t, c, c->tx_req);
		}
		http_parser__resync(p);
		unseen = 0;	/* the parser starts over at this record */
	}

	c->n_touched = 0;
	if (!req_side && c->tx_req)
		touch(c, c->tx_req);
	if (unseen && !http_parser__lost(p)) {
		victim = req_side ? c->rx_req : c->tx_req;
		if (victim)
			victim->r.flags |= TTF_REQ_TRUNCATED;
		err = http_parser__gap(p, unseen);
	}
	if (!err)
		err = http_parser__feed(p, pl, e->cap_len);
	if (!err && missing)
		err = http_parser__gap(p, missing);
	if (err) {
		t->stats.lost_sync++;
		victim = req_side ? c->rx_req : c->tx_req;
		if (victim) {
			victim->r.flags |= TTF_REQ_UNKNOWN;
			if (missing)
				victim->r.flags |= TTF_REQ_TRUNCATED;
		}
	}
	if (req_side)
		return;

	for (i = 0; i < c->n_touched; i++) {
		struct creq *q = c->touched[i].req;

		if (!q)
			continue;
		if (c->role == ROLE_SERVER)
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
			free(q->body);
			free(q);
		}
		http_parser__free(c->reqp);
		http_parser__free(c->respp);
		sse_splitter__free(c->sse);
		free(c);
	}
	free(t);
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

	switch (e->type) {
	case TTF_EV_RECV:
	case TTF_EV_SEND:
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
		if (c->role == ROLE_NON_HTTP)
			return 0;
		if (c->role == ROLE_UNKNOWN && decide_role(t, c, e))
			return 0;
		on_data(t, c, e);
		return 0;
	case TTF_EV_XMIT:
		c = conn_lookup(t, e->sock_cookie);
		if (c && c->role == ROLE_SERVER)
			on_xmit(t, c, e);
		return 0;
	case TTF_EV_CLOSE:
		c = conn_lookup(t, e->sock_cookie);
		if (c)
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
	/* tracing stops, the connection lives on: an until-close body is cut, not ended */
	HASH_ITER(hh, t->conns, c, tmp)
		conn_close(t, c, TTF_REQ_INCOMPLETE, false, 0);
}

const struct conn_stats *conn_table__stats(const struct conn_table *t)
{
	return &t->stats;
}
