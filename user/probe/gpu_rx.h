/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * ttftrace side of the CUPTI transport (cupti/gpu_wire.h): a non-blocking
 * AF_UNIX SOCK_SEQPACKET listener that the main loop polls. Every injected
 * CUDA process connects on its own; records go into a struct gpu_store under
 * the process id that SO_PEERCRED gives (ttftrace's PID namespace, the one
 * BPF reports), or the collector's own pid if that is unavailable.
 */
#ifndef TTFTRACE_GPU_RX_H
#define TTFTRACE_GPU_RX_H

#include <stddef.h>
#include <stdint.h>

#include "user/model/gpu_store.h"

struct gpu_rx;

struct gpu_rx_opts {
	size_t sz;              /* sizeof(struct gpu_rx_opts) */
	const char *sock_path;  /* "@name" abstract, or a path; NULL: $TTFTRACE_CUPTI_SOCK/default */
	uint32_t max_clients;   /* 0: 256 */
};

/* Bind and listen. Returns NULL with errno set (EADDRINUSE: another ttftrace listens). */
struct gpu_rx *gpu_rx__new(const struct gpu_rx_opts *opts);
/* The listening fd, for the caller's epoll (readable: a collector connects). */
int gpu_rx__fd(const struct gpu_rx *rx);
/*
 * Accept pending collectors and read every pending message into @store,
 * without blocking. Returns the number of records added, or -errno.
 * Malformed messages are dropped and counted (gpu_rx__bad_msgs).
 */
int gpu_rx__poll(struct gpu_rx *rx, struct gpu_store *store);
/* Messages rejected so far (bad magic/version/size) and records the store could not keep. */
uint64_t gpu_rx__bad_msgs(const struct gpu_rx *rx);
uint64_t gpu_rx__store_drops(const struct gpu_rx *rx);
/* Close the listener and all collector connections (unlinks a path socket). */
void gpu_rx__free(struct gpu_rx *rx);

#endif /* TTFTRACE_GPU_RX_H */
