// SPDX-License-Identifier: GPL-2.0-only
/* Recording reader and replay through the pipeline; see replay.h. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <zlib.h>
#include "user/core/pipeline.h"
#include "user/cmd/replay.h"
#include "user/export/report.h"
#include "user/model/sched.h"

/* Overridable so that tests/fuzz/fuzz_record.c can run small (big buffers are slow under ASan). */
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
	struct rec_engine engine[2];
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
	if (memcmp(h->magic, REC_MAGIC, sizeof(h->magic)) || h->version != REC_VERSION ||
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
		struct rec_engine *re;

		if (len < 1 || in[0] > 1)
			return -EBADMSG;
		re = &rr->engine[in[0]];
		n = rec_codec__decode(&rec_engine_codec, re, in + 1, len - 1);
		if (n < 0 || (size_t)n != len - 1)
			return -EBADMSG;
		re->is_return = in[0];
		*payload = re;
		*out_len = sizeof(*re);
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
	if (flen > REC_MAX_FRAME || *type < REC_NET || *type > REC_END)
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

#define MAX_COUNTERS 128

struct recorded_counters {
	struct report_counter c[MAX_COUNTERS];
	char names[MAX_COUNTERS][256];
	int n;
};

/* COUNTERS payload -> rc (truncated to MAX_COUNTERS). -EBADMSG if malformed. */
static int parse_counters(const uint8_t *p, uint32_t len, struct recorded_counters *rc)
{
	const uint8_t *end = p + len;
	uint32_t n;

	rc->n = 0;
	if (len < 4)
		return -EBADMSG;
	memcpy(&n, p, 4);
	p += 4;
	for (uint32_t i = 0; i < n; i++) {
		uint8_t nl;

		if (end - p < 9 || end - p < 9 + p[8])
			return -EBADMSG;
		nl = p[8];
		if (rc->n < MAX_COUNTERS) {
			memcpy(&rc->c[rc->n].value, p, 8);
			memcpy(rc->names[rc->n], p + 9, nl);
			rc->names[rc->n][nl] = '\0';
			rc->c[rc->n].name = rc->names[rc->n];
			rc->n++;
		}
		p += 9 + nl;
	}
	return 0;
}

/*
 * The summary's counters: those of the live run (BPF, engine probes, GPU),
 * with the ones this replay computed itself (connection tracker, timeline,
 * scheduler view) taking their place; the same names as user/cmd/trace.c.
 */
static int merge_counters(struct pipeline *p, struct sched_view *sv,
			  const struct recorded_counters *rec, struct report_counter *out)
{
	const struct conn_stats *cs = pipeline__conn_stats(p);
	const struct timeline_stats *ts = pipeline__timeline_stats(p);
	struct report_counter mine[24];
	int n_mine = 0, n = 0;

	mine[n_mine++] = (struct report_counter){ "truncated_payloads", cs->truncated_events };
	mine[n_mine++] = (struct report_counter){ "lost_sync", cs->lost_sync };
	mine[n_mine++] = (struct report_counter){ "non_http_connections", cs->non_http };
	mine[n_mine++] = (struct report_counter){ "token_events_dropped_oom",
						  cs->events_dropped_oom };
	mine[n_mine++] = (struct report_counter){ "malformed_records", cs->malformed };
	mine[n_mine++] = (struct report_counter){ "requests_not_deferred_oom",
						  pipeline__dropped(p) };
	mine[n_mine++] = (struct report_counter){ "engine_unmatched_returns",
						  ts->unmatched_returns };
	mine[n_mine++] = (struct report_counter){ "engine_orphan_prompt_steps",
						  ts->orphan_prompt_steps };
	mine[n_mine++] = (struct report_counter){ "engine_steps_evicted", ts->dropped_old };
	mine[n_mine++] = (struct report_counter){ "aborted_requests_seen_by_engine", ts->aborted };
	mine[n_mine++] = (struct report_counter){ "orphaned_engine_steps", ts->orphaned_steps };
	mine[n_mine++] = (struct report_counter){ "orphaned_engine_us", ts->orphaned_ns / 1000 };
	mine[n_mine++] = (struct report_counter){ "requests_delayed_by_orphans",
						  ts->delayed_by_orphans };
	mine[n_mine++] = (struct report_counter){ "delay_by_orphans_us",
						  ts->delay_by_orphans_ns / 1000 };
	if (sv) {
		struct sched_stats ss;

		sched__stats(sv, &ss);
		mine[n_mine++] = (struct report_counter){ "sched_inconsistent", ss.inconsistent };
		mine[n_mine++] = (struct report_counter){ "sched_marks_dropped",
							  ss.marks_horizon + ss.marks_cap };
		mine[n_mine++] = (struct report_counter){ "sched_threads_refused",
							  ss.threads_refused };
		mine[n_mine++] = (struct report_counter){ "sched_alloc_failed", ss.alloc_failed };
	}
	if (!rec->n) {
		memcpy(out, mine, n_mine * sizeof(*out));
		return n_mine;
	}
	for (int i = 0; i < rec->n; i++) {
		out[n] = rec->c[i];
		for (int j = 0; j < n_mine; j++)
			if (!strcmp(mine[j].name, rec->c[i].name))
				out[n].value = mine[j].value;
		n++;
	}
	return n;
}

static double clock_s(clockid_t id)
{
	struct timespec ts;

	clock_gettime(id, &ts);
	return ts.tv_sec + ts.tv_nsec / 1e9;
}

struct replay {
	struct pipeline *pipe;
	struct sched_view *sv;
	struct replay_stats *st;
	uint64_t last_ns;
};

static void feed(struct replay *rp, uint32_t type, const void *payload, uint32_t len)
{
	const struct ttf_net_event *ne = payload;
	const struct ttf_sched_event *se = payload;
	struct tl_event ev;

	switch (type) {
	case REC_NET:
		if (len < sizeof(*ne) || len < sizeof(*ne) + ne->cap_len) {
			rp->st->bad_frames++;
			return;
		}
		rp->last_ns = ne->ts_ns;
		/* as user/cmd/trace.c: an exit ends the scheduler state of its threads */
		if (ne->type == TTF_EV_EXIT && rp->sv)
			sched__forget_tgid(rp->sv, ne->tgid, ne->ts_ns);
		pipeline__on_net_event(rp->pipe, ne, len);
		return;
	case REC_SCHED:
		if (len != sizeof(*se)) {
			rp->st->bad_frames++;
			return;
		}
		pipeline__on_sched_event(rp->pipe, se);
		if (rp->sv)
			sched__add(rp->sv, se);
		return;
	case REC_ENGINE:
		if (len != sizeof(struct rec_engine)) {
			rp->st->bad_frames++;
			return;
		}
		record__engine_unpack(payload, &ev);
		pipeline__on_engine_event(rp->pipe, &ev);
		return;
	case REC_ADVANCE:
		if (len != sizeof(uint64_t)) {
			rp->st->bad_frames++;
			return;
		}
		/*
		 * The live pipeline__finish() advanced to UINT64_MAX after closing the
		 * open requests: leave that to the replay's own finish, in that order.
		 */
		if (*(const uint64_t *)payload != UINT64_MAX)	/* an aligned copy */
			pipeline__advance(rp->pipe, *(const uint64_t *)payload);
		return;
	}
}

int replay__run(const char *path, const struct replay_opts *o, struct replay_stats *st)
{
	static struct recorded_counters rc;	/* 33 KiB: not on the stack */
	struct report_counter c[MAX_COUNTERS + 24];
	struct replay rp = { .st = st };
	struct report *report = NULL;
	struct rec_reader *rr;
	struct rec_header h;
	const void *payload;
	uint32_t type, len;
	double t0 = clock_s(CLOCK_MONOTONIC), c0 = clock_s(CLOCK_PROCESS_CPUTIME_ID);
	int err, n_c;

	memset(st, 0, sizeof(*st));
	rc.n = 0;
	rr = rec_reader__open(path, &h, &err);
	if (!rr)
		return err;
	struct report_opts ro = { .sz = sizeof(ro), .out = o->out, .json = o->json,
				  .verbose = o->verbose, .t0_ns = h.start_mono_ns };
	struct pipeline_opts po = { .sz = sizeof(po), .xmit_expected = !!(h.flags & REC_F_XMIT),
				    .attribution = !!(h.flags & REC_F_ATTRIBUTION) };

	err = -ENOMEM;
	report = report__new(&ro);
	if (!report)
		goto cleanup;
	if (h.flags & REC_F_SCHED) {
		rp.sv = sched__new(NULL);
		if (!rp.sv)
			goto cleanup;
		po.overlay = sched__attrib_overlay;
		po.overlay_ctx = rp.sv;
	}
	po.report = report;
	rp.pipe = pipeline__new(&po);
	if (!rp.pipe)
		goto cleanup;
	report__header(report);
	while ((err = rec_reader__next(rr, &type, &payload, &len)) > 0) {
		st->frames[type]++;
		if (type == REC_COUNTERS) {
			if (parse_counters(payload, len, &rc))
				st->bad_frames++;
			continue;
		}
		feed(&rp, type, payload, len);
	}
	if (err == 0) {
		st->frames[REC_END]++;
		st->end_ns = len == sizeof(uint64_t) ? *(const uint64_t *)payload : rp.last_ns;
	} else if (err == -EPIPE) {
		st->truncated = 1;
		st->end_ns = rp.last_ns;
	}
	/* what came before a corruption is still reported */
	pipeline__finish(rp.pipe, st->end_ns);
	n_c = merge_counters(rp.pipe, rp.sv, &rc, c);
	{
		int err2 = report__summary(report, c, n_c);

		if (err == 0 || err == -EPIPE)
			err = err2;
	}
	if (!err && fflush(o->out))
		err = -errno;
cleanup:
	st->wall_s = clock_s(CLOCK_MONOTONIC) - t0;
	st->cpu_s = clock_s(CLOCK_PROCESS_CPUTIME_ID) - c0;
	pipeline__free(rp.pipe);
	report__free(report);
	sched__free(rp.sv);
	rec_reader__close(rr);
	return err;
}
