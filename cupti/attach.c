// SPDX-License-Identifier: GPL-2.0-only
/*
 * Entry point for `ttftrace gpu-attach` (docs/cupti.md A9): the tracer makes
 * one thread of a running process call dlopen() on this library and then
 * ttftrace_cupti_attach(sock). That call only starts a thread and returns;
 * the thread looks for CUDA in the process, starts the collector when CUDA
 * is initialised there, reports what it found to the tracer as one NOTICE
 * message (cupti/gpu_wire.h), and exits. The collector's own thread then
 * starts with the first CUPTI buffer, as after CUDA_INJECTION64_PATH.
 */
#include <dlfcn.h>
#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "cupti/clock.h"
#include "cupti/inject.h"
#include "cupti/sender.h"

#define ATTACH_REPORT_WAIT_MS 5000 /* how long the report waits for a listener */
#define ATTACH_THREAD_STACK_BYTES (256 * 1024)
#define CUDA_ERROR_NOT_INITIALIZED 3

static char attach_sock[108];

/* CUDA in this process: its notice code and text. */
static uint32_t look_for_cuda(char *text, size_t len)
{
	int (*device_count)(int *n);
	uint32_t version = 0;
	char why[160];
	void *cuda;
	int n = 0, r, err;

	cuda = dlopen("libcuda.so.1", RTLD_NOW | RTLD_NOLOAD);
	if (!cuda) {
		snprintf(text, len, "no CUDA in this process (libcuda.so.1 is not loaded)");
		return TTF_GPU_NOTICE_NO_CUDA;
	}
	*(void **)&device_count = dlsym(cuda, "cuDeviceGetCount");
	r = device_count ? device_count(&n) : -1;
	dlclose(cuda); /* RTLD_NOLOAD took a reference: give it back */
	if (r == CUDA_ERROR_NOT_INITIALIZED) {
		snprintf(text, len, "no CUDA in this process yet (libcuda.so.1 is loaded, "
			 "cuInit was not called)");
		return TTF_GPU_NOTICE_NO_CUDA;
	}
	if (r) {
		snprintf(text, len, "no CUDA device in this process (cuDeviceGetCount: %d)", r);
		return TTF_GPU_NOTICE_NO_CUDA;
	}
	err = cupti_inject__start(attach_sock, &version, why, sizeof(why));
	if (err) {
		snprintf(text, len, "CUDA is initialised (%d devices), GPU breakdown "
			 "unavailable: %s", n, why);
		return TTF_GPU_NOTICE_UNAVAILABLE;
	}
	snprintf(text, len, "CUPTI activity enabled (CUPTI version %u, %d devices)", version, n);
	return TTF_GPU_NOTICE_ENABLED;
}

static void *attach_thread(void *arg)
{
	struct ttf_gpu_stats stats = { 0 };
	struct cupti_sender *tx;
	char text[TTF_GPU_NOTICE_MAX + 1];
	uint64_t deadline_ns;
	uint32_t code;

	code = look_for_cuda(text, sizeof(text));
	/* A sender of its own (no collector when there is no CUDA): about 40 KiB, freed. */
	tx = calloc(1, sizeof(*tx));
	if (!tx || cupti_sender__init(tx, attach_sock, (uint32_t)getpid(), &stats)) {
		free(tx);
		return NULL;
	}
	deadline_ns = cupti_clock__mono_ns() + ATTACH_REPORT_WAIT_MS * 1000000ull;
	while (!cupti_sender__send_notice(tx, code, text) && cupti_clock__mono_ns() < deadline_ns) {
		struct timespec ts = { 0, 50 * 1000000L };

		/* the sender tries to connect at most once a second */
		tx->next_connect_ns = 0;
		nanosleep(&ts, NULL);
	}
	cupti_sender__close(tx);
	free(tx);
	return NULL;
}

/*
 * Called by ttftrace in a thread it holds stopped (docs/cupti.md A9), right
 * after dlopen(). Must return quickly and never block: it copies sock
 * ("@name" or a path, where the tracer listens), starts the attach thread with
 * every signal blocked (the process's signals stay with its own threads), and
 * returns 0; 1 when the collector was claimed already (injected at start, or
 * attached before); -ENAMETOOLONG, or the pthread_create() error, negated.
 */
__attribute__((visibility("default"))) int ttftrace_cupti_attach(const char *sock)
{
	pthread_attr_t attr;
	sigset_t all, old;
	pthread_t th;
	int err;

	if (!sock || strlen(sock) >= sizeof(attach_sock))
		return -ENAMETOOLONG;
	if (!cupti_inject__claim())
		return 1;
	memcpy(attach_sock, sock, strlen(sock) + 1);
	pthread_attr_init(&attr);
	pthread_attr_setdetachstate(&attr, PTHREAD_CREATE_DETACHED);
	pthread_attr_setstacksize(&attr, ATTACH_THREAD_STACK_BYTES);
	sigfillset(&all);
	pthread_sigmask(SIG_SETMASK, &all, &old);
	err = pthread_create(&th, &attr, attach_thread, NULL);
	pthread_sigmask(SIG_SETMASK, &old, NULL);
	pthread_attr_destroy(&attr);
	return err ? -err : 0;
}
