// SPDX-License-Identifier: GPL-2.0-only
/* Recording writer and the --record sink; the format is in record.h. */
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <zlib.h>
#include "user/log.h"
#include "user/record.h"

#define FLUSH_NS 1000000000ull	/* a killed tracer loses at most about this much */
#define GZ_BUFFER_BYTES (256u << 10)

struct record {
	gzFile gz;
	int err;		/* first error, negative errno */
	uint64_t frames;
	uint64_t dropped;
	uint64_t next_flush_ns;
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

static int put(struct record *rec, const void *buf, size_t len)
{
	if (!len)
		return 0;
	if (gzwrite(rec->gz, buf, len) != (int)len)
		return gz_errno(rec->gz);
	return 0;
}

struct record *record__open(const char *path, uint32_t flags)
{
	struct rec_header h = { .version = REC_VERSION, .header_bytes = REC_HEADER_BYTES,
				.flags = flags, .bom = REC_BOM };
	struct record *rec = calloc(1, sizeof(*rec));
	int fd, err;

	if (!rec)
		return NULL;
	memcpy(h.magic, REC_MAGIC, sizeof(h.magic));
	h.start_mono_ns = clock_ns(CLOCK_MONOTONIC);
	h.start_real_ns = clock_ns(CLOCK_REALTIME);
	/* 0600: the payload prefixes in NET frames are the users' prompts */
	fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
	if (fd < 0)
		goto fail;
	/* level 1: the tracer's thread must not spend its time compressing */
	rec->gz = gzdopen(fd, "wb1");
	if (!rec->gz) {
		err = errno ? errno : ENOMEM;
		close(fd);
		errno = err;
		goto fail;
	}
	gzbuffer(rec->gz, GZ_BUFFER_BYTES);
	err = put(rec, &h, sizeof(h));
	if (!err)
		err = record__flush(rec);
	if (err) {
		gzclose(rec->gz);
		errno = -err;
		goto fail;
	}
	rec->next_flush_ns = h.start_mono_ns + FLUSH_NS;
	return rec;
fail:
	err = errno;
	free(rec);
	errno = err;
	return NULL;
}

int record__frame(struct record *rec, enum rec_frame type, const void *payload, size_t len)
{
	static const uint8_t zeros[8];
	uint32_t hdr[2] = { (uint32_t)len, (uint32_t)type };
	int err;

	if (rec->err) {
		rec->dropped++;
		return rec->err;
	}
	err = put(rec, hdr, sizeof(hdr));
	if (!err)
		err = put(rec, payload, len);
	if (!err)
		err = put(rec, zeros, REC_PAD(len) - len);
	if (err) {
		rec->err = err;
		rec->dropped++;
		return err;
	}
	rec->frames++;
	return 0;
}

int record__flush(struct record *rec)
{
	if (rec->err)
		return rec->err;
	if (gzflush(rec->gz, Z_SYNC_FLUSH) != Z_OK)
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
		record__frame(rec, REC_COUNTERS, buf, len);
		free(buf);
	} else if (!rec->err) {
		rec->err = -ENOMEM;
	}
	record__frame(rec, REC_END, &end_ns, sizeof(end_ns));
	err = rec->err;
	/* gzclose writes the gzip trailer: the file is complete only if it succeeds */
	if (gzclose(rec->gz) != Z_OK && !err)
		err = errno ? -errno : -EIO;
	free(rec);
	return err;
}

void record__abandon(struct record *rec)
{
	if (!rec)
		return;
	gzclose(rec->gz);
	free(rec);
}

uint64_t record__frames(const struct record *rec)
{
	return rec->frames;
}

uint64_t record__dropped(const struct record *rec)
{
	return rec->dropped;
}

void record__engine_pack(const struct tl_event *ev, struct rec_engine *out)
{
	memset(out, 0, sizeof(*out));
	out->ts_ns = ev->ts_ns;
	out->tgid = ev->tgid;
	out->tid = ev->tid;
	out->role = ev->role;
	out->is_return = ev->is_return;
	out->value = ev->value;
	out->n_seq = ev->n_seq < 0 ? 0 : ev->n_seq > TL_MAX_SEQ ? TL_MAX_SEQ : ev->n_seq;
	memcpy(out->seq_ids, ev->seq_ids, out->n_seq * sizeof(int32_t));
}

void record__engine_unpack(const struct rec_engine *in, struct tl_event *out)
{
	memset(out, 0, sizeof(*out));
	out->ts_ns = in->ts_ns;
	out->tgid = in->tgid;
	out->tid = in->tid;
	out->role = (enum tl_role)in->role;
	out->is_return = in->is_return;
	out->value = in->value;
	out->n_seq = in->n_seq > TL_MAX_SEQ ? TL_MAX_SEQ : (int)in->n_seq;
	memcpy(out->seq_ids, in->seq_ids, out->n_seq * sizeof(int32_t));
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
		record__frame(rs->rec, REC_NET, e, len);
}

static void on_sched(void *ctx, const struct ttf_sched_event *e)
{
	struct rec_sink *rs = ctx;

	if (rs->rec)
		record__frame(rs->rec, REC_SCHED, e, sizeof(*e));
}

static void on_engine(void *ctx, const struct tl_event *ev)
{
	struct rec_sink *rs = ctx;
	struct rec_engine re;

	if (!rs->rec)
		return;
	record__engine_pack(ev, &re);
	record__frame(rs->rec, REC_ENGINE, &re, sizeof(re));
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
		.advance = on_advance,
		.tick = on_tick,
		.finish = on_finish,
		.destroy = on_destroy,
	};
	return 0;
}
