// SPDX-License-Identifier: GPL-2.0-only
/*
 * libFuzzer harness: the CUPTI activity decoder (cupti/decode.c) on arbitrary
 * buffers.
 *
 * The record walk is a stand-in for cuptiActivityGetNextRecord with its
 * documented behaviour (records back to back, stride = the kind's struct
 * size, CUPTI_ERROR_MAX_LIMIT_REACHED at the end or on a truncated record,
 * CUPTI_ERROR_INVALID_KIND for a kind it does not know): fuzzing NVIDIA's
 * closed iterator is not the point, the decoder's reading of the records is.
 * A kernel record's name is a pointer into CUPTI's memory; the harness points
 * it at one of the strings carried in the input (or NULL), since a wild
 * pointer is not something CUPTI hands out.
 *
 * Input: [0..1] record bytes L (little endian), [2] flags (bit 0: api_all,
 * bit 1: non-zero clock offset), then L record bytes, then names separated by
 * '\n' (up to 8).
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "cupti/decode.h"

#define MAX_NAMES 8

static size_t stride_of(uint32_t kind)
{
	switch (kind) {
	case CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL:
	case CUPTI_ACTIVITY_KIND_KERNEL:
		return sizeof(CUpti_ActivityKernel10);
	case CUPTI_ACTIVITY_KIND_MEMCPY:
		return sizeof(CUpti_ActivityMemcpy6);
	case CUPTI_ACTIVITY_KIND_MEMSET:
		return sizeof(CUpti_ActivityMemset4);
	case CUPTI_ACTIVITY_KIND_RUNTIME:
	case CUPTI_ACTIVITY_KIND_DRIVER:
		return sizeof(CUpti_ActivityAPI);
	default:
		/* other kinds CUPTI knows: the decoder skips them; a made-up stride */
		return kind > 0 && kind < 64 ? 32 : 0;
	}
}

static CUptiResult fake_next(uint8_t *buf, size_t valid_bytes, CUpti_Activity **rec)
{
	size_t off = 0, stride;

	if (*rec) {
		off = (uint8_t *)*rec - buf;
		off += stride_of((*rec)->kind);
	}
	if (off + sizeof(CUpti_Activity) > valid_bytes)
		return CUPTI_ERROR_MAX_LIMIT_REACHED;
	stride = stride_of(((CUpti_Activity *)(buf + off))->kind);
	if (!stride)
		return CUPTI_ERROR_INVALID_KIND;
	if (off + stride > valid_bytes)
		return CUPTI_ERROR_MAX_LIMIT_REACHED;
	*rec = (CUpti_Activity *)(buf + off);
	return CUPTI_SUCCESS;
}

static int64_t offset_ns;

static void sink_rec(void *ctx, const struct ttf_gpu_rec *rec, struct cupti_name *name)
{
	(void)ctx;
	/* with an offset, timestamps near 0 or 2^64 wrap: CUPTI's never are */
	if (!offset_ns && rec->end_ns < rec->start_ns)
		abort();
	if (name && (!name->str || strlen(name->str) != name->len || name->len > TTF_GPU_NAME_MAX))
		abort();
}

static struct ttf_gpu_stats stats;
static struct cupti_decoder dec;
static bool dec_ready;

/*
 * One decoder for the whole run, emptied between inputs (as a fresh
 * cupti_decoder__init would leave it): 1.4 MiB of calloc per input under
 * ASan would cap the harness at about 150 runs a second.
 */
static int decoder_reset(void)
{
	struct cupti_decode_sink sink = { .rec = sink_rec };

	if (!dec_ready) {
		if (cupti_decoder__init(&dec, fake_next, &sink, &stats))
			return -1;
		dec_ready = true;
	}
	if (dec.names_used)
		for (uint32_t i = 0; i < CUPTI_NAME_SLOTS; i++)
			free((char *)dec.names[i].str);
	memset(dec.dedupe, 0, CUPTI_DEDUPE_SLOTS * sizeof(*dec.dedupe));
	memset(dec.names, 0, CUPTI_NAME_SLOTS * sizeof(*dec.names));
	memset(dec.name_ptrs, 0, CUPTI_NAME_SLOTS * sizeof(*dec.name_ptrs));
	memset(dec.name_ptr_slot, 0, CUPTI_NAME_SLOTS * sizeof(*dec.name_ptr_slot));
	dec.names_used = 0;
	memset(&stats, 0, sizeof(stats));
	return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	char *names[MAX_NAMES] = { 0 };
	size_t rec_bytes, n_names = 0, off;
	uint8_t *buf = NULL;

	if (size < 3)
		return 0;
	rec_bytes = data[0] | (size_t)data[1] << 8;
	if (rec_bytes > size - 3)
		rec_bytes = size - 3;
	off = 3 + rec_bytes;
	while (off < size && n_names < MAX_NAMES) {
		const uint8_t *nl = memchr(data + off, '\n', size - off);
		size_t n = nl ? (size_t)(nl - (data + off)) : size - off;

		names[n_names] = malloc(n + 1);
		if (!names[n_names])
			goto cleanup;
		memcpy(names[n_names], data + off, n);
		names[n_names][n] = 0;
		n_names++;
		off += n + 1;
	}
	/* CUPTI buffers are 8-byte aligned; the exact size makes over-reads visible */
	buf = aligned_alloc(8, (rec_bytes + 7) & ~(size_t)7);
	if (!buf && rec_bytes)
		goto cleanup;
	if (rec_bytes)
		memcpy(buf, data + 3, rec_bytes);
	for (CUpti_Activity *r = NULL; fake_next(buf, rec_bytes, &r) == CUPTI_SUCCESS;) {
		CUpti_ActivityKernel10 *k = (CUpti_ActivityKernel10 *)r;
		uint8_t sel;

		if (r->kind != CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL &&
		    r->kind != CUPTI_ACTIVITY_KIND_KERNEL)
			continue;
		memcpy(&sel, (uint8_t *)k + offsetof(CUpti_ActivityKernel10, name), 1);
		k->name = n_names && sel % (MAX_NAMES + 1) ? names[sel % n_names] : NULL;
	}
	if (decoder_reset())
		goto cleanup;
	dec.api_all = data[2] & 1;
	offset_ns = data[2] & 2 ? -1000 : 0;
	dec.clock_offset_ns = offset_ns;
	cupti_decoder__buffer(&dec, buf, rec_bytes);
	/* a second pass over the same buffer: every kept record is now a duplicate */
	cupti_decoder__buffer(&dec, buf, rec_bytes);
cleanup:
	free(buf);
	for (size_t i = 0; i < n_names; i++)
		free(names[i]);
	return 0;
}
