// SPDX-License-Identifier: GPL-2.0-only
/*
 * zmtp.c through the connection tracker: bytes real pyzmq (libzmq 4.3.4)
 * wrote (zmtp_captures.h, from zmtp_capture.py) fed as records, whole, cut
 * at every byte, with gaps; and the msgpack id walk (zmtp_ids.c).
 */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <setjmp.h>
#include <string.h>
#include <cmocka.h>
#include "user/export/report/report_zmtp.h"
#include "user/proto/conn.h"
#include "user/proto/recognizer.h"
#include "zmtp_captures.h"
#include "zmtp_feed.h"

/* What the PUSH side of cap_push_pull must give, however it was cut. */
static void check_push_pull(const struct out *o, int dir)
{
	char a[64], b[64];

	snprintf(a, sizeof(a), "chatcmpl-%s", HEX[0]);
	snprintf(b, sizeof(b), "cmpl-%s-0", HEX[1]);
	assert_int_equal(o->n, 4);
	for (int i = 0; i < 4; i++) {
		assert_int_equal(o->m[i].dir, dir);
		assert_int_equal(o->m[i].seq, i);
		assert_int_equal(o->m[i].flags & ZMTP_MSG_PARTIAL, 0);
		assert_int_equal(o->m[i].sock_cookie, CK);
	}
	assert_ids(&o->m[0], 1, a);
	assert_int_equal(o->m[0].frames, 2);
	/* frame 1: 00 01 00; frame 2: 00 63 + 99 msgpack bytes */
	assert_int_equal(o->m[0].bytes, 3 + 2 + 99);
	assert_int_equal(o->m[0].body_bytes, 1 + 99);
	assert_ids(&o->m[1], 1, b);
	/* a long frame: 02 + 8-byte size 0x13e */
	assert_int_equal(o->m[1].bytes, 3 + 9 + 0x13e);
	assert_ids(&o->m[2], 4, HEX[2], HEX[3], "12345678-9abc-def0-1234-56789abcdef0", HEX[4]);
	assert_true(o->m[2].flags & ZMTP_MSG_IDS_MORE);
	assert_int_equal(o->m[2].bytes, 3 + 9 + 0x22c);
	assert_ids(&o->m[3], 0);
	assert_int_equal(o->m[3].frames, 3);
	assert_int_equal(o->m[3].bytes, 3 + 2 + 2 + 0x12);
}

static void check_push_pull_conn(const struct out *o, int dir)
{
	const struct zmtp_dir_stats *d = &o->z.dir[dir], *r = &o->z.dir[!dir];

	assert_int_equal(o->n_conns, 1);
	assert_int_equal(d->msgs, 4);
	assert_int_equal(r->msgs, 0);
	assert_int_equal(d->bytes, o->m[0].bytes + o->m[1].bytes + o->m[2].bytes + o->m[3].bytes);
	assert_string_equal(d->socket_type, "PUSH");
	assert_string_equal(r->socket_type, "PULL");
	assert_int_equal(d->identity_bytes + r->identity_bytes, 0);
	assert_string_equal(d->mechanism, "NULL");
	assert_int_equal(d->minor, 1);
	assert_int_equal(d->commands, 1);
	assert_int_equal(r->commands, 1);
	assert_int_equal(d->lost_sync + r->lost_sync, 0);
	assert_int_equal(d->cut + r->cut, 0);
	/* 1 + 1 + 6 (the output message's five and its "after") */
	assert_int_equal(o->z.ids_seen, 8);
	assert_int_equal(o->z.n_ids, 8);
	assert_int_equal(o->z.sock_cookie, CK);
	assert_int_equal(o->z.addr.lport, 40000);
}

static void test_push_pull_whole(void **state)
{
	struct out o;
	struct conn_table *t = mktable(&o);
	const struct conn_stats *cs = conn_table__stats(t);

	(void)state;
	feed_all(t, cap_push_pull, N_CAP(cap_push_pull), false);
	check_push_pull(&o, ZMTP_DIR_OUT);
	assert_int_equal(o.m[3].ts_ns, ts);	/* the record of its last byte */
	close_(t);
	check_push_pull_conn(&o, ZMTP_DIR_OUT);
	assert_int_equal(conn_table__count(t, "zmtp_messages_out"), 4);
	assert_int_equal(conn_table__count(t, "zmtp_messages_in"), 0);
	assert_int_equal(conn_table__count(t, "zmtp_request_ids"), 1 + 1 + 6);
	assert_int_equal(conn_table__count(t, "zmtp_connections"), 1);
	assert_int_equal(cs->requests, 0);
	assert_int_equal(cs->non_http, 0);
	conn_table__free(t);
}

/* The same bytes seen from the PULL side: everything IN. */
static void test_push_pull_binder(void **state)
{
	struct out o;
	struct conn_table *t = mktable(&o);

	(void)state;
	feed_all(t, cap_push_pull, N_CAP(cap_push_pull), true);
	close_(t);
	check_push_pull(&o, ZMTP_DIR_IN);
	check_push_pull_conn(&o, ZMTP_DIR_IN);
	conn_table__free(t);
}

/* One direction's bytes, concatenated. */
static size_t stream(const struct zmtp_chunk *c, size_t n, int dir, unsigned char *buf, size_t cap)
{
	size_t len = 0;

	for (size_t i = 0; i < n; i++) {
		if (c[i].dir != dir)
			continue;
		assert_true(len + c[i].len <= cap);
		memcpy(buf + len, c[i].b, c[i].len);
		len += c[i].len;
	}
	return len;
}

/*
 * The PUSH side's writes cut in two at every byte after the signature (the
 * 10 bytes libzmq writes first), the PULL side's bytes whole; then every
 * write one byte long. The same messages each time.
 */
static void test_push_pull_every_cut(void **state)
{
	unsigned char out[2048], in[256];
	size_t lo = stream(cap_push_pull, N_CAP(cap_push_pull), 0, out, sizeof(out));
	size_t li = stream(cap_push_pull, N_CAP(cap_push_pull), 1, in, sizeof(in));
	struct out o;

	(void)state;
	for (size_t k = 10; k <= lo; k++) {
		struct conn_table *t = mktable(&o);

		feed(t, TTF_EV_SEND, out, 10, 10);
		feed(t, TTF_EV_RECV, in, li, li);
		if (k > 10)
			feed(t, TTF_EV_SEND, out + 10, k - 10, k - 10);
		if (k < lo)
			feed(t, TTF_EV_SEND, out + k, lo - k, lo - k);
		close_(t);
		check_push_pull(&o, ZMTP_DIR_OUT);
		check_push_pull_conn(&o, ZMTP_DIR_OUT);
		conn_table__free(t);
	}
	{
		struct conn_table *t = mktable(&o);

		feed(t, TTF_EV_SEND, out, 10, 10);
		for (size_t i = 0; i < li; i++)
			feed(t, TTF_EV_RECV, in + i, 1, 1);
		for (size_t i = 10; i < lo; i++)
			feed(t, TTF_EV_SEND, out + i, 1, 1);
		close_(t);
		check_push_pull(&o, ZMTP_DIR_OUT);
		check_push_pull_conn(&o, ZMTP_DIR_OUT);
		conn_table__free(t);
	}
}

/*
 * The 568-byte write (the output message: a 3-byte frame, then a long one)
 * captured 0 .. 568 bytes. Its frame headers are its first 12 bytes: a gap
 * over one loses the framing for good (said, not guessed: message 3 is not
 * reported either); a gap inside the body is skipped.
 */
static void test_push_pull_every_capture_len(void **state)
{
	size_t big = 6;
	struct out o;

	(void)state;
	assert_int_equal(cap_push_pull[big].len, 568);
	for (size_t cap = 0; cap <= 568; cap++) {
		struct conn_table *t = mktable(&o);
		int n = cap < 12 ? 2 : 4;

		for (size_t i = 0; i < N_CAP(cap_push_pull); i++) {
			const struct zmtp_chunk *c = &cap_push_pull[i];

			if (i == big)
				feed(t, TTF_EV_SEND, c->b, cap, c->len);
			else
				feed(t, type_of(c, false), c->b, c->len, c->len);
		}
		close_(t);
		assert_int_equal(o.n, n);
		assert_int_equal(o.z.dir[ZMTP_DIR_OUT].msgs, n);
		assert_int_equal(o.z.dir[ZMTP_DIR_OUT].lost_sync, cap < 12);
		assert_int_equal(o.z.dir[ZMTP_DIR_IN].lost_sync, 0);
		if (n == 4) {
			assert_int_equal(o.m[2].bytes, 3 + 9 + 0x22c);
			assert_int_equal(!!(o.m[2].flags & ZMTP_MSG_PARTIAL), cap < 568);
			/* the first id's str ends 45 bytes into the body, after 12 header bytes */
			assert_int_equal(o.m[2].n_ids == 0, cap < 12 + 45);
			assert_int_equal(o.m[3].bytes, 3 + 2 + 2 + 0x12);
			assert_int_equal(o.m[3].flags & ZMTP_MSG_PARTIAL, 0);
		} else {
			/* at cap 2 the gap's first byte is frame 1's 1-byte body, parsed */
			assert_int_equal(o.z.dir[ZMTP_DIR_OUT].bytes_unparsed,
					 568 - cap - (cap == 2) + 25);
		}
		conn_table__free(t);
	}
}

/*
 * A gap inside a long frame: 100 of the 330 bytes of message 1's write
 * captured (its body is 318 bytes, 8-byte size). The message keeps its size
 * and the id in its captured prefix; the framing holds, the next messages
 * come whole.
 */
static void test_gap_inside_long_frame(void **state)
{
	char b[64];
	struct out o;
	struct conn_table *t = mktable(&o);
	const struct conn_stats *cs = conn_table__stats(t);

	(void)state;
	snprintf(b, sizeof(b), "cmpl-%s-0", HEX[1]);
	for (size_t i = 0; i < N_CAP(cap_push_pull); i++) {
		const struct zmtp_chunk *c = &cap_push_pull[i];

		feed(t, type_of(c, false), c->b, i == 5 ? 100 : c->len, c->len);
	}
	close_(t);
	assert_int_equal(o.n, 4);
	assert_true(o.m[1].flags & ZMTP_MSG_PARTIAL);
	assert_ids(&o.m[1], 1, b);
	assert_int_equal(o.m[1].bytes, 3 + 9 + 0x13e);
	assert_int_equal(o.m[2].flags & ZMTP_MSG_PARTIAL, 0);
	assert_ids(&o.m[2], 4, HEX[2], HEX[3], "12345678-9abc-def0-1234-56789abcdef0", HEX[4]);
	assert_int_equal(o.m[3].frames, 3);
	assert_int_equal(o.z.dir[ZMTP_DIR_OUT].partial, 1);
	assert_int_equal(o.z.dir[ZMTP_DIR_OUT].lost_sync, 0);
	assert_int_equal(conn_table__count(t, "zmtp_messages_partial"), 1);
	assert_int_equal(cs->lost_sync, 0);
	conn_table__free(t);
}

/*
 * A write no record carried (a TCP sequence jump) inside a frame body is
 * skipped by count; one over a frame's header loses the framing: counted,
 * and nothing after it is guessed.
 */
static void test_seq_gap(void **state)
{
	struct out o;
	struct conn_table *t;
	const struct zmtp_chunk *c = cap_push_pull;

	(void)state;
	/* the 330-byte write (message 1) split 100 + [130 lost] + 100: inside the body */
	t = mktable(&o);
	feed_all(t, c, 5, false);
	feed(t, TTF_EV_SEND, c[5].b, 100, 100);
	seq += 130;
	feed(t, TTF_EV_SEND, c[5].b + 230, 100, 100);
	feed_all(t, c + 6, 2, false);
	close_(t);
	assert_int_equal(o.n, 4);
	assert_true(o.m[1].flags & ZMTP_MSG_PARTIAL);
	assert_int_equal(o.m[1].bytes, 3 + 9 + 0x13e);
	assert_ids(&o.m[2], 4, HEX[2], HEX[3], "12345678-9abc-def0-1234-56789abcdef0", HEX[4]);
	assert_int_equal(o.z.dir[ZMTP_DIR_OUT].lost_sync, 0);
	conn_table__free(t);

	/* the whole 330-byte write lost: the gap ends on a frame header */
	t = mktable(&o);
	feed_all(t, c, 5, false);
	seq += 330;
	feed_all(t, c + 6, 2, false);
	close_(t);
	assert_int_equal(o.n, 1);	/* message 0 only */
	assert_int_equal(o.z.dir[ZMTP_DIR_OUT].lost_sync, 1);
	assert_int_equal(o.z.dir[ZMTP_DIR_OUT].bytes_unparsed, 330 + 568 + 25);
	assert_int_equal(o.z.dir[ZMTP_DIR_IN].lost_sync, 0);
	assert_int_equal(conn_table__count(t, "zmtp_lost_sync"), 1);
	assert_int_equal(conn_table__stats(t)->lost_sync, 1);
	conn_table__free(t);
}

/*
 * A frame body longer than the 4096 bytes walked for ids, all captured:
 * not partial (only bytes not captured make a message partial).
 */
static void test_body_past_walk(void **state)
{
	static unsigned char big[9 + 5000];
	struct out o;
	struct conn_table *t = mktable(&o);

	(void)state;
	feed_all(t, cap_push_pull, 5, false);
	big[0] = 0x02;				/* LONG, last frame */
	big[7] = 5000 >> 8;
	big[8] = 5000 & 0xff;
	big[9] = 0xc5;				/* bin 16: 4997 bytes */
	big[10] = 4997 >> 8;
	big[11] = 4997 & 0xff;
	feed(t, TTF_EV_SEND, big, sizeof(big), sizeof(big));
	close_(t);
	assert_int_equal(o.n, 2);
	assert_int_equal(o.m[1].bytes, 9 + 5000);
	assert_int_equal(o.m[1].flags & ZMTP_MSG_PARTIAL, 0);
	assert_int_equal(o.z.dir[ZMTP_DIR_OUT].partial, 0);
	conn_table__free(t);
}

/* DEALER (identity, heartbeats) <-> ROUTER, traced on the DEALER. */
static void test_dealer_router(void **state)
{
	struct out o;
	struct conn_table *t = mktable(&o);

	(void)state;
	feed_all(t, cap_dealer_router, N_CAP(cap_dealer_router), false);
	close_(t);
	assert_int_equal(o.n, 2);
	assert_int_equal(o.m[0].dir, ZMTP_DIR_OUT);
	assert_int_equal(o.m[1].dir, ZMTP_DIR_IN);
	assert_ids(&o.m[0], 1, HEX[7]);
	assert_ids(&o.m[1], 1, HEX[7]);
	assert_int_equal(o.m[1].frames, 1);
	assert_int_equal(o.m[1].bytes, 2 + 0x28);
	assert_string_equal(o.z.dir[ZMTP_DIR_OUT].socket_type, "DEALER");
	assert_string_equal(o.z.dir[ZMTP_DIR_IN].socket_type, "ROUTER");
	assert_int_equal(o.z.dir[ZMTP_DIR_OUT].identity_bytes, 8);	/* "engine-0" */
	assert_int_equal(o.z.dir[ZMTP_DIR_IN].identity_bytes, 0);
	assert_int_equal(o.z.dir[ZMTP_DIR_OUT].pings, 5);	/* PING */
	assert_int_equal(o.z.dir[ZMTP_DIR_IN].pings, 5);	/* PONG */
	assert_int_equal(o.z.dir[ZMTP_DIR_OUT].commands, 6);
	assert_int_equal(o.z.ids_seen, 1);
	conn_table__free(t);
}

/* Tracing stops inside a message: it is cut, not reported. */
static void test_cut_at_finish(void **state)
{
	struct out o;
	struct conn_table *t = mktable(&o);
	const struct zmtp_chunk *c = cap_push_pull;

	(void)state;
	feed_all(t, c, 5, false);
	feed(t, TTF_EV_SEND, c[5].b, 100, 100);
	conn_table__finish(t, ts + 1);
	assert_int_equal(o.n, 1);
	assert_int_equal(o.n_conns, 1);
	assert_int_equal(o.z.dir[ZMTP_DIR_OUT].cut, 1);
	assert_int_equal(o.z.dir[ZMTP_DIR_OUT].msgs, 1);
	conn_table__free(t);
}

static void test_detect(void **state)
{
	enum track_role role = TRACK_ROLE_CLIENT;

	(void)state;
	assert_int_equal(proto_zmtp.detect("GET / HTTP/1.1\r\n", 16, true, &role), PROTO_NO);
	assert_int_equal(proto_zmtp.detect("", 0, true, &role), PROTO_NO);
	assert_int_equal(proto_zmtp.detect("\xff\x00\x00", 3, true, &role), PROTO_MAYBE);
	assert_int_equal(proto_zmtp.detect("\xff\0\0\0\0\0\0\0\x01\x7e", 10, true, &role), PROTO_NO);
	/* ZMTP 2.0's revision byte */
	assert_int_equal(proto_zmtp.detect("\xff\0\0\0\0\0\0\0\x01\x7f\x01", 11, true, &role),
			 PROTO_NO);
	assert_int_equal(proto_zmtp.detect("\xff\0\0\0\0\0\0\0\x01\x7f", 10, false, &role),
			 PROTO_YES);
	assert_int_equal(role, TRACK_ROLE_SERVER);
	/* an HTTP connection is still HTTP: the table gives it to HTTP/1.1 */
	role = TRACK_ROLE_CLIENT;
	assert_int_equal(proto_recognizers[0]->detect("POST /v1", 8, true, &role), PROTO_NO);
}

static void test_id_like(void **state)
{
	(void)state;
	assert_true(zmtp_id_like(HEX[0], 32));
	assert_true(zmtp_id_like("chatcmpl-5eed0000000000000000000000000000", 41));
	assert_true(zmtp_id_like("cmpl-5eed0000000000000000000000000000-0", 39));
	assert_true(zmtp_id_like("12345678-9abc-def0-1234-56789abcdef0", 36));
	assert_true(zmtp_id_like("req-12345678-9abc-def0-1234-56789abcdef0", 40));
	assert_false(zmtp_id_like("5eed000000000000000000000000000", 31));	/* 31 hex */
	assert_false(zmtp_id_like("chatcmpl-5eed0000000000000000 000000000000", 42));
	assert_false(zmtp_id_like("the quick brown fox jumps over the lazy dog", 43));
	assert_false(zmtp_id_like("cmpl-abc", 8));
	assert_false(zmtp_id_like("12345678-9abc-def0-1234-56789abcdef", 35));
	/* 64 bytes: no room */
	assert_false(zmtp_id_like("x5eed000000000000000000000000000000000000000000000000000000000000",
				  64));
}

static void test_id_core(void **state)
{
	char core[ZMTP_ID_BYTES];

	(void)state;
	/* vLLM's ids: the SSE id, suffixed, a completion's, an n>1 child: one core */
	assert_int_equal(zmtp_id_core("chatcmpl-5eedABCD000000000000000000000000", core,
				      sizeof(core)), 32);
	assert_string_equal(core, "5eedabcd000000000000000000000000");
	assert_int_equal(zmtp_id_core("chatcmpl-5eedabcd000000000000000000000000-1a2b3c4d", core,
				      sizeof(core)), 32);
	assert_string_equal(core, "5eedabcd000000000000000000000000");
	assert_int_equal(zmtp_id_core("1_cmpl-5eedabcd000000000000000000000000-0-1a2b3c4d", core,
				      sizeof(core)), 32);
	assert_string_equal(core, "5eedabcd000000000000000000000000");
	/* a UUID wins over a hex run; a run longer than 32 is kept whole */
	assert_int_equal(zmtp_id_core("req-12345678-9ABC-def0-1234-56789abcdef0", core,
				      sizeof(core)), 36);
	assert_string_equal(core, "12345678-9abc-def0-1234-56789abcdef0");
	assert_int_equal(zmtp_id_core("x-0123456789abcdef0123456789abcdef01", core, sizeof(core)),
			 34);
	/* none, or no room */
	assert_int_equal(zmtp_id_core("cmpl-0123456789abcdef0123456789abcde", core, sizeof(core)),
			 0);
	assert_int_equal(zmtp_id_core("0123456789abcdef0123456789abcdef", core, 32), 0);
}

struct strs {
	int n;
	char s[8][64];
};

static void grab(void *ctx, const char *s, size_t n)
{
	struct strs *g = ctx;

	if (g->n < 8 && n < 64) {
		memcpy(g->s[g->n], s, n);
		g->s[g->n++][n] = 0;
	}
}

static void test_msgpack_strs(void **state)
{
	/* {"a": [1, -1, 3.0, bin8 "xy", ext "z", "bc"], "d": str8 "ef"} then a str cut */
	static const unsigned char mp[] = {
		0x82, 0xa1, 'a', 0x96, 0x01, 0xff, 0xcb, 0, 0, 0, 0, 0, 0, 0x08, 0x40,
		0xc4, 0x02, 'x', 'y', 0xd4, 0x01, 'z', 0xa2, 'b', 'c',
		0xa1, 'd', 0xd9, 0x02, 'e', 'f', 0xa5, 'g', 'h',
	};
	struct strs g = { 0 };

	(void)state;
	zmtp_msgpack_strs(mp, sizeof(mp), grab, &g);
	assert_int_equal(g.n, 4);
	assert_string_equal(g.s[0], "a");
	assert_string_equal(g.s[1], "bc");
	assert_string_equal(g.s[2], "d");
	assert_string_equal(g.s[3], "ef");
	/* a length past the end, 0xc1: stop */
	g.n = 0;
	zmtp_msgpack_strs((const unsigned char *)"\xdb\xff\xff\xff\xff" "ab", 7, grab, &g);
	zmtp_msgpack_strs((const unsigned char *)"\xc1\xa1x", 3, grab, &g);
	zmtp_msgpack_strs((const unsigned char *)"\xdd\x00", 2, grab, &g);
	assert_int_equal(g.n, 0);
}

/* The summary line: ids, counts and sizes; no payload text. */
static void test_json_has_no_text(void **state)
{
	struct out o;
	struct conn_table *t = mktable(&o);
	cJSON *j;
	char *s;

	(void)state;
	feed_all(t, cap_push_pull, N_CAP(cap_push_pull), false);
	close_(t);
	j = report_zmtp__json(&o.z);
	assert_non_null(j);
	s = cJSON_PrintUnformatted(j);
	assert_non_null(s);
	assert_null(strstr(s, "secret"));
	assert_null(strstr(s, "not an id"));
	assert_non_null(strstr(s, "\"type\":\"zmtp\""));
	assert_non_null(strstr(s, "\"out\":{\"messages\":4,"));
	assert_non_null(strstr(s, "\"ids_seen\":8"));
	assert_non_null(strstr(s, "\"socket_type\":\"PUSH\""));
	assert_non_null(strstr(s, "\"local\":\"0.0.0.0:40000\""));
	cJSON_free(s);
	cJSON_Delete(j);
	conn_table__free(t);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_push_pull_whole),
		cmocka_unit_test(test_push_pull_binder),
		cmocka_unit_test(test_push_pull_every_cut),
		cmocka_unit_test(test_push_pull_every_capture_len),
		cmocka_unit_test(test_gap_inside_long_frame),
		cmocka_unit_test(test_seq_gap),
		cmocka_unit_test(test_body_past_walk),
		cmocka_unit_test(test_dealer_router),
		cmocka_unit_test(test_cut_at_finish),
		cmocka_unit_test(test_detect),
		cmocka_unit_test(test_id_like),
		cmocka_unit_test(test_id_core),
		cmocka_unit_test(test_msgpack_strs),
		cmocka_unit_test(test_json_has_no_text),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
