/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * Host<->device copy bandwidth through the CUDA runtime, loaded with dlopen so that
 * ttftrace builds and runs without CUDA (the runtime is never linked).
 *
 * Facts relied on (CUDA Runtime API reference, cuda_runtime_api.h / driver_types.h 13.0):
 * - cudaMemcpy from pageable memory H2D may return once the data is in a staging buffer,
 *   before the DMA ends, so every timed copy is followed by cudaDeviceSynchronize().
 * - Pageable copies are staged through a pinned bounce buffer by the driver: their
 *   throughput reflects memcpy and staging, not the PCIe link (docs/cases.md #23, #25).
 * - enum values used: cudaSuccess 0, cudaMemcpyHostToDevice 1, cudaMemcpyDeviceToHost 2,
 *   cudaErrorNoDevice 100.
 * - cudaDeviceGetPCIBusId() gives "dddd:bb:dd.f", the key into the pcie module.
 */
#ifndef TTF_COPYBW_H
#define TTF_COPYBW_H

#include <stdbool.h>
#include <stddef.h>

#define COPYBW_MAX_SIZES	32

enum copybw_dir {
	COPYBW_H2D = 1,		/* == cudaMemcpyHostToDevice */
	COPYBW_D2H = 2,		/* == cudaMemcpyDeviceToHost */
};

struct copybw_cuda;	/* opaque: the dlopen'ed runtime */
struct copybw_load;	/* opaque: a background copy load */

/*
 * Parse one size: a number with optional K, M or G suffix (binary: KiB, MiB, GiB; "KiB"
 * etc. also accepted). Range 1 byte .. 4 GiB. Returns 0 or -EINVAL.
 */
int copybw__parse_size(const char *s, size_t *bytes);

/* Parse a comma-separated size list into sizes[max]. Returns the count or -EINVAL. */
int copybw__parse_sizes(const char *list, size_t *sizes, int max);

/* Format bytes as "64KiB", "256MiB", "1000B" into buf. Returns buf. */
const char *copybw__fmt_size(size_t bytes, char *buf, size_t len);

/*
 * Load the CUDA runtime and count devices. lib_path overrides the search (NULL: the
 * TTF_CUDART environment variable, then libcudart.so{,.13,.12,.11.0}, then
 * /usr/local/cuda* and Python nvidia/cuda_runtime wheels). On failure *why points to a
 * static description and the return is -ENOENT (no runtime library), -ENOSYS (a symbol
 * is missing), -ELIBACC (the driver cannot be used: none, or older than the runtime),
 * -ENODEV (cudaErrorNoDevice, or 0 devices) or -ENOMEM. Returns 0 and *out on success.
 */
int copybw__open(const char *lib_path, struct copybw_cuda **out, const char **why);
void copybw__close(struct copybw_cuda *cu);
int copybw__device_count(const struct copybw_cuda *cu);

/* PCI address of CUDA device dev ("0000:3b:00.0", lower case). Returns 0 or -EIO. */
int copybw__device_bdf(struct copybw_cuda *cu, int dev, char *bdf, size_t len);

/* Description of the last CUDA error seen by cu (static string, never NULL). */
const char *copybw__last_error(const struct copybw_cuda *cu);

/*
 * Time iters copies of bytes in dir between device memory on dev and host memory
 * (pinned: cudaMallocHost, else malloc'ed and touched), after warmup untimed copies.
 * *gbps = bytes * iters / elapsed, in GB/s (10^9 B/s). Returns 0, -ENOMEM or -EIO.
 */
int copybw__measure(struct copybw_cuda *cu, int dev, enum copybw_dir dir, bool pinned,
		    size_t bytes, int warmup, int iters, double *gbps);

/*
 * Start pinned H2D copies of 64 MiB on dev in a background thread, to hold the link busy
 * while it is read (docs/cases.md #24). Returns 0 or a negative errno.
 * copybw__load_stop joins the thread; *gbps (may be NULL) is what the load achieved.
 */
int copybw__load_start(struct copybw_cuda *cu, int dev, struct copybw_load **out);
int copybw__load_stop(struct copybw_load *load, double *gbps);

#endif /* TTF_COPYBW_H */
