// SPDX-License-Identifier: GPL-2.0-only
/* conn.c: synthetic ring-buffer records in, finished requests out. */
#include <errno.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <setjmp.h>
#include <string.h>
#include <cmocka.h>
#include "user/proto/conn.h"
#include "user/proto/recognizer.h"

#define MS 1000000ull
#define CK 0xc00c1eull
#define TGID 100

#define MAX_REQS 8
struct out {
	int n;
	struct ttf_request r[MAX_REQS];
	struct ttf_token_event ev[MAX_REQS][64];
};

static void on_request(void *ctx, const struct ttf_request *r)
{
	struct out *o = ctx;

	assert_true(o->n < MAX_REQS);
	assert_true(r->n_events <= 64);
	o->r[o->n] = *r;
	if (r->n_events)
		memcpy(o->ev[o->n], r->events, r->n_events * sizeof(*r->events));
	o->r[o->n].events = o->ev[o->n];
	o->n++;
}

/* send_seq_exact: as the pipeline makes it (SEND seq_end exact: gaps and close waits) */
static struct conn_table *mktable_with(struct out *o, int xmit_expected, int send_seq_exact)
{
	struct conn_table_opts opts = {
		.sz = sizeof(opts), .on_request = on_request, .ctx = o,
		.xmit_expected = xmit_expected, .send_seq_exact = send_seq_exact,
	};
	struct conn_table *t;

	memset(o, 0, sizeof(*o));
	t = conn_table__new(&opts);
	assert_non_null(t);
	return t;
}

static struct conn_table *mktable(struct out *o, int xmit_expected)
{
	return mktable_with(o, xmit_expected, 0);
}

/* ttf_net_event.flags of the records rec() feeds (TLS tests) */
static uint32_t rec_flags;
static uint32_t rec_xmit_before_ns;	/* SEND: with TTF_EVF_XMIT_FOLDED in rec_flags */

/*
 * Feed one record. payload may be NULL; bytes 0 means strlen(payload);
 * cap < 0 means capture everything.
 */
static void rec(struct conn_table *t, int type, uint64_t ts, const char *payload, uint32_t bytes,
		int cap, uint32_t seq_end, uint64_t arrival_first, uint64_t arrival_last,
		uint32_t tid)
{
	size_t plen = payload ? strlen(payload) : 0;
	size_t cl = cap < 0 ? plen : (size_t)cap;
	struct ttf_net_event *e = calloc(1, sizeof(*e) + cl);

	assert_non_null(e);
	assert_true(cl <= plen);
	e->ts_ns = ts;
	e->sock_cookie = CK;
	e->arrival_first_ns = arrival_first;
	e->arrival_last_ns = arrival_last;
	e->tgid = TGID;
	e->tid = tid;
	e->bytes = bytes ? bytes : plen;
	e->seq_end = seq_end;
	e->cap_len = cl;
	e->type = type;
	e->flags = rec_flags;
	e->xmit_before_ns = rec_xmit_before_ns;
	e->family = 2;
	e->lport = 8080;
	e->rport = 50000;
	memcpy(e->comm, "llama-server", 13);
	if (cl)
		memcpy(e->payload, payload, cl);
	assert_int_equal(conn_table__on_event(t, e, sizeof(*e) + cl), 0);
	free(e);
}

static void recv_(struct conn_table *t, uint64_t ts, const char *p, uint64_t af, uint64_t al)
{
	rec(t, TTF_EV_RECV, ts, p, 0, -1, 0, af, al, 101);
}

static void send_(struct conn_table *t, uint64_t ts, const char *p, uint32_t seq_end)
{
	rec(t, TTF_EV_SEND, ts, p, 0, -1, seq_end, 0, 0, 102);
}

static void xmit(struct conn_table *t, uint64_t ts, uint32_t seq_end)
{
	rec(t, TTF_EV_XMIT, ts, NULL, 1, 0, seq_end, 0, 0, 102);
}

static void close_(struct conn_table *t, uint64_t ts)
{
	rec(t, TTF_EV_CLOSE, ts, NULL, 1, 0, 0, 0, 0, 0);
}

#define CHAT_REQ "POST /v1/chat/completions HTTP/1.1\r\nContent-Length: 2\r\n\r\n{}"
#define SSE_HEAD "HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\n" \
		 "Transfer-Encoding: chunked\r\n\r\n"
#define ROLE_EV "data: {\"choices\":[{\"delta\":{\"role\":\"assistant\"}}]}\n\n"
#define TOK_EV(x) "data: {\"choices\":[{\"delta\":{\"content\":\"" x "\"}}]}\n\n"
/* chunk-size lines for the events above (hand-counted lengths) */
#define ROLE_LEN "34"	/* 52 bytes */
#define TOK_LEN "2f"	/* 47 bytes, one-character content */

static void test_keepalive_two_requests(void **state)
{
	struct out o;
	struct conn_table *t = mktable(&o, 0);

	recv_(t, 10 * MS, CHAT_REQ, 8 * MS, 9 * MS);
	send_(t, 20 * MS, SSE_HEAD, 1000);
	send_(t, 21 * MS, ROLE_LEN "\r\n" ROLE_EV "\r\n", 1100);
	send_(t, 22 * MS, TOK_LEN "\r\n" TOK_EV("a") "\r\n", 1200);
	send_(t, 23 * MS, "0\r\n\r\n", 1300);
	assert_int_equal(o.n, 1);
	recv_(t, 50 * MS, "GET /health HTTP/1.1\r\n\r\n", 0, 0);
	send_(t, 51 * MS, "HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok", 1400);
	assert_int_equal(o.n, 2);

	assert_int_equal(o.r[0].id, 1);
	assert_int_equal(o.r[0].conn_seq, 0);
	assert_int_equal(o.r[0].sock_cookie, CK);
	assert_int_equal(o.r[0].tgid, TGID);
	assert_int_equal(o.r[0].rx_tid, 101);
	assert_int_equal(o.r[0].tx_tid, 102);
	assert_string_equal(o.r[0].comm, "llama-server");
	assert_int_equal(o.r[0].addr.lport, 8080);
	assert_string_equal(o.r[0].method, "POST");
	assert_string_equal(o.r[0].path, "/v1/chat/completions");
	assert_int_equal(o.r[0].api, TTF_API_CHAT);
	assert_int_equal(o.r[0].status, 200);
	assert_int_equal(o.r[0].arrival_first_ns, 8 * MS);
	assert_int_equal(o.r[0].arrival_last_ns, 9 * MS);
	assert_int_equal(o.r[0].read_first_ns, 10 * MS);
	assert_int_equal(o.r[0].read_done_ns, 10 * MS);
	assert_int_equal(o.r[0].resp_first_write_ns, 20 * MS);
	assert_int_equal(o.r[0].end_write_ns, 23 * MS);
	assert_int_equal(o.r[0].req_bytes, strlen(CHAT_REQ));
	/* head 80, role chunk 2+2+52+2, token chunk 2+2+47+2, terminator 5 */
	assert_int_equal(o.r[0].resp_bytes, 80 + 58 + 53 + 5);
	assert_int_equal(o.r[0].n_sse_events, 2);
	assert_int_equal(o.r[0].n_events, 1);
	assert_int_equal(o.r[0].events[0].write_ns, 22 * MS);
	assert_int_equal(o.r[0].flags & ~TTF_REQ_READ, TTF_REQ_STREAM);
	assert_true(o.r[0].flags & TTF_REQ_READ);	/* read completely: on_request_read fired */

	assert_int_equal(o.r[1].id, 2);
	assert_int_equal(o.r[1].conn_seq, 1);
	assert_string_equal(o.r[1].path, "/health");
	assert_int_equal(o.r[1].api, TTF_API_UNKNOWN);
	/* arrival unknown: falls back to the read */
	assert_int_equal(o.r[1].arrival_first_ns, 50 * MS);
	assert_int_equal(o.r[1].read_done_ns, 50 * MS);
	assert_int_equal(o.r[1].end_write_ns, 51 * MS);
	assert_int_equal(o.r[1].flags & ~TTF_REQ_READ, TTF_REQ_NONSTREAM);
	assert_int_equal(conn_table__stats(t)->requests, 2);
	assert_int_equal(conn_table__stats(t)->connections, 1);
	conn_table__free(t);
}

static void test_chunked_request_three_recvs_split_headers(void **state)
{
	struct out o;
	struct conn_table *t = mktable(&o, 0);

	/* a header line split mid-name, then a chunked body over three reads */
	recv_(t, 10 * MS, "POST /completion HTTP/1.1\r\nTransfer-Enc", 5 * MS, 6 * MS);
	recv_(t, 11 * MS, "oding: chunked\r\n\r\n7\r\n{\"a\"", 5 * MS, 7 * MS);
	recv_(t, 12 * MS, ":1}\r\n", 5 * MS, 8 * MS);
	recv_(t, 13 * MS, "0\r\n\r\n", 5 * MS, 9 * MS);
	send_(t, 20 * MS, "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\n"
			  "Content-Length: 46\r\n\r\n"
			  "{\"content\":\"hi\",\"tokens_predicted\":5,\"stop\":1}",
	      500);
	assert_int_equal(o.n, 1);
	assert_int_equal(o.r[0].api, TTF_API_LLAMACPP);
	assert_int_equal(o.r[0].arrival_first_ns, 5 * MS);
	assert_int_equal(o.r[0].arrival_last_ns, 9 * MS);
	assert_int_equal(o.r[0].read_first_ns, 10 * MS);
	assert_int_equal(o.r[0].read_done_ns, 13 * MS);
	assert_int_equal(o.r[0].req_bytes, 39 + 25 + 5 + 5);
	assert_int_equal(o.r[0].flags & ~TTF_REQ_READ, TTF_REQ_NONSTREAM | TTF_REQ_USAGE);
	assert_int_equal(o.r[0].usage_completion_tokens, 5);
	assert_int_equal(o.r[0].n_events, 1);
	assert_int_equal(o.r[0].events[0].write_ns, 20 * MS);
	conn_table__free(t);
}

static void test_coalesced_split_and_done(void **state)
{
	struct out o;
	struct conn_table *t = mktable(&o, 0);
	const char *ev = TOK_EV("z");

	recv_(t, 10 * MS, CHAT_REQ, 0, 0);
	/* until-close framing (no length, no chunking): body bytes are the SSE stream */
	send_(t, 20 * MS, "HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\n\r\n"
	      ROLE_EV, 1000);
	send_(t, 21 * MS, TOK_EV("a") TOK_EV("b") TOK_EV("c"), 1100);
	/* one event split across two writes: it belongs to the later one */
	rec(t, TTF_EV_SEND, 22 * MS, "data: {\"choices\":[{\"del", 0, -1, 1200, 0, 0, 103);
	send_(t, 23 * MS, ev + 23, 1300);
	send_(t, 24 * MS, "data: {\"choices\":[],\"usage\":{\"prompt_tokens\":7,"
			  "\"completion_tokens\":4}}\n\ndata: [DONE]\n\n", 1400);
	assert_int_equal(o.n, 0);
	close_(t, 30 * MS);
	assert_int_equal(o.n, 1);
	assert_int_equal(o.r[0].n_events, 4);
	assert_int_equal(o.r[0].events[0].write_ns, 21 * MS);
	assert_int_equal(o.r[0].events[1].write_ns, 21 * MS);
	assert_int_equal(o.r[0].events[2].write_ns, 21 * MS);
	assert_int_equal(o.r[0].events[3].write_ns, 23 * MS);
	assert_int_equal(o.r[0].n_sse_events, 7);
	assert_int_equal(o.r[0].usage_completion_tokens, 4);
	assert_int_equal(o.r[0].usage_prompt_tokens, 7);
	assert_int_equal(o.r[0].end_write_ns, 24 * MS);
	/* the close ends an until-close body: not aborted */
	assert_int_equal(o.r[0].flags & ~TTF_REQ_READ, TTF_REQ_STREAM | TTF_REQ_USAGE | TTF_REQ_DONE_MARKER);
	conn_table__free(t);
}

static void test_done_then_next_request_ends_it(void **state)
{
	struct out o;
	struct conn_table *t = mktable(&o, 0);

	recv_(t, 10 * MS, CHAT_REQ, 0, 0);
	send_(t, 20 * MS, SSE_HEAD TOK_LEN "\r\n" TOK_EV("a") "\r\n", 1000);
	send_(t, 21 * MS, "e\r\ndata: [DONE]\n\n\r\n", 1100);
	assert_int_equal(o.n, 0);
	recv_(t, 40 * MS, CHAT_REQ, 0, 0);
	assert_int_equal(o.n, 1);
	assert_int_equal(o.r[0].end_write_ns, 21 * MS);
	assert_int_equal(o.r[0].flags & ~TTF_REQ_READ, TTF_REQ_STREAM | TTF_REQ_DONE_MARKER);
	conn_table__free(t);
}

static void test_truncated_no_invented_events(void **state)
{
	struct out o;
	struct conn_table *t = mktable(&o, 0);
	const char *w = TOK_LEN "\r\n" TOK_EV("a") "\r\n";

	recv_(t, 10 * MS, CHAT_REQ, 0, 0);
	send_(t, 20 * MS, SSE_HEAD, 1000);
	/* 20 of the 53 bytes captured: the chunk stays in sync, its event is lost */
	rec(t, TTF_EV_SEND, 21 * MS, w, 0, 20, 1100, 0, 0, 102);
	send_(t, 22 * MS, TOK_LEN "\r\n" TOK_EV("b") "\r\n", 1200);
	send_(t, 23 * MS, "0\r\n\r\n", 1300);
	assert_int_equal(o.n, 1);
	assert_int_equal(o.r[0].n_events, 0);
	assert_int_equal(o.r[0].flags & ~TTF_REQ_READ, TTF_REQ_STREAM | TTF_REQ_TRUNCATED);
	assert_int_equal(conn_table__stats(t)->truncated_events, 1);
	assert_int_equal(conn_table__stats(t)->lost_sync, 0);
	conn_table__free(t);
}

/*
 * With live seq numbers, a jump between two SENDs is a write whose record was
 * lost (ring buffer full): its bytes are a gap. A whole lost chunk takes its
 * chunk-size line with it, so the parser loses sync: the request is flagged
 * unknown and truncated instead of ending with one token silently missing.
 */
static void test_unseen_write_is_a_gap(void **state)
{
	struct out o;
	struct conn_table_opts opts = { .sz = sizeof(opts), .on_request = on_request, .ctx = &o,
					.send_seq_exact = 1 };
	const char *w = TOK_LEN "\r\n" TOK_EV("a") "\r\n";	/* 53 bytes */
	uint32_t seq = 1000 + strlen(SSE_HEAD);
	struct conn_table *t;

	memset(&o, 0, sizeof(o));
	t = conn_table__new(&opts);
	assert_non_null(t);
	assert_int_equal(strlen(w), 53);
	recv_(t, 10 * MS, CHAT_REQ, 0, 0);
	send_(t, 20 * MS, SSE_HEAD, seq);
	send_(t, 21 * MS, w, seq += 53);
	seq += 53;	/* the record of this write was lost */
	send_(t, 23 * MS, w, seq += 53);
	send_(t, 24 * MS, "0\r\n\r\n", seq += 5);
	assert_int_equal(o.n, 0);	/* the end was not recognised: it stays open */
	close_(t, 30 * MS);
	assert_int_equal(o.n, 1);
	assert_int_equal(o.r[0].n_events, 1);
	assert_int_equal(o.r[0].events[0].write_ns, 21 * MS);
	assert_int_equal(o.r[0].flags & ~TTF_REQ_READ, TTF_REQ_STREAM | TTF_REQ_TRUNCATED | TTF_REQ_UNKNOWN |
					   TTF_REQ_ABORTED);
	assert_int_equal(conn_table__stats(t)->lost_sync, 1);
	conn_table__free(t);
}

static void test_close_mid_stream_aborted(void **state)
{
	struct out o;
	struct conn_table *t = mktable(&o, 0);

	recv_(t, 10 * MS, CHAT_REQ, 0, 0);
	send_(t, 20 * MS, SSE_HEAD TOK_LEN "\r\n" TOK_EV("a") "\r\n", 1000);
	close_(t, 25 * MS);
	assert_int_equal(o.n, 1);
	assert_int_equal(o.r[0].n_events, 1);
	assert_int_equal(o.r[0].flags & ~TTF_REQ_READ, TTF_REQ_STREAM | TTF_REQ_ABORTED);
	assert_int_equal(o.r[0].resp_bytes, 80 + 53);
	assert_int_equal(o.r[0].end_write_ns, 20 * MS);
	/* late records of a closed socket are ignored */
	send_(t, 26 * MS, TOK_LEN "\r\n" TOK_EV("b") "\r\n", 1100);
	assert_int_equal(conn_table__stats(t)->connections, 1);
	conn_table__free(t);
}

static void test_xmit_both_orders(void **state)
{
	struct out o;
	struct conn_table *t = mktable(&o, 1);

	recv_(t, 10 * MS, CHAT_REQ, 0, 0);
	xmit(t, 20 * MS + 5, 1000);
	send_(t, 20 * MS + 10, SSE_HEAD, 1000);
	/* XMIT before SEND (loopback: inside the write syscall) */
	xmit(t, 21 * MS + 5, 1100);
	send_(t, 21 * MS + 10, TOK_LEN "\r\n" TOK_EV("a") "\r\n", 1100);
	/* SEND first, then one segment covering two writes */
	send_(t, 22 * MS, TOK_LEN "\r\n" TOK_EV("b") "\r\n", 1200);
	send_(t, 23 * MS, TOK_LEN "\r\n" TOK_EV("c") "\r\n", 1300);
	xmit(t, 24 * MS, 1300);
	send_(t, 25 * MS, "0\r\n\r\n", 1305);
	/* ended, waiting for the terminator's XMIT */
	assert_int_equal(o.n, 0);
	xmit(t, 26 * MS, 1305);
	assert_int_equal(o.n, 1);
	assert_int_equal(o.r[0].n_events, 3);
	assert_int_equal(o.r[0].events[0].xmit_ns, 21 * MS + 5);
	assert_int_equal(o.r[0].events[1].write_ns, 22 * MS);
	assert_int_equal(o.r[0].events[1].xmit_ns, 24 * MS);
	assert_int_equal(o.r[0].events[2].xmit_ns, 24 * MS);
	assert_int_equal(o.r[0].end_xmit_ns, 26 * MS);
	assert_int_equal(o.r[0].flags & ~TTF_REQ_READ, TTF_REQ_STREAM | TTF_REQ_XMIT);
	conn_table__free(t);
}

/* A SEND that carries its write's transmit (B1.12) reads as that XMIT, then the SEND. */
static void send_folded(struct conn_table *t, uint64_t ts, const char *p, uint32_t seq_end,
			uint32_t before_ns)
{
	rec_flags = TTF_EVF_XMIT_FOLDED;
	rec_xmit_before_ns = before_ns;
	send_(t, ts, p, seq_end);
	rec_flags = 0;
	rec_xmit_before_ns = 0;
}

static void test_xmit_folded_into_send(void **state)
{
	struct out o;
	struct conn_table *t = mktable(&o, 1);

	recv_(t, 10 * MS, CHAT_REQ, 0, 0);
	send_folded(t, 20 * MS + 10, SSE_HEAD, 1000, 5);
	send_folded(t, 21 * MS + 10, TOK_LEN "\r\n" TOK_EV("a") "\r\n", 1100, 7);
	/* the folded transmit is the write's last segment; a later one covers the next write */
	send_(t, 22 * MS, TOK_LEN "\r\n" TOK_EV("b") "\r\n", 1200);
	xmit(t, 23 * MS, 1200);
	/* a folded SEND ends the response: emitted at once, not waiting */
	send_folded(t, 25 * MS, "0\r\n\r\n", 1205, 2000);
	assert_int_equal(o.n, 1);
	assert_int_equal(o.r[0].n_events, 2);
	assert_int_equal(o.r[0].events[0].write_ns, 21 * MS + 10);
	assert_int_equal(o.r[0].events[0].xmit_ns, 21 * MS + 3);
	assert_int_equal(o.r[0].events[1].xmit_ns, 23 * MS);
	assert_int_equal(o.r[0].resp_first_xmit_ns, 20 * MS + 5);
	assert_int_equal(o.r[0].end_xmit_ns, 25 * MS - 2000);
	assert_int_equal(o.r[0].flags & ~TTF_REQ_READ, TTF_REQ_STREAM | TTF_REQ_XMIT);
	conn_table__free(t);
}

/* A peer's close (write_seq carried, TTF_EVF_CLOSE_SEQ) before the last write's SEND record. */
static void close_seq(struct conn_table *t, uint64_t ts, uint32_t write_seq)
{
	rec_flags = TTF_EVF_CLOSE_SEQ;
	rec(t, TTF_EV_CLOSE, ts, NULL, 1, 0, write_seq, 0, 0, 0);
	rec_flags = 0;
}

/* A request, its SSE head written up to head_seq, then a close with write_seq close_at. */
static struct conn_table *head_then_close(struct out *o, uint32_t head_seq, uint32_t close_at)
{
	struct conn_table *t = mktable_with(o, 0, 1);

	recv_(t, 10 * MS, CHAT_REQ, 0, 0);
	send_(t, 20 * MS, SSE_HEAD, head_seq);
	close_seq(t, 21 * MS, close_at);
	return t;
}

static void test_close_waits_for_last_send(void **state)
{
	struct out o;
	struct conn_table *t = mktable_with(&o, 0, 1);
	const char *head = SSE_HEAD, *tok = TOK_LEN "\r\n" TOK_EV("a") "\r\n";
	uint32_t s1 = 1000 + strlen(head), s2 = s1 + strlen(tok), s3 = s2 + 5;

	recv_(t, 10 * MS, CHAT_REQ, 0, 0);
	send_(t, 20 * MS, head, s1);
	send_(t, 21 * MS, tok, s2);
	/* the client read the terminator and closed before its SEND record came */
	close_seq(t, 22 * MS, s3);
	assert_int_equal(o.n, 0);
	send_(t, 22 * MS + 100, "0\r\n\r\n", s3);
	assert_int_equal(o.n, 1);
	assert_int_equal(o.r[0].n_events, 1);
	assert_int_equal(o.r[0].flags & TTF_REQ_ABORTED, 0);
	assert_int_equal(o.r[0].end_write_ns, 22 * MS + 100);
	/* the connection is gone: a late record of it starts nothing */
	send_(t, 23 * MS, tok, s3 + 50);
	assert_int_equal(conn_table__stats(t)->connections, 1);
	conn_table__free(t);

	/* a close whose write never shows up: aborted once the wait is over */
	t = head_then_close(&o, s1, s2);
	assert_int_equal(o.n, 0);
	rec(t, TTF_EV_XMIT, 80 * MS, NULL, 1, 0, 5, 0, 0, 1);	/* another connection's, 59 ms on */
	assert_int_equal(o.n, 1);
	assert_true(o.r[0].flags & TTF_REQ_ABORTED);
	conn_table__free(t);

	/* a close with nothing unseen (its write_seq was reached) ends at once */
	t = head_then_close(&o, s1, s1);
	assert_int_equal(o.n, 1);
	assert_true(o.r[0].flags & TTF_REQ_ABORTED);
	conn_table__free(t);
}

#define WHOLE_RESP "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\n" \
		   "Content-Length: 2\r\n\r\n{}"

/* An upstream's FIN (CLOSE_WAIT) with its whole response still unread: B1.13. */
static void close_unread(struct conn_table *t, uint64_t ts, uint32_t unread)
{
	rec_flags = TTF_EVF_CLOSE_SEQ | TTF_EVF_CLOSE_UNREAD;
	rec_xmit_before_ns = unread;	/* close_unread shares the field */
	rec(t, TTF_EV_CLOSE, ts, NULL, 8, 0, 0, 0, 0, 0);
	rec_flags = 0;
	rec_xmit_before_ns = 0;
}

static void test_close_waits_for_unread_response(void **state)
{
	struct out o;
	struct conn_table *t = mktable_with(&o, 0, 1);

	(void)state;
	/* a gateway's upstream call: it writes the request, the upstream answers and closes */
	send_(t, 10 * MS, CHAT_REQ, 1000);
	close_unread(t, 100 * MS, strlen(WHOLE_RESP));
	assert_int_equal(o.n, 0);
	rec(t, TTF_EV_RECV, 100 * MS + 250000, WHOLE_RESP, 0, -1, 0, 0, 0, 101);
	assert_int_equal(o.n, 1);
	assert_int_equal(o.r[0].status, 200);
	assert_int_equal(o.r[0].flags & TTF_REQ_ABORTED, 0);
	conn_table__free(t);

	/* the read never comes: aborted once 1 s of record time passed */
	t = mktable_with(&o, 0, 1);
	send_(t, 10 * MS, CHAT_REQ, 1000);
	close_unread(t, 100 * MS, strlen(WHOLE_RESP));
	rec(t, TTF_EV_XMIT, 600 * MS, NULL, 1, 0, 5, 0, 0, 1);	/* another connection's */
	assert_int_equal(o.n, 0);
	rec(t, TTF_EV_XMIT, 1200 * MS, NULL, 1, 0, 5, 0, 0, 1);
	assert_int_equal(o.n, 1);
	assert_true(o.r[0].flags & TTF_REQ_ABORTED);
	conn_table__free(t);
}

static void test_xmit_wait_is_bounded(void **state)
{
	struct out o;
	struct conn_table *t = mktable(&o, 1);

	recv_(t, 10 * MS, CHAT_REQ, 0, 0);
	send_(t, 20 * MS, SSE_HEAD TOK_LEN "\r\n" TOK_EV("a") "\r\n0\r\n\r\n", 1000);
	assert_int_equal(o.n, 0);
	/* another connection's record 150 ms later: still waiting */
	rec(t, TTF_EV_XMIT, 170 * MS, NULL, 1, 0, 5, 0, 0, 1);
	assert_int_equal(o.n, 0);
	rec(t, TTF_EV_XMIT, 221 * MS, NULL, 1, 0, 5, 0, 0, 1);
	assert_int_equal(o.n, 1);
	assert_int_equal(o.r[0].end_xmit_ns, 0);
	assert_int_equal(o.r[0].flags & ~TTF_REQ_READ, TTF_REQ_STREAM);
	conn_table__free(t);
}

static void test_llamacpp_stream(void **state)
{
	struct out o;
	struct conn_table *t = mktable(&o, 0);

	recv_(t, 10 * MS, "POST /completion HTTP/1.1\r\nContent-Length: 2\r\n\r\n{}", 0, 0);
	send_(t, 20 * MS, "HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\n"
			  "Transfer-Encoding: chunked\r\n\r\n", 1000);
	send_(t, 21 * MS, "25\r\ndata: {\"content\":\"He\",\"stop\":false}\n\n\r\n", 1100);
	send_(t, 22 * MS,
	      "35\r\ndata: {\"content\":\"llo\",\"tokens\":[7,8],\"stop\":false}\n\n\r\n",
	      1200);
	send_(t, 23 * MS, "4d\r\ndata: {\"content\":\"\",\"stop\":true,\"tokens_predicted\":3,"
			  "\"tokens_evaluated\":11}\n\n\r\n0\r\n\r\n", 1300);
	assert_int_equal(o.n, 1);
	assert_int_equal(o.r[0].api, TTF_API_LLAMACPP);
	assert_int_equal(o.r[0].n_events, 2);
	assert_int_equal(o.r[0].events[0].n_tokens, 1);
	assert_int_equal(o.r[0].events[1].n_tokens, 2);
	assert_int_equal(o.r[0].events[1].write_ns, 22 * MS);
	assert_int_equal(o.r[0].n_sse_events, 3);
	assert_int_equal(o.r[0].usage_completion_tokens, 3);
	assert_int_equal(o.r[0].usage_prompt_tokens, 11);
	assert_int_equal(o.r[0].flags & ~TTF_REQ_READ, TTF_REQ_STREAM | TTF_REQ_USAGE);
	assert_int_equal(conn_table__stats(t)->lost_sync, 0);
	conn_table__free(t);
}

static void test_lost_sync_resync(void **state)
{
	struct out o;
	struct conn_table *t = mktable(&o, 0);

	recv_(t, 10 * MS, CHAT_REQ, 0, 0);
	send_(t, 20 * MS, SSE_HEAD TOK_LEN "\r\n" TOK_EV("a") "\r\n", 1000);
	/* the next chunk-size line is in the uncaptured part */
	rec(t, TTF_EV_SEND, 21 * MS, TOK_LEN "\r\n" TOK_EV("b") "\r\n" TOK_LEN "\r\n", 0, 50,
	    1100, 0, 0, 102);
	send_(t, 22 * MS, TOK_EV("c") "\r\n0\r\n\r\n", 1200);
	recv_(t, 30 * MS, CHAT_REQ, 0, 0);
	send_(t, 31 * MS, "HTTP/1.1 500 Internal Server Error\r\nContent-Length: 0\r\n\r\n", 1300);
	assert_int_equal(o.n, 2);
	assert_int_equal(o.r[0].n_events, 1);
	assert_int_equal(o.r[0].flags & ~TTF_REQ_READ, TTF_REQ_STREAM | TTF_REQ_TRUNCATED | TTF_REQ_UNKNOWN);
	assert_int_equal(o.r[1].conn_seq, 1);
	assert_int_equal(o.r[1].status, 500);
	assert_int_equal(o.r[1].n_events, 0);
	assert_int_equal(o.r[1].flags & ~TTF_REQ_READ, TTF_REQ_NONSTREAM | TTF_REQ_ERROR);
	assert_int_equal(conn_table__stats(t)->lost_sync, 1);
	conn_table__free(t);
}

static void test_non_http_exit_finish(void **state)
{
	struct out o;
	struct conn_table *t = mktable(&o, 0);
	struct ttf_net_event e = { .type = TTF_EV_EXIT, .tgid = TGID, .ts_ns = 60 * MS };

	/* binary: a mid-stream framing may start at a later record (recognizer.h) */
	for (int i = 0; i <= PROTO_UNDECIDED_MAX; i++) {
		assert_int_equal(conn_table__stats(t)->non_http, 0);
		rec(t, TTF_EV_RECV, 1 * MS, "\x01\x02\x03\x04", 0, -1, 0, 0, 0, 101);
	}
	assert_int_equal(conn_table__stats(t)->non_http, 1);
	/* same cookie: the binary connection stays ignored */
	recv_(t, 2 * MS, CHAT_REQ, 0, 0);
	assert_int_equal(o.n, 0);
	assert_int_equal(conn_table__on_event(t, &e, sizeof(e)), 0);
	assert_int_equal(conn_table__stats(t)->connections, 1);
	assert_int_equal(conn_table__on_event(t, &e, sizeof(e) - 1), -EINVAL);
	conn_table__finish(t, 70 * MS);
	assert_int_equal(o.n, 0);
	conn_table__free(t);

	t = mktable(&o, 0);
	recv_(t, 10 * MS, CHAT_REQ, 0, 0);
	e.ts_ns = 20 * MS;
	assert_int_equal(conn_table__on_event(t, &e, sizeof(e)), 0);
	assert_int_equal(o.n, 1);
	assert_int_equal(o.r[0].flags & ~TTF_REQ_READ, TTF_REQ_ABORTED);
	/* a late record of the exited process's socket is ignored */
	recv_(t, 21 * MS, CHAT_REQ, 0, 0);
	conn_table__finish(t, 22 * MS);
	assert_int_equal(o.n, 1);
	conn_table__free(t);

	t = mktable(&o, 0);
	recv_(t, 30 * MS, "POST /v1/completions HTTP/1.1\r\nContent-Length: 2\r\n\r\n{}", 0, 0);
	conn_table__finish(t, 40 * MS);
	assert_int_equal(o.n, 1);
	assert_int_equal(o.r[0].api, TTF_API_COMPLETION);
	assert_int_equal(o.r[0].flags & ~TTF_REQ_READ, TTF_REQ_INCOMPLETE);
	conn_table__free(t);
}

/*
 * The client half-closed after its request (its FIN: CLOSE_WAIT, the new
 * state in the CLOSE record's bytes): the server still answers in full and
 * the request is reported with its response. Without a response in flight,
 * or once the connection is reset (TCP_CLOSE), it ends as before.
 */
static void test_half_closed_peer(void **state)
{
	struct out o;
	struct conn_table *t = mktable(&o, 0);

	recv_(t, 10 * MS, CHAT_REQ, 0, 0);
	rec(t, TTF_EV_CLOSE, 11 * MS, NULL, 8, 0, 0, 0, 0, 0);	/* TCP_CLOSE_WAIT */
	assert_int_equal(o.n, 0);
	send_(t, 40 * MS, SSE_HEAD TOK_LEN "\r\n" TOK_EV("a") "\r\n", 1000);
	send_(t, 45 * MS, "0\r\n\r\n", 1100);
	assert_int_equal(o.n, 1);
	assert_int_equal(o.r[0].status, 200);
	assert_int_equal(o.r[0].n_events, 1);
	assert_false(o.r[0].flags & TTF_REQ_ABORTED);
	conn_table__free(t);

	/* the client closed altogether: the server's write draws a reset, which ends it */
	t = mktable(&o, 0);
	recv_(t, 10 * MS, CHAT_REQ, 0, 0);
	rec(t, TTF_EV_CLOSE, 11 * MS, NULL, 8, 0, 0, 0, 0, 0);
	send_(t, 40 * MS, SSE_HEAD TOK_LEN "\r\n" TOK_EV("a") "\r\n", 1000);
	rec(t, TTF_EV_CLOSE, 41 * MS, NULL, 7, 0, 0, 0, 0, 0);	/* TCP_CLOSE */
	assert_int_equal(o.n, 1);
	assert_true(o.r[0].flags & TTF_REQ_ABORTED);
	conn_table__free(t);

	/* no request in flight: the FIN ends the connection at once */
	t = mktable(&o, 0);
	recv_(t, 10 * MS, CHAT_REQ, 0, 0);
	send_(t, 40 * MS, SSE_HEAD TOK_LEN "\r\n" TOK_EV("a") "\r\n" "0\r\n\r\n", 1000);
	assert_int_equal(o.n, 1);
	rec(t, TTF_EV_CLOSE, 50 * MS, NULL, 8, 0, 0, 0, 0, 0);
	recv_(t, 60 * MS, CHAT_REQ, 0, 0);			/* a late record: ignored */
	conn_table__finish(t, 70 * MS);
	assert_int_equal(o.n, 1);
	conn_table__free(t);
}

/*
 * A connection that ends while no recognizer has decided (a scanner's bad
 * request line, answered 400 and closed) is counted as not HTTP; one that
 * carried no byte (opened and dropped) is not.
 */
static void test_undecided_closed(void **state)
{
	struct out o;
	struct conn_table *t = mktable(&o, 0);

	recv_(t, 1 * MS, "GET\r\n\r\n", 0, 0);
	send_(t, 2 * MS, "HTTP/1.1 400 Bad Request\r\nContent-Length: 0\r\n\r\n", 100);
	assert_int_equal(conn_table__stats(t)->non_http, 0);
	close_(t, 3 * MS);
	assert_int_equal(conn_table__stats(t)->non_http, 1);
	assert_int_equal(o.n, 0);
	conn_table__free(t);

	/* opened and dropped: a read of no bytes, then the close */
	t = mktable(&o, 0);
	rec(t, TTF_EV_RECV, 4 * MS, NULL, 0, 0, 0, 0, 0, 101);
	close_(t, 5 * MS);
	assert_int_equal(conn_table__stats(t)->connections, 1);
	assert_int_equal(conn_table__stats(t)->non_http, 0);
	conn_table__free(t);

	/* still undecided when tracing stops: its bytes were not read as requests either */
	t = mktable(&o, 0);
	recv_(t, 1 * MS, "\x01\x02garbage", 0, 0);
	conn_table__finish(t, 2 * MS);
	assert_int_equal(conn_table__stats(t)->non_http, 1);
	assert_int_equal(o.n, 0);
	conn_table__free(t);
}

/*
 * No recognizer says yes to text that is not a request line: the connection
 * stays undecided for PROTO_UNDECIDED_MAX (16) payload records, then is not HTTP.
 */
static void test_undecided_limit(void **state)
{
	struct out o;
	struct conn_table *t = mktable(&o, 0);
	int i;

	for (i = 0; i < 16; i++)
		recv_(t, (1 + i) * MS, "hello\r\n", 0, 0);
	assert_int_equal(conn_table__stats(t)->non_http, 0);
	recv_(t, 20 * MS, CHAT_REQ, 0, 0);
	conn_table__finish(t, 30 * MS);
	assert_int_equal(o.n, 1);
	assert_int_equal(o.r[0].api, TTF_API_CHAT);
	assert_int_equal(o.r[0].conn_seq, 0);
	conn_table__free(t);

	t = mktable(&o, 0);
	for (i = 0; i < 17; i++)
		recv_(t, (1 + i) * MS, "hello\r\n", 0, 0);
	assert_int_equal(conn_table__stats(t)->non_http, 1);
	recv_(t, 20 * MS, CHAT_REQ, 0, 0);
	conn_table__finish(t, 30 * MS);
	assert_int_equal(o.n, 0);
	assert_int_equal(conn_table__stats(t)->non_http, 1);
	conn_table__free(t);
}

/* TTFB and TTFE end at the XMIT of their writes; a 100 Continue is neither. */
static void test_first_byte_event_interim_expect(void **state)
{
	struct out o;
	struct conn_table *t = mktable(&o, 1);

	/* the head arrives at 8 ms; the body, after the client waited, at 40 ms */
	recv_(t, 10 * MS, "POST /v1/responses HTTP/1.1\r\nExpect: 100-continue\r\n"
			  "Content-Length: 2\r\n\r\n", 8 * MS, 8 * MS);
	xmit(t, 12 * MS, 500);
	send_(t, 12 * MS + 10000, "HTTP/1.1 100 Continue\r\n\r\n", 500);
	recv_(t, 41 * MS, "{}", 40 * MS, 40 * MS);
	send_(t, 50 * MS, SSE_HEAD, 1000);
	xmit(t, 50 * MS + 300000, 1000);	/* XMIT after its SEND: matched late */
	xmit(t, 60 * MS - 200000, 1100);	/* XMIT before its SEND */
	send_(t, 60 * MS, ROLE_LEN "\r\n" ROLE_EV "\r\n", 1100);
	send_(t, 70 * MS, TOK_LEN "\r\n" TOK_EV("a") "\r\n", 1200);
	xmit(t, 70 * MS + 100000, 1200);
	send_(t, 71 * MS, "0\r\n\r\n", 1300);
	xmit(t, 71 * MS + 100000, 1300);
	assert_int_equal(o.n, 1);
	assert_int_equal(o.r[0].api, TTF_API_RESPONSES);
	assert_int_equal(o.r[0].flags & (TTF_REQ_EXPECT_100 | TTF_REQ_INTERIM),
			 TTF_REQ_EXPECT_100 | TTF_REQ_INTERIM);
	assert_int_equal(o.r[0].n_interim, 1);
	assert_int_equal(o.r[0].interim_write_ns, 12 * MS + 10000);
	assert_true(o.r[0].expect_wait_known);
	assert_int_equal(o.r[0].expect_wait_ns, 32 * MS);
	assert_int_equal(o.r[0].status, 200);
	assert_int_equal(o.r[0].resp_first_write_ns, 50 * MS);
	assert_int_equal(o.r[0].resp_first_xmit_ns, 50 * MS + 300000);
	assert_int_equal(o.r[0].first_event_write_ns, 60 * MS);
	assert_int_equal(o.r[0].first_event_xmit_ns, 60 * MS - 200000);
	assert_int_equal(o.r[0].n_sse_events, 2);
	assert_int_equal(o.r[0].n_events, 1);
	assert_int_equal(o.r[0].events[0].xmit_ns, 70 * MS + 100000);
	conn_table__free(t);
}

/* Head and body in one read: the client's wait cannot be told apart. */
static void test_expect_wait_unknown_in_one_read(void **state)
{
	struct out o;
	struct conn_table *t = mktable(&o, 0);

	recv_(t, 10 * MS, "POST /v1/messages HTTP/1.1\r\nExpect: 100-continue\r\n"
			  "Content-Length: 2\r\n\r\n{}", 8 * MS, 9 * MS);
	send_(t, 50 * MS, "HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok", 1000);
	assert_int_equal(o.n, 1);
	assert_int_equal(o.r[0].api, TTF_API_MESSAGES);
	assert_true(o.r[0].flags & TTF_REQ_EXPECT_100);
	assert_false(o.r[0].flags & TTF_REQ_INTERIM);
	assert_false(o.r[0].expect_wait_known);
	assert_int_equal(o.r[0].first_event_write_ns, 0);	/* no stream, no event */
	conn_table__free(t);
}

/*
 * A TLS connection: ciphertext records (flagged, or unflagged before the
 * first plaintext) are never parsed; the plaintext is, its SEND seq_end
 * (ciphertext write_seq, a different count than its bytes) pairs with XMIT
 * and is no gap; the request says tls.
 */
static void test_tls_plaintext_parsed_ciphertext_not(void **state)
{
	struct out o;
	struct conn_table_opts opts = { .sz = sizeof(opts), .on_request = on_request, .ctx = &o,
					.send_seq_exact = 1, .xmit_expected = 1 };
	struct conn_table *t;

	memset(&o, 0, sizeof(o));
	t = conn_table__new(&opts);
	assert_non_null(t);
	/* a ClientHello read outside the probed calls: the connection looks non-HTTP */
	recv_(t, 5 * MS, "\x16\x03\x01\x02\xab\x01\x7f\x01\xfc\x03\x03\x9e\x11\x42\x8c\x33", 0, 0);
	assert_int_equal(conn_table__stats(t)->non_http, 1);
	rec_flags = TTF_EVF_TLS_CIPHER;
	send_(t, 6 * MS, "\x16\x03\x03\x01\x7a\x02", 400);
	rec_flags = TTF_EVF_TLS_PLAIN;
	recv_(t, 10 * MS, CHAT_REQ, 8 * MS, 9 * MS);
	send_(t, 20 * MS + 10, SSE_HEAD, 1000);
	xmit(t, 21 * MS + 5, 1100);
	send_(t, 21 * MS + 10, TOK_LEN "\r\n" TOK_EV("a") "\r\n", 1100);
	rec_flags = 0;	/* a close_notify the probes did not see as ciphertext: ignored */
	send_(t, 21 * MS + 20, "\x17\x03\x03\x00\x13garbage", 1130);
	rec_flags = TTF_EVF_TLS_PLAIN;
	send_(t, 22 * MS, "0\r\n\r\n", 1200);
	xmit(t, 22 * MS + 5, 1200);
	rec_flags = 0;
	assert_int_equal(o.n, 1);
	assert_int_equal(o.r[0].n_events, 1);
	assert_int_equal(o.r[0].events[0].write_ns, 21 * MS + 10);
	assert_int_equal(o.r[0].events[0].xmit_ns, 21 * MS + 5);
	assert_int_equal(o.r[0].arrival_first_ns, 8 * MS);
	assert_int_equal(o.r[0].end_xmit_ns, 22 * MS + 5);
	assert_int_equal(o.r[0].flags & ~TTF_REQ_READ, TTF_REQ_STREAM | TTF_REQ_XMIT | TTF_REQ_TLS);
	assert_int_equal(conn_table__stats(t)->non_http, 0);
	assert_int_equal(conn_table__stats(t)->lost_sync, 0);
	conn_table__free(t);
}

/*
 * The peer closes between a TLS write's ciphertext and its plaintext
 * record (submitted at the library call's return): the close waits for it,
 * and the response ends, not aborted. Without it, the close waits boundedly.
 */
static void test_tls_close_waits_for_plaintext(void **state)
{
	struct out o;
	struct conn_table *t = mktable(&o, 1);

	rec_flags = TTF_EVF_TLS_PLAIN;
	recv_(t, 10 * MS, CHAT_REQ, 0, 0);
	send_(t, 20 * MS, SSE_HEAD TOK_LEN "\r\n" TOK_EV("a") "\r\n", 1000);
	xmit(t, 20 * MS - 5, 1000);
	rec_flags = TTF_EVF_TLS_CIPHER | TTF_EVF_TLS_IN_CALL;
	send_(t, 21 * MS, "\x17\x03\x03", 1050);
	xmit(t, 21 * MS + 1, 1050);
	rec_flags = 0;
	close_(t, 21 * MS + 2);
	assert_int_equal(o.n, 0);	/* waits */
	rec_flags = TTF_EVF_TLS_PLAIN;
	send_(t, 21 * MS + 3, "0\r\n\r\n", 1050);
	assert_int_equal(o.n, 1);
	assert_int_equal(o.r[0].flags & ~TTF_REQ_READ, TTF_REQ_STREAM | TTF_REQ_XMIT | TTF_REQ_TLS);
	assert_int_equal(o.r[0].end_xmit_ns, 21 * MS + 1);

	/* a second connection whose last plaintext never comes: closed 50 ms later */
	recv_(t, 100 * MS, CHAT_REQ, 0, 0);
	assert_int_equal(conn_table__stats(t)->connections, 1);	/* the cookie's tombstone */
	rec_flags = 0;
	conn_table__free(t);

	t = mktable(&o, 0);
	rec_flags = TTF_EVF_TLS_PLAIN;
	recv_(t, 10 * MS, CHAT_REQ, 0, 0);
	send_(t, 20 * MS, SSE_HEAD, 1000);
	rec_flags = TTF_EVF_TLS_CIPHER | TTF_EVF_TLS_IN_CALL;
	send_(t, 21 * MS, "\x17\x03\x03", 1050);
	rec_flags = 0;
	close_(t, 22 * MS);
	assert_int_equal(o.n, 0);
	xmit(t, 71 * MS, 1);	/* any later record: not yet */
	assert_int_equal(o.n, 0);
	xmit(t, 73 * MS, 1);
	assert_int_equal(o.n, 1);
	assert_true(o.r[0].flags & TTF_REQ_ABORTED);
	assert_int_equal(o.r[0].closed_ns, 22 * MS);
	conn_table__free(t);
}

/*
 * The recognizers' counters, as the summary prints them after the
 * tracker's own: every family's in turn, names and order fixed (recordings
 * replay to the same output).
 */
static void test_proto_counters_in_print_order(void **state)
{
	static const char *const want[] = {
		"h2_frames_skipped", "h2_streams_unseen", "hpack_unknown_refs", "hpack_errors",
		"grpc_messages_lost", "traceparent_invalid", "zmtp_connections",
		"zmtp_messages_in", "zmtp_messages_out", "zmtp_messages_partial",
		"zmtp_request_ids", "zmtp_lost_sync", "zmtp_mid_stream_connections",
		"len32_connections",
	};
	struct out o;
	struct conn_table *t = mktable(&o, 0);
	unsigned int n = sizeof(want) / sizeof(want[0]);

	(void)state;
	assert_int_equal(conn_table__n_counters(t), n);
	for (unsigned int i = 0; i < n; i++) {
		assert_string_equal(conn_table__counter_name(t, i), want[i]);
		assert_int_equal(conn_table__counter(t, i), 0);
	}
	assert_null(conn_table__counter_name(t, n));
	assert_int_equal(conn_table__count(t, "no_such_counter"), 0);
	conn_table__free(t);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_keepalive_two_requests),
		cmocka_unit_test(test_chunked_request_three_recvs_split_headers),
		cmocka_unit_test(test_coalesced_split_and_done),
		cmocka_unit_test(test_done_then_next_request_ends_it),
		cmocka_unit_test(test_truncated_no_invented_events),
		cmocka_unit_test(test_unseen_write_is_a_gap),
		cmocka_unit_test(test_close_mid_stream_aborted),
		cmocka_unit_test(test_xmit_both_orders),
		cmocka_unit_test(test_xmit_folded_into_send),
		cmocka_unit_test(test_close_waits_for_last_send),
		cmocka_unit_test(test_xmit_wait_is_bounded),
		cmocka_unit_test(test_close_waits_for_unread_response),
		cmocka_unit_test(test_llamacpp_stream),
		cmocka_unit_test(test_lost_sync_resync),
		cmocka_unit_test(test_non_http_exit_finish),
		cmocka_unit_test(test_undecided_closed),
		cmocka_unit_test(test_half_closed_peer),
		cmocka_unit_test(test_undecided_limit),
		cmocka_unit_test(test_first_byte_event_interim_expect),
		cmocka_unit_test(test_expect_wait_unknown_in_one_read),
		cmocka_unit_test(test_tls_plaintext_parsed_ciphertext_not),
		cmocka_unit_test(test_tls_close_waits_for_plaintext),
		cmocka_unit_test(test_proto_counters_in_print_order),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
