// SPDX-License-Identifier: GPL-2.0-only
/*
 * bench/cost.py's uprobe trap microbenchmark: calls ttf_trap_target() N times
 * and prints the CPU time per call in ns (CLOCK_THREAD_CPUTIME_ID), once
 * before and once after a line on stdin (the tracer attaches in between).
 *
 *   uprobe_trap N   -> "base NS\n", waits for a line, "probed NS\n"
 */
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

__attribute__((noinline)) int ttf_trap_target(int x)
{
	__asm__ volatile("" : "+r"(x));
	return x + 1;
}

static double per_call_ns(long n)
{
	struct timespec a, b;
	volatile int acc = 0;

	clock_gettime(CLOCK_THREAD_CPUTIME_ID, &a);
	for (long i = 0; i < n; i++)
		acc = ttf_trap_target(acc);
	clock_gettime(CLOCK_THREAD_CPUTIME_ID, &b);
	return ((b.tv_sec - a.tv_sec) * 1e9 + (b.tv_nsec - a.tv_nsec)) / n;
}

int main(int argc, char **argv)
{
	long n = argc > 1 ? atol(argv[1]) : 200000;
	char line[16];

	if (n <= 0)
		return 2;
	printf("base %.1f\n", per_call_ns(n));
	fflush(stdout);
	if (!fgets(line, sizeof(line), stdin))
		return 1;
	printf("probed %.1f\n", per_call_ns(n));
	return 0;
}
