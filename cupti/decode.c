// SPDX-License-Identifier: GPL-2.0-only
#include <errno.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>

#include "cupti/cbid.h"
#include "cupti/decode.h"

/*
 * The newest kernel and memcpy structs of the headers built with: CUDA 13's
 * Kernel10 and Memcpy6, before that Kernel8 and Memcpy5 (CUDA 11.8 to 12.x;
 * 13.0 keeps them in cupti_activity_deprecated.h). Every field read sits at
 * the same offset in all of them (docs/cupti.md A2, measured on the 13.0 and
 * 11.8 headers), so the decoder is the same whichever libcupti the process
 * loads: the record sizes, which do differ, are the iterator's business.
 */
#if CUPTI_API_VERSION >= 130000
typedef CUpti_ActivityKernel10 cupti_kernel_rec;
typedef CUpti_ActivityMemcpy6 cupti_memcpy_rec;
#else
typedef CUpti_ActivityKernel8 cupti_kernel_rec;
typedef CUpti_ActivityMemcpy5 cupti_memcpy_rec;
#endif

/* If a header moves a field read, the build fails here instead of decoding garbage. */
_Static_assert(offsetof(cupti_kernel_rec, start) == 16, "Kernel.start");
_Static_assert(offsetof(cupti_kernel_rec, end) == 24, "Kernel.end");
_Static_assert(offsetof(cupti_kernel_rec, deviceId) == 40, "Kernel.deviceId");
_Static_assert(offsetof(cupti_kernel_rec, streamId) == 48, "Kernel.streamId");
_Static_assert(offsetof(cupti_kernel_rec, gridX) == 52, "Kernel.gridX");
_Static_assert(offsetof(cupti_kernel_rec, blockX) == 64, "Kernel.blockX");
_Static_assert(offsetof(cupti_kernel_rec, correlationId) == 92, "Kernel.corr");
_Static_assert(offsetof(cupti_kernel_rec, name) == 104, "Kernel.name");
_Static_assert(offsetof(cupti_kernel_rec, graphId) == 156, "Kernel.graphId");
_Static_assert(offsetof(cupti_memcpy_rec, copyKind) == 4, "Memcpy.copyKind");
_Static_assert(offsetof(cupti_memcpy_rec, bytes) == 8, "Memcpy.bytes");
_Static_assert(offsetof(cupti_memcpy_rec, start) == 16, "Memcpy.start");
_Static_assert(offsetof(cupti_memcpy_rec, deviceId) == 32, "Memcpy.deviceId");
_Static_assert(offsetof(cupti_memcpy_rec, streamId) == 40, "Memcpy.streamId");
_Static_assert(offsetof(cupti_memcpy_rec, correlationId) == 44, "Memcpy.corr");
_Static_assert(offsetof(cupti_memcpy_rec, runtimeCorrelationId) == 48, "Memcpy.rtcorr");
_Static_assert(offsetof(cupti_memcpy_rec, graphId) == 72, "Memcpy.graphId");
_Static_assert(offsetof(CUpti_ActivityMemset4, bytes) == 8, "Memset4.bytes");
_Static_assert(offsetof(CUpti_ActivityMemset4, start) == 16, "Memset4.start");
_Static_assert(offsetof(CUpti_ActivityMemset4, streamId) == 40, "Memset4.streamId");
_Static_assert(offsetof(CUpti_ActivityMemset4, correlationId) == 44, "Memset4.corr");
_Static_assert(offsetof(CUpti_ActivityMemset4, graphId) == 72, "Memset4.graphId");
_Static_assert(offsetof(CUpti_ActivityAPI, cbid) == 4, "API.cbid");
_Static_assert(offsetof(CUpti_ActivityAPI, start) == 8, "API.start");
_Static_assert(offsetof(CUpti_ActivityAPI, threadId) == 28, "API.threadId");
_Static_assert(offsetof(CUpti_ActivityAPI, correlationId) == 32, "API.corr");

uint64_t cupti_name__hash(const char *s)
{
	uint64_t h = 0xcbf29ce484222325ull;

	for (; *s; s++)
		h = (h ^ (uint8_t)*s) * 0x100000001b3ull;
	return h ? h : 1;
}

int cupti_decoder__init(struct cupti_decoder *d, cupti_next_record_fn next,
			const struct cupti_decode_sink *sink, struct ttf_gpu_stats *stats)
{
	memset(d, 0, sizeof(*d));
	d->next = next;
	d->sink = *sink;
	d->stats = stats;
	d->dedupe = calloc(CUPTI_DEDUPE_SLOTS, sizeof(*d->dedupe));
	d->names = calloc(CUPTI_NAME_SLOTS, sizeof(*d->names));
	d->name_ptrs = calloc(CUPTI_NAME_SLOTS, sizeof(*d->name_ptrs));
	d->name_ptr_slot = calloc(CUPTI_NAME_SLOTS, sizeof(*d->name_ptr_slot));
	if (!d->dedupe || !d->names || !d->name_ptrs || !d->name_ptr_slot) {
		cupti_decoder__fini(d);
		return -ENOMEM;
	}
	return 0;
}

void cupti_decoder__fini(struct cupti_decoder *d)
{
	if (d->names)
		for (uint32_t i = 0; i < CUPTI_NAME_SLOTS; i++)
			free((char *)d->names[i].str);
	free(d->dedupe);
	free(d->names);
	free(d->name_ptrs);
	free(d->name_ptr_slot);
	d->dedupe = NULL;
	d->names = NULL;
	d->name_ptrs = NULL;
	d->name_ptr_slot = NULL;
}

/* True if (kind, corr, start) was seen among the recent keys; remembers it. */
static bool is_duplicate(struct cupti_decoder *d, uint32_t kind, uint32_t corr, uint64_t start)
{
	uint64_t h = (start * 0x9e3779b97f4a7c15ull) ^ ((uint64_t)corr * 0xc2b2ae3d27d4eb4full) ^ kind;
	struct cupti_dedupe_slot *s = &d->dedupe[(h ^ (h >> 29)) & (CUPTI_DEDUPE_SLOTS - 1)];

	if (s->start == start && s->corr == corr && s->kind == kind)
		return true;
	s->start = start;
	s->corr = corr;
	s->kind = kind;
	return false;
}

static struct cupti_name *intern_by_id(struct cupti_decoder *d, const char *str, uint64_t id)
{
	uint32_t slot = (uint32_t)id & (CUPTI_NAME_SLOTS - 1);
	struct cupti_name *n;
	size_t len;
	char *copy;

	for (int probe = 0; probe < 32; probe++, slot = (slot + 1) & (CUPTI_NAME_SLOTS - 1)) {
		n = &d->names[slot];
		if (n->id == id)
			return n;
		if (n->id)
			continue;
		/* Keep a quarter of the table free so probes stay short. */
		if (d->names_used >= CUPTI_NAME_SLOTS / 4 * 3)
			return NULL;
		len = strnlen(str, TTF_GPU_NAME_MAX);
		copy = malloc(len + 1);
		if (!copy)
			return NULL;
		memcpy(copy, str, len);
		copy[len] = 0;
		n->id = id;
		n->str = copy;
		n->len = len;
		n->truncated = str[len] != 0;
		n->sent_epoch = 0;
		d->names_used++;
		return n;
	}
	return NULL;
}

/*
 * CUPTI hands out one shared string per kernel function, so a pointer cache
 * avoids hashing the (often 200+ byte) name for every record.
 */
static struct cupti_name *intern(struct cupti_decoder *d, const char *str, uint64_t *id)
{
	uint64_t p = (uint64_t)(uintptr_t)str;
	uint32_t slot = (uint32_t)((p * 0x9e3779b97f4a7c15ull) >> 50) & (CUPTI_NAME_SLOTS - 1);
	struct cupti_name *n;

	for (int probe = 0; probe < 8; probe++, slot = (slot + 1) & (CUPTI_NAME_SLOTS - 1)) {
		if (d->name_ptrs[slot] == str) {
			n = &d->names[d->name_ptr_slot[slot] - 1];
			*id = n->id;
			return n;
		}
		if (!d->name_ptrs[slot])
			break;
	}
	*id = cupti_name__hash(str);
	n = intern_by_id(d, str, *id);
	if (!n) {
		d->stats->names_dropped++;
		return NULL;
	}
	if (!d->name_ptrs[slot]) {
		d->name_ptrs[slot] = str;
		d->name_ptr_slot[slot] = (uint32_t)(n - d->names) + 1;
	}
	return n;
}

/* Timestamps: shift into the MONOTONIC domain, reject the invalid ones. */
static bool set_times(struct cupti_decoder *d, struct ttf_gpu_rec *r, uint64_t start,
		      uint64_t end)
{
	if (!start || !end || end < start) {
		d->stats->invalid_ts++;
		return false;
	}
	r->start_ns = start + d->clock_offset_ns;
	r->end_ns = end + d->clock_offset_ns;
	return true;
}

static bool decode_kernel(struct cupti_decoder *d, const cupti_kernel_rec *k,
			  struct ttf_gpu_rec *r, struct cupti_name **name)
{
	if (!set_times(d, r, k->start, k->end))
		return false;
	r->type = TTF_GPU_REC_KERNEL;
	r->correlation_id = k->correlationId;
	r->device_id = k->deviceId;
	r->stream_id = k->streamId;
	r->graph_id = k->graphId;
	r->flags = k->graphId ? TTF_GPU_RECF_GRAPH : 0;
	r->kernel.grid_x = k->gridX;
	r->kernel.grid_y = k->gridY;
	r->kernel.grid_z = k->gridZ;
	r->kernel.block_x = k->blockX;
	r->kernel.block_y = k->blockY;
	r->kernel.block_z = k->blockZ;
	if (k->name)
		*name = intern(d, k->name, &r->kernel.name_id);
	return true;
}

static bool decode_memcpy(struct cupti_decoder *d, const cupti_memcpy_rec *m,
			  struct ttf_gpu_rec *r)
{
	if (!set_times(d, r, m->start, m->end))
		return false;
	r->type = TTF_GPU_REC_MEMCPY;
	r->correlation_id = m->correlationId;
	r->device_id = m->deviceId;
	r->stream_id = m->streamId;
	r->graph_id = m->graphId;
	r->flags = m->graphId ? TTF_GPU_RECF_GRAPH : 0;
	r->copy_kind = m->copyKind;
	r->src_kind = m->srcKind;
	r->dst_kind = m->dstKind;
	r->copy.bytes = m->bytes;
	r->copy.runtime_correlation_id = m->runtimeCorrelationId;
	return true;
}

static bool decode_memset(struct cupti_decoder *d, const CUpti_ActivityMemset4 *m,
			  struct ttf_gpu_rec *r)
{
	if (!set_times(d, r, m->start, m->end))
		return false;
	r->type = TTF_GPU_REC_MEMSET;
	r->correlation_id = m->correlationId;
	r->device_id = m->deviceId;
	r->stream_id = m->streamId;
	r->graph_id = m->graphId;
	r->flags = m->graphId ? TTF_GPU_RECF_GRAPH : 0;
	r->dst_kind = (uint8_t)m->memoryKind;
	r->copy.bytes = m->bytes;
	return true;
}

static bool decode_api(struct cupti_decoder *d, const CUpti_ActivityAPI *a, struct ttf_gpu_rec *r)
{
	uint8_t domain = a->kind == CUPTI_ACTIVITY_KIND_RUNTIME ? TTF_GPU_API_RUNTIME
							       : TTF_GPU_API_DRIVER;
	uint8_t cat = cupti_cbid__category(domain, a->cbid);

	if (cat == TTF_GPU_API_OTHER && !d->api_all) {
		d->stats->api_filtered++;
		return false;
	}
	if (!set_times(d, r, a->start, a->end))
		return false;
	r->type = TTF_GPU_REC_API;
	r->correlation_id = a->correlationId;
	r->api.tid = a->threadId;
	r->api.cbid = a->cbid;
	r->api.domain = domain;
	r->api.category = cat;
	r->api.ret = (int32_t)a->returnValue;
	return true;
}

size_t cupti_decoder__buffer(struct cupti_decoder *d, uint8_t *buf, size_t valid_bytes)
{
	CUpti_Activity *rec = NULL;
	struct cupti_name *name;
	struct ttf_gpu_rec r;
	size_t kept = 0;
	uint32_t corr;
	bool ok;

	while (valid_bytes && d->next(buf, valid_bytes, &rec) == CUPTI_SUCCESS) {
		memset(&r, 0, sizeof(r));
		name = NULL;
		switch (rec->kind) {
		case CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL:
		case CUPTI_ACTIVITY_KIND_KERNEL:
			corr = ((const cupti_kernel_rec *)rec)->correlationId;
			ok = decode_kernel(d, (const cupti_kernel_rec *)rec, &r, &name);
			break;
		case CUPTI_ACTIVITY_KIND_MEMCPY:
			corr = ((const cupti_memcpy_rec *)rec)->correlationId;
			ok = decode_memcpy(d, (const cupti_memcpy_rec *)rec, &r);
			break;
		case CUPTI_ACTIVITY_KIND_MEMSET:
			corr = ((const CUpti_ActivityMemset4 *)rec)->correlationId;
			ok = decode_memset(d, (const CUpti_ActivityMemset4 *)rec, &r);
			break;
		case CUPTI_ACTIVITY_KIND_RUNTIME:
		case CUPTI_ACTIVITY_KIND_DRIVER:
			corr = ((const CUpti_ActivityAPI *)rec)->correlationId;
			ok = decode_api(d, (const CUpti_ActivityAPI *)rec, &r);
			break;
		default:
			d->stats->unknown_kind++;
			continue;
		}
		if (!ok)
			continue;
		/* Converted start: same key, whatever the clock offset. */
		if (is_duplicate(d, rec->kind, corr, r.start_ns)) {
			d->stats->duplicates++;
			continue;
		}
		d->stats->records[r.type]++;
		d->sink.rec(d->sink.ctx, &r, name);
		kept++;
	}
	return kept;
}
