/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * Decoder: one completed CUPTI activity buffer -> struct ttf_gpu_rec records.
 * Pure apart from its own tables; runs on the collector's thread (never in a
 * CUPTI callback) and in unit tests and bench/ on synthetic buffers.
 *
 * Only the stable prefix fields of the CUDA 13.0 record structs are read
 * (CUpti_ActivityKernel10, Memcpy6, Memset4, API; offsets unchanged since
 * Kernel4, docs/cupti.md A2), and records are walked with
 * cuptiActivityGetNextRecord, never by computing sizes ourselves.
 */
#ifndef TTFTRACE_CUPTI_DECODE_H
#define TTFTRACE_CUPTI_DECODE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <cupti.h>

#include "cupti/gpu_wire.h"

/* Internal to libttftrace-cupti.so: keep out of the host process's symbol space. */
#pragma GCC visibility push(hidden)

typedef CUptiResult (*cupti_next_record_fn)(uint8_t *buf, size_t valid_bytes,
					    CUpti_Activity **rec);

/* An interned kernel name; sent_epoch lets the transport resend after a reconnect. */
struct cupti_name {
	uint64_t id;      /* 64-bit FNV-1a of the full name, never 0 */
	const char *str;  /* private copy, NUL-terminated, at most TTF_GPU_NAME_MAX bytes */
	uint32_t len;
	uint32_t truncated;
	uint32_t sent_epoch;
};

struct cupti_decode_sink {
	/* One kept record; @name is set for kernels whose name was interned. */
	void (*rec)(void *ctx, const struct ttf_gpu_rec *rec, struct cupti_name *name);
	void *ctx;
};

#define CUPTI_DEDUPE_SLOTS (1u << 16) /* recent (kind, correlation id, start) keys */
#define CUPTI_NAME_SLOTS (1u << 14)   /* distinct kernel names kept (power of 2) */

struct cupti_dedupe_slot {
	uint64_t start;
	uint32_t corr;
	uint32_t kind;
};

struct cupti_decoder {
	cupti_next_record_fn next;
	struct cupti_decode_sink sink;
	int64_t clock_offset_ns; /* added to every timestamp (0 with the MONOTONIC callback) */
	bool api_all;            /* keep every API record, not only the kept categories */
	struct cupti_dedupe_slot *dedupe;   /* CUPTI_DEDUPE_SLOTS, direct-mapped */
	struct cupti_name *names;           /* CUPTI_NAME_SLOTS, open addressing by id */
	const char **name_ptrs;             /* CUPTI_NAME_SLOTS: CUPTI's pointer -> names[] slot */
	uint32_t *name_ptr_slot;
	uint32_t names_used;
	struct ttf_gpu_stats *stats;        /* counters the decoder adds to (owned by the caller) */
};

/*
 * Allocate the decoder's tables (about 1.4 MiB). @next is the record iterator
 * (cuptiActivityGetNextRecord or a fake), @stats the counters to update.
 * Returns 0 or -ENOMEM.
 */
int cupti_decoder__init(struct cupti_decoder *d, cupti_next_record_fn next,
			const struct cupti_decode_sink *sink, struct ttf_gpu_stats *stats);
void cupti_decoder__fini(struct cupti_decoder *d);

/*
 * Decode the @valid_bytes of @buf: each kept record goes to the sink, in
 * buffer order. Dropped and counted in stats: duplicates of a recent
 * (kind, correlation id, start), and records with a zero start or end or
 * end < start (parcagpu#23, docs/cases.md #22). A truncated last record ends the walk
 * (cuptiActivityGetNextRecord returns MAX_LIMIT_REACHED or INVALID_KIND).
 * Returns the number of records passed to the sink.
 */
size_t cupti_decoder__buffer(struct cupti_decoder *d, uint8_t *buf, size_t valid_bytes);

/* 64-bit FNV-1a of the NUL-terminated @s (never 0). */
uint64_t cupti_name__hash(const char *s);

#pragma GCC visibility pop

#endif /* TTFTRACE_CUPTI_DECODE_H */
