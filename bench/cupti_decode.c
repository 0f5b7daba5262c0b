// SPDX-License-Identifier: GPL-2.0-only
/*
 * Decode throughput of the CUPTI collector on one core: synthetic CUDA 13.0
 * activity buffers (kernels, API records, copies, memsets) walked by the real
 * cuptiActivityGetNextRecord and decoded by cupti/decode.c, (1) into a
 * counting sink and (2) into the socket sender with nobody listening (the
 * full collector path minus CUPTI). Goal: >= 5 M records/s.
 * Usage: cupti_decode [million-records]   (default 20)
 */
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#include "cupti/decode.h"
#include "cupti/sender.h"
#include "tests/unit/cupti/cupti_records.h"

#define NBUF 8
#define BUF_BYTES (2u << 20)
#define GOAL_RPS 5e6

static const char *names[16] = {
	"ampere_bf16_s16816gemm_bf16_128x128_ldg8_f2f_stages_32x5_tn",
	"void at::native::vectorized_elementwise_kernel<4, at::native::FillFunctor<float>>",
	"flash_fwd_kernel", "rms_norm_kernel", "rotary_embedding_kernel", "silu_and_mul_kernel",
	"reshape_and_cache_flash_kernel", "paged_attention_v2_kernel", "argmax_kernel",
	"triton_poi_fused_add_0", "triton_red_fused_mean_1", "cutlass_80_tensorop_gemm",
	"topk_kernel", "softmax_warp_forward", "embedding_kernel", "all_reduce_kernel",
};

static uint64_t kept;

static void count_sink(void *ctx, const struct ttf_gpu_rec *rec, struct cupti_name *name)
{
	kept++;
}

static uint64_t now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + ts.tv_nsec;
}

/* One buffer of a decode-step-like mix; returns records written. */
static size_t fill(struct abuf *b, uint32_t *corr, uint64_t *t)
{
	size_t n = 0;

	while (b->len + 4 * sizeof(CUpti_ActivityKernel10) < BUF_BYTES) {
		uint32_t c = ++*corr;

		put_api(b, CUPTI_ACTIVITY_KIND_DRIVER, CUPTI_DRIVER_TRACE_CBID_cuLaunchKernel, c, 11,
			*t, *t + 3000);
		put_kernel(b, c, *t + 5000, *t + 9000, 0, names[c % 16]);
		n += 2;
		if (c % 5 == 0) {
			put_memcpy(b, c, *t + 9000, *t + 12000, 4096, 1, 2, 3);
			n++;
		}
		if (c % 7 == 0) {
			put_memset(b, c, *t + 12000, *t + 13000, 4096);
			n++;
		}
		*t += 20000;
	}
	return n;
}

/* Decode the buffers until @target records were walked; returns records/s. */
static double run(struct cupti_decoder *d, struct abuf *bufs, size_t per_pass, uint64_t target)
{
	uint64_t walked = 0, elapsed = 0, shift = 0;

	while (walked < target) {
		uint64_t t0;

		/* New timestamps each pass so that nothing is a duplicate (untimed). */
		d->clock_offset_ns = (int64_t)shift;
		shift += 1000000000ull;
		t0 = now_ns();
		for (int i = 0; i < NBUF; i++)
			cupti_decoder__buffer(d, bufs[i].p, bufs[i].len);
		elapsed += now_ns() - t0;
		walked += per_pass;
	}
	return walked / (elapsed / 1e9);
}

int main(int argc, char **argv)
{
	uint64_t target = (uint64_t)(argc > 1 ? atof(argv[1]) : 20) * 1000000ull;
	struct cupti_decode_sink sink = { .rec = count_sink };
	struct ttf_gpu_stats stats = { 0 };
	static struct cupti_sender tx;
	cupti_next_record_fn next = (cupti_next_record_fn)real_next_record();
	struct abuf bufs[NBUF] = { 0 };
	struct cupti_decoder d;
	uint32_t corr = 0;
	uint64_t t = 1000000000ull;
	size_t per_pass = 0;
	cpu_set_t one;
	double rps, rps_tx;

	if (!next) {
		fprintf(stderr, "Error: libcupti.so.13 not found\nHINT: set CUDA_HOME\n");
		return 1;
	}
	CPU_ZERO(&one);
	CPU_SET(0, &one);
	sched_setaffinity(0, sizeof(one), &one);
	for (int i = 0; i < NBUF; i++) {
		bufs[i].cap = BUF_BYTES;
		bufs[i].p = aligned_alloc(8, BUF_BYTES);
		per_pass += fill(&bufs[i], &corr, &t);
	}

	if (cupti_decoder__init(&d, next, &sink, &stats))
		return 1;
	rps = run(&d, bufs, per_pass, target);
	printf("decode only:            %.2f M records/s  (%llu kept, dup %llu, invalid %llu)\n",
	       rps / 1e6, (unsigned long long)kept, (unsigned long long)stats.duplicates,
	       (unsigned long long)stats.invalid_ts);
	cupti_decoder__fini(&d);

	memset(&stats, 0, sizeof(stats));
	cupti_sender__init(&tx, "@ttftrace-bench-nobody-listens", 1, &stats);
	sink = (struct cupti_decode_sink){ .rec = cupti_sender__sink, .ctx = &tx };
	if (cupti_decoder__init(&d, next, &sink, &stats))
		return 1;
	rps_tx = run(&d, bufs, per_pass, target);
	cupti_sender__flush(&tx);
	printf("decode + send (dropped): %.2f M records/s  (send_dropped %llu)\n", rps_tx / 1e6,
	       (unsigned long long)stats.send_dropped);
	cupti_decoder__fini(&d);

	printf("records per pass %zu in %d x %u KiB buffers, one core\n", per_pass, NBUF,
	       BUF_BYTES >> 10);
	printf("ratio to goal (5 M/s): decode %.2fx, decode+send %.2fx\n", rps / GOAL_RPS,
	       rps_tx / GOAL_RPS);
	return 0;
}
