// SPDX-License-Identifier: GPL-2.0-only
/* Replay of a recording through the pipeline; see replay.h. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include "user/core/pipeline.h"
#include "user/lib/log.h"
#include "user/cmd/replay.h"
#include "user/export/otlp_file.h"
#include "user/export/perfetto.h"
#include "user/export/prom.h"
#include "user/export/record.h"
#include "user/export/report.h"

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

static double clock_s(clockid_t id)
{
	struct timespec ts;

	clock_gettime(id, &ts);
	return ts.tv_sec + ts.tv_nsec / 1e9;
}

struct replay {
	struct pipeline *pipe;
	struct ttf_records in;	/* the pipeline's entries */
	struct replay_stats *st;
	uint64_t last_ns;
};

/* One decoded frame into the pipeline, through the same entries as live records. */
static void feed(struct replay *rp, uint32_t type, const void *payload, uint32_t len)
{
	const struct ttf_net_event *ne = payload;
	uint32_t gpu_hdr[2];

	switch (type) {
	case REC_NET:
		if (len < sizeof(*ne) || len < sizeof(*ne) + ne->cap_len) {
			rp->st->bad_frames++;
			return;
		}
		rp->last_ns = ne->ts_ns;
		rp->in.net(rp->in.ctx, ne, len);
		return;
	case REC_SCHED:
		if (len != sizeof(struct ttf_sched_event)) {
			rp->st->bad_frames++;
			return;
		}
		rp->in.sched(rp->in.ctx, payload);
		return;
	case REC_ENGINE:
		if (len != sizeof(struct ttf_engine_event)) {
			rp->st->bad_frames++;
			return;
		}
		rp->in.engine(rp->in.ctx, payload);
		return;
	case REC_GPU:
		if (len < sizeof(gpu_hdr)) {
			rp->st->bad_frames++;
			return;
		}
		memcpy(gpu_hdr, payload, sizeof(gpu_hdr));
		if (rp->in.gpu(rp->in.ctx, gpu_hdr[0], gpu_hdr[1],
			       (const uint8_t *)payload + sizeof(gpu_hdr), len - sizeof(gpu_hdr)) ==
		    -EINVAL)
			rp->st->bad_frames++;
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
	struct replay rp = { .st = st };
	struct report *report = NULL;
	struct rec_reader *rr;
	struct rec_header h;
	struct ttf_sink rs;
	const void *payload;
	uint32_t type, len;
	double t0 = clock_s(CLOCK_MONOTONIC), c0 = clock_s(CLOCK_PROCESS_CPUTIME_ID);
	int err;

	memset(st, 0, sizeof(*st));
	rc.n = 0;
	rr = rec_reader__open(path, &h, &err);
	if (!rr)
		return err;
	struct report_opts ro = { .sz = sizeof(ro), .out = o->out, .json = o->json,
				  .verbose = o->verbose, .t0_ns = h.start_mono_ns };
	/* the live pipeline's setup, from the header */
	struct pipeline_opts po = { .sz = sizeof(po), .xmit_expected = !!(h.flags & REC_F_XMIT),
				    .attribution = !!(h.flags & REC_F_ATTRIBUTION),
				    .sched = !!(h.flags & REC_F_SCHED),
				    .gpu = !!(h.flags & REC_F_GPU), .grpc_profile = o->grpc_profile };

	err = -ENOMEM;
	report = report__new(&ro);
	if (!report)
		goto cleanup;
	rp.pipe = pipeline__new(&po);
	if (!rp.pipe)
		goto cleanup;
	report__sink(report, &rs);
	pipeline__add_sink(rp.pipe, &rs);
	if (o->perfetto) {
		struct perfetto_opts pfo = { .gpu = pipeline__gpu(rp.pipe),
					     .sched = pipeline__sched(rp.pipe),
					     .sched_mode = o->perfetto_sched };
		struct ttf_sink ps;

		err = perfetto_sink__new_opts(o->perfetto, &pfo, &ps);
		if (err) {
			ttf_error("check that the directory exists and is writable",
				  "cannot write %s: %s", o->perfetto, strerror(-err));
			st->output_failed = 1;
			st->failed_output = o->perfetto;
			goto cleanup;
		}
		pipeline__add_sink(rp.pipe, &ps);
	}
	if (o->metrics_out) {
		struct ttf_sink ms;

		err = prom_file_sink__new(o->metrics_out, NULL, &ms);
		if (err)
			goto cleanup;
		pipeline__add_sink(rp.pipe, &ms);
	}
	if (o->otlp_out) {
		struct ttf_sink os;

		/* the recording's start: the same span ids on every replay */
		err = otlp_file_sink__new(o->otlp_out, h.start_real_ns,
					  (int64_t)(h.start_real_ns - h.start_mono_ns), &os);
		if (err)
			goto cleanup;
		pipeline__add_sink(rp.pipe, &os);
	}
	rp.in = pipeline__records(rp.pipe);
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
	/* the live run's counters, with those the pipeline computed again in their place */
	{
		int err2 = pipeline__set_recorded_counters(rp.pipe, rc.c, rc.n);

		if (!err2) {
			err2 = pipeline__finish_sinks(rp.pipe);
			st->output_failed = err2 != 0;
		}
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
	rec_reader__close(rr);
	return err;
}
