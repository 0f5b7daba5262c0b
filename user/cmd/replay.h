/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * Replay of a recording (user/export/record/record.h): the frames are fed to the same
 * pipeline entries as live tracing (user/core/pipeline.h), in recorded order,
 * with the recorded watermarks, set up as the live pipeline was (the
 * header's flags) and with its sinks opened as live (user/cmd/sinks.h, in
 * the same order), so the requests come out as they did live. Runs at full
 * speed and needs no privileges. The text output's TIME column counts from
 * the recording's start (live: from the tracer's start, before the probes
 * loaded).
 */
#ifndef TTFTRACE_REPLAY_H
#define TTFTRACE_REPLAY_H

#include <stdint.h>
#include <stdio.h>
#include "user/export/record/record.h"
#include "user/proto/http2/grpc.h"

struct replay_opts {
	FILE *out;	/* requests and summary */
	int json;	/* NDJSON as `ttftrace --json` */
	int verbose;
	const struct grpc_profile *grpc_profile;	/* --grpc-profile; NULL none */
	const char *perfetto;	/* --perfetto FILE: the timeline too (user/export/perfetto/perfetto.h); NULL none */
	int perfetto_sched;	/* --perfetto-sched: enum perfetto_sched */
	const char *metrics_out;	/* --metrics-out FILE: Prometheus text at the end; NULL none */
	const char *otlp_out;	/* --otlp-out FILE: OTLP/JSON spans at the end; NULL none */
};

struct replay_stats {
	uint64_t frames[REC_FRAME__MAX + 1];	/* by enum rec_frame */
	uint64_t bad_frames;		/* NET/SCHED/ENGINE/GPU frames of a wrong size: skipped */
	uint64_t end_ns;		/* END time, or the last record's time when truncated */
	int truncated;			/* no END frame (-EPIPE) */
	int output_failed;		/* the error returned is the output's, not the recording's */
	int sink_failed;		/* ... a file sink's, which said its own error */
	int open_exit;			/* an output could not be opened: its enum ttf_exit */
	double wall_s;			/* time spent replaying */
	double cpu_s;			/* CPU time of the process meanwhile (user + system) */
};

/*
 * Replay path through a fresh pipeline and report. Returns 0 (also for a
 * truncated file: st->truncated), or negative errno: open/header errors as
 * rec_reader__open, -EBADMSG for a corrupt stream (the requests before the
 * corruption are reported), -ENOMEM, an output error, or -ECANCELED when an
 * output could not be opened (st->open_exit; said on stderr already).
 */
int replay__run(const char *path, const struct replay_opts *o, struct replay_stats *st);

#endif /* TTFTRACE_REPLAY_H */
