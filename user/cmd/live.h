/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * The tracer's live view of a run, a sink (user/export/sink.h): keeps the TTFT,
 * TPOT, ITL, E2E and TTFV samples of finished requests by the summary's
 * rules (user/export/report/report.h: TTF_REQ_UNKNOWN requests feed no percentile), so
 * that --slo is checked on the same numbers the summary prints, and draws
 * the progress line (user/lib/progress.h) from the sink's tick hook.
 *
 * The progress line is drawn only when stderr is a terminal and the
 * per-request output does not go to that terminal too (-o FILE, or stdout is
 * not a tty): live text lines on the terminal are the progress already, and
 * a "\r" line would garble them.
 */
#ifndef TTFTRACE_LIVE_H
#define TTFTRACE_LIVE_H

#include "user/cmd/cli.h"
#include "user/core/pipeline.h"

struct live;

/*
 * Add the live sink to p when o asks for an SLO check or a progress line
 * can be shown; *out is NULL when neither applies. The pipeline owns the
 * sink: *out is valid until pipeline__free(). Returns 0 or an enum ttf_exit
 * code after printing the error.
 */
int live__open(const struct ttf_opts *o, struct pipeline *p, struct live **out);

/*
 * After the summary: check o->slo_spec on the run's samples and print one
 * line per SLO to stderr. Returns TTF_EXIT_SLO when an SLO is not met, else
 * 0 (also when l is NULL or no SLO was given).
 */
int live__slo_verdict(struct live *l);

#endif /* TTFTRACE_LIVE_H */
