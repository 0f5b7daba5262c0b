/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * ttftrace side of the CUPTI transport (cupti/gpu_wire.h): a non-blocking
 * AF_UNIX SOCK_SEQPACKET listener that the main loop polls. Every injected
 * CUDA process connects on its own; each item of its messages (a record, a
 * kernel name, its counters) goes to the records' gpu hook
 * (user/lib/records.h) under the process id that SO_PEERCRED gives
 * (ttftrace's PID namespace, the one BPF reports), or the collector's own
 * pid if that is unavailable.
 */
#ifndef TTFTRACE_GPU_RX_H
#define TTFTRACE_GPU_RX_H

#include <stddef.h>
#include <stdint.h>

#include "cupti/gpu_wire.h"
#include "user/lib/records.h"
#include "user/probe/source.h"

struct gpu_rx;

struct gpu_rx_opts {
	size_t sz;              /* sizeof(struct gpu_rx_opts) */
	const char *sock_path;  /* "@name" abstract, or a path; NULL: $TTFTRACE_CUPTI_SOCK/default */
	uint32_t max_clients;   /* 0: 256 */
	/*
	 * NOTICE messages (what a collector loaded into a running process found
	 * there, enum ttf_gpu_notice_code): text is NUL-terminated, valid during
	 * the call. NULL: notices are dropped.
	 */
	void (*notice)(void *ctx, uint32_t pid, uint32_t code, const char *text);
	void *notice_ctx;
};

/* Bind and listen. Returns NULL with errno set (EADDRINUSE: another ttftrace listens). */
struct gpu_rx *gpu_rx__new(const struct gpu_rx_opts *opts);
/*
 * Accept pending collectors and hand every item of every pending message to
 * out->gpu, without blocking. Returns the number of records the hook took
 * (returned 0 for), or -errno. Malformed messages are dropped and counted
 * (gpu_rx__bad_msgs).
 */
int gpu_rx__poll(struct gpu_rx *rx, const struct ttf_records *out);
/* Messages rejected so far (bad magic/version/size). */
uint64_t gpu_rx__bad_msgs(const struct gpu_rx *rx);
/* gpu_bad_msgs, as a ttf_counters_fn (ctx: the receiver). Returns how many. */
int gpu_rx__counters(void *rx, struct report_counter *c, int cap);
/* The receiver as a source (user/probe/source.h) whose poll hands items to out. */
void gpu_rx__source(struct gpu_rx *rx, const struct ttf_records *out,
		    struct ttf_probe_source *src);
/* Close the listener and all collector connections (unlinks a path socket). */
void gpu_rx__free(struct gpu_rx *rx);

#endif /* TTFTRACE_GPU_RX_H */
