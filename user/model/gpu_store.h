/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * GPU activity received from the injected CUPTI collectors (cupti/gpu_wire.h),
 * kept per process: kernel and copy spans, the host API records that launched
 * them, kernel names and each collector's health counters. Timestamps are
 * CLOCK_MONOTONIC ns, the bpf_ktime_get_ns() domain.
 *
 * Kernels and copies are joined to their launching thread through the
 * correlation id of a RUNTIME/DRIVER API record of the same process; a kernel
 * replayed from a CUDA graph carries the id of the graph launch, so one API
 * record may launch many spans (docs/cases.md #20). Records arrive out of order (CUPTI
 * buffers are per thread), so the join is done when a span is read, not when
 * it is stored.
 */
#ifndef TTFTRACE_GPU_STORE_H
#define TTFTRACE_GPU_STORE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "cupti/gpu_wire.h"

struct gpu_store;

/* A kernel execution. */
struct gpu_kernel_span {
	uint64_t start_ns, end_ns;
	uint32_t pid;            /* CUDA process (as seen by ttftrace) */
	uint32_t tid;            /* launching thread (gettid); 0 if its API record is unknown */
	uint32_t device_id, stream_id, correlation_id;
	uint32_t graph_id;       /* != 0: replayed from a CUDA graph */
	uint32_t grid[3], block[3];
	const char *name;        /* "?" until the collector's NAME message arrived */
};

/* A host<->device copy (MEMCPY) or a memset (MEMSET). */
struct gpu_copy_span {
	uint64_t start_ns, end_ns;
	uint64_t bytes;
	uint32_t pid, tid, device_id, stream_id, correlation_id;
	bool memset;
	uint8_t copy_kind;       /* enum ttf_gpu_copy_kind (MEMCPY) */
	uint8_t src_kind;        /* enum ttf_gpu_mem_kind */
	uint8_t dst_kind;
	bool pageable;           /* a host side is pageable: staged, synchronous copy (docs/cases.md #23) */
	double gbps;             /* bytes / (end - start), in GB/s (1e9 bytes/s) */
};

/* A host API call that was kept by the collector (launch, graph launch, copy, memset, sync). */
struct gpu_api_span {
	uint64_t start_ns, end_ns;
	uint32_t pid, tid, correlation_id, cbid;
	uint8_t domain;          /* enum ttf_gpu_api_domain */
	uint8_t category;        /* enum ttf_gpu_api_category */
};

struct gpu_store *gpu_store__new(void);
void gpu_store__free(struct gpu_store *s);

/* Add one record of process @pid. Returns 0, -EINVAL (bad type), -ENOMEM. */
int gpu_store__add(struct gpu_store *s, uint32_t pid, const struct ttf_gpu_rec *r);
/* Remember a kernel name (@len bytes, not NUL-terminated). Returns 0 or -ENOMEM. */
int gpu_store__add_name(struct gpu_store *s, uint32_t pid, uint64_t name_id, const char *name,
			size_t len);
/*
 * One item of a collector message (kind: TTF_GPU_MSG_RECORDS with one
 * struct ttf_gpu_rec, NAME with struct ttf_gpu_name + name bytes, STATS
 * with struct ttf_gpu_stats; len: body bytes) into the matching call
 * above. Returns 0, -EINVAL (bad kind or size), -ENOMEM.
 */
int gpu_store__add_item(struct gpu_store *s, uint32_t pid, uint32_t kind, const void *body,
			size_t len);
/* Replace @pid's collector counters (they are cumulative). Returns 0 or -ENOMEM. */
int gpu_store__set_stats(struct gpu_store *s, uint32_t pid, const struct ttf_gpu_stats *st);
/* Counters of @pid (pid 0: the sum over all processes). Returns 0 or -ENOENT. */
int gpu_store__stats(const struct gpu_store *s, uint32_t pid, struct ttf_gpu_stats *out);

/* The API record with @corr in @pid. Returns 0 or -ENOENT. */
int gpu_store__api(const struct gpu_store *s, uint32_t pid, uint32_t corr,
		   struct gpu_api_span *out);

/*
 * Spans of @pid (0: every process) overlapping [from_ns, to_ns), sorted by
 * start. Up to @max go to @out; returns how many there are (may exceed @max).
 */
size_t gpu_store__kernels(struct gpu_store *s, uint32_t pid, uint64_t from_ns, uint64_t to_ns,
			  struct gpu_kernel_span *out, size_t max);
size_t gpu_store__copies(struct gpu_store *s, uint32_t pid, uint64_t from_ns, uint64_t to_ns,
			 struct gpu_copy_span *out, size_t max);
/* API records of @pid and thread @tid (0: all) starting in [from_ns, to_ns), sorted by start. */
size_t gpu_store__apis(struct gpu_store *s, uint32_t pid, uint32_t tid, uint64_t from_ns,
		       uint64_t to_ns, struct gpu_api_span *out, size_t max);

/* Forget spans and API records that ended before @before_ns (bounds memory). */
void gpu_store__expire(struct gpu_store *s, uint64_t before_ns);

#endif /* TTFTRACE_GPU_STORE_H */
