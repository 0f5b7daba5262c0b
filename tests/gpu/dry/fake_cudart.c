// SPDX-License-Identifier: GPL-2.0-only
/*
 * A stand-in libcudart for the dry run of tests/gpu/run.sh: the calls
 * `ttftrace copybw` and tests/gpu/copy_ref.py make, on host memory. A copy
 * takes bytes at FAKE_PINNED_GBPS (20) when its host side came from
 * cudaMallocHost, else FAKE_PAGEABLE_GBPS (8), by sleeping (it moves the
 * first 4 KiB only, so page faults do not blur the rate).
 * cudaDeviceGetPCIBusId answers 0000:01:00.0 (tests/noroot/pcie/trees/busy_gen4).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define MAX_PINNED 64

static void *pinned[MAX_PINNED];

static int is_pinned(const void *p)
{
	for (int i = 0; i < MAX_PINNED; i++)
		if (pinned[i] == p)
			return 1;
	return 0;
}

static double rate(const char *env, double dflt)
{
	const char *v = getenv(env);

	return v ? atof(v) : dflt;
}

int cudaGetDeviceCount(int *n) { *n = 1; return 0; }
int cudaSetDevice(int d) { return d == 0 ? 0 : 101; }
int cudaMalloc(void **p, size_t n) { *p = malloc(n); return *p ? 0 : 2; }
int cudaFree(void *p) { free(p); return 0; }
int cudaDeviceSynchronize(void) { return 0; }
const char *cudaGetErrorString(int e) { return e ? "fake cudart error" : "no error"; }

int cudaMallocHost(void **p, size_t n)
{
	*p = malloc(n);
	for (int i = 0; *p && i < MAX_PINNED; i++)
		if (!pinned[i]) {
			pinned[i] = *p;
			break;
		}
	return *p ? 0 : 2;
}

int cudaFreeHost(void *p)
{
	for (int i = 0; i < MAX_PINNED; i++)
		if (pinned[i] == p)
			pinned[i] = NULL;
	free(p);
	return 0;
}

/* kind 1 = host to device, 2 = device to host */
int cudaMemcpy(void *dst, const void *src, size_t n, int kind)
{
	int pin = is_pinned(kind == 1 ? src : dst);
	double gbps = pin ? rate("FAKE_PINNED_GBPS", 20) : rate("FAKE_PAGEABLE_GBPS", 8);
	struct timespec t0, t1, d;
	long long want_ns = (long long)(n / gbps), got_ns;

	clock_gettime(CLOCK_MONOTONIC, &t0);
	memcpy(dst, src, n < 4096 ? n : 4096);
	clock_gettime(CLOCK_MONOTONIC, &t1);
	got_ns = (t1.tv_sec - t0.tv_sec) * 1000000000LL + (t1.tv_nsec - t0.tv_nsec);
	if (got_ns < want_ns) {
		d.tv_sec = (want_ns - got_ns) / 1000000000LL;
		d.tv_nsec = (want_ns - got_ns) % 1000000000LL;
		nanosleep(&d, NULL);
	}
	return 0;
}

int cudaDeviceGetPCIBusId(char *bus, int len, int dev)
{
	snprintf(bus, len, "0000:01:00.0");
	return dev == 0 ? 0 : 101;
}
