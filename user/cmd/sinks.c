// SPDX-License-Identifier: GPL-2.0-only
/* The sinks of a run, in one order for the live tracer and replay; see sinks.h. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include "user/lib/exit.h"
#include "user/lib/log.h"
#include "user/export/otlp/otlp.h"
#include "user/export/otlp/otlp_file.h"
#include "user/export/perfetto/perfetto.h"
#include "user/export/prom/prom.h"
#include "user/export/record/record.h"
#include "user/cmd/sinks.h"

/* The pipeline owns s once added; one it has no room for is destroyed here. */
static int add(struct pipeline *p, struct ttf_sink *s)
{
	if (pipeline__add_sink(p, s)) {
		if (s->destroy)	/* the report's owner frees it */
			s->destroy(s->ctx);
		ttf_error(NULL, "too many outputs");
		return TTF_EXIT_USAGE;
	}
	return 0;
}

/* A file output that could not be created. */
static int cannot_write(const char *path, int err)
{
	ttf_error(err == -ENOSPC ? "free space on that file system" :
		  "check that the directory exists and is writable",
		  "cannot write %s: %s", path, strerror(-err));
	return TTF_EXIT_OUTPUT;
}

/* An output whose file is written at the end: only memory can fail now. */
static int no_memory(void)
{
	ttf_error(NULL, "out of memory");
	return TTF_EXIT_INTERNAL;
}

/* The recording, with the pipeline's setup in its header for the replay. */
static int open_record(const char *path, struct pipeline *p)
{
	const struct pipeline_opts *po = pipeline__opts(p);
	uint32_t flags = (po->xmit_expected ? REC_F_XMIT : 0) |
			 (po->attribution ? REC_F_ATTRIBUTION : 0) |
			 (po->sched ? REC_F_SCHED : 0) | (po->gpu ? REC_F_GPU : 0);
	struct ttf_sink s;
	int err = record_sink__new(path, flags, &s);

	return err ? cannot_write(path, err) : add(p, &s);
}

static int open_perfetto(const struct sink_set *ss, struct pipeline *p)
{
	struct perfetto_opts po = { .gpu = pipeline__gpu(p), .sched = pipeline__sched(p),
				    .sched_mode = ss->perfetto_sched };
	struct ttf_sink s;
	int err = perfetto_sink__new_opts(ss->perfetto, &po, &s);

	return err ? cannot_write(ss->perfetto, err) : add(p, &s);
}

static int open_metrics(const struct sink_set *ss, struct pipeline *p)
{
	struct ttf_sink s;
	int err = prom_sink__new(ss->metrics, ss->sysfs_root, ss->buckets, &s);

	if (err) {
		ttf_error("give a free port, or ADDR:PORT with an address of this host",
			  "cannot serve metrics on %s: %s", ss->metrics, strerror(-err));
		return err == -EINVAL ? TTF_EXIT_USAGE : TTF_EXIT_OUTPUT;
	}
	return add(p, &s);
}

static int open_metrics_out(const struct sink_set *ss, struct pipeline *p)
{
	struct ttf_sink s;

	return prom_file_sink__new(ss->metrics_out, ss->buckets, &s) ? no_memory() : add(p, &s);
}

/* --otlp URL or the OTEL_EXPORTER_OTLP_* variables (otlp_config.h), if they ask for it */
static int open_otlp(const char *url, struct pipeline *p)
{
	static struct otlp_config oc;	/* large: not on the stack */
	char msg[256], hint[160];
	struct ttf_sink s;
	int err;

	if (otlp_config__load(&oc, url, getenv, msg, sizeof(msg), hint, sizeof(hint))) {
		ttf_error(hint[0] ? hint : NULL, "%s", msg);
		return TTF_EXIT_USAGE;
	}
	if (!otlp_config__enabled(&oc))
		return 0;
	err = otlp_sink__new(&oc, &s);
	if (err) {
		ttf_error(NULL, "cannot start the OTLP export: %s", strerror(-err));
		return TTF_EXIT_INTERNAL;
	}
	return add(p, &s);
}

static int open_otlp_out(const struct sink_set *ss, struct pipeline *p)
{
	struct ttf_sink s;

	if (otlp_file_sink__new(ss->otlp_out, ss->otlp_out_seed, ss->otlp_out_mono_to_unix_ns,
				&s))
		return no_memory();
	return add(p, &s);
}

static int open_interval(const struct interval_opts *io, struct pipeline *p)
{
	struct ttf_sink s;

	return interval_sink__new(io, &s) ? no_memory() : add(p, &s);
}

int sinks__open_set(const struct sink_set *ss, struct pipeline *p)
{
	int code = 0;

	if (ss->record)
		code = open_record(ss->record, p);
	if (!code && ss->perfetto)
		code = open_perfetto(ss, p);
	if (!code && ss->metrics)
		code = open_metrics(ss, p);
	if (!code && ss->metrics_out)
		code = open_metrics_out(ss, p);
	if (!code && ss->otlp)
		code = open_otlp(ss->otlp_url, p);
	if (!code && ss->otlp_out)
		code = open_otlp_out(ss, p);
	if (!code && ss->live)
		code = live__open(ss->live, p, ss->live_out);
	if (!code && ss->interval)
		code = open_interval(ss->interval, p);
	if (!code && ss->report) {
		struct ttf_sink s;

		report__sink(ss->report, &s);
		code = add(p, &s);
	}
	return code;
}

/* The exporters that o asks for. */
static void exports_of(const struct ttf_opts *o, struct sink_set *ss)
{
	*ss = (struct sink_set){ .record = o->record, .perfetto = o->perfetto,
				 .perfetto_sched = o->perfetto_sched, .metrics = o->metrics,
				 .sysfs_root = o->sysfs_root, .buckets = &o->buckets,
				 .otlp = 1, .otlp_url = o->otlp_url };
}

int sinks__open_live(const struct ttf_opts *o, struct pipeline *p, struct report *report,
		     FILE *out, uint64_t t0_ns, struct live **live)
{
	struct interval_opts io = { .out = out, .json = o->json,
				    .interval_ns = (uint64_t)(o->interval_s * 1e9), .t0_ns = t0_ns };
	struct sink_set ss;

	exports_of(o, &ss);
	ss.live = o;
	ss.live_out = live;
	ss.interval = o->interval_s > 0 ? &io : NULL;
	ss.report = report;
	return sinks__open_set(&ss, p);
}
