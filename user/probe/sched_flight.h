/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * The reading side of the scheduler's per-CPU flight recorder (the maps
 * `flight` and `flight_head` of bpf/sched.bpf.c, layout in bpf/sched.h):
 * the slots mapped read-only, the head lines read-write, as each read
 * stores how far it read there (the BPF side wakes the reader by it); each
 * read takes what every CPU wrote since the last one, oldest first across
 * CPUs, and counts what was overwritten before it could be read.
 */
#ifndef TTFTRACE_SCHED_FLIGHT_H
#define TTFTRACE_SCHED_FLIGHT_H

#include <stdint.h>
#include "bpf/sched.h"

struct sched_flight;

/* Fewest and most slots a CPU gets (the recorder's size per CPU). */
#define SCHED_FLIGHT_MIN_LOG2 10
#define SCHED_FLIGHT_MAX_LOG2 16
/* The most the recorder takes over all CPUs (a many-CPU host gets fewer slots a CPU). */
#define SCHED_FLIGHT_MAX_BYTES (16u << 20)

/*
 * log2 of the slots per CPU: spans_per_cpu rounded up to a power of two,
 * within SCHED_FLIGHT_MIN_LOG2..SCHED_FLIGHT_MAX_LOG2, and down while ncpus
 * CPUs of them exceed SCHED_FLIGHT_MAX_BYTES.
 */
uint32_t sched_flight__log2(uint32_t spans_per_cpu, int ncpus);

/*
 * Map the recorder: slots_fd of `flight` (ncpus << log2 spans), heads_fd of
 * `flight_head` (ncpus * TTF_SCHED_FLIGHT_HEAD_STRIDE words). Reading starts
 * at what is there now. NULL and *err (negative errno) on failure.
 */
struct sched_flight *sched_flight__map(int slots_fd, int heads_fd, int ncpus, uint32_t log2,
				       int *err);

typedef int (*sched_span_cb)(void *ctx, const struct ttf_sched_span *s);

/*
 * Everything written since the last read, ordered by switch-out time
 * (ts_ns), to cb; a cb that returns non-zero stops the read (the rest of
 * this batch is dropped, and counted overwritten). Returns the spans read,
 * or cb's value.
 */
int sched_flight__read(struct sched_flight *f, sched_span_cb cb, void *ctx);

/* Spans written in all, and spans overwritten before they were read. */
uint64_t sched_flight__written(const struct sched_flight *f);
uint64_t sched_flight__overwritten(const struct sched_flight *f);

void sched_flight__free(struct sched_flight *f);

#endif /* TTFTRACE_SCHED_FLIGHT_H */
