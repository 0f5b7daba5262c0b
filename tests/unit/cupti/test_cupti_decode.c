// SPDX-License-Identifier: GPL-2.0-only
/*
 * The collector's decoder (cupti/decode.c) on synthetic CUDA 13.0 activity
 * buffers, walked by the real cuptiActivityGetNextRecord (skipped if
 * libcupti.so.13 is absent), and the clock conversion (cupti/clock.c).
 */
#include <errno.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <time.h>
#include <setjmp.h>
#include <cmocka.h>

#include "cupti/clock.h"
#include "cupti/decode.h"
#include "tests/unit/cupti/cupti_records.h"
#include "user/model/gpu_store.h"

#define MS 1000000ull
#define T0 (5000 * MS)

static cupti_next_record_fn next_fn;

struct got {
	struct ttf_gpu_rec recs[64];
	struct cupti_name *names[64];
	size_t n;
};

static void sink_rec(void *ctx, const struct ttf_gpu_rec *rec, struct cupti_name *name)
{
	struct got *g = ctx;

	if (g->n < 64) {
		g->recs[g->n] = *rec;
		g->names[g->n] = name;
	}
	g->n++;
}

struct fixture {
	struct cupti_decoder dec;
	struct ttf_gpu_stats stats;
	struct got got;
	struct abuf buf, buf2;
};

static int setup(void **state)
{
	struct fixture *f = calloc(1, sizeof(*f));
	struct cupti_decode_sink sink = { .rec = sink_rec };

	sink.ctx = &f->got;
	if (!f || cupti_decoder__init(&f->dec, next_fn, &sink, &f->stats))
		return -1;
	*state = f;
	return 0;
}

static int teardown(void **state)
{
	struct fixture *f = *state;

	cupti_decoder__fini(&f->dec);
	abuf_free(&f->buf);
	abuf_free(&f->buf2);
	free(f);
	return 0;
}

static void need_cupti(void)
{
	if (!next_fn) {
		fprintf(stderr, "SKIP: libcupti.so.13 not found (set CUDA_HOME)\n");
		skip();
	}
}

static void test_kernel_fields(void **state)
{
	struct fixture *f = *state;
	const char *name = "ampere_sgemm_128x64_nn";
	const struct ttf_gpu_rec *r = &f->got.recs[0];

	need_cupti();
	put_kernel(&f->buf, 42, T0 + 10, T0 + 2010, 0, name);
	assert_int_equal(cupti_decoder__buffer(&f->dec, f->buf.p, f->buf.len), 1);
	assert_int_equal(r->type, TTF_GPU_REC_KERNEL);
	assert_int_equal(r->start_ns, T0 + 10);
	assert_int_equal(r->end_ns, T0 + 2010);
	assert_int_equal(r->correlation_id, 42);
	assert_int_equal(r->device_id, 1);
	assert_int_equal(r->stream_id, 7);
	assert_int_equal(r->kernel.grid_x, 128);
	assert_int_equal(r->kernel.grid_y, 2);
	assert_int_equal(r->kernel.block_x, 256);
	assert_int_equal(r->flags, 0);
	assert_int_equal(r->kernel.name_id, cupti_name__hash(name));
	assert_non_null(f->got.names[0]);
	assert_string_equal(f->got.names[0]->str, name);
	assert_int_equal(f->stats.records[TTF_GPU_REC_KERNEL], 1);
}

static void test_memcpy_memset(void **state)
{
	struct fixture *f = *state;
	const struct ttf_gpu_rec *r = &f->got.recs[0];

	need_cupti();
	put_memcpy(&f->buf, 9, T0, T0 + 2 * MS, 64ull << 20, CUPTI_ACTIVITY_MEMCPY_KIND_HTOD,
		   CUPTI_ACTIVITY_MEMORY_KIND_PINNED, CUPTI_ACTIVITY_MEMORY_KIND_DEVICE);
	put_memset(&f->buf, 10, T0 + 3 * MS, T0 + 4 * MS, 4096);
	assert_int_equal(cupti_decoder__buffer(&f->dec, f->buf.p, f->buf.len), 2);
	assert_int_equal(r->type, TTF_GPU_REC_MEMCPY);
	assert_int_equal(r->copy_kind, TTF_GPU_COPY_HTOD);
	assert_int_equal(r->src_kind, TTF_GPU_MEM_PINNED);
	assert_int_equal(r->dst_kind, TTF_GPU_MEM_DEVICE);
	assert_int_equal(r->copy.bytes, 67108864);
	assert_int_equal(r->copy.runtime_correlation_id, 10);
	assert_int_equal(r->stream_id, 3);
	assert_int_equal(f->got.recs[1].type, TTF_GPU_REC_MEMSET);
	assert_int_equal(f->got.recs[1].copy.bytes, 4096);
	assert_int_equal(f->got.recs[1].dst_kind, TTF_GPU_MEM_DEVICE);
}

/*
 * docs/cases.md #20: a graph of 3 kernels replayed twice; every kernel carries the
 * correlation id of its cudaGraphLaunch, and no per-kernel API record exists.
 * All 6 kernels are kept and join to the launching thread.
 */
static void test_graph_replay(void **state)
{
	struct fixture *f = *state;
	struct gpu_store *s = gpu_store__new();
	struct gpu_kernel_span ks[8];

	need_cupti();
	put_api(&f->buf, CUPTI_ACTIVITY_KIND_RUNTIME, CUPTI_RUNTIME_TRACE_CBID_cudaGraphLaunch_v10000,
		100, 777, T0, T0 + 5000);
	put_api(&f->buf, CUPTI_ACTIVITY_KIND_RUNTIME, CUPTI_RUNTIME_TRACE_CBID_cudaGraphLaunch_v10000,
		101, 777, T0 + MS, T0 + MS + 5000);
	for (int rep = 0; rep < 2; rep++)
		for (int k = 0; k < 3; k++)
			put_kernel(&f->buf, 100 + rep, T0 + rep * MS + 10000 + k * 1000,
				   T0 + rep * MS + 10900 + k * 1000, 5, "decode_layer");
	assert_int_equal(cupti_decoder__buffer(&f->dec, f->buf.p, f->buf.len), 8);
	assert_int_equal(f->stats.duplicates, 0);
	assert_int_equal(f->got.recs[0].api.category, TTF_GPU_API_GRAPH_LAUNCH);
	assert_int_equal(f->got.recs[2].flags & TTF_GPU_RECF_GRAPH, TTF_GPU_RECF_GRAPH);
	for (size_t i = 0; i < f->got.n; i++)
		assert_int_equal(gpu_store__add(s, 4242, &f->got.recs[i]), 0);
	assert_int_equal(gpu_store__kernels(s, 4242, 0, UINT64_MAX, ks, 8), 6);
	for (int i = 0; i < 6; i++) {
		assert_int_equal(ks[i].tid, 777);
		assert_int_equal(ks[i].graph_id, 5);
		assert_int_equal(ks[i].correlation_id, 100 + i / 3);
	}
	gpu_store__free(s);
}

/* docs/cases.md #22: the same record twice in a buffer, and again in the next buffer. */
static void test_duplicates(void **state)
{
	struct fixture *f = *state;

	need_cupti();
	put_kernel(&f->buf, 7, T0, T0 + 100, 0, "k");
	put_kernel(&f->buf, 7, T0, T0 + 100, 0, "k");
	put_kernel(&f->buf, 7, T0 + 200, T0 + 300, 0, "k"); /* same id, later start: a replay */
	assert_int_equal(cupti_decoder__buffer(&f->dec, f->buf.p, f->buf.len), 2);
	put_kernel(&f->buf2, 7, T0 + 200, T0 + 300, 0, "k");
	put_memcpy(&f->buf2, 7, T0, T0 + 100, 10, 1, 1, 3); /* same id and start, other kind */
	assert_int_equal(cupti_decoder__buffer(&f->dec, f->buf2.p, f->buf2.len), 1);
	assert_int_equal(f->stats.duplicates, 2);
	assert_int_equal(f->got.n, 3);
}

/*
 * A buffer whose valid size ends inside a record: the walk stops before it;
 * the complete record comes in the next buffer and is decoded once. If both
 * buffers hold it complete, the second copy is a duplicate.
 */
static void test_buffer_boundary(void **state)
{
	struct fixture *f = *state;

	need_cupti();
	put_kernel(&f->buf, 1, T0, T0 + 10, 0, "a");
	put_kernel(&f->buf, 2, T0 + 20, T0 + 30, 0, "b");
	assert_int_equal(cupti_decoder__buffer(&f->dec, f->buf.p,
					       sizeof(CUpti_ActivityKernel10) + 100), 1);
	put_kernel(&f->buf2, 2, T0 + 20, T0 + 30, 0, "b");
	put_kernel(&f->buf2, 3, T0 + 40, T0 + 50, 0, "c");
	assert_int_equal(cupti_decoder__buffer(&f->dec, f->buf2.p, f->buf2.len), 2);
	assert_int_equal(cupti_decoder__buffer(&f->dec, f->buf.p, f->buf.len), 0);
	assert_int_equal(f->got.n, 3);
	assert_int_equal(f->got.recs[1].correlation_id, 2);
	assert_int_equal(f->stats.duplicates, 2);
	assert_int_equal(cupti_decoder__buffer(&f->dec, f->buf.p, 0), 0);
}

/* parcagpu#23: zero and reversed timestamps are dropped and counted. */
static void test_invalid_timestamps(void **state)
{
	struct fixture *f = *state;

	need_cupti();
	put_kernel(&f->buf, 1, 0, 0, 0, "z");
	put_kernel(&f->buf, 2, T0 + 50, T0 + 10, 0, "r");
	put_memcpy(&f->buf, 3, T0, 0, 8, 1, 1, 3);
	put_api(&f->buf, CUPTI_ACTIVITY_KIND_DRIVER, CUPTI_DRIVER_TRACE_CBID_cuLaunchKernel, 4, 1,
		0, T0);
	put_kernel(&f->buf, 5, T0, T0, 0, "zero-length is valid");
	assert_int_equal(cupti_decoder__buffer(&f->dec, f->buf.p, f->buf.len), 1);
	assert_int_equal(f->stats.invalid_ts, 4);
	assert_int_equal(f->got.recs[0].correlation_id, 5);
}

static void test_api_filter_and_unknown_kind(void **state)
{
	struct fixture *f = *state;
	CUpti_ActivityExternalCorrelation ext;

	need_cupti();
	memset(&ext, 0, sizeof(ext));
	ext.kind = CUPTI_ACTIVITY_KIND_EXTERNAL_CORRELATION;
	ext.correlationId = 1;
	put_api(&f->buf, CUPTI_ACTIVITY_KIND_RUNTIME, CUPTI_RUNTIME_TRACE_CBID_cudaGetDevice_v3020, 1,
		9, T0, T0 + 1);
	abuf_put(&f->buf, &ext, sizeof(ext));
	put_api(&f->buf, CUPTI_ACTIVITY_KIND_RUNTIME, CUPTI_RUNTIME_TRACE_CBID_cudaLaunchKernel_v7000,
		2, 9, T0 + 2, T0 + 3);
	put_api(&f->buf, CUPTI_ACTIVITY_KIND_DRIVER, CUPTI_DRIVER_TRACE_CBID_cuStreamSynchronize, 3,
		9, T0 + 4, T0 + 5);
	put_api(&f->buf, CUPTI_ACTIVITY_KIND_DRIVER, CUPTI_DRIVER_TRACE_CBID_cuMemcpyHtoDAsync_v2, 4,
		9, T0 + 6, T0 + 7);
	assert_int_equal(cupti_decoder__buffer(&f->dec, f->buf.p, f->buf.len), 3);
	assert_int_equal(f->stats.api_filtered, 1);
	assert_int_equal(f->stats.unknown_kind, 1);
	assert_int_equal(f->got.recs[0].api.category, TTF_GPU_API_LAUNCH);
	assert_int_equal(f->got.recs[0].api.domain, TTF_GPU_API_RUNTIME);
	assert_int_equal(f->got.recs[0].api.tid, 9);
	assert_int_equal(f->got.recs[1].api.category, TTF_GPU_API_SYNC);
	assert_int_equal(f->got.recs[1].api.domain, TTF_GPU_API_DRIVER);
	assert_int_equal(f->got.recs[2].api.category, TTF_GPU_API_MEMCPY);

	f->dec.api_all = true;
	f->got.n = 0;
	memset(f->dec.dedupe, 0, CUPTI_DEDUPE_SLOTS * sizeof(*f->dec.dedupe));
	assert_int_equal(cupti_decoder__buffer(&f->dec, f->buf.p, f->buf.len), 4);
	assert_int_equal(f->got.recs[0].api.category, TTF_GPU_API_OTHER);
}

/* docs/cases.md #21, fallback path: REALTIME-stamped records shifted by the measured offset. */
static void test_clock_offset_applied(void **state)
{
	struct fixture *f = *state;
	const uint64_t realtime = 1800000000000000000ull;

	need_cupti();
	f->dec.clock_offset_ns = (int64_t)(T0 - realtime);
	put_kernel(&f->buf, 1, realtime + 100, realtime + 300, 0, "k");
	assert_int_equal(cupti_decoder__buffer(&f->dec, f->buf.p, f->buf.len), 1);
	assert_int_equal(f->got.recs[0].start_ns, T0 + 100);
	assert_int_equal(f->got.recs[0].end_ns, T0 + 300);
}

static const uint64_t fake_mono_seq[] = { 100, 130, 200, 210, 300, 340 };
static const uint64_t fake_cupti_seq[] = { 5000, 5100, 5200 };
static int mono_i, cupti_i;

static uint64_t fake_mono(void)
{
	return fake_mono_seq[mono_i++];
}

static uint64_t fake_cupti(void)
{
	return fake_cupti_seq[cupti_i++];
}

/* The tightest bracket (200..210 around the reading 5100) wins: 205 - 5100. */
static void test_clock_offset_bracketing(void **state)
{
	mono_i = cupti_i = 0;
	assert_int_equal(cupti_clock__offset_ns(fake_cupti, fake_mono, 3), -4895);
	assert_int_equal(mono_i, 6);
}

static void test_mono_clock_matches_kernel_clock(void **state)
{
	uint64_t a = cupti_clock__mono_ns(), b;
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	b = (uint64_t)ts.tv_sec * 1000000000ull + ts.tv_nsec;
	/* Same clock: later read is not smaller, and far below REALTIME's ~1.8e18. */
	assert_true(b >= a);
	assert_true(a < 1000000000000000000ull);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_kernel_fields, setup, teardown),
		cmocka_unit_test_setup_teardown(test_memcpy_memset, setup, teardown),
		cmocka_unit_test_setup_teardown(test_graph_replay, setup, teardown),
		cmocka_unit_test_setup_teardown(test_duplicates, setup, teardown),
		cmocka_unit_test_setup_teardown(test_buffer_boundary, setup, teardown),
		cmocka_unit_test_setup_teardown(test_invalid_timestamps, setup, teardown),
		cmocka_unit_test_setup_teardown(test_api_filter_and_unknown_kind, setup, teardown),
		cmocka_unit_test_setup_teardown(test_clock_offset_applied, setup, teardown),
		cmocka_unit_test(test_clock_offset_bracketing),
		cmocka_unit_test(test_mono_clock_matches_kernel_clock),
	};

	next_fn = (cupti_next_record_fn)real_next_record();
	return cmocka_run_group_tests(tests, NULL, NULL);
}
