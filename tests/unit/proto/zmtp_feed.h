/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * What the ZMTP unit tests share (test_zmtp.c, test_zmtp_mid.c): a
 * connection table that keeps the messages and the summary it reports,
 * and records fed to it from zmtp_captures.h chunks.
 */
#ifndef TTFTRACE_TEST_ZMTP_FEED_H
#define TTFTRACE_TEST_ZMTP_FEED_H

#define CK 0x2e70ull
#define N_CAP(a) (sizeof(a) / sizeof((a)[0]))
#define MAX_MSGS 64

static const char HEX[8][33] = {
	"5eed0000000000000000000000000000", "5eed0000000000000000000000000001",
	"5eed0000000000000000000000000002", "5eed0000000000000000000000000003",
	"5eed0000000000000000000000000004", "5eed0000000000000000000000000005",
	"5eed0000000000000000000000000006", "5eed0000000000000000000000000007",
};

struct out {
	int n, n_conns;
	struct ttf_zmtp_msg m[MAX_MSGS];
	struct ttf_zmtp_conn z;
};

static void on_msg(void *ctx, const struct ttf_zmtp_msg *m)
{
	struct out *o = ctx;

	assert_true(o->n < MAX_MSGS);
	o->m[o->n++] = *m;
}

static void on_conn(void *ctx, const struct ttf_zmtp_conn *z)
{
	struct out *o = ctx;

	o->n_conns++;
	o->z = *z;
}

static struct conn_table *mktable(struct out *o)
{
	struct conn_table_opts opts = { .sz = sizeof(opts), .ctx = o, .send_seq_exact = 1,
					.on_zmtp_msg = on_msg, .on_zmtp_conn = on_conn };
	struct conn_table *t;

	memset(o, 0, sizeof(*o));
	t = conn_table__new(&opts);
	assert_non_null(t);
	return t;
}

static uint64_t ts;
static uint32_t seq;	/* write_seq of the traced side's SENDs */

/* One record: cap bytes of p captured out of bytes (cap <= bytes); seq_end for SENDs. */
static void feed(struct conn_table *t, int type, const unsigned char *p, size_t cap, size_t bytes)
{
	struct ttf_net_event *e = calloc(1, sizeof(*e) + cap);

	assert_non_null(e);
	ts += 1000;
	e->ts_ns = ts;
	e->sock_cookie = CK;
	e->tgid = 100;
	e->tid = 101;
	e->type = type;
	e->bytes = bytes;
	e->cap_len = cap;
	e->family = 2;
	e->lport = 40000;
	e->rport = 5555;
	if (type == TTF_EV_SEND) {
		seq += bytes;
		e->seq_end = seq;
	}
	if (cap)
		memcpy(e->payload, p, cap);
	assert_int_equal(conn_table__on_event(t, e, sizeof(*e) + cap), 0);
	free(e);
}

static void close_(struct conn_table *t)
{
	feed(t, TTF_EV_CLOSE, NULL, 0, 1);
}

/* The record type of a capture chunk, traced on the connecting side (or the binding one). */
static int type_of(const struct zmtp_chunk *c, bool binder)
{
	return (c->dir == 0) != binder ? TTF_EV_SEND : TTF_EV_RECV;
}

/* Chunks c[from .. n) as whole records. */
static void feed_from(struct conn_table *t, const struct zmtp_chunk *c, size_t from, size_t n,
		      bool binder)
{
	for (size_t i = from; i < n; i++)
		feed(t, type_of(&c[i], binder), c[i].b, c[i].len, c[i].len);
}

#define feed_all(t, c, n, binder) feed_from(t, c, 0, n, binder)

static void assert_ids(const struct ttf_zmtp_msg *m, int n, ...)
{
	va_list ap;

	assert_int_equal(m->n_ids, n);
	va_start(ap, n);
	for (int i = 0; i < n; i++)
		assert_string_equal(m->ids[i], va_arg(ap, const char *));
	va_end(ap);
}

#endif /* TTFTRACE_TEST_ZMTP_FEED_H */
