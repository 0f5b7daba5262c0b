// SPDX-License-Identifier: GPL-2.0-only
/*
 * libgpu_feed.so: the dry run's stand-in for the injected collector
 * (tests/gpu/run.sh DRY=1), loaded with ctypes into the process that plays
 * the CUDA process, so the receivers (cupti_rx, ttftrace) see its pid on the
 * socket as they would a collector's. Sends the records given as text lines
 * through the collector's own transport (cupti/sender.c). One record a line:
 *   K START_NS END_NS TID GRAPH_ID NAME           a kernel and its launch
 *   C START_NS END_NS TID BYTES DIR SRC DST       a copy and its call
 * DIR: enum ttf_gpu_copy_kind; SRC/DST: enum ttf_gpu_mem_kind. TID 0: no
 * launch record. Flushes after each line. Thread-safe.
 *   gpu_feed_open(SOCK) -> 0 | -errno; gpu_feed_line(LINE) -> 0 | -1 (bad line);
 *   gpu_feed_close() -> records lost in transport.
 */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cupti/sender.h"

static void push_api(struct cupti_sender *s, uint32_t corr, uint32_t tid, uint8_t cat,
		     uint64_t start_ns)
{
	struct ttf_gpu_rec a = { .type = TTF_GPU_REC_API, .start_ns = start_ns - 2000,
				 .end_ns = start_ns - 1000, .correlation_id = corr };

	if (!tid)
		return;
	a.api.tid = tid;
	a.api.category = cat;
	a.api.domain = TTF_GPU_API_RUNTIME;
	cupti_sender__push(s, &a, NULL);
}

#define MAX_NAMES 32

/* One cupti_name per distinct kernel name (the sender sends each once). */
static struct cupti_name *name_of(const char *nm)
{
	static struct cupti_name names[MAX_NAMES];
	static char strs[MAX_NAMES][128];
	static int n;

	for (int i = 0; i < n; i++)
		if (!strcmp(strs[i], nm))
			return &names[i];
	if (n == MAX_NAMES)
		return NULL;
	snprintf(strs[n], sizeof(strs[n]), "%s", nm);
	names[n] = (struct cupti_name){ .id = 100 + n, .str = strs[n], .len = strlen(strs[n]) };
	return &names[n++];
}

static int feed_line(struct cupti_sender *s, const char *line, uint32_t corr)
{
	struct cupti_name *name = NULL;
	unsigned long long a, b, bytes;
	unsigned int tid, dir, src, dst, graph;
	struct ttf_gpu_rec r = { .correlation_id = corr };
	char nm[128];

	if (sscanf(line, "K %llu %llu %u %u %127s", &a, &b, &tid, &graph, nm) == 5) {
		name = name_of(nm);
		r.type = TTF_GPU_REC_KERNEL;
		r.graph_id = graph;
		r.flags = graph ? TTF_GPU_RECF_GRAPH : 0;
		r.kernel.name_id = name ? name->id : 0;
		push_api(s, corr, tid, graph ? TTF_GPU_API_GRAPH_LAUNCH : TTF_GPU_API_LAUNCH, a);
	} else if (sscanf(line, "C %llu %llu %u %llu %u %u %u", &a, &b, &tid, &bytes, &dir, &src,
			  &dst) == 7) {
		r.type = TTF_GPU_REC_MEMCPY;
		r.copy.bytes = bytes;
		r.copy.runtime_correlation_id = corr;
		r.copy_kind = dir;
		r.src_kind = src;
		r.dst_kind = dst;
		push_api(s, corr, tid, TTF_GPU_API_MEMCPY, a);
	} else {
		return -1;
	}
	r.start_ns = a;
	r.end_ns = b;
	cupti_sender__push(s, &r, name);
	cupti_sender__flush(s);
	return 0;
}

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static struct ttf_gpu_stats stats = { .clock_mode = 1 };
static struct cupti_sender sender;
static uint32_t corr;

__attribute__((visibility("default"))) int gpu_feed_open(const char *sock)
{
	return cupti_sender__init(&sender, sock, getpid(), &stats);
}

__attribute__((visibility("default"))) int gpu_feed_line(const char *line)
{
	int err;

	pthread_mutex_lock(&lock);
	err = feed_line(&sender, line, ++corr);
	pthread_mutex_unlock(&lock);
	return err;
}

__attribute__((visibility("default"))) long long gpu_feed_close(void)
{
	pthread_mutex_lock(&lock);
	stats.records[TTF_GPU_REC_KERNEL] = corr;
	cupti_sender__send_stats(&sender);
	cupti_sender__close(&sender);
	pthread_mutex_unlock(&lock);
	return (long long)stats.send_dropped;
}
