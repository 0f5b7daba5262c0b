/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * The sinks (exporters, recorders, the report) of a run, added to the
 * pipeline before the first record: one place and one order for the live
 * tracer and `ttftrace replay`, so that each exporter is a few lines here
 * plus its own file.
 *
 * The order is the order in which the sinks finish (pipeline__finish_sinks),
 * and two outputs depend on it:
 * - the recording comes before the network exporters: its COUNTERS frame
 *   holds their stats as they were before they flushed, and a replay prints
 *   those counters;
 * - the interval summaries and the report write to the same stream, the
 *   report last: its summary comes after the last interval line and has the
 *   other sinks' final counters (the OTLP exporter's drops).
 */
#ifndef TTFTRACE_SINKS_H
#define TTFTRACE_SINKS_H

#include <stdint.h>
#include <stdio.h>
#include "user/cmd/cli.h"
#include "user/cmd/live.h"
#include "user/core/pipeline.h"
#include "user/export/interval.h"
#include "user/export/report/report.h"

/* The sinks of a run, in the order they are added; a NULL member is not opened. */
struct sink_set {
	const char *record;		/* --record FILE (user/export/record/record.h) */
	const char *perfetto;		/* --perfetto FILE (user/export/perfetto/perfetto.h) */
	int perfetto_sched;		/* --perfetto-sched: enum perfetto_sched */
	const char *metrics;		/* --metrics [ADDR:]PORT: Prometheus endpoint */
	const char *sysfs_root;		/* ... its PCIe gauges read under it (NULL: /sys) */
	const struct prom_buckets *buckets;	/* ... and metrics_out's (NULL: defaults) */
	const char *metrics_out;	/* replay --metrics-out FILE: a scrape at the end */
	int otlp;			/* the OTLP/HTTP export, when otlp_url or the */
	const char *otlp_url;		/* OTEL_EXPORTER_OTLP_* variables ask for it */
	const char *otlp_out;		/* replay --otlp-out FILE: the spans at the end */
	uint64_t otlp_out_seed;		/* ... its span ids' seed */
	int64_t otlp_out_mono_to_unix_ns;	/* ... and clock offset */
	const struct ttf_opts *live;	/* the live view for these options (user/cmd/live.h) */
	struct live **live_out;		/* ... set to it (NULL when none was needed) */
	const struct interval_opts *interval;	/* -i: interval summaries */
	struct report *report;		/* the text/NDJSON report, added last */
};

/* Returns 0, or an enum ttf_exit code after printing the error. */
int sinks__open_set(const struct sink_set *s, struct pipeline *p);

/*
 * Every sink of the live tracer for o: those of o, the live view (*live),
 * the interval summaries on out from t0_ns (-i) and the report. Returns 0,
 * or an enum ttf_exit code after printing the error.
 */
int sinks__open_live(const struct ttf_opts *o, struct pipeline *p, struct report *report,
		     FILE *out, uint64_t t0_ns, struct live **live);

/*
 * Before the probes load (user/cmd/sinks_check.c): the outputs o asks for can
 * be opened. Returns 0, or an enum ttf_exit code after printing the error.
 */
int sinks__check_live(const struct ttf_opts *o);

#endif /* TTFTRACE_SINKS_H */
