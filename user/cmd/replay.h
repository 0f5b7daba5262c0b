/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * Replay of a recording (user/export/record.h): the frames are fed to the same
 * user-side pipeline as live tracing (user/core/pipeline.h), in recorded order,
 * with the recorded watermarks, so the requests come out as they did live.
 * Scheduler records build a scheduler view used as the overlay, as in
 * user/cmd/trace.c. Runs at full speed and needs no privileges. The text
 * output's TIME column counts from the recording's start (live: from the
 * tracer's start, before the probes loaded).
 *
 * Not in a recording, so not replayed: GPU spans (CUPTI), the comm names of
 * scheduler threads, and the /proc seeding of threads that slept when the
 * live trace began (their time before their first record is unknown here).
 */
#ifndef TTFTRACE_REPLAY_H
#define TTFTRACE_REPLAY_H

#include <stdint.h>
#include <stdio.h>
#include "user/export/record.h"

struct rec_reader;

/*
 * Open path and check its header (copied to *h). NULL with *err: -errno
 * from open, -EBADMSG (not a recording, bad version or byte order), -ENOMEM.
 */
struct rec_reader *rec_reader__open(const char *path, struct rec_header *h, int *err);
/*
 * The next frame: returns 1 with *type, *payload (8-byte aligned, valid
 * until the next call) and *len; 0 after END; -EPIPE when the file ends
 * without END (killed tracer: everything before is valid); -EBADMSG for a
 * corrupt frame or gzip stream; -EIO for a read error.
 */
int rec_reader__next(struct rec_reader *rr, uint32_t *type, const void **payload, uint32_t *len);
void rec_reader__close(struct rec_reader *rr);

struct replay_opts {
	FILE *out;	/* requests and summary */
	int json;	/* NDJSON as `ttftrace --json` */
	int verbose;
};

struct replay_stats {
	uint64_t frames[REC_END + 1];	/* by enum rec_frame */
	uint64_t bad_frames;		/* NET/SCHED/ENGINE frames of a wrong size: skipped */
	uint64_t end_ns;		/* END time, or the last record's time when truncated */
	int truncated;			/* no END frame (-EPIPE) */
	double wall_s;			/* time spent replaying */
	double cpu_s;			/* CPU time of the process meanwhile (user + system) */
};

/*
 * Replay path through a fresh pipeline and report. Returns 0 (also for a
 * truncated file: st->truncated), or negative errno: open/header errors as
 * rec_reader__open, -EBADMSG for a corrupt stream (the requests before the
 * corruption are reported), -ENOMEM, or an output error.
 */
int replay__run(const char *path, const struct replay_opts *o, struct replay_stats *st);

/* `ttftrace replay FILE ...`: argv[0] is "replay". Returns an enum ttf_exit. */
int replay_main(int argc, char **argv);

#endif /* TTFTRACE_REPLAY_H */
