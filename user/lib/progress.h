/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * A live progress line for long runs (ttftrace -d, loadgen sweeps), redrawn
 * in place with "\r" + erase-line (ECMA-48 "CSI K") at most every
 * PROGRESS_REDRAW_NS:
 *   ttftrace: 12.3/60 s  42 requests  TTFT p50 123.4 ms
 *   loadgen: 8.1 s  step 3/6 c=8  40/64 requests  TTFT p50 412.0 ms
 * Only on a terminal: progress__new() returns NULL when the stream is not a
 * tty (isatty(3)), and every function accepts NULL, so callers need no
 * checks and runs into files or pipes stay quiet.
 */
#ifndef TTFTRACE_PROGRESS_H
#define TTFTRACE_PROGRESS_H

#include <stdint.h>
#include <stdio.h>

#define PROGRESS_REDRAW_NS 250000000ull

struct progress;

/* prefix e.g. "ttftrace" (copied, at most 31 bytes). NULL: f is not a tty, or ENOMEM. */
struct progress *progress__new(FILE *f, const char *prefix);
/* Erase the line and free. */
void progress__free(struct progress *p);

/* Expected run length in seconds (shown as elapsed/total); 0 = open-ended. */
void progress__set_total(struct progress *p, double total_s);
/*
 * Start a new step (sweeps): label e.g. "step 3/6 c=8" (copied, at most 47
 * bytes; NULL none), requests expected in it (0 unknown). Resets the request
 * count and the TTFT samples, so the P50 is the step's.
 */
void progress__set_step(struct progress *p, const char *label, unsigned n_expected);
/* One finished request; ttft_ms NAN when it had no token. */
void progress__request(struct progress *p, double ttft_ms);
/* Redraw when PROGRESS_REDRAW_NS passed since the last draw (CLOCK_MONOTONIC ns). */
void progress__tick(struct progress *p, uint64_t now_ns);
/* Erase the line now (before printing something else to the same terminal). */
void progress__clear(struct progress *p);

#endif /* TTFTRACE_PROGRESS_H */
