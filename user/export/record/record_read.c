// SPDX-License-Identifier: GPL-2.0-only
/* Recording reader: frames of a `--record` file, decoded; the format is in record.h. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <zlib.h>
#include "user/export/record/record.h"

/* Overridable so that tests/noroot/fuzz/fuzz_record.c can run small (big buffers are slow under ASan). */
#ifndef READ_BUF_BYTES
#define READ_BUF_BYTES (4u << 20)	/* > 2 * REC_MAX_FRAME; big reads inflate straight into it */
#endif
#ifndef GZ_BUF_BYTES
#define GZ_BUF_BYTES (1u << 20)
#endif

#define NET_SLOT_BYTES (sizeof(struct ttf_net_event) + TTF_CAPTURE_MAX_BYTES)

struct rec_reader {
	gzFile gz;
	uint8_t *buf;
	size_t pos, end;
	int eof;
	/* the previous record of each kind (delta coding); NET ones with room for a payload */
	uint8_t *net_slots;	/* 8 * NET_SLOT_BYTES, 8-byte aligned */
	struct ttf_sched_event sched[8];
	struct ttf_engine_event engine[2];	/* entry, return */
	uint64_t raw[REC_MAX_FRAME / 8 + 1];	/* aligned copy of other frames */
};

/* Keep the unread bytes, append what the stream has. 0 or negative errno. */
static int refill(struct rec_reader *rr)
{
	int n, zerr;

	if (rr->eof)
		return 0;
	if (rr->pos) {
		memmove(rr->buf, rr->buf + rr->pos, rr->end - rr->pos);
		rr->end -= rr->pos;
		rr->pos = 0;
	}
	n = gzread(rr->gz, rr->buf + rr->end, READ_BUF_BYTES - rr->end);
	if (n > 0) {
		rr->end += n;
		return 0;
	}
	rr->eof = 1;
	if (n == 0)
		return 0;
	gzerror(rr->gz, &zerr);
	/* Z_BUF_ERROR: the stream stops without its trailer (the tracer was killed) */
	if (zerr == Z_BUF_ERROR)
		return 0;
	return zerr == Z_ERRNO ? -EIO : -EBADMSG;
}

static int need(struct rec_reader *rr, size_t n)
{
	int err;

	while (rr->end - rr->pos < n && !rr->eof) {
		err = refill(rr);
		if (err)
			return err;
	}
	return rr->end - rr->pos < n ? -EPIPE : 0;
}

struct rec_reader *rec_reader__open(const char *path, struct rec_header *h, int *err)
{
	struct rec_reader *rr = calloc(1, sizeof(*rr));

	*err = -ENOMEM;
	if (!rr || !(rr->buf = aligned_alloc(8, READ_BUF_BYTES)) ||
	    !(rr->net_slots = aligned_alloc(8, 8 * NET_SLOT_BYTES)))
		goto fail;
	memset(rr->net_slots, 0, 8 * NET_SLOT_BYTES);
	{
		struct stat sb;

		/* zlib reads a directory as an I/O error: say what it is */
		if (!stat(path, &sb) && S_ISDIR(sb.st_mode)) {
			*err = -EISDIR;
			goto fail;
		}
	}
	rr->gz = gzopen(path, "rb");
	if (!rr->gz) {
		*err = errno ? -errno : -ENOMEM;
		goto fail;
	}
	gzbuffer(rr->gz, GZ_BUF_BYTES);
	*err = need(rr, REC_HEADER_BYTES);
	if (*err == -EPIPE)
		*err = -EBADMSG;
	if (*err)
		goto fail;
	memcpy(h, rr->buf, sizeof(*h));
	if (memcmp(h->magic, REC_MAGIC, sizeof(h->magic)) || h->version < 1 || h->version > REC_VERSION ||
	    h->header_bytes < REC_HEADER_BYTES || h->bom != REC_BOM) {
		*err = -EBADMSG;
		goto fail;
	}
	*err = need(rr, h->header_bytes);
	if (*err) {
		*err = -EBADMSG;
		goto fail;
	}
	rr->pos = h->header_bytes;
	*err = 0;
	return rr;
fail:
	rec_reader__close(rr);
	return NULL;
}

/* Decode a record frame's body onto the previous record of its kind. */
static int decode(struct rec_reader *rr, uint32_t type, const uint8_t *in, size_t len,
		  const void **payload, uint32_t *out_len)
{
	struct ttf_net_event *ne;
	int n;

	if (type == REC_NET) {
		if (len < 1)
			return -EBADMSG;
		ne = (void *)(rr->net_slots + (in[0] & 7) * NET_SLOT_BYTES);
		n = rec_codec__decode(&rec_net_codec, ne, in + 1, len - 1);
		if (n < 0 || len - 1 - n > TTF_CAPTURE_MAX_BYTES)
			return -EBADMSG;
		ne->type = in[0];
		memcpy(ne->payload, in + 1 + n, len - 1 - n);
		*payload = ne;
		*out_len = sizeof(*ne) + (len - 1 - n);
		return 0;
	}
	if (type == REC_SCHED) {
		struct ttf_sched_event *se;

		if (len < 1)
			return -EBADMSG;
		se = &rr->sched[in[0] & 7];
		n = rec_codec__decode(&rec_sched_codec, se, in + 1, len - 1);
		if (n < 0 || (size_t)n != len - 1)
			return -EBADMSG;
		se->type = in[0];
		*payload = se;
		*out_len = sizeof(*se);
		return 0;
	}
	if (type == REC_ENGINE) {
		struct ttf_engine_event *ee;

		if (len < 1 || in[0] > 1)
			return -EBADMSG;
		ee = &rr->engine[in[0]];
		n = rec_codec__decode(&rec_engine_codec, ee, in + 1, len - 1);
		if (n < 0 || (size_t)n != len - 1 || ee->n_seq > TTF_ENGINE_MAX_SEQ)
			return -EBADMSG;
		ee->type = in[0] ? TTF_ENG_RETURN : TTF_ENG_ENTRY;
		*payload = ee;
		*out_len = sizeof(*ee);
		return 0;
	}
	memcpy(rr->raw, in, len);
	*payload = rr->raw;
	*out_len = len;
	return 0;
}

int rec_reader__next(struct rec_reader *rr, uint32_t *type, const void **payload, uint32_t *len)
{
	uint64_t flen;
	size_t h;
	int err;

	err = need(rr, 11);	/* type and the longest varint */
	if (err == -EPIPE && rr->end == rr->pos)
		return -EPIPE;		/* ends between frames */
	if (err && err != -EPIPE)
		return err;
	h = rec_varint__get(rr->buf + rr->pos + 1, rr->end - rr->pos - 1, &flen);
	if (!h)
		return rr->end - rr->pos < 11 ? -EPIPE : -EBADMSG;
	*type = rr->buf[rr->pos];
	if (flen > REC_MAX_FRAME || *type < REC_NET || *type > REC_FRAME__MAX)
		return -EBADMSG;
	err = need(rr, 1 + h + flen);
	if (err)
		return err;	/* -EPIPE: cut inside a frame */
	err = decode(rr, *type, rr->buf + rr->pos + 1 + h, flen, payload, len);
	if (err)
		return err;
	rr->pos += 1 + h + flen;
	return *type == REC_END ? 0 : 1;
}

void rec_reader__close(struct rec_reader *rr)
{
	if (!rr)
		return;
	if (rr->gz)
		gzclose(rr->gz);
	free(rr->buf);
	free(rr->net_slots);
	free(rr);
}

