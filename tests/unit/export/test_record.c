// SPDX-License-Identifier: GPL-2.0-only
/* Recordings (user/export/record/record.h): varints, delta coding, writer and reader, cut and corrupt files. */
#include <errno.h>
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/stat.h>
#include <zlib.h>
#include <cmocka.h>
#include "user/export/record/record.h"
#include "user/cmd/replay.h"

static void test_varint(void **state)
{
	uint8_t b[16];
	uint64_t v;

	(void)state;
	assert_int_equal(rec_varint__put(b, 0), 1);
	assert_int_equal(b[0], 0);
	assert_int_equal(rec_varint__put(b, 127), 1);
	assert_int_equal(rec_varint__put(b, 300), 2);
	/* 300 = 0b10_0101100: low 7 bits with the continuation bit, then 2 */
	assert_int_equal(b[0], 0xac);
	assert_int_equal(b[1], 0x02);
	assert_int_equal(rec_varint__get(b, 2, &v), 2);
	assert_int_equal(v, 300);
	assert_int_equal(rec_varint__get(b, 1, &v), 0);	/* cut */
	assert_int_equal(rec_varint__put(b, UINT64_MAX), 10);
	assert_int_equal(rec_varint__get(b, 10, &v), 10);
	assert_true(v == UINT64_MAX);
}

/*
 * Against an all-zero previous record: fields ts (bit 0), tid (1), tgid (2)
 * and cpu (4) differ: mask 0x17, ts delta 1000 as zigzag 2000 = 0xd0 0x0f,
 * tid and tgid 4 bytes each, cpu 2: 13 bytes. The next record differs only
 * in ts (-5: zigzag 9): 2 bytes.
 */
static void test_sched_codec(void **state)
{
	struct ttf_sched_event zero = { 0 }, a = { .ts_ns = 1000, .tid = 5, .tgid = 5, .cpu = 1,
						   .type = TTF_SCHED_IN };
	struct ttf_sched_event b = a, dec = { 0 };
	uint8_t out[64];

	(void)state;
	assert_int_equal(rec_codec__encode(&rec_sched_codec, &zero, &a, out), 13);
	assert_int_equal(out[0], 0x17);
	assert_int_equal(out[1], 0xd0);
	assert_int_equal(out[2], 0x0f);
	assert_int_equal(rec_codec__decode(&rec_sched_codec, &dec, out, 13), 13);
	dec.type = a.type;	/* the frame's selector byte carries it */
	assert_memory_equal(&dec, &a, sizeof(a));
	b.ts_ns = 995;
	assert_int_equal(rec_codec__encode(&rec_sched_codec, &a, &b, out), 2);
	assert_int_equal(out[0], 0x01);
	assert_int_equal(out[1], 9);
	assert_int_equal(rec_codec__decode(&rec_sched_codec, &dec, out, 2), 2);
	assert_int_equal(dec.ts_ns, 995);
	/* short input and unknown mask bits are refused */
	assert_int_equal(rec_codec__decode(&rec_sched_codec, &dec, out, 1), -EBADMSG);
	out[0] = 0x40;
	assert_int_equal(rec_codec__decode(&rec_sched_codec, &dec, out, 2), -EBADMSG);
}

struct netbuf {
	struct ttf_net_event e;
	char payload[64];
};

static void make_net(struct netbuf *nb, uint8_t type, uint64_t ts, const char *payload)
{
	memset(nb, 0, sizeof(*nb));
	nb->e.ts_ns = ts;
	nb->e.sock_cookie = 77;
	nb->e.tgid = 10;
	nb->e.tid = 11;
	nb->e.type = type;
	nb->e.lport = 8080;
	nb->e.rport = 50000;
	memcpy(nb->e.comm, "srv", 4);
	nb->e.cap_len = strlen(payload);
	nb->e.bytes = nb->e.cap_len;
	memcpy(nb->e.payload, payload, nb->e.cap_len);
}

/* A fresh string each call (leaked: a test binary). */
static char *tmp_path(const char *name)
{
	char *path = malloc(256);

	assert_non_null(path);
	snprintf(path, 256, "/tmp/ttf_test_record_%d_%s", (int)getpid(), name);
	return path;
}

/* Write one record of each kind; return the path. */
static char *write_sample(uint64_t *end_ns, int close_it)
{
	char *path = tmp_path("a.rec");
	struct record *rec = record__open(path, REC_F_XMIT | REC_F_SCHED);
	struct report_counter c[2] = { { "ringbuf_full", 3 }, { "lost_sync", 0 } };
	struct ttf_sched_event se = { .ts_ns = 150, .tid = 11, .tgid = 10,
				      .type = TTF_SCHED_WAKEUP };
	struct ttf_engine_event ev = { .ts_ns = 160, .tgid = 10, .tid = 12, .role = TTF_ROLE_STEP,
				       .type = TTF_ENG_ENTRY, .value = 32, .n_seq = 2,
				       .seq_ids = { 0, 3, [9] = 77 }, .seq_tokens = { 30, 2 },
				       .seq_pos0 = { 0, 41 }, .seq_out_mask = 2,
				       .batch_flags = TTF_ENG_B_MULTI_SEQ };
	struct ttf_gpu_name gname = { .name_id = 9, .len = 4 };
	uint8_t gn[sizeof(gname) + 4];
	uint64_t w = 140;
	struct netbuf nb;

	assert_non_null(rec);
	make_net(&nb, TTF_EV_RECV, 100, "GET / HTTP/1.1\r\n\r\n");
	assert_int_equal(record__net(rec, &nb.e, sizeof(nb.e) + nb.e.cap_len), 0);
	make_net(&nb, TTF_EV_RECV, 130, "GET /b HTTP/1.1\r\n\r\n");
	assert_int_equal(record__net(rec, &nb.e, sizeof(nb.e) + nb.e.cap_len), 0);
	assert_int_equal(record__frame(rec, REC_ADVANCE, &w, sizeof(w)), 0);
	assert_int_equal(record__sched(rec, &se), 0);
	assert_int_equal(record__engine(rec, &ev), 0);
	memcpy(gn, &gname, sizeof(gname));
	memcpy(gn + sizeof(gname), "gemm", 4);
	assert_int_equal(record__gpu(rec, 10, TTF_GPU_MSG_NAME, gn, sizeof(gn)), 0);
	*end_ns = 200;
	if (!close_it) {
		assert_int_equal(record__flush(rec), 0);
		return path;	/* left open, as a killed tracer leaves it (leaked) */
	}
	assert_int_equal(record__close(rec, c, 2, *end_ns), 0);
	return path;
}

static void test_roundtrip(void **state)
{
	uint64_t end_ns, v;
	char *path = write_sample(&end_ns, 1);
	struct rec_header h;
	struct rec_reader *rr;
	const struct ttf_net_event *ne;
	const struct ttf_sched_event *se;
	const struct ttf_engine_event *ev;
	const void *p;
	uint32_t type, len;
	struct stat sb;
	int err;

	(void)state;
	assert_int_equal(stat(path, &sb), 0);
	assert_int_equal(sb.st_mode & 0777, 0600);
	rr = rec_reader__open(path, &h, &err);
	assert_non_null(rr);
	assert_int_equal(h.version, REC_VERSION);
	assert_int_equal(h.flags, REC_F_XMIT | REC_F_SCHED);
	assert_int_equal(rec_reader__next(rr, &type, &p, &len), 1);
	assert_int_equal(type, REC_NET);
	ne = p;
	assert_int_equal(len, sizeof(*ne) + 18);
	assert_int_equal(ne->ts_ns, 100);
	assert_int_equal(ne->sock_cookie, 77);
	assert_int_equal(ne->rport, 50000);
	assert_string_equal(ne->comm, "srv");
	assert_memory_equal(ne->payload, "GET / HTTP/1.1\r\n\r\n", 18);
	assert_int_equal(rec_reader__next(rr, &type, &p, &len), 1);
	ne = p;
	assert_int_equal(ne->ts_ns, 130);
	assert_int_equal(ne->tid, 11);	/* unchanged field, from the previous record */
	assert_int_equal(len, sizeof(*ne) + 19);
	assert_memory_equal(ne->payload, "GET /b HTTP/1.1\r\n\r\n", 19);
	assert_int_equal(rec_reader__next(rr, &type, &p, &len), 1);
	assert_int_equal(type, REC_ADVANCE);
	memcpy(&v, p, 8);
	assert_int_equal(v, 140);
	assert_int_equal(rec_reader__next(rr, &type, &p, &len), 1);
	assert_int_equal(type, REC_SCHED);
	se = p;
	assert_int_equal(se->ts_ns, 150);
	assert_int_equal(se->type, TTF_SCHED_WAKEUP);
	assert_int_equal(rec_reader__next(rr, &type, &p, &len), 1);
	assert_int_equal(type, REC_ENGINE);
	assert_int_equal(len, sizeof(*ev));
	ev = p;
	assert_int_equal(ev->ts_ns, 160);
	assert_int_equal(ev->tid, 12);
	assert_int_equal(ev->role, TTF_ROLE_STEP);
	assert_int_equal(ev->type, TTF_ENG_ENTRY);
	assert_int_equal(ev->value, 32);
	assert_int_equal(ev->n_seq, 2);
	assert_int_equal(ev->seq_ids[1], 3);
	assert_int_equal(ev->seq_ids[9], 77);	/* version 2 fields */
	assert_int_equal(ev->seq_tokens[0], 30);
	assert_int_equal(ev->seq_tokens[1], 2);
	assert_int_equal(ev->seq_pos0[1], 41);
	assert_int_equal(ev->seq_out_mask, 2);
	assert_int_equal(ev->batch_flags, TTF_ENG_B_MULTI_SEQ);
	/* a GPU item comes back as recorded: pid, kind, body */
	assert_int_equal(rec_reader__next(rr, &type, &p, &len), 1);
	assert_int_equal(type, REC_GPU);
	assert_int_equal(len, 8 + 20);
	assert_int_equal(((const uint32_t *)p)[0], 10);
	assert_int_equal(((const uint32_t *)p)[1], TTF_GPU_MSG_NAME);
	assert_memory_equal((const uint8_t *)p + 8 + 16, "gemm", 4);
	assert_int_equal(rec_reader__next(rr, &type, &p, &len), 1);
	assert_int_equal(type, REC_COUNTERS);
	/* u32 n, then {u64 value, u8 len, name}: 4 + (9 + 12) + (9 + 9) */
	assert_int_equal(len, 43);
	assert_int_equal(rec_reader__next(rr, &type, &p, &len), 0);
	assert_int_equal(type, REC_END);
	memcpy(&v, p, 8);
	assert_int_equal(v, end_ns);
	rec_reader__close(rr);
	unlink(path);
}

static void copy_file(const char *from, const char *to)
{
	char buf[4096];
	FILE *a = fopen(from, "rb"), *b = fopen(to, "wb");
	size_t n;

	assert_non_null(a);
	assert_non_null(b);
	while ((n = fread(buf, 1, sizeof(buf), a)) > 0)
		fwrite(buf, 1, n, b);
	fclose(a);
	fclose(b);
}

/* A tracer killed after a flush: the file reads up to the flush, then -EPIPE (no END). */
static void test_cut(void **state)
{
	uint64_t end_ns;
	char *path = write_sample(&end_ns, 0), *cut = tmp_path("cut.rec");
	struct rec_header h;
	struct rec_reader *rr;
	const void *p;
	uint32_t type, len;
	int err, n = 0;

	(void)state;
	copy_file(path, cut);
	rr = rec_reader__open(cut, &h, &err);
	assert_non_null(rr);
	while ((err = rec_reader__next(rr, &type, &p, &len)) > 0)
		n++;
	assert_int_equal(n, 6);
	assert_int_equal(err, -EPIPE);
	rec_reader__close(rr);
	unlink(cut);
	unlink(path);
}

static void write_gz(const char *path, const void *buf, size_t len)
{
	gzFile gz = gzopen(path, "wb");

	assert_non_null(gz);
	assert_int_equal(gzwrite(gz, buf, len), (int)len);
	assert_int_equal(gzclose(gz), Z_OK);
}

static void test_corrupt(void **state)
{
	char *path = tmp_path("bad.rec");
	const struct rec_header good = { .magic = REC_MAGIC, .version = REC_VERSION,
					 .header_bytes = REC_HEADER_BYTES, .bom = REC_BOM };
	struct rec_header h;
	uint8_t buf[64];
	struct rec_reader *rr;
	const void *p;
	uint32_t type, len;
	int err;

	(void)state;
	write_gz(path, "hello, not a recording at all, not at all", 40);
	assert_null(rec_reader__open(path, &h, &err));
	assert_int_equal(err, -EBADMSG);
	/* a good header, then a frame of unknown type 99 */
	memcpy(buf, &good, sizeof(good));
	buf[40] = 99;
	buf[41] = 0;
	write_gz(path, buf, 42);
	rr = rec_reader__open(path, &h, &err);
	assert_non_null(rr);
	assert_int_equal(rec_reader__next(rr, &type, &p, &len), -EBADMSG);
	rec_reader__close(rr);
	/* a version newer than this reader's is refused */
	h = good;
	h.version = REC_VERSION + 1;
	write_gz(path, &h, sizeof(h));
	assert_null(rec_reader__open(path, &h, &err));
	assert_int_equal(err, -EBADMSG);
	assert_null(rec_reader__open("/nonexistent/x.rec", &h, &err));
	assert_int_equal(err, -ENOENT);
	unlink(path);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_varint),
		cmocka_unit_test(test_sched_codec),
		cmocka_unit_test(test_roundtrip),
		cmocka_unit_test(test_cut),
		cmocka_unit_test(test_corrupt),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
