/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * The tracer's main job: resolve targets, load and attach the probes, feed
 * ring-buffer records to the connection tracker, print requests as they
 * finish and the summary at the end. Returns an enum ttf_exit code.
 */
#ifndef TTFTRACE_TRACE_H
#define TTFTRACE_TRACE_H

#include "user/cmd/cli.h"

int trace__run(const struct ttf_opts *opts);

/*
 * From now on SIGINT and SIGTERM end a trace with a complete summary and
 * complete output files (even when they arrive before trace__run starts,
 * and when the shell started ttftrace with SIGINT ignored, as it does for
 * background jobs of scripts). Call first thing in main().
 */
void trace__catch_signals(void);

#endif /* TTFTRACE_TRACE_H */
