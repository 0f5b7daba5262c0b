// SPDX-License-Identifier: GPL-2.0-only
/*
 * GPU span store and joins (user/model/gpu_store.c, user/model/gpu_join.c) on records of
 * a known schedule, with hand-computed values.
 */
#include <errno.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdlib.h>
#include <setjmp.h>
#include <cmocka.h>

#include "user/model/gpu_join.h"
#include "user/model/gpu_store.h"

#define US 1000ull
#define MS 1000000ull
#define T0 (100000 * MS)
#define PID 500
#define TID_A 501
#define TID_B 502

static void kernel(struct gpu_store *s, uint32_t pid, uint32_t corr, uint64_t start,
		   uint64_t end, uint32_t graph)
{
	struct ttf_gpu_rec r = { .type = TTF_GPU_REC_KERNEL, .start_ns = start, .end_ns = end,
				 .correlation_id = corr, .graph_id = graph, .stream_id = 7 };

	assert_int_equal(gpu_store__add(s, pid, &r), 0);
}

static void copy(struct gpu_store *s, uint32_t corr, uint64_t start, uint64_t end,
		 uint64_t bytes, uint8_t kind, uint8_t src, uint8_t dst)
{
	struct ttf_gpu_rec r = { .type = TTF_GPU_REC_MEMCPY, .start_ns = start, .end_ns = end,
				 .correlation_id = corr, .copy_kind = kind, .src_kind = src,
				 .dst_kind = dst, .copy.bytes = bytes };

	assert_int_equal(gpu_store__add(s, PID, &r), 0);
}

static void api(struct gpu_store *s, uint32_t corr, uint32_t tid, uint8_t cat, uint64_t start,
		uint64_t end)
{
	struct ttf_gpu_rec r = { .type = TTF_GPU_REC_API, .start_ns = start, .end_ns = end,
				 .correlation_id = corr, .api.tid = tid, .api.category = cat,
				 .api.domain = TTF_GPU_API_RUNTIME };

	assert_int_equal(gpu_store__add(s, PID, &r), 0);
}

static int setup(void **state)
{
	*state = gpu_store__new();
	return *state ? 0 : -1;
}

static int teardown(void **state)
{
	gpu_store__free(*state);
	return 0;
}

/*
 * Prefill window [T0+1ms, T0+11ms): kernels [2,4), [3,5) (another stream),
 * [8,9) ms; a pinned H2D copy of 64 MiB in [1.5, 3.5) ms. Kernel union = 4 ms;
 * the copy is hidden behind K1 from 2 to 3.5 ms, so 0.5 ms of it is on the
 * critical path; host gap = 10 - 4 - 0.5 = 5.5 ms; 2^26 B / 2 ms = 33.554432 GB/s.
 * Work of another process and work before the window are left out.
 */
static void test_prefill_known_schedule(void **state)
{
	struct gpu_store *s = *state;
	struct gpu_copy_bw bw[4];
	struct gpu_prefill p;

	kernel(s, PID, 1, T0 + 2 * MS, T0 + 4 * MS, 0);
	kernel(s, PID, 2, T0 + 3 * MS, T0 + 5 * MS, 0);
	kernel(s, PID, 3, T0 + 8 * MS, T0 + 9 * MS, 0);
	copy(s, 4, T0 + 1500 * US, T0 + 3500 * US, 64ull << 20, TTF_GPU_COPY_HTOD,
	     TTF_GPU_MEM_PINNED, TTF_GPU_MEM_DEVICE);
	kernel(s, PID + 1, 5, T0 + 5 * MS, T0 + 8 * MS, 0);
	kernel(s, PID, 6, T0, T0 + 1 * MS, 0); /* ends exactly at the window start */

	assert_int_equal(gpu_join__prefill(s, PID, 0, T0 + 1 * MS, T0 + 11 * MS, &p, bw, 4), 1);
	assert_int_equal(p.split.window_ns, 10 * MS);
	assert_int_equal(p.split.compute_ns, 4 * MS);
	assert_int_equal(p.split.copy_ns, 500 * US);
	assert_int_equal(p.split.host_gap_ns, 5500 * US);
	assert_int_equal(p.gpu_busy_ns, 4500 * US);
	assert_int_equal(p.copy_total_ns, 2 * MS);
	assert_int_equal(p.split.kernels, 3);
	assert_int_equal(p.split.copies, 1);
	assert_int_equal(bw[0].bytes, 67108864);
	assert_int_equal(bw[0].copy_kind, TTF_GPU_COPY_HTOD);
	assert_false(bw[0].pageable);
	assert_float_equal(bw[0].gbps, 33.554432, 1e-9);
	assert_int_equal(gpu_join__prefill(s, PID, 0, 10, 5, &p, bw, 4), -EINVAL);
}

/* docs/cases.md #23: the same 24 MiB pageable copy is flagged, and its rate reported as is. */
static void test_pageable_copy(void **state)
{
	struct gpu_store *s = *state;
	struct gpu_copy_span cs[2];

	copy(s, 1, T0, T0 + 35 * MS, 24ull << 20, TTF_GPU_COPY_HTOD, TTF_GPU_MEM_PAGEABLE,
	     TTF_GPU_MEM_DEVICE);
	assert_int_equal(gpu_store__copies(s, PID, 0, UINT64_MAX, cs, 2), 1);
	assert_true(cs[0].pageable);
	assert_float_equal(cs[0].gbps, 25165824.0 / 35e6, 1e-12);
}

/*
 * A step of thread A: its kernel [1,3) ms, graph-replayed kernels [4,5) and
 * [5,6) ms (one cudaGraphLaunch), its D2H copy [6,7) ms; thread B's kernel
 * [7,9) ms is left out. Window [0,10): compute 4 ms, copy 1 ms, gap 5 ms.
 */
static void test_step_split_by_thread(void **state)
{
	struct gpu_store *s = *state;
	struct gpu_step step = { .start_ns = T0, .end_ns = T0 + 10 * MS, .tid = TID_A };
	struct gpu_split sp;

	api(s, 1, TID_A, TTF_GPU_API_LAUNCH, T0, T0 + 10 * US);
	api(s, 2, TID_A, TTF_GPU_API_GRAPH_LAUNCH, T0 + 20 * US, T0 + 30 * US);
	api(s, 3, TID_A, TTF_GPU_API_MEMCPY, T0 + 40 * US, T0 + 7 * MS);
	api(s, 4, TID_B, TTF_GPU_API_LAUNCH, T0 + 50 * US, T0 + 60 * US);
	kernel(s, PID, 1, T0 + 1 * MS, T0 + 3 * MS, 0);
	kernel(s, PID, 2, T0 + 4 * MS, T0 + 5 * MS, 9);
	kernel(s, PID, 2, T0 + 5 * MS, T0 + 6 * MS, 9);
	copy(s, 3, T0 + 6 * MS, T0 + 7 * MS, 4096, TTF_GPU_COPY_DTOH, TTF_GPU_MEM_DEVICE,
	     TTF_GPU_MEM_PINNED);
	kernel(s, PID, 4, T0 + 7 * MS, T0 + 9 * MS, 0);

	assert_int_equal(gpu_join__step(s, PID, &step, &sp), 0);
	assert_int_equal(sp.compute_ns, 4 * MS);
	assert_int_equal(sp.copy_ns, 1 * MS);
	assert_int_equal(sp.host_gap_ns, 5 * MS);
	assert_int_equal(sp.kernels, 3);
	assert_int_equal(sp.copies, 1);
	assert_int_equal(sp.unjoined, 0);

	step.tid = 0; /* all threads: B's kernel fills [7,9) */
	assert_int_equal(gpu_join__step(s, PID, &step, &sp), 0);
	assert_int_equal(sp.compute_ns, 6 * MS);
	assert_int_equal(sp.host_gap_ns, 3 * MS);
}

/*
 * A thread-per-request server: thread A's prefill kernel [1,3) ms and thread
 * B's decode kernel [2,6) ms both fall in A's window [0,10); with A's tid the
 * prefill is A's 2 ms alone, with 0 the whole process's 5 ms.
 */
static void test_prefill_by_thread(void **state)
{
	struct gpu_store *s = *state;
	struct gpu_copy_bw bw[2];
	struct gpu_prefill p;

	api(s, 1, TID_A, TTF_GPU_API_LAUNCH, T0, T0 + 10 * US);
	api(s, 2, TID_B, TTF_GPU_API_LAUNCH, T0 + 20 * US, T0 + 30 * US);
	kernel(s, PID, 1, T0 + 1 * MS, T0 + 3 * MS, 0);
	kernel(s, PID, 2, T0 + 2 * MS, T0 + 6 * MS, 0);

	assert_int_equal(gpu_join__prefill(s, PID, TID_A, T0, T0 + 10 * MS, &p, bw, 2), 0);
	assert_int_equal(p.split.compute_ns, 2 * MS);
	assert_int_equal(p.split.kernels, 1);
	assert_int_equal(gpu_join__prefill(s, PID, 0, T0, T0 + 10 * MS, &p, bw, 2), 0);
	assert_int_equal(p.split.compute_ns, 5 * MS);
	assert_int_equal(p.split.kernels, 2);
}

/*
 * No step uprobe: steps of thread A from its API records. Step 1: launches at
 * 0 and 20 us, cudaStreamSynchronize until 400 us. Step 2: a graph launch at
 * 1 ms after idle; its kernels finish at 1.5 ms, which ends the step. Step 3
 * starts after an idle gap (> 1 ms) with a launch at 5 ms, no sync, no kernel.
 */
static void test_infer_steps(void **state)
{
	struct gpu_store *s = *state;
	struct gpu_step st[4];

	api(s, 1, TID_A, TTF_GPU_API_LAUNCH, T0, T0 + 10 * US);
	api(s, 2, TID_A, TTF_GPU_API_LAUNCH, T0 + 20 * US, T0 + 30 * US);
	api(s, 3, TID_A, TTF_GPU_API_SYNC, T0 + 40 * US, T0 + 400 * US);
	api(s, 4, TID_A, TTF_GPU_API_GRAPH_LAUNCH, T0 + 1000 * US, T0 + 1010 * US);
	api(s, 5, TID_A, TTF_GPU_API_LAUNCH, T0 + 5000 * US, T0 + 5010 * US);
	api(s, 6, TID_B, TTF_GPU_API_LAUNCH, T0 + 1005 * US, T0 + 1006 * US);
	kernel(s, PID, 1, T0 + 50 * US, T0 + 200 * US, 0);
	kernel(s, PID, 4, T0 + 1100 * US, T0 + 1300 * US, 3);
	kernel(s, PID, 4, T0 + 1300 * US, T0 + 1500 * US, 3);
	kernel(s, PID, 6, T0 + 1500 * US, T0 + 2500 * US, 0); /* thread B's */

	assert_int_equal(gpu_join__infer_steps(s, PID, TID_A, T0, T0 + 10 * MS, 1 * MS, st, 4), 3);
	assert_int_equal(st[0].start_ns, T0);
	assert_int_equal(st[0].end_ns, T0 + 400 * US);
	assert_int_equal(st[0].tid, TID_A);
	assert_int_equal(st[1].start_ns, T0 + 1000 * US);
	assert_int_equal(st[1].end_ns, T0 + 1500 * US);
	assert_int_equal(st[2].start_ns, T0 + 5000 * US);
	assert_int_equal(st[2].end_ns, T0 + 5010 * US);
	/* Fewer slots than steps: the count is still right. */
	assert_int_equal(gpu_join__infer_steps(s, PID, TID_A, T0, T0 + 10 * MS, 1 * MS, st, 1), 3);
}

static void test_names_stats_expire(void **state)
{
	struct gpu_store *s = *state;
	struct ttf_gpu_rec r = { .type = TTF_GPU_REC_KERNEL, .start_ns = T0, .end_ns = T0 + 5,
				 .kernel.name_id = 77 };
	struct ttf_gpu_stats a = { .send_dropped = 3, .clock_mode = 1 }, b = { .send_dropped = 4,
									     .clock_mode = 2 };
	struct ttf_gpu_stats sum;
	struct gpu_kernel_span ks[2];

	assert_int_equal(gpu_store__add(s, PID, &r), 0);
	assert_int_equal(gpu_store__kernels(s, PID, 0, UINT64_MAX, ks, 2), 1);
	assert_string_equal(ks[0].name, "?");
	assert_int_equal(gpu_store__add_name(s, PID, 77, "gemm_xyz", 4), 0);
	gpu_store__kernels(s, PID, 0, UINT64_MAX, ks, 2);
	assert_string_equal(ks[0].name, "gemm");
	assert_int_equal(gpu_store__kernels(s, PID + 1, 0, UINT64_MAX, ks, 2), 0);

	assert_int_equal(gpu_store__stats(s, PID, &sum), -ENOENT);
	gpu_store__set_stats(s, PID, &a);
	gpu_store__set_stats(s, PID + 1, &b);
	a.send_dropped = 5; /* cumulative: replaces */
	gpu_store__set_stats(s, PID, &a);
	assert_int_equal(gpu_store__stats(s, 0, &sum), 0);
	assert_int_equal(sum.send_dropped, 9);
	assert_int_equal(sum.clock_mode, 2);

	gpu_store__expire(s, T0 + 6);
	assert_int_equal(gpu_store__kernels(s, PID, 0, UINT64_MAX, ks, 2), 0);
	r.type = 0;
	assert_int_equal(gpu_store__add(s, PID, &r), -EINVAL);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_prefill_known_schedule, setup, teardown),
		cmocka_unit_test_setup_teardown(test_pageable_copy, setup, teardown),
		cmocka_unit_test_setup_teardown(test_step_split_by_thread, setup, teardown),
		cmocka_unit_test_setup_teardown(test_prefill_by_thread, setup, teardown),
		cmocka_unit_test_setup_teardown(test_infer_steps, setup, teardown),
		cmocka_unit_test_setup_teardown(test_names_stats_expire, setup, teardown),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
