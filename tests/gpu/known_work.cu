// SPDX-License-Identifier: GPL-2.0-only
/*
 * known_work: GPU work of known size for `make gpu-check` (tests/gpu/run.sh,
 * step "known"), built with nvcc on the GPU machine. Each operation is timed
 * with cudaEvents on its stream and bracketed by CLOCK_MONOTONIC reads on the
 * host, so tests/gpu/check.py finds its CUPTI record by time and compares the
 * two durations. One line per timed operation on stdout:
 *   OP NAME TARGET_NS EVENT_NS HOST_START_NS HOST_END_NS BYTES
 * OP: kernel (one spin kernel of TARGET_NS, %globaltimer), copy (BYTES, NAME
 * says direction and memory), graph (a CUDA graph of GRAPH_KERNELS spin
 * kernels replayed; EVENT_NS is the replay, first kernel start to last end).
 * Exit 0, or 1 with "Error: ..." when a CUDA call fails.
 */
#include <cuda_runtime.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define REPS 3
#define GRAPH_KERNELS 4
#define GRAPH_KERNEL_NS 50000ull

#define CK(call)                                                                     \
	do {                                                                         \
		cudaError_t e_ = (call);                                             \
		if (e_ != cudaSuccess) {                                             \
			fprintf(stderr, "Error: %s: %s\n", #call, cudaGetErrorString(e_)); \
			exit(1);                                                     \
		}                                                                    \
	} while (0)

__global__ void spin_ns(unsigned long long ns)
{
	unsigned long long t0, t;

	asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t0));
	do {
		asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t));
	} while (t - t0 < ns);
}

static unsigned long long mono_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (unsigned long long)ts.tv_sec * 1000000000ull + ts.tv_nsec;
}

struct timed {
	cudaEvent_t e0, e1;
	cudaStream_t st;
	unsigned long long h0;
};

static void begin(struct timed *t)
{
	CK(cudaStreamSynchronize(t->st));
	t->h0 = mono_ns();
	CK(cudaEventRecord(t->e0, t->st));
}

static void end(struct timed *t, const char *op, const char *name, unsigned long long target,
		unsigned long long bytes)
{
	float ms = 0;

	CK(cudaEventRecord(t->e1, t->st));
	CK(cudaEventSynchronize(t->e1));
	CK(cudaEventElapsedTime(&ms, t->e0, t->e1));
	printf("%s %s %llu %llu %llu %llu %llu\n", op, name, target,
	       (unsigned long long)(ms * 1e6 + 0.5), t->h0, mono_ns(), bytes);
}

static void kernels(struct timed *t)
{
	static const unsigned long long ns[] = { 20000, 100000, 1000000, 5000000 };
	char name[32];

	spin_ns<<<1, 1, 0, t->st>>>(1000); /* warm-up: module load, first launch */
	CK(cudaStreamSynchronize(t->st));
	for (int r = 0; r < REPS; r++)
		for (size_t i = 0; i < sizeof(ns) / sizeof(ns[0]); i++) {
			snprintf(name, sizeof(name), "spin_%lluus", ns[i] / 1000);
			begin(t);
			spin_ns<<<1, 1, 0, t->st>>>(ns[i]);
			CK(cudaGetLastError());
			end(t, "kernel", name, ns[i], 0);
		}
}

static void copies(struct timed *t)
{
	static const size_t sizes[] = { 1u << 20, 16u << 20, 64u << 20 };
	size_t max = 64u << 20;
	void *dev, *pinned, *pageable;
	char name[48];

	CK(cudaMalloc(&dev, max));
	CK(cudaMallocHost(&pinned, max));
	pageable = malloc(max);
	if (!pageable) {
		fprintf(stderr, "Error: out of host memory\n");
		exit(1);
	}
	memset(pageable, 1, max);
	memset(pinned, 1, max);
	CK(cudaMemcpy(dev, pinned, max, cudaMemcpyHostToDevice)); /* warm-up */
	for (int r = 0; r < REPS; r++)
		for (size_t i = 0; i < sizeof(sizes) / sizeof(sizes[0]); i++)
			for (int m = 0; m < 4; m++) {
				void *host = (m & 1) ? pageable : pinned;
				int h2d = m < 2;

				snprintf(name, sizeof(name), "%s_%s", h2d ? "h2d" : "d2h",
					 (m & 1) ? "pageable" : "pinned");
				begin(t);
				CK(cudaMemcpyAsync(h2d ? dev : host, h2d ? host : dev, sizes[i],
						   h2d ? cudaMemcpyHostToDevice
						       : cudaMemcpyDeviceToHost, t->st));
				end(t, "copy", name, 0, sizes[i]);
			}
	CK(cudaFree(dev));
	CK(cudaFreeHost(pinned));
	free(pageable);
}

static void graph(struct timed *t)
{
	cudaGraph_t g;
	cudaGraphExec_t ge;

	CK(cudaStreamBeginCapture(t->st, cudaStreamCaptureModeGlobal));
	for (int i = 0; i < GRAPH_KERNELS; i++)
		spin_ns<<<1, 1, 0, t->st>>>(GRAPH_KERNEL_NS);
	CK(cudaStreamEndCapture(t->st, &g));
	CK(cudaGraphInstantiate(&ge, g, 0));
	CK(cudaGraphLaunch(ge, t->st)); /* warm-up: upload */
	for (int r = 0; r < REPS; r++) {
		begin(t);
		CK(cudaGraphLaunch(ge, t->st));
		end(t, "graph", "replay_4x50us", GRAPH_KERNELS * GRAPH_KERNEL_NS, 0);
	}
	CK(cudaGraphExecDestroy(ge));
	CK(cudaGraphDestroy(g));
}

int main(void)
{
	struct timed t;

	setvbuf(stdout, NULL, _IOLBF, 0);
	CK(cudaSetDevice(0));
	CK(cudaStreamCreateWithFlags(&t.st, cudaStreamNonBlocking));
	CK(cudaEventCreate(&t.e0));
	CK(cudaEventCreate(&t.e1));
	kernels(&t);
	copies(&t);
	graph(&t);
	CK(cudaDeviceSynchronize());
	return 0;
}
