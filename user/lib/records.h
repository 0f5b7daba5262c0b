/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * The record kinds ttftrace works from, and the one way they travel: a
 * probe source (user/probe/source.h) or a recording (user/export/record/record.h)
 * calls these hooks, and the pipeline (user/core/pipeline.h) implements
 * them. Every hook returns 0 or a negative errno (the record was dropped
 * and counted by the receiver); a source goes on either way.
 *
 *   net     struct ttf_net_event + payload, len bytes (bpf/net.h)
 *   sched   struct ttf_sched_event (bpf/sched.h)
 *   engine  struct ttf_engine_event (bpf/engine.h)
 *   gpu     one item of a CUPTI collector of process pid (cupti/gpu_wire.h):
 *           kind TTF_GPU_MSG_RECORDS with one struct ttf_gpu_rec,
 *           TTF_GPU_MSG_NAME with struct ttf_gpu_name + name bytes, or
 *           TTF_GPU_MSG_STATS with struct ttf_gpu_stats; len: body bytes
 *
 * All timestamps are CLOCK_MONOTONIC ns (bpf_ktime_get_ns(); CUPTI is put
 * on the same clock by the collector).
 */
#ifndef TTFTRACE_LIB_RECORDS_H
#define TTFTRACE_LIB_RECORDS_H

#include <stddef.h>
#include <stdint.h>
#include "bpf/engine.h"
#include "bpf/net.h"
#include "bpf/sched.h"

struct ttf_records {
	void *ctx;
	int (*net)(void *ctx, const struct ttf_net_event *e, size_t len);
	int (*sched)(void *ctx, const struct ttf_sched_event *e);
	int (*engine)(void *ctx, const struct ttf_engine_event *e);
	int (*gpu)(void *ctx, uint32_t pid, uint32_t kind, const void *body, size_t len);
};

/* A name/value pair of the drop and health counters (names are static strings). */
struct report_counter {
	const char *name;
	uint64_t value;
};

/* A group of counters: writes at most cap into c; returns how many. */
typedef int (*ttf_counters_fn)(void *ctx, struct report_counter *c, int cap);

#endif /* TTFTRACE_LIB_RECORDS_H */
