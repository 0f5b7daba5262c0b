/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * OTLP spans written to a file (`ttftrace replay --otlp-out FILE`): one
 * ExportTraceServiceRequest in OTLP/JSON (protobuf when FILE ends in
 * ".pb"; docs/otel.md) with the spans of
 * every finished request, built as user/export/otlp/otlp.h builds a batch for a
 * collector, written at the end of the run. For tests and offline looks
 * without a collector.
 *
 * Ids come from seed (a replay passes the recording's start, so a replay
 * gives the same ids each time); times are CLOCK_MONOTONIC + mono_to_unix_ns.
 * At most OTLP_FILE_MAX requests are kept; more are counted and said on
 * stderr at the end (never silently).
 */
#ifndef TTFTRACE_OTLP_FILE_H
#define TTFTRACE_OTLP_FILE_H

#include <stdint.h>
#include "user/export/sink.h"

#define OTLP_FILE_MAX 4096

/* 0 or -ENOMEM; finish returns -errno when the file cannot be written (said on stderr). */
int otlp_file_sink__new(const char *path, uint64_t seed, int64_t mono_to_unix_ns,
			struct ttf_sink *out);

#endif /* TTFTRACE_OTLP_FILE_H */
