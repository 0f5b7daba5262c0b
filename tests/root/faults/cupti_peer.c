// SPDX-License-Identifier: GPL-2.0-only
/*
 * Fault driver: the CUPTI collector's transport (cupti/sender.c) pushing
 * kernel records to a receiver that may go away. Sends one batch of
 * BATCH records every 10 ms for SECONDS and prints one line:
 *   "pushed N dropped D"
 * (stats.send_dropped). Built by tests/root/faults/test_faults.py.
 *
 * Usage: cupti_peer SOCK SECONDS
 */
#include <stdio.h>
#include <stdlib.h>
#include <time.h>
#include <unistd.h>

#include "cupti/sender.h"

#define BATCH 64

int main(int argc, char **argv)
{
	struct ttf_gpu_stats stats = { 0 };
	struct cupti_name name = { .id = 7, .str = "fault_kernel", .len = 12 };
	struct ttf_gpu_rec r = { .type = TTF_GPU_REC_KERNEL, .kernel.name_id = 7 };
	struct cupti_sender *s = calloc(1, sizeof(*s));
	struct timespec ts;
	uint64_t pushed = 0, end_ns, now;

	if (argc != 3 || !s)
		return 2;
	if (cupti_sender__init(s, argv[1], getpid(), &stats))
		return 2;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	end_ns = ts.tv_sec * 1000000000ull + ts.tv_nsec + (uint64_t)(atof(argv[2]) * 1e9);
	do {
		for (int i = 0; i < BATCH; i++) {
			clock_gettime(CLOCK_MONOTONIC, &ts);
			now = ts.tv_sec * 1000000000ull + ts.tv_nsec;
			r.start_ns = now;
			r.end_ns = now + 1000;
			r.correlation_id = (uint32_t)++pushed;
			cupti_sender__push(s, &r, &name);
		}
		cupti_sender__flush(s);
		usleep(10000);
	} while (now < end_ns);
	cupti_sender__close(s);
	printf("pushed %llu dropped %llu\n", (unsigned long long)pushed,
	       (unsigned long long)stats.send_dropped);
	free(s);
	return 0;
}
