// SPDX-License-Identifier: GPL-2.0-only
/* Recording writer and the --record sink; the format is in record.h. */
#include <errno.h>
#include <fcntl.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>
#include <zlib.h>
#include "user/lib/log.h"
#include "user/export/record/record.h"

#define FLUSH_NS 1000000000ull	/* a killed tracer loses at most about this much */
#define GZ_BUFFER_BYTES (256u << 10)
#define OUT_BUF_BYTES (64u << 10)	/* frames gather here before gzwrite */

#define F(type, field, ts) { offsetof(type, field), sizeof(((type *)0)->field), ts, \
				    sizeof(((type *)0)->field) }
/* A field narrower in memory than in the file (zero-extended, little-endian). */
#define W(type, field, wire) { offsetof(type, field), sizeof(((type *)0)->field), 0, wire }
static const struct rec_field net_fields[] = {
	F(struct ttf_net_event, ts_ns, 1), F(struct ttf_net_event, sock_cookie, 0),
	F(struct ttf_net_event, arrival_first_ns, 0), F(struct ttf_net_event, arrival_last_ns, 0),
	F(struct ttf_net_event, enter_ns, 0), F(struct ttf_net_event, tgid, 0),
	F(struct ttf_net_event, tid, 0), F(struct ttf_net_event, bytes, 0),
	F(struct ttf_net_event, seq_end, 0), F(struct ttf_net_event, cap_len, 0),
	F(struct ttf_net_event, family, 0), F(struct ttf_net_event, lport, 0),
	F(struct ttf_net_event, rport, 0), F(struct ttf_net_event, laddr, 0),
	F(struct ttf_net_event, raddr, 0), F(struct ttf_net_event, flags, 0),
	F(struct ttf_net_event, xmit_before_ns, 0), F(struct ttf_net_event, comm, 0),
};
static const struct rec_field sched_fields[] = {
	F(struct ttf_sched_event, ts_ns, 1), F(struct ttf_sched_event, tid, 0),
	F(struct ttf_sched_event, tgid, 0), F(struct ttf_sched_event, state, 0),
	F(struct ttf_sched_event, cpu, 0), F(struct ttf_sched_event, pad, 0),
};
/* A field of `bytes` bytes at `field` (an array's tail), coded whole. */
#define A(type, field, bytes) { offsetof(type, field), bytes, 0, bytes }
/*
 * role and n_seq are u32 in the file, u8 in the record. Version 2 appended
 * seq_ids[8..15], the per-sequence counts, positions and outputs, and the
 * batch flags; a version 1 file never sets their mask bits (zero: no counts).
 */
static const struct rec_field engine_fields[] = {
	F(struct ttf_engine_event, ts_ns, 1), F(struct ttf_engine_event, tgid, 0),
	F(struct ttf_engine_event, tid, 0), W(struct ttf_engine_event, role, 4),
	F(struct ttf_engine_event, value, 0), W(struct ttf_engine_event, n_seq, 4),
	F(struct ttf_engine_event, seq_ids[0], 0), F(struct ttf_engine_event, seq_ids[1], 0),
	F(struct ttf_engine_event, seq_ids[2], 0), F(struct ttf_engine_event, seq_ids[3], 0),
	F(struct ttf_engine_event, seq_ids[4], 0), F(struct ttf_engine_event, seq_ids[5], 0),
	F(struct ttf_engine_event, seq_ids[6], 0), F(struct ttf_engine_event, seq_ids[7], 0),
	A(struct ttf_engine_event, seq_ids[8], 8 * sizeof(__s32)),
	F(struct ttf_engine_event, seq_tokens, 0), F(struct ttf_engine_event, seq_pos0, 0),
	F(struct ttf_engine_event, seq_out_mask, 0), F(struct ttf_engine_event, batch_flags, 0),
};
#undef F
#undef W
#undef A
_Static_assert(TTF_ENGINE_MAX_SEQ == 16, "engine_fields lists 16 sequence ids");

#define CODEC(f, t) { f, sizeof(f) / sizeof(f[0]), sizeof(t) }
const struct rec_codec rec_net_codec = CODEC(net_fields, struct ttf_net_event);
const struct rec_codec rec_sched_codec = CODEC(sched_fields, struct ttf_sched_event);
const struct rec_codec rec_engine_codec = CODEC(engine_fields, struct ttf_engine_event);

size_t rec_varint__put(uint8_t *out, uint64_t v)
{
	size_t n = 0;

	while (v >= 0x80) {
		out[n++] = (uint8_t)v | 0x80;
		v >>= 7;
	}
	out[n++] = (uint8_t)v;
	return n;
}

size_t rec_varint__get(const uint8_t *in, size_t len, uint64_t *v)
{
	uint64_t x = 0;

	for (size_t i = 0; i < len && i < 10; i++) {
		x |= (uint64_t)(in[i] & 0x7f) << (7 * i);
		if (!(in[i] & 0x80)) {
			*v = x;
			return i + 1;
		}
	}
	return 0;
}

size_t rec_codec__encode(const struct rec_codec *c, const void *prev, const void *cur,
			 uint8_t *out)
{
	const uint8_t *p = prev, *q = cur;
	uint8_t body[REC_MAX_RECORD_BYTES];
	size_t n = 0, m;
	uint64_t mask = 0;

	for (int i = 0; i < c->n_fields; i++) {
		const struct rec_field *f = &c->fields[i];

		if (!memcmp(p + f->off, q + f->off, f->size))
			continue;
		mask |= 1ull << i;
		if (f->is_ts) {
			uint64_t a, b;
			int64_t d;

			memcpy(&a, p + f->off, 8);
			memcpy(&b, q + f->off, 8);
			d = (int64_t)(b - a);
			n += rec_varint__put(body + n, ((uint64_t)d << 1) ^ (uint64_t)(d >> 63));
		} else {
			memcpy(body + n, q + f->off, f->size);
			memset(body + n + f->size, 0, f->wire - f->size);
			n += f->wire;
		}
	}
	m = rec_varint__put(out, mask);
	memcpy(out + m, body, n);
	return m + n;
}

/* Copy one field: the usual widths as fixed-size moves (no memcpy call per field). */
static inline void put_field(uint8_t *dst, const uint8_t *src, size_t size)
{
	switch (size) {
	case 1: *dst = *src; break;
	case 2: memcpy(dst, src, 2); break;
	case 4: memcpy(dst, src, 4); break;
	case 8: memcpy(dst, src, 8); break;
	default: memcpy(dst, src, size);
	}
}

int rec_codec__decode(const struct rec_codec *c, void *rec, const uint8_t *in, size_t len)
{
	uint8_t *r = rec;
	uint64_t mask, z;
	size_t n = rec_varint__get(in, len, &mask), k;

	if (!n || (c->n_fields < 64 && mask >> c->n_fields))
		return -EBADMSG;
	/* fields in order, by the mask's set bits (lowest first) */
	while (mask) {
		const struct rec_field *f = &c->fields[__builtin_ctzll(mask)];

		mask &= mask - 1;
		if (f->is_ts) {
			uint64_t t;

			k = rec_varint__get(in + n, len - n, &z);
			if (!k)
				return -EBADMSG;
			memcpy(&t, r + f->off, 8);
			t += (z >> 1) ^ -(z & 1);
			memcpy(r + f->off, &t, 8);
			n += k;
			continue;
		}
		if (len - n < f->wire)
			return -EBADMSG;
		for (k = f->size; k < f->wire; k++)
			if (in[n + k])
				return -EBADMSG;	/* does not fit the record's field */
		put_field(r + f->off, in + n, f->size);
		n += f->wire;
	}
	return (int)n;
}

struct record {
	gzFile gz;
	int err;		/* first error, negative errno */
	uint64_t frames;
	uint64_t dropped;
	uint64_t next_flush_ns;
	/* previous record of each kind, for delta coding */
	struct ttf_net_event prev_net[8];
	struct ttf_sched_event prev_sched[8];
	struct ttf_engine_event prev_engine[2];	/* entry, return */
	uint8_t *out;
	size_t n_out;
};

static uint64_t clock_ns(clockid_t id)
{
	struct timespec ts;

	clock_gettime(id, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + ts.tv_nsec;
}

static int gz_errno(gzFile gz)
{
	int zerr;

	gzerror(gz, &zerr);
	return zerr == Z_ERRNO && errno ? -errno : -EIO;
}

static int drain(struct record *rec)
{
	int n = (int)rec->n_out;

	rec->n_out = 0;
	if (n && gzwrite(rec->gz, rec->out, n) != n)
		return gz_errno(rec->gz);
	return 0;
}

struct record *record__open(const char *path, uint32_t flags)
{
	struct rec_header h = { .version = REC_VERSION, .header_bytes = REC_HEADER_BYTES,
				.flags = flags, .bom = REC_BOM };
	struct record *rec = calloc(1, sizeof(*rec));
	struct stat st;
	int fd, err;

	if (!rec || !(rec->out = malloc(OUT_BUF_BYTES)))
		goto fail;
	memcpy(h.magic, REC_MAGIC, sizeof(h.magic));
	h.start_mono_ns = clock_ns(CLOCK_MONOTONIC);
	h.start_real_ns = clock_ns(CLOCK_REALTIME);
	/* 0600: the payload prefixes in NET frames are the users' prompts */
	fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
	if (fd < 0)
		goto fail;
	/* an existing file keeps its mode through O_TRUNC (devices are left alone) */
	if (!fstat(fd, &st) && S_ISREG(st.st_mode) && (st.st_mode & 077) && fchmod(fd, 0600)) {
		err = errno;
		close(fd);
		errno = err;
		goto fail;
	}
	/* level 1: the tracer's thread must not spend its time compressing */
	rec->gz = gzdopen(fd, "wb1");
	if (!rec->gz) {
		err = errno ? errno : ENOMEM;
		close(fd);
		errno = err;
		goto fail;
	}
	gzbuffer(rec->gz, GZ_BUFFER_BYTES);
	memcpy(rec->out, &h, sizeof(h));
	rec->n_out = sizeof(h);
	err = record__flush(rec);
	if (err) {
		gzclose(rec->gz);
		errno = -err;
		goto fail;
	}
	rec->next_flush_ns = h.start_mono_ns + FLUSH_NS;
	return rec;
fail:
	err = errno ? errno : ENOMEM;
	if (rec)
		free(rec->out);
	free(rec);
	errno = err;
	return NULL;
}

/* Room for a frame of up to len payload bytes in the output buffer; NULL after an error. */
static uint8_t *frame_begin(struct record *rec, size_t len)
{
	if (rec->err) {
		rec->dropped++;
		return NULL;
	}
	if (rec->n_out + len + 16 > OUT_BUF_BYTES && (rec->err = drain(rec))) {
		rec->dropped++;
		return NULL;
	}
	return rec->out + rec->n_out;
}

/* Frame header + body of len bytes already at buf + 16: move it in place. */
static void frame_end(struct record *rec, enum rec_frame type, uint8_t *buf, size_t len)
{
	size_t h = 1;

	buf[0] = type;
	h += rec_varint__put(buf + 1, len);
	memmove(buf + h, buf + 16, len);
	rec->n_out += h + len;
	rec->frames++;
}

int record__frame(struct record *rec, enum rec_frame type, const void *payload, size_t len)
{
	uint8_t *buf;

	if (len > REC_MAX_FRAME)
		return -E2BIG;
	buf = frame_begin(rec, len);
	if (!buf)
		return rec->err;
	memcpy(buf + 16, payload, len);
	frame_end(rec, type, buf, len);
	return 0;
}

int record__net(struct record *rec, const struct ttf_net_event *e, size_t len)
{
	struct ttf_net_event *prev = &rec->prev_net[e->type & 7];
	size_t cap = len > sizeof(*e) ? len - sizeof(*e) : 0, n;
	uint8_t *buf;

	/* the ring's len is authoritative (cap_len may lie in a malformed record) */
	if (len < sizeof(*e) || cap > TTF_CAPTURE_MAX_BYTES)
		return -EINVAL;
	buf = frame_begin(rec, REC_MAX_FRAME);
	if (!buf)
		return rec->err;
	buf[16] = e->type;
	n = 1 + rec_codec__encode(&rec_net_codec, prev, e, buf + 17);
	memcpy(buf + 16 + n, e->payload, cap);
	memcpy(prev, e, sizeof(*e));
	frame_end(rec, REC_NET, buf, n + cap);
	return 0;
}

int record__sched(struct record *rec, const struct ttf_sched_event *e)
{
	struct ttf_sched_event *prev = &rec->prev_sched[e->type & 7];
	uint8_t *buf = frame_begin(rec, sizeof(*e) + 16);
	size_t n;

	if (!buf)
		return rec->err;
	buf[16] = e->type;
	n = 1 + rec_codec__encode(&rec_sched_codec, prev, e, buf + 17);
	*prev = *e;
	frame_end(rec, REC_SCHED, buf, n);
	return 0;
}

int record__engine(struct record *rec, const struct ttf_engine_event *ev)
{
	int is_return = ev->type == TTF_ENG_RETURN;
	struct ttf_engine_event *prev = &rec->prev_engine[is_return];
	uint8_t *buf = frame_begin(rec, sizeof(*ev) + 2 * 4 + 16);
	size_t n;

	if (!buf)
		return rec->err;
	buf[16] = is_return;
	n = 1 + rec_codec__encode(&rec_engine_codec, prev, ev, buf + 17);
	*prev = *ev;
	frame_end(rec, REC_ENGINE, buf, n);
	return 0;
}

int record__gpu(struct record *rec, uint32_t pid, uint32_t kind, const void *body, size_t len)
{
	uint8_t *buf;

	if (len + 8 > REC_MAX_FRAME)
		return -E2BIG;
	buf = frame_begin(rec, len + 8);
	if (!buf)
		return rec->err;
	memcpy(buf + 16, &pid, 4);
	memcpy(buf + 20, &kind, 4);
	memcpy(buf + 24, body, len);
	frame_end(rec, REC_GPU, buf, len + 8);
	return 0;
}

int record__flush(struct record *rec)
{
	if (rec->err)
		return rec->err;
	rec->err = drain(rec);
	if (!rec->err && gzflush(rec->gz, Z_SYNC_FLUSH) != Z_OK)
		rec->err = gz_errno(rec->gz);
	return rec->err;
}

int record__close(struct record *rec, const struct report_counter *c, int n, uint64_t end_ns)
{
	size_t len = sizeof(uint32_t);
	uint8_t *buf, *p;
	int err;

	for (int i = 0; i < n; i++)
		len += sizeof(uint64_t) + 1 + strnlen(c[i].name, 255);
	buf = malloc(len);
	if (buf) {
		p = buf;
		memcpy(p, &(uint32_t){ n }, sizeof(uint32_t));
		p += sizeof(uint32_t);
		for (int i = 0; i < n; i++) {
			uint8_t nl = strnlen(c[i].name, 255);

			memcpy(p, &c[i].value, sizeof(uint64_t));
			p[8] = nl;
			memcpy(p + 9, c[i].name, nl);
			p += 9 + nl;
		}
		if (len <= REC_MAX_FRAME)
			record__frame(rec, REC_COUNTERS, buf, len);
		free(buf);
	} else if (!rec->err) {
		rec->err = -ENOMEM;
	}
	record__frame(rec, REC_END, &end_ns, sizeof(end_ns));
	if (!rec->err)
		rec->err = drain(rec);
	err = rec->err;
	/* gzclose writes the gzip trailer: the file is complete only if it succeeds */
	if (gzclose(rec->gz) != Z_OK && !err)
		err = errno ? -errno : -EIO;
	free(rec->out);
	free(rec);
	return err;
}

void record__abandon(struct record *rec)
{
	if (!rec)
		return;
	drain(rec);
	gzclose(rec->gz);
	free(rec->out);
	free(rec);
}

/*
 * The sink. Its ctx outlives the record: finish closes the file, destroy
 * (called later by the pipeline) frees what is left.
 */
struct rec_sink {
	struct record *rec;	/* NULL once finished */
};

static void on_net(void *ctx, const struct ttf_net_event *e, size_t len)
{
	struct rec_sink *rs = ctx;

	if (rs->rec)
		record__net(rs->rec, e, len);
}

static void on_sched(void *ctx, const struct ttf_sched_event *e)
{
	struct rec_sink *rs = ctx;

	if (rs->rec)
		record__sched(rs->rec, e);
}

static void on_engine(void *ctx, const struct ttf_engine_event *ev)
{
	struct rec_sink *rs = ctx;

	if (rs->rec)
		record__engine(rs->rec, ev);
}

static void on_gpu(void *ctx, uint32_t pid, uint32_t kind, const void *body, size_t len)
{
	struct rec_sink *rs = ctx;

	if (rs->rec)
		record__gpu(rs->rec, pid, kind, body, len);
}

static void on_advance(void *ctx, uint64_t watermark_ns)
{
	struct rec_sink *rs = ctx;

	if (rs->rec)
		record__frame(rs->rec, REC_ADVANCE, &watermark_ns, sizeof(watermark_ns));
}

static void on_tick(void *ctx, uint64_t now_ns)
{
	struct rec_sink *rs = ctx;

	if (!rs->rec || now_ns < rs->rec->next_flush_ns)
		return;
	rs->rec->next_flush_ns = now_ns + FLUSH_NS;
	record__flush(rs->rec);
}

static int on_finish(void *ctx, const struct report_counter *c, int n)
{
	struct rec_sink *rs = ctx;
	uint64_t frames, dropped;
	int err;

	if (!rs->rec)
		return 0;
	frames = rs->rec->frames;
	dropped = rs->rec->dropped;
	err = record__close(rs->rec, c, n, clock_ns(CLOCK_MONOTONIC));
	rs->rec = NULL;
	if (err || dropped) {
		ttf_error("check free space and permissions",
			  "recording: %s; %llu frames written, %llu dropped",
			  strerror(err ? -err : EIO), (unsigned long long)frames,
			  (unsigned long long)dropped);
		return err ? err : -EIO;
	}
	return 0;
}

static void on_destroy(void *ctx)
{
	struct rec_sink *rs = ctx;

	record__abandon(rs->rec);
	free(rs);
}

int record_sink__new(const char *path, uint32_t flags, struct ttf_sink *out)
{
	struct rec_sink *rs = calloc(1, sizeof(*rs));

	if (!rs)
		return -ENOMEM;
	rs->rec = record__open(path, flags);
	if (!rs->rec) {
		int err = -errno;

		free(rs);
		return err;
	}
	*out = (struct ttf_sink){
		.name = "record",
		.ctx = rs,
		.net_event = on_net,
		.sched_event = on_sched,
		.engine_event = on_engine,
		.gpu_event = on_gpu,
		.advance = on_advance,
		.tick = on_tick,
		.finish = on_finish,
		.destroy = on_destroy,
	};
	return 0;
}
