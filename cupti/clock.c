// SPDX-License-Identifier: GPL-2.0-only
#include <time.h>

#include "cupti/clock.h"

uint64_t cupti_clock__mono_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + ts.tv_nsec;
}

int64_t cupti_clock__offset_ns(uint64_t (*cupti_ts)(void), uint64_t (*mono)(void), int samples)
{
	uint64_t best_gap = UINT64_MAX, before, after, c;
	int64_t best = 0;

	for (int i = 0; i < samples; i++) {
		before = mono();
		c = cupti_ts();
		after = mono();
		if (!c || after < before)
			continue;
		if (after - before < best_gap) {
			best_gap = after - before;
			best = (int64_t)(before + (after - before) / 2) - (int64_t)c;
		}
	}
	return best;
}
