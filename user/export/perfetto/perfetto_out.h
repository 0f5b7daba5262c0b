/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * The writing half of the Perfetto sink (user/export/perfetto/perfetto.h): the output
 * file (plain, or gzip through zlib when its name ends in ".gz"), written to
 * FILE.tmp.XXXXXX and renamed into place at the end, and the trace-event
 * JSON primitives (one event object at a time, timestamps in us with ns
 * precision). Internal to user/export/perfetto*.c.
 */
#ifndef TTFTRACE_PERFETTO_OUT_H
#define TTFTRACE_PERFETTO_OUT_H

#include <stdint.h>
#include <stdio.h>

struct pf_out {
	FILE *f;		/* the JSON stream (a zlib gzip writer behind it for .gz) */
	char *path, *tmp_path;	/* tmp_path NULL: written in place (a device, a FIFO) */
	int sync_fd;		/* a second descriptor of the file, for fsync after close; -1 */
	int gz;
	int first;		/* no event written yet (no comma before the next) */
	uint64_t events;
};

/* 1 when path names gzip output (ends in ".gz"). */
int pf_out__is_gz(const char *path);
/* Opens the temporary file (or the device) for @path. 0 or a negative errno. */
int pf_out__open(struct pf_out *o, const char *path);
/* Flushes, syncs, closes and renames into place. 0 or a negative errno (the partial file is removed). */
int pf_out__close(struct pf_out *o);
/* Without close: removes the temporary file (no partial file is left). */
void pf_out__abort(struct pf_out *o);

/* A JSON string (escaped; the output stays ASCII for any byte). */
void pf_jstr(FILE *f, const char *s);
/* ns as microseconds with three decimals. */
void pf_us(FILE *f, uint64_t ns);
/* Starts an event object: ph, ts, pid, tid; the caller adds fields and ends it with '}'. */
void pf_ev(struct pf_out *o, char ph, uint64_t ts_ns, uint32_t pid, uint32_t tid);
/* ,"name":...,"cat":... (cat may be NULL) */
void pf_name(struct pf_out *o, const char *name, const char *cat);
/* An "X" event up to its name and cat; the caller adds fields and ends it. */
void pf_complete(struct pf_out *o, uint32_t pid, uint32_t tid, uint64_t start_ns,
		 uint64_t dur_ns, const char *name, const char *cat);
/* A whole "M" event: what is process_name or thread_name. */
void pf_meta(struct pf_out *o, uint32_t pid, uint32_t tid, const char *what, const char *name);

#endif /* TTFTRACE_PERFETTO_OUT_H */
