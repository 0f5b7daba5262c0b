/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * Which RUNTIME/DRIVER API records the collector keeps, and why: kernel and
 * graph launches, copies, memsets and host-side synchronisation. Everything
 * else (cudaGetDevice, cudaStreamIsCapturing, ...) is skipped unless
 * TTFTRACE_CUPTI_API=all, to keep the socket traffic proportional to GPU work.
 */
#ifndef TTFTRACE_CUPTI_CBID_H
#define TTFTRACE_CUPTI_CBID_H

#include <stdint.h>

/* Internal to libttftrace-cupti.so: keep out of the host process's symbol space. */
#pragma GCC visibility push(hidden)

/*
 * Category (enum ttf_gpu_api_category) of callback id @cbid in @domain
 * (enum ttf_gpu_api_domain); TTF_GPU_API_OTHER for ids not in the kept set
 * or out of range. Ids are those of CUDA 13.0 cupti_runtime_cbid.h and
 * cupti_driver_cbid.h; the ids are stable across releases (new calls get new ids).
 */
uint8_t cupti_cbid__category(uint8_t domain, uint32_t cbid);

#pragma GCC visibility pop

#endif /* TTFTRACE_CUPTI_CBID_H */
