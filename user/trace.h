/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * The tracer's main job: resolve targets, load and attach the probes, feed
 * ring-buffer records to the connection tracker, print requests as they
 * finish and the summary at the end. Returns an enum ttf_exit code.
 */
#ifndef TTFTRACE_TRACE_H
#define TTFTRACE_TRACE_H

#include "user/cli.h"

int trace__run(const struct ttf_opts *opts);

#endif /* TTFTRACE_TRACE_H */
