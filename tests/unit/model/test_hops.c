// SPDX-License-Identifier: GPL-2.0-only
/*
 * Gateway -> upstream joins (user/model/hops/gateway.h, docs/design.md D11) on
 * synthetic requests: a client request r served by a gateway, its upstream
 * call U, and the upstream server's request E on U's connection.
 */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <string.h>
#include <stdlib.h>
#include <cmocka.h>
#include "bpf/net.h"
#include "user/model/attrib.h"
#include "user/model/hops/gateway.h"
#include "user/model/metrics.h"

#define MS 1000000ull
#define GW 100		/* gateway tgid */
#define UP 200		/* upstream server tgid */

static void addr(struct ttf_conn_addr *a, uint16_t lport, uint16_t rport)
{
	memset(a, 0, sizeof(*a));
	a->family = 2;
	a->lport = lport;
	a->rport = rport;
	a->laddr[0] = a->raddr[0] = 127;
	a->laddr[3] = a->raddr[3] = 1;
}

/* A request with token events at tok[] (write times; for U: read times). */
static void req(struct ttf_request *r, uint64_t id, uint32_t tgid, uint64_t read_first,
		uint64_t read_done, const uint64_t *tok, int n)
{
	memset(r, 0, sizeof(*r));
	r->id = id;
	r->tgid = r->rx_tid = tgid;
	r->read_first_ns = read_first;
	r->read_done_ns = read_done;
	r->flags = TTF_REQ_STREAM;
	for (int i = 0; i < n; i++) {
		struct ttf_token_event ev = { .write_ns = tok[i], .n_tokens = 1,
					      .flags = TTF_TOK_CONTENT };

		assert_int_equal(ttf_request__add_event(r, &ev), 0);
	}
	r->end_write_ns = tok[n - 1];
}

static void compute(const struct ttf_request *r, struct ttf_req_metrics *m, struct ttf_attrib *a)
{
	struct attrib_sources src = { 0 };

	assert_int_equal(ttf_metrics__compute(r, m), 0);
	assert_int_equal(ttf_attrib__compute(r, m, &src, a), 0);
}

/*
 * One client request through the gateway: r read at 10 ms, U written at
 * 10.2 ms, E read at 10.5 ms and first token written at 60 ms, U reads it at
 * 60.1 ms, r writes it at 60.2 ms. The stages sum to r's TTFT, E's own
 * split sits inside `upstream`, and both joins are exact.
 */
static void test_chain_sums_to_ttft(void **state)
{
	struct hops *h = hops__new();
	struct ttf_request r, u, e;
	struct ttf_req_metrics m;
	struct ttf_attrib a;
	struct ttf_hop_chain c;
	const uint64_t rt[] = { 60200000, 70200000 }, ut[] = { 60100000, 70100000 };
	const uint64_t et[] = { 60000000, 70000000 };
	int64_t sum = 0;

	(void)state;
	req(&r, 1, GW, 9 * MS, 10 * MS, rt, 2);
	r.arrival_first_ns = r.arrival_last_ns = 9 * MS;
	addr(&r.addr, 8080, 50000);
	req(&u, 2, GW, 10200000, 10200000, ut, 2);
	u.flags |= TTF_REQ_UPSTREAM;
	addr(&u.addr, 40000, 8081);
	req(&e, 3, UP, 10300000, 10500000, et, 2);
	e.arrival_first_ns = e.arrival_last_ns = 10250000;
	addr(&e.addr, 8081, 40000);

	assert_int_equal(hops__on_upstream_conn(h, &u), 0);
	compute(&e, &m, &a);
	assert_int_equal(hops__hold(h, &e, &m, &a), 1);	/* over U's connection */
	compute(&u, &m, &a);
	assert_int_equal(hops__hold(h, &u, &m, &a), 1);
	compute(&r, &m, &a);
	assert_int_equal(hops__hold(h, &r, &m, &a), 0);	/* the client's: not held */
	assert_int_equal(hops__join(h, &r, &m, &a, &c), 1);
	for (int i = 0; i < TTF_HS__MAX; i++) {
		assert_true(c.stage_ns[i] >= 0);
		sum += c.stage_ns[i];
	}
	assert_int_equal(sum, m.ttft_ns);
	assert_int_equal(c.stage_ns[TTF_HS_GATEWAY_IN], 200000);
	assert_int_equal(c.stage_ns[TTF_HS_UPSTREAM], 50000000 - 200000);
	assert_int_equal(c.stage_ns[TTF_HS_UPSTREAM_OUT], 100000);
	assert_int_equal(c.stage_ns[TTF_HS_GATEWAY_OUT], 100000);
	assert_int_equal(c.exact, 1);
	assert_int_equal(c.up_tgid, UP);
	assert_int_equal(c.up_req_id, 3);
	assert_int_equal(c.up_port, 8081);
	/* E's read_wait (arrival 10.25 -> read 10.5) starts where U was written (10.2) */
	assert_int_equal(c.up_stage_ns[TTF_ST_READ_WAIT], 250000);
	assert_int_equal(c.buffering, 0);
	assert_int_equal(hops__stats(h)->joined_exact, 1);
	ttf_request__release(&r);
	ttf_request__release(&u);
	ttf_request__release(&e);
	hops__free(h);
}

/* A unix stream connection's end (bpf/net.h): own and peer socket inodes. */
static void unix_addr(struct ttf_conn_addr *a, uint64_t own, uint64_t peer)
{
	memset(a, 0, sizeof(*a));
	a->family = TTF_AF_UNIX;
	memcpy(a->laddr, &own, sizeof(own));
	memcpy(a->raddr, &peer, sizeof(peer));
}

/*
 * The same chain over a unix socket: U was written before the server
 * accepted (its peer inode 0), so E (inodes 501 <- 500) joins U (500 <- 0)
 * by U's own inode alone; E' on another connection (601 <- 600) is not
 * U's. The join is exact and names the inodes.
 */
static void test_unix_join_by_inode(void **state)
{
	struct hops *h = hops__new();
	struct ttf_request r, u, e, other;
	struct ttf_req_metrics m;
	struct ttf_attrib a;
	struct ttf_hop_chain c;
	const uint64_t rt[] = { 60200000, 70200000 }, ut[] = { 60100000, 70100000 };
	const uint64_t et[] = { 60000000, 70000000 };

	(void)state;
	req(&r, 1, GW, 9 * MS, 10 * MS, rt, 2);
	addr(&r.addr, 8080, 50000);
	req(&u, 2, GW, 10200000, 10200000, ut, 2);
	u.flags |= TTF_REQ_UPSTREAM;
	unix_addr(&u.addr, 500, 0);
	req(&e, 3, UP, 10300000, 10500000, et, 2);
	unix_addr(&e.addr, 501, 500);
	req(&other, 4, UP, 10300000, 10500000, et, 2);
	unix_addr(&other.addr, 601, 600);

	assert_int_equal(hops__on_upstream_conn(h, &u), 0);
	compute(&other, &m, &a);
	assert_int_equal(hops__hold(h, &other, &m, &a), 0);	/* not over U's connection */
	compute(&e, &m, &a);
	assert_int_equal(hops__hold(h, &e, &m, &a), 1);
	unix_addr(&u.addr, 500, 501);	/* the response's records named the peer */
	compute(&u, &m, &a);
	assert_int_equal(hops__hold(h, &u, &m, &a), 1);
	compute(&r, &m, &a);
	assert_int_equal(hops__join(h, &r, &m, &a, &c), 1);
	assert_int_equal(c.up_tgid, UP);
	assert_int_equal(c.up_req_id, 3);
	assert_int_equal(c.up_unix, 1);
	assert_int_equal(c.gw_ino, 500);
	assert_int_equal(c.up_ino, 501);
	assert_int_equal(c.up_port, 0);
	ttf_request__release(&r);
	ttf_request__release(&u);
	ttf_request__release(&e);
	ttf_request__release(&other);
	hops__free(h);
}

static int n_expired;
static void count_out(void *ctx, const struct ttf_request *r, const struct ttf_req_metrics *m,
		      const struct ttf_attrib *a)
{
	(void)ctx; (void)r; (void)m; (void)a;
	n_expired++;
}

/*
 * A gateway that holds tokens: U read 4 tokens 10 ms apart before r wrote
 * its first. Named buffering, with the held time; the upstream server not
 * traced: its part merges with a reason. Two candidate upstream calls make
 * the join inferred: the one written closest to the end of r's read wins,
 * and the other is output alone once the hold expires.
 */
static void test_buffering_inferred_untraced(void **state)
{
	struct hops *h = hops__new();
	struct ttf_request r, u1, u2;
	struct ttf_req_metrics m;
	struct ttf_attrib a;
	struct ttf_hop_chain c;
	const uint64_t rt[] = { 90 * MS, 90 * MS + 10000, 90 * MS + 20000, 90 * MS + 30000 };
	const uint64_t ut[] = { 50 * MS, 60 * MS, 70 * MS, 80 * MS };
	const uint64_t u2t[] = { 55 * MS };

	(void)state;
	req(&r, 1, GW, 9 * MS, 10 * MS, rt, 4);
	addr(&r.addr, 8080, 50000);
	req(&u1, 2, GW, 10200000, 10200000, ut, 4);
	u1.flags |= TTF_REQ_UPSTREAM;
	addr(&u1.addr, 40000, 8081);
	req(&u2, 3, GW, 10900000, 10900000, u2t, 1);	/* later: another request's */
	u2.flags |= TTF_REQ_UPSTREAM;
	addr(&u2.addr, 40001, 8081);
	compute(&u1, &m, &a);
	assert_int_equal(hops__hold(h, &u1, &m, &a), 1);
	compute(&u2, &m, &a);
	assert_int_equal(hops__hold(h, &u2, &m, &a), 1);
	compute(&r, &m, &a);
	assert_int_equal(hops__join(h, &r, &m, &a, &c), 1);
	assert_int_equal(c.exact, 0);
	assert_int_equal(c.stage_ns[TTF_HS_GATEWAY_IN], 200000);
	assert_int_equal(c.buffering, 1);
	assert_int_equal(c.held_reads, 3);
	assert_int_equal(c.held_ns, 40 * MS);
	assert_int_equal(c.stage_ns[TTF_HS_GATEWAY_OUT], 40 * MS);
	assert_int_equal(c.up_tgid, 0);
	assert_non_null(strstr(c.up_why, "8081"));
	assert_int_equal(hops__stats(h)->upstream_untraced, 1);
	n_expired = 0;
	hops__expire(h, 100 * MS, count_out, NULL);	/* within the hold: kept */
	assert_int_equal(n_expired, 0);
	hops__expire(h, 55 * MS + HOPS_HOLD_NS + 1, count_out, NULL);
	assert_int_equal(n_expired, 1);			/* u2, unclaimed */
	assert_int_equal(hops__stats(h)->expired, 1);
	ttf_request__release(&r);
	ttf_request__release(&u1);
	ttf_request__release(&u2);
	hops__free(h);
}

/* A request on a connection no gateway opened is not held, and no chain is made. */
static void test_no_gateway(void **state)
{
	struct hops *h = hops__new();
	struct ttf_request r;
	struct ttf_req_metrics m;
	struct ttf_attrib a;
	struct ttf_hop_chain c;
	const uint64_t rt[] = { 50 * MS };

	(void)state;
	req(&r, 1, UP, 9 * MS, 10 * MS, rt, 1);
	addr(&r.addr, 8081, 40000);
	compute(&r, &m, &a);
	assert_int_equal(hops__hold(h, &r, &m, &a), 0);
	assert_int_equal(hops__join(h, &r, &m, &a, &c), 0);
	ttf_request__release(&r);
	hops__free(h);
}

/*
 * Two upstream calls in the window; the one written closest to r's read
 * carries another body (its first bytes hash otherwise): the other is r's,
 * and being the only one that fits, the join is exact.
 */
static void test_body_hash_decides(void **state)
{
	struct hops *h = hops__new();
	struct ttf_request r, u1, u2;
	struct ttf_req_metrics m;
	struct ttf_attrib a;
	struct ttf_hop_chain c;
	const uint64_t rt[] = { 60 * MS }, ut[] = { 59 * MS };

	(void)state;
	req(&r, 1, GW, 9 * MS, 10 * MS, rt, 1);
	r.body_bytes = 300;
	r.body_hash = 0x1235;
	req(&u1, 2, GW, 10100000, 10100000, ut, 1);	/* closest, another body */
	u1.flags |= TTF_REQ_UPSTREAM;
	u1.body_bytes = 300;
	u1.body_hash = 0x7777;
	addr(&u1.addr, 40000, 8081);
	req(&u2, 3, GW, 10400000, 10400000, ut, 1);
	u2.flags |= TTF_REQ_UPSTREAM;
	u2.body_bytes = 300;
	u2.body_hash = 0x1235;
	addr(&u2.addr, 40001, 8081);
	compute(&u1, &m, &a);
	assert_int_equal(hops__hold(h, &u1, &m, &a), 1);
	compute(&u2, &m, &a);
	assert_int_equal(hops__hold(h, &u2, &m, &a), 1);
	compute(&r, &m, &a);
	assert_int_equal(hops__join(h, &r, &m, &a, &c), 1);
	assert_int_equal(c.exact, 1);
	assert_int_equal(c.gw_port, 40001);
	assert_int_equal(c.stage_ns[TTF_HS_GATEWAY_IN], 400000);
	ttf_request__release(&r);
	ttf_request__release(&u1);
	ttf_request__release(&u2);
	hops__free(h);
}

/*
 * Disaggregated prefill/decode (D13): r read at 10 ms (body hash 0x11); the
 * prefill call P (body 0x22) written at 10.2 ms, answered at 310 ms; the
 * decode call D (body 0x33) written at 311 ms, its first token read at
 * 441 ms, r's write at 441.1 ms. Another request's prefill call Q, written
 * on another thread at 12 ms and answered at 305 ms, fits the window too:
 * r's thread decides.
 */
static void test_pd_chain(void **state)
{
	struct hops *h = hops__new();
	struct ttf_request r, p, q, d;
	struct ttf_req_metrics m;
	struct ttf_attrib a;
	struct ttf_hop_chain c;
	const uint64_t rt[] = { 441100000, 451100000 }, pt[] = { 310 * MS };
	const uint64_t qt[] = { 305 * MS }, dt[] = { 441 * MS, 451 * MS };
	int64_t sum = 0;

	(void)state;
	req(&r, 1, GW, 9 * MS, 10 * MS, rt, 2);
	r.arrival_first_ns = r.arrival_last_ns = 9 * MS;
	r.body_hash = 0x11;
	r.rx_tid = 101;
	addr(&r.addr, 8080, 50000);
	req(&p, 2, GW, 10200000, 10200000, pt, 1);
	p.flags = TTF_REQ_UPSTREAM | TTF_REQ_USAGE;
	p.usage_completion_tokens = 1;
	p.body_hash = 0x22;
	p.rx_tid = 101;
	addr(&p.addr, 40000, 8001);
	req(&q, 3, GW, 12 * MS, 12 * MS, qt, 1);
	q.flags = TTF_REQ_UPSTREAM;
	q.body_hash = 0x44;
	q.rx_tid = 102;
	addr(&q.addr, 40002, 8001);
	req(&d, 4, GW, 311 * MS, 311 * MS, dt, 2);
	d.flags |= TTF_REQ_UPSTREAM;
	d.body_hash = 0x33;
	d.rx_tid = 101;
	addr(&d.addr, 40001, 8002);
	for (struct ttf_request *x = &p; x; x = x == &p ? &q : x == &q ? &d : NULL) {
		assert_int_equal(hops__on_upstream_conn(h, x), 0);
		compute(x, &m, &a);
		assert_int_equal(hops__hold(h, x, &m, &a), 1);
	}
	compute(&r, &m, &a);
	assert_int_equal(hops__join(h, &r, &m, &a, &c), 1);
	for (int i = 0; i < TTF_HS__MAX; i++)
		sum += c.stage_ns[i];
	assert_int_equal(sum, m.ttft_ns);
	assert_int_equal(c.pd.seen, 1);
	assert_int_equal(c.pd.port, 8001);
	assert_int_equal(c.pd.tokens, 1);
	assert_int_equal(c.stage_ns[TTF_HS_GATEWAY_IN], 200000);
	assert_int_equal(c.stage_ns[TTF_HS_PREFILL_CALL], 310 * MS - 10200000);
	assert_int_equal(c.stage_ns[TTF_HS_HANDOFF], 1 * MS);
	assert_int_equal(c.stage_ns[TTF_HS_UPSTREAM], 130 * MS);
	assert_int_equal(c.up_port, 8002);
	assert_int_equal(c.exact, 0);
	assert_non_null(strstr(c.why, "on its thread"));
	assert_int_equal(hops__stats(h)->joined_pd, 1);
	/* Q is not r's: still held */
	assert_int_equal(hops__join(h, &r, &m, &a, &c), 0);
	hops__free(h);
}

/*
 * Ollama in front of llama-server: r (POST, body 0x11) read at 10 ms; a
 * health check S (GET, no body) written at 10.5 ms, answered at 11 ms, and
 * its server's request Es; the call D (POST, its body rewritten: 0x55)
 * written at 12 ms, its first token read at 50 ms, r's first write at
 * 50.1 ms. Another request's call Q streamed at 30 ms, 20 ms before r's
 * write: not a relay of it. r joins D, inferred, and S and Es go out with
 * r: nothing stays held.
 */
static void test_side_call_and_rewritten_body(void **state)
{
	struct hops *h = hops__new();
	struct ttf_request r, s, es, d, q;
	struct ttf_req_metrics m;
	struct ttf_attrib a;
	struct ttf_hop_chain c;
	const uint64_t rt[] = { 50100000, 60100000 }, st[] = { 11 * MS }, est[] = { 10900000 };
	const uint64_t dt[] = { 50 * MS, 60 * MS }, qt[] = { 29 * MS, 30 * MS };
	(void)state;
	n_expired = 0;
	req(&r, 1, GW, 9 * MS, 10 * MS, rt, 2);
	r.body_hash = 0x11;
	strcpy(r.method, "POST");
	addr(&r.addr, 8080, 50000);
	req(&s, 2, GW, 10500000, 10500000, st, 1);
	s.flags = TTF_REQ_UPSTREAM;
	strcpy(s.method, "GET");
	addr(&s.addr, 40000, 8081);
	req(&es, 3, UP, 10600000, 10600000, est, 1);
	addr(&es.addr, 8081, 40000);
	req(&d, 4, GW, 12 * MS, 12 * MS, dt, 2);
	d.flags |= TTF_REQ_UPSTREAM;
	d.body_hash = 0x55;
	strcpy(d.method, "POST");
	addr(&d.addr, 40001, 8081);
	req(&q, 5, GW, 11 * MS, 11 * MS, qt, 2);
	q.flags |= TTF_REQ_UPSTREAM;
	q.body_hash = 0x66;
	strcpy(q.method, "POST");
	addr(&q.addr, 40002, 8081);
	for (struct ttf_request *x = &s; x; x = x == &s ? &d : x == &d ? &q : NULL) {
		assert_int_equal(hops__on_upstream_conn(h, x), 0);
		compute(x, &m, &a);
		assert_int_equal(hops__hold(h, x, &m, &a), 1);
	}
	compute(&es, &m, &a);
	assert_int_equal(hops__hold(h, &es, &m, &a), 1);
	compute(&r, &m, &a);
	assert_int_equal(hops__join(h, &r, &m, &a, &c), 1);
	assert_int_equal(c.up_port, 8081);
	assert_int_equal(c.gw_port, 40001);	/* D's connection, not S's or Q's */
	assert_int_equal(c.exact, 0);
	assert_non_null(strstr(c.why, "rewritten"));
	assert_int_equal(hops__stats(h)->joined_rewritten, 1);
	assert_int_equal(hops__stats(h)->side_calls, 1);
	hops__expire(h, UINT64_MAX, count_out, NULL);
	assert_int_equal(n_expired, 1);		/* Q alone: S and Es went out with r */
	for (struct ttf_request *x = &r; x; x = x == &r ? &s : x == &s ? &es : x == &es ? &d :
						   x == &d ? &q : NULL)
		ttf_request__release(x);
	hops__free(h);
}

/* Without a prefill call the two stages are absent: 0, and not present. */
static void test_pd_stages_absent(void **state)
{
	struct ttf_hop_chain c = { 0 };

	(void)state;
	assert_false(ttf_hop_stage_present(&c, TTF_HS_PREFILL_CALL));
	assert_false(ttf_hop_stage_present(&c, TTF_HS_HANDOFF));
	assert_true(ttf_hop_stage_present(&c, TTF_HS_UPSTREAM));
	c.pd.seen = 1;
	assert_true(ttf_hop_stage_present(&c, TTF_HS_HANDOFF));
	assert_string_equal(ttf_hop_stage_name(TTF_HS_PREFILL_CALL), "prefill_call");
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_chain_sums_to_ttft),
		cmocka_unit_test(test_unix_join_by_inode),
		cmocka_unit_test(test_buffering_inferred_untraced),
		cmocka_unit_test(test_no_gateway),
		cmocka_unit_test(test_body_hash_decides),
		cmocka_unit_test(test_pd_chain),
		cmocka_unit_test(test_side_call_and_rewritten_body),
		cmocka_unit_test(test_pd_stages_absent),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
