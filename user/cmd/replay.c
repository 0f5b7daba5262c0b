// SPDX-License-Identifier: GPL-2.0-only
/* Replay of a recording through the pipeline; see replay.h. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include "user/core/pipeline.h"
#include "user/lib/log.h"
#include "user/cmd/replay.h"
#include "user/cmd/sinks.h"
#include "user/export/record/record.h"
#include "user/export/report/report.h"

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
	struct report *report;
	FILE *out;		/* the report's stream (-o or stdout) */
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

/* The pipeline as the live run set it up (the header's flags), with its report and sinks. */
static int open_pipeline(struct replay *rp, const struct rec_header *h,
			 const struct replay_opts *o)
{
	struct report_opts ro = { .sz = sizeof(ro), .out = o->out, .json = o->json,
				  .verbose = o->verbose, .t0_ns = h->start_mono_ns };
	struct pipeline_opts po = { .sz = sizeof(po), .xmit_expected = !!(h->flags & REC_F_XMIT),
				    .attribution = !!(h->flags & REC_F_ATTRIBUTION),
				    .sched = !!(h->flags & REC_F_SCHED),
				    .gpu = !!(h->flags & REC_F_GPU), .grpc_profile = o->grpc_profile };
	/* the recording's start: the same span ids on every replay */
	struct sink_set ss = { .perfetto = o->perfetto, .perfetto_sched = o->perfetto_sched,
			       .metrics_out = o->metrics_out, .otlp_out = o->otlp_out,
			       .otlp_out_seed = h->start_real_ns,
			       .otlp_out_mono_to_unix_ns = (int64_t)(h->start_real_ns -
								     h->start_mono_ns) };

	rp->report = report__new(&ro);
	rp->pipe = rp->report ? pipeline__new(&po) : NULL;
	if (!rp->pipe)
		return -ENOMEM;
	ss.report = rp->report;
	rp->st->open_exit = sinks__open_set(&ss, rp->pipe);
	if (rp->st->open_exit)
		return -ECANCELED;
	rp->in = pipeline__records(rp->pipe);
	return 0;
}

/*
 * Every frame into the pipeline, the COUNTERS into rc. Returns 0 at the END
 * frame, -EPIPE without one, or the reader's error.
 */
static int replay_frames(struct replay *rp, struct rec_reader *rr, struct recorded_counters *rc)
{
	struct replay_stats *st = rp->st;
	const void *payload;
	uint32_t type, len;
	int err;

	while ((err = rec_reader__next(rr, &type, &payload, &len)) > 0) {
		st->frames[type]++;
		if (type == REC_COUNTERS) {
			if (parse_counters(payload, len, rc))
				st->bad_frames++;
			continue;
		}
		feed(rp, type, payload, len);
	}
	if (err == 0) {
		st->frames[REC_END]++;
		st->end_ns = len == sizeof(uint64_t) ? *(const uint64_t *)payload : rp->last_ns;
	} else if (err == -EPIPE) {
		st->truncated = 1;
		st->end_ns = rp->last_ns;
	}
	return err;
}

/*
 * The run's end, as live: what came before a corruption (err) is still
 * reported, with the live run's counters and those the pipeline computed
 * again in their place. Returns err, else the outputs' error.
 */
static int finish(struct replay *rp, const struct recorded_counters *rc, int err)
{
	int out_err;

	pipeline__finish(rp->pipe, rp->st->end_ns);
	out_err = pipeline__set_recorded_counters(rp->pipe, rc->c, rc->n);
	if (!out_err) {
		out_err = pipeline__finish_sinks(rp->pipe);
		/* the report writes to rp->out; a file sink (--metrics-out, ...) says its own error */
		if (out_err && (ferror(rp->out) || fflush(rp->out)))
			rp->st->output_failed = 1;
		else if (out_err)
			rp->st->sink_failed = 1;
	}
	return err == 0 || err == -EPIPE ? out_err : err;
}

int replay__run(const char *path, const struct replay_opts *o, struct replay_stats *st)
{
	static struct recorded_counters rc;	/* 33 KiB: not on the stack */
	struct replay rp = { .st = st, .out = o->out };
	double t0 = clock_s(CLOCK_MONOTONIC), c0 = clock_s(CLOCK_PROCESS_CPUTIME_ID);
	struct rec_reader *rr;
	struct rec_header h;
	int err;

	memset(st, 0, sizeof(*st));
	rc.n = 0;
	rr = rec_reader__open(path, &h, &err);
	if (!rr)
		return err;
	err = open_pipeline(&rp, &h, o);
	if (!err) {
		report__header(rp.report);
		err = finish(&rp, &rc, replay_frames(&rp, rr, &rc));
	}
	if (!err && fflush(o->out))
		err = -errno;
	st->wall_s = clock_s(CLOCK_MONOTONIC) - t0;
	st->cpu_s = clock_s(CLOCK_PROCESS_CPUTIME_ID) - c0;
	pipeline__free(rp.pipe);
	report__free(rp.report);
	rec_reader__close(rr);
	return err;
}
