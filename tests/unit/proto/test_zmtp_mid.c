// SPDX-License-Identifier: GPL-2.0-only
/*
 * Connections seen from their middle (zmtp.c, msg_sync.c): ZMTP without
 * its greeting, from the bytes real pyzmq wrote (zmtp_captures.h) with the
 * greeting and READY left out, starting inside a frame, split and cut;
 * streams of 4-byte length-prefixed messages; and the traffic neither may
 * take: HTTP, SSE, NDJSON, gRPC over HTTP/2 and raw, TLS, random bytes.
 */
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <setjmp.h>
#include <string.h>
#include <cmocka.h>
#include "user/export/report/report_zmtp.h"
#include "user/proto/conn.h"
#include "user/proto/zmtp/msg_sync.h"
#include "user/proto/recognizer.h"
#include "zmtp_captures.h"
#include "zmtp_feed.h"

/* The chunks of cap_push_pull after the greeting and both READYs: three messages. */
#define PP_FIRST_MSG 5

/* The PULL side attached after the handshake: the three messages, IN, mid-stream. */
static void test_push_pull_mid(void **state)
{
	struct out o;
	struct conn_table *t = mktable(&o);
	char b[64];

	(void)state;
	feed_from(t, cap_push_pull, PP_FIRST_MSG, N_CAP(cap_push_pull), true);
	assert_int_equal(o.n, 3);
	snprintf(b, sizeof(b), "cmpl-%s-0", HEX[1]);
	assert_ids(&o.m[0], 1, b);
	assert_int_equal(o.m[0].bytes, 3 + 9 + 0x13e);
	assert_ids(&o.m[1], 4, HEX[2], HEX[3], "12345678-9abc-def0-1234-56789abcdef0", HEX[4]);
	assert_int_equal(o.m[1].n_more_ids, 2);	/* the fifth and "after" */
	assert_ids(&o.m[2], 0);
	assert_int_equal(o.m[2].frames, 3);
	for (int i = 0; i < 3; i++) {
		assert_int_equal(o.m[i].dir, ZMTP_DIR_IN);
		assert_int_equal(o.m[i].seq, i);
		assert_int_equal(o.m[i].flags & ZMTP_MSG_PARTIAL, 0);
	}
	close_(t);
	assert_int_equal(o.n_conns, 1);
	assert_int_equal(o.z.mid_stream, 1);
	assert_int_equal(o.z.framing, MSG_FRAMING_ZMTP);
	assert_int_equal(o.z.dir[ZMTP_DIR_IN].msgs, 3);
	assert_string_equal(o.z.dir[ZMTP_DIR_IN].socket_type, "");
	assert_int_equal(o.z.dir[ZMTP_DIR_IN].minor, 0xff);
	assert_int_equal(o.z.dir[ZMTP_DIR_IN].lost_sync, 0);
	assert_int_equal(o.z.dir[ZMTP_DIR_IN].cut, 0);
	assert_int_equal(o.z.ids_seen, 1 + 6);
	assert_int_equal(conn_table__count(t, "zmtp_mid_stream_connections"), 1);
	assert_int_equal(conn_table__count(t, "zmtp_connections"), 1);
	assert_int_equal(conn_table__count(t, "len32_connections"), 0);
	conn_table__free(t);
}

/* The first record seen starts inside a frame body: it waits for the next one. */
static void test_starts_inside_frame(void **state)
{
	const struct zmtp_chunk *c = &cap_push_pull[PP_FIRST_MSG];
	struct out o;
	struct conn_table *t = mktable(&o);
	enum track_role role;

	(void)state;
	/* 100 bytes in: inside the array of 200 token ids */
	assert_int_equal(proto_zmtp_mid.detect((const char *)c->b + 100, c->len - 100, true, &role),
			 PROTO_MAYBE);
	feed(t, TTF_EV_RECV, c->b + 100, c->len - 100, c->len - 100);
	assert_int_equal(o.n, 0);
	feed_from(t, cap_push_pull, PP_FIRST_MSG + 1, N_CAP(cap_push_pull), true);
	assert_int_equal(o.n, 2);
	assert_int_equal(o.m[0].n_ids, 4);
	assert_string_equal(o.m[0].ids[0], HEX[2]);
	assert_int_equal(o.m[0].seq, 0);
	assert_int_equal(o.m[1].frames, 3);
	close_(t);
	assert_int_equal(o.z.mid_stream, 1);
	assert_int_equal(conn_table__stats(t)->non_http, 0);
	conn_table__free(t);
}

/* One message in two writes, the first one recognized; then one cut by the capture. */
static void test_split_and_cut(void **state)
{
	const struct zmtp_chunk *c = &cap_push_pull[PP_FIRST_MSG + 1];
	const struct zmtp_chunk *last = &cap_push_pull[PP_FIRST_MSG + 2];
	struct out o;
	struct conn_table *t = mktable(&o);

	(void)state;
	feed(t, TTF_EV_SEND, c->b, 300, 300);
	assert_int_equal(o.n, 0);
	feed(t, TTF_EV_SEND, c->b + 300, c->len - 300, c->len - 300);
	assert_int_equal(o.n, 1);
	assert_int_equal(o.m[0].dir, ZMTP_DIR_OUT);
	assert_int_equal(o.m[0].bytes, 3 + 9 + 0x22c);
	assert_int_equal(o.m[0].n_ids, 4);
	assert_int_equal(o.m[0].flags & ZMTP_MSG_PARTIAL, 0);
	/* the same message again, 200 of its 568 bytes captured: partial, framing kept */
	feed(t, TTF_EV_SEND, c->b, 200, c->len);
	feed(t, TTF_EV_SEND, last->b, last->len, last->len);
	assert_int_equal(o.n, 3);
	assert_true(o.m[1].flags & ZMTP_MSG_PARTIAL);
	assert_int_equal(o.m[1].bytes, 3 + 9 + 0x22c);
	assert_int_equal(o.m[2].frames, 3);
	assert_int_equal(o.m[2].flags & ZMTP_MSG_PARTIAL, 0);
	close_(t);
	assert_int_equal(o.z.dir[ZMTP_DIR_OUT].lost_sync, 0);
	assert_int_equal(o.z.dir[ZMTP_DIR_OUT].partial, 1);
	conn_table__free(t);
}

/*
 * ROUTER's side of cap_dealer_router, attached after the handshake: its
 * reply says yes; the other direction hunts, skips a record that starts
 * inside READY's body, and syncs on the heartbeats.
 */
static void test_other_direction_hunts(void **state)
{
	const struct zmtp_chunk *ready = &cap_dealer_router[4];
	struct out o;
	struct conn_table *t = mktable(&o);

	(void)state;
	assert_int_equal(cap_dealer_router[5].dir, 1);
	feed(t, TTF_EV_SEND, cap_dealer_router[5].b, cap_dealer_router[5].len,
	     cap_dealer_router[5].len);
	assert_int_equal(o.n, 1);
	assert_ids(&o.m[0], 1, HEX[7]);
	feed(t, TTF_EV_RECV, ready->b + 10, ready->len - 10, ready->len - 10);
	feed_from(t, cap_dealer_router, 6, N_CAP(cap_dealer_router), true);
	close_(t);
	assert_int_equal(o.n, 1);
	assert_int_equal(o.z.dir[ZMTP_DIR_IN].bytes_unparsed, ready->len - 10);
	assert_int_equal(o.z.dir[ZMTP_DIR_IN].pings, 5);
	assert_int_equal(o.z.dir[ZMTP_DIR_OUT].pings, 5);
	assert_int_equal(o.z.dir[ZMTP_DIR_IN].lost_sync, 0);
	conn_table__free(t);
}

/* ---- length-prefixed messages ---- */

#define REQ_JSON(h) "{\"op\":\"add\",\"request_id\":\"cmpl-" h "\",\"prompt\":[1,2,3],\"max\":8}"
#define OUT_JSON(h) "{\"outputs\":[[\"cmpl-" h "\",[100001],null]],\"t\":1.5}"

/* Append body with its 4-byte length (big- or little-endian) at b + *n. */
static void put_msg(unsigned char *b, size_t *n, const char *body, bool be)
{
	uint32_t l = strlen(body);

	for (int k = 0; k < 4; k++)
		b[*n + k] = (unsigned char)(l >> (8 * (be ? 3 - k : k)));
	memcpy(b + *n + 4, body, l);
	*n += 4 + l;
}

static void len32_stream(bool be)
{
	unsigned char b[1024];
	size_t n = 0, n1;
	struct out o;
	struct conn_table *t = mktable(&o);
	char id0[64], id1[64];

	snprintf(id0, sizeof(id0), "cmpl-%s", HEX[0]);
	snprintf(id1, sizeof(id1), "cmpl-%s", HEX[1]);
	/* a record that starts inside a message: not yet */
	put_msg(b, &n, REQ_JSON("5eed0000000000000000000000000000"), be);
	feed(t, TTF_EV_SEND, b + 20, n - 20, n - 20);
	assert_int_equal(o.n, 0);
	/* two requests in one write */
	n = 0;
	put_msg(b, &n, REQ_JSON("5eed0000000000000000000000000000"), be);
	put_msg(b, &n, REQ_JSON("5eed0000000000000000000000000001"), be);
	feed(t, TTF_EV_SEND, b, n, n);
	assert_int_equal(o.n, 2);
	assert_ids(&o.m[0], 1, id0);
	assert_ids(&o.m[1], 1, id1);
	assert_int_equal(o.m[0].bytes, n / 2);
	assert_int_equal(o.m[0].body_bytes, n / 2 - 4);
	assert_int_equal(o.m[0].frames, 1);
	/* an output read in two records, split inside its length */
	n = 0;
	put_msg(b, &n, OUT_JSON("5eed0000000000000000000000000001"), be);
	n1 = n;
	put_msg(b, &n, OUT_JSON("5eed0000000000000000000000000000"), be);
	feed(t, TTF_EV_RECV, b, n1 + 2, n1 + 2);
	assert_int_equal(o.n, 3);
	feed(t, TTF_EV_RECV, b + n1 + 2, n - n1 - 2, n - n1 - 2);
	assert_int_equal(o.n, 4);
	assert_int_equal(o.m[2].dir, ZMTP_DIR_IN);
	assert_ids(&o.m[2], 1, id1);
	assert_ids(&o.m[3], 1, id0);
	assert_int_equal(o.m[3].seq, 1);
	close_(t);
	assert_int_equal(o.z.framing, be ? MSG_FRAMING_LEN32BE : MSG_FRAMING_LEN32LE);
	assert_int_equal(o.z.mid_stream, 0);
	assert_int_equal(o.z.dir[ZMTP_DIR_OUT].msgs, 2);
	assert_int_equal(o.z.dir[ZMTP_DIR_IN].msgs, 2);
	assert_int_equal(o.z.ids_seen, 2);
	assert_int_equal(conn_table__count(t, "len32_connections"), 1);
	assert_int_equal(conn_table__count(t, "zmtp_mid_stream_connections"), 0);
	conn_table__free(t);
}

static void test_len32be(void **state)
{
	(void)state;
	len32_stream(true);
}

static void test_len32le(void **state)
{
	(void)state;
	len32_stream(false);
}

/* A gap over a length loses the framing; the next record that starts at a message syncs again. */
static void test_len32_resync(void **state)
{
	unsigned char b[512];
	size_t n = 0;
	struct out o;
	struct conn_table *t = mktable(&o);

	(void)state;
	put_msg(b, &n, REQ_JSON("5eed0000000000000000000000000000"), true);
	feed(t, TTF_EV_SEND, b, n, n);
	seq += 7;	/* 7 bytes written that no record carried: inside the next header */
	feed(t, TTF_EV_SEND, b + 7, n - 7, n - 7);
	feed(t, TTF_EV_SEND, b, n, n);
	close_(t);
	assert_int_equal(o.n, 2);
	assert_int_equal(o.z.dir[ZMTP_DIR_OUT].lost_sync, 1);
	assert_int_equal(o.z.dir[ZMTP_DIR_OUT].bytes_unparsed, 7 + n - 7);
	assert_int_equal(conn_table__count(t, "zmtp_lost_sync"), 1);
	conn_table__free(t);
}

/* A reader that takes the length, then the body: its direction syncs on a record of 4 bytes. */
static void test_len32_header_reads(void **state)
{
	unsigned char b[512];
	size_t n = 0;
	struct out o;
	struct conn_table *t = mktable(&o);
	enum track_role role;

	(void)state;
	put_msg(b, &n, OUT_JSON("5eed0000000000000000000000000002"), false);
	/* alone, neither record says which protocol this is */
	assert_int_equal(proto_len32le.detect((const char *)b, 4, true, &role), PROTO_MAYBE);
	assert_int_equal(proto_len32le.detect((const char *)b + 4, n - 4, true, &role), PROTO_MAYBE);
	feed(t, TTF_EV_SEND, b, n, n);		/* its own write: yes */
	for (int k = 0; k < 2; k++) {
		feed(t, TTF_EV_RECV, b, 4, 4);
		feed(t, TTF_EV_RECV, b + 4, n - 4, n - 4);
	}
	close_(t);
	assert_int_equal(o.n, 3);
	assert_int_equal(o.z.dir[ZMTP_DIR_IN].msgs, 2);
	assert_int_equal(o.z.dir[ZMTP_DIR_IN].bytes_unparsed, 0);
	assert_string_equal(o.m[2].ids[0], "cmpl-5eed0000000000000000000000000002");
	conn_table__free(t);
}

/* ---- what neither may take ---- */

#define ID "chatcmpl-5eed0000000000000000000000000000"

struct neg {
	const char *what;
	const unsigned char *b;
	size_t len;
};

static bool is_mid(const struct proto_recognizer *r)
{
	return r == &proto_zmtp_mid || r == &proto_len32be || r == &proto_len32le;
}

/* No mid-stream recognizer in the table says yes to it; nor does the tracker take it as messages. */
static void assert_not_taken(const struct neg *ng)
{
	struct out o;
	struct conn_table *t = mktable(&o);
	unsigned int n_mid = 0;

	for (unsigned int i = 0; i < proto_n_recognizers; i++) {
		enum track_role role;

		if (!is_mid(proto_recognizers[i]))
			continue;
		n_mid++;
		for (int rd = 0; rd < 2; rd++)
			if (proto_recognizers[i]->detect((const char *)ng->b, ng->len, rd, &role) ==
			    PROTO_YES)
				fail_msg("%s took %s", proto_recognizers[i]->name, ng->what);
	}
	assert_int_equal(n_mid, 3);
	for (int k = 0; k < 4; k++)
		feed(t, k & 1 ? TTF_EV_SEND : TTF_EV_RECV, ng->b, ng->len, ng->len);
	close_(t);
	assert_int_equal(conn_table__count(t, "zmtp_mid_stream_connections") +
			 conn_table__count(t, "len32_connections"), 0);
	conn_table__free(t);
}

#define NEG(w, s) { w, (const unsigned char *)(s), sizeof(s) - 1 }

static void test_negatives(void **state)
{
	static const struct neg negs[] = {
		NEG("HTTP request", "POST /v1/completions HTTP/1.1\r\nHost: x\r\nContent-Length: 2\r\n\r\n{}"),
		NEG("SSE event", "data: {\"id\":\"" ID "\",\"choices\":[{\"text\":\"a\"}]}\n\n"),
		NEG("chunked SSE", "4b\r\ndata: {\"id\":\"" ID "\",\"choices\":[]}\n\n\r\n"),
		NEG("NDJSON", "{\"id\":\"" ID "\",\"response\":\"a\"}\n{\"id\":\"" ID "\"}\n"),
		/* TLS application data, a record of 0x2b bytes that happen to read as an id */
		NEG("TLS record", "\x17\x03\x03\x00\x2b" ID "\x01\x02"),
		/* HTTP/2 DATA, stream 1: a gRPC message, protobuf field 1 = the id */
		NEG("gRPC over HTTP/2", "\x00\x00\x30\x00\x01\x00\x00\x00\x01" "\x00\x00\x00\x00\x2b"
			"\x0a\x29" ID),
		/* HTTP/2 DATA carrying SSE */
		NEG("SSE over HTTP/2", "\x00\x00\x37\x00\x00\x00\x00\x00\x03" "data: {\"id\":\"" ID
			"\"}\n\n"),
		/* gRPC's 5-byte prefix on a raw stream */
		NEG("gRPC framing", "\x00\x00\x00\x00\x2b\x0a\x29" ID),
		/* near misses: a length one past the record, a ZMTP body that is no msgpack value */
		NEG("len32 one past", "\x00\x00\x00\x2e" "[\"" ID "\"]"),
		NEG("zmtp body not msgpack", "\x00\x2d\x91\xd9\x29" ID "\xc1"),
		NEG("zmtp body no container", "\x00\x2b\xd9\x29" ID),
	};

	(void)state;
	for (size_t i = 0; i < N_CAP(negs); i++)
		assert_not_taken(&negs[i]);
}

/* The near misses' correct forms are taken: the negatives above fail for their reason. */
static void test_near_misses_fixed(void **state)
{
	static const unsigned char len32[] = "\x00\x00\x00\x2d" "[\"" ID "\"]";
	static const unsigned char zm[] = "\x00\x2d\x92\xd9\x29" ID "\xc0";
	enum track_role role;

	(void)state;
	assert_int_equal(proto_len32be.detect((const char *)len32, sizeof(len32) - 1, true, &role),
			 PROTO_YES);
	assert_int_equal(proto_len32le.detect((const char *)len32, sizeof(len32) - 1, true, &role),
			 PROTO_MAYBE);
	assert_int_equal(proto_zmtp_mid.detect((const char *)zm, sizeof(zm) - 1, true, &role),
			 PROTO_YES);
	assert_int_equal(role, TRACK_ROLE_SERVER);
}

/*
 * No id at all (a data-parallel coordinator's counts, an engine's stats, a
 * pickled notice): taken when every frame is whole and each message body is
 * exactly one msgpack map or array or one pickle; not when the framing or a
 * body does not agree with itself.
 */
static void test_idless_whole_values(void **state)
{
	static const struct neg yes[] = {
		/* [[[0,1],[2,0]],0,true]: what vLLM's coordinator publishes */
		NEG("coordinator counts", "\x00\x0a\x93\x92\x92\x00\x01\x92\x02\x00\x00\xc3"),
		/* [1,[],{"num_running_reqs":0}] */
		NEG("engine stats", "\x00\x16\x93\x01\x90\x81\xb0num_running_reqs\x00"),
		/* a MORE frame then the body: [b"\x03"] + [{"a":1}] */
		NEG("two frames", "\x01\x01\x03\x00\x04\x81\xa1\x61\x01"),
		/* pickle protocol 4 of the int 1: PROTO 4, BININT1 1, STOP */
		NEG("pickle", "\x00\x05\x80\x04\x4b\x01\x2e"),
	};
	static const struct neg no[] = {
		NEG("one byte more than the frame", "\x00\x04\x81\xa1\x61\x01\x00"),
		NEG("a str body", "\x00\x04\xa3\x61\x62\x63"),
		NEG("an int body", "\x00\x01\x05"),
		NEG("a value that ends early", "\x00\x05\x91\x01\x01\x01\x01"),
		NEG("a pickle without STOP", "\x00\x05\x80\x04\x4b\x01\x00"),
		NEG("a command only", "\x04\x06\x05READY"),
	};
	enum track_role role;

	(void)state;
	for (size_t i = 0; i < N_CAP(yes); i++)
		assert_int_equal(proto_zmtp_mid.detect((const char *)yes[i].b, yes[i].len, true, &role),
				 PROTO_YES);
	for (size_t i = 0; i < N_CAP(no); i++)
		assert_not_taken(&no[i]);
	/* len32 keeps asking for an id: an id-less whole msgpack value is not taken */
	assert_int_equal(proto_len32be.detect("\x00\x00\x00\x02\x91\x01", 6, true, &role),
			 PROTO_MAYBE);
}

/* Random bytes with ids dropped in: taken by none, in 2000 records. */
static void test_random_with_ids(void **state)
{
	static const char id[] = ID;
	unsigned char b[600];
	uint32_t x = 12345;

	(void)state;
	for (int r = 0; r < 2000; r++) {
		size_t len = 60 + r % 500;
		struct neg ng = { "random", b, len };

		for (size_t i = 0; i < len; i++) {
			x = x * 1103515245u + 12345u;
			b[i] = (unsigned char)(x >> 16);
		}
		if (r & 1)
			b[0] = 0;	/* a plausible first byte of either framing */
		memcpy(b + 8 + r % 40, id, sizeof(id) - 1);
		b[7 + r % 40] = 0xa0 + sizeof(id) - 1;	/* as a msgpack fixstr */
		assert_not_taken(&ng);
	}
}

static void grab_id(void *ctx, const char *s, size_t n)
{
	struct strs_ { int n; char s[4][64]; } *g = ctx;

	if (g->n < 4 && n < 64) {
		memcpy(g->s[g->n], s, n);
		g->s[g->n++][n] = 0;
	}
}

static void test_ids_scan(void **state)
{
	static const char json[] = "{\"a\":\"" ID "\",\"b\":\"cmpl-abc\",\"c\":[\"" ID "-1\"]}";
	static const char cut[] = "xx \"" ID;
	struct { int n; char s[4][64]; } g = { 0 };

	(void)state;
	zmtp_ids_scan((const unsigned char *)json, sizeof(json) - 1, grab_id, &g);
	assert_int_equal(g.n, 2);
	assert_string_equal(g.s[0], ID);
	assert_string_equal(g.s[1], ID "-1");
	g.n = 0;
	zmtp_ids_scan((const unsigned char *)cut, sizeof(cut) - 1, grab_id, &g);
	assert_int_equal(g.n, 0);	/* the run goes on past the capture */
}

static void test_msgpack_value(void **state)
{
	/* [1, "ab", {1: true}] */
	static const unsigned char mp[] = { 0x93, 0x01, 0xa2, 'a', 'b', 0x81, 0x01, 0xc3 };
	/* array16 of 1000: more elements than 8 bytes can hold */
	static const unsigned char big[] = { 0xdc, 0x03, 0xe8, 1, 2, 3, 4, 5 };

	(void)state;
	assert_int_equal(zmtp_msgpack_value(mp, sizeof(mp), sizeof(mp)), sizeof(mp));
	assert_int_equal(zmtp_msgpack_value(mp, 4, sizeof(mp)), 0);
	assert_int_equal(zmtp_msgpack_value(mp, 4, 4), -1);
	assert_int_equal(zmtp_msgpack_value(big, sizeof(big), sizeof(big)), -1);
	assert_int_equal(zmtp_msgpack_value(big, sizeof(big), 1003), 0);
	assert_int_equal(zmtp_msgpack_value((const unsigned char *)"\xc1", 1, 1), -1);
}

static void test_report(void **state)
{
	struct ttf_zmtp_conn z = { .framing = MSG_FRAMING_LEN32LE, .mid_stream = 0 };
	cJSON *o;

	(void)state;
	z.dir[0].minor = z.dir[1].minor = 0xff;
	o = report_zmtp__json(&z);
	assert_non_null(o);
	assert_string_equal(cJSON_GetObjectItem(o, "framing")->valuestring, "len32le");
	assert_true(cJSON_IsFalse(cJSON_GetObjectItem(o, "mid_stream")));
	cJSON_Delete(o);
	z.framing = MSG_FRAMING_ZMTP;
	z.mid_stream = 1;
	o = report_zmtp__json(&z);
	assert_string_equal(cJSON_GetObjectItem(o, "framing")->valuestring, "zmtp");
	assert_true(cJSON_IsTrue(cJSON_GetObjectItem(o, "mid_stream")));
	cJSON_Delete(o);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_push_pull_mid),
		cmocka_unit_test(test_starts_inside_frame),
		cmocka_unit_test(test_split_and_cut),
		cmocka_unit_test(test_other_direction_hunts),
		cmocka_unit_test(test_len32be),
		cmocka_unit_test(test_len32le),
		cmocka_unit_test(test_len32_resync),
		cmocka_unit_test(test_len32_header_reads),
		cmocka_unit_test(test_negatives),
		cmocka_unit_test(test_near_misses_fixed),
		cmocka_unit_test(test_idless_whole_values),
		cmocka_unit_test(test_random_with_ids),
		cmocka_unit_test(test_ids_scan),
		cmocka_unit_test(test_msgpack_value),
		cmocka_unit_test(test_report),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
