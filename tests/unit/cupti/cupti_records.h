/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * Test helper: synthetic CUPTI activity buffers built from the real CUDA 13.0
 * record structs, laid back to back like CUPTI does (each record's stride is
 * its struct size, a multiple of 8; docs/cupti.md A6).
 */
#ifndef TTFTRACE_TESTS_CUPTI_RECORDS_H
#define TTFTRACE_TESTS_CUPTI_RECORDS_H

#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cupti.h>

struct abuf {
	uint8_t *p;
	size_t len, cap;
};

static inline void abuf_put(struct abuf *b, const void *rec, size_t size)
{
	if (!b->p) {
		b->cap = 1 << 16;
		b->p = aligned_alloc(8, b->cap);
	}
	memcpy(b->p + b->len, rec, size);
	b->len += size;
}

static inline void abuf_free(struct abuf *b)
{
	free(b->p);
	memset(b, 0, sizeof(*b));
}

static inline void put_kernel(struct abuf *b, uint32_t corr, uint64_t start, uint64_t end,
			      uint32_t graph_id, const char *name)
{
	CUpti_ActivityKernel10 k;

	memset(&k, 0, sizeof(k));
	k.kind = CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL;
	k.start = start;
	k.end = end;
	k.deviceId = 1;
	k.contextId = 1;
	k.streamId = 7;
	k.gridX = 128;
	k.gridY = 2;
	k.gridZ = 1;
	k.blockX = 256;
	k.blockY = 1;
	k.blockZ = 1;
	k.correlationId = corr;
	k.name = name;
	k.graphId = graph_id;
	k.graphNodeId = graph_id ? 1000 + start : 0;
	abuf_put(b, &k, sizeof(k));
}

static inline void put_memcpy(struct abuf *b, uint32_t corr, uint64_t start, uint64_t end,
			      uint64_t bytes, uint8_t copy_kind, uint8_t src, uint8_t dst)
{
	CUpti_ActivityMemcpy6 m;

	memset(&m, 0, sizeof(m));
	m.kind = CUPTI_ACTIVITY_KIND_MEMCPY;
	m.copyKind = copy_kind;
	m.srcKind = src;
	m.dstKind = dst;
	m.bytes = bytes;
	m.start = start;
	m.end = end;
	m.deviceId = 1;
	m.streamId = 3;
	m.correlationId = corr;
	m.runtimeCorrelationId = corr + 1;
	abuf_put(b, &m, sizeof(m));
}

static inline void put_memset(struct abuf *b, uint32_t corr, uint64_t start, uint64_t end,
			      uint64_t bytes)
{
	CUpti_ActivityMemset4 m;

	memset(&m, 0, sizeof(m));
	m.kind = CUPTI_ACTIVITY_KIND_MEMSET;
	m.bytes = bytes;
	m.start = start;
	m.end = end;
	m.deviceId = 1;
	m.streamId = 3;
	m.correlationId = corr;
	m.memoryKind = CUPTI_ACTIVITY_MEMORY_KIND_DEVICE;
	abuf_put(b, &m, sizeof(m));
}

static inline void put_api(struct abuf *b, CUpti_ActivityKind kind, uint32_t cbid, uint32_t corr,
			   uint32_t tid, uint64_t start, uint64_t end)
{
	CUpti_ActivityAPI a;

	memset(&a, 0, sizeof(a));
	a.kind = kind;
	a.cbid = cbid;
	a.start = start;
	a.end = end;
	a.processId = 4242;
	a.threadId = tid;
	a.correlationId = corr;
	abuf_put(b, &a, sizeof(a));
}

/* The real record iterator from libcupti.so.13 (works without a driver), or NULL. */
static inline void *real_next_record(void)
{
	const char *home = getenv("CUDA_HOME");
	char path[512];
	void *h;

	snprintf(path, sizeof(path), "%s/lib/libcupti.so.13",
		 home && *home ? home : "/usr/local/cuda-13.0");
	h = dlopen(path, RTLD_NOW | RTLD_LOCAL);
	if (!h)
		h = dlopen("libcupti.so.13", RTLD_NOW | RTLD_LOCAL);
	return h ? dlsym(h, "cuptiActivityGetNextRecord") : NULL;
}

#endif /* TTFTRACE_TESTS_CUPTI_RECORDS_H */
