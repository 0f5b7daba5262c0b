/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * The sinks (exporters, recorders) that the command line asks for, added to
 * the pipeline before tracing starts. One place, so that each exporter is a
 * few lines here plus its own file.
 */
#ifndef TTFTRACE_SINKS_H
#define TTFTRACE_SINKS_H

#include "user/cmd/cli.h"
#include "user/core/pipeline.h"

/* Returns 0, or an enum ttf_exit code after printing the error. */
int sinks__open(const struct ttf_opts *o, struct pipeline *p);

#endif /* TTFTRACE_SINKS_H */
