// SPDX-License-Identifier: GPL-2.0-only
/*
 * Entry point for CUDA_INJECTION64_PATH: the driver dlopens this library at
 * cuInit and calls InitializeInjection (docs/cupti.md A1). Environment:
 *   TTFTRACE_CUPTI_SOCK         socket of ttftrace ("@name" abstract; default @ttftrace-cupti)
 *   TTFTRACE_CUPTI_LIB          libcupti.so.13 to use if the process has none loaded
 *   TTFTRACE_CUPTI_API=all      keep every runtime/driver API record
 *   TTFTRACE_CUPTI_BUF_KB       host buffer size (default 2048)
 *   TTFTRACE_CUPTI_MAX_BUFFERS  buffers held at once (default 32)
 *   TTFTRACE_CUPTI_FLUSH_MS     flush period (default 200)
 *   TTFTRACE_CUPTI_DISABLE=1    load but do nothing
 */
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cupti/collector.h"
#include "cupti/inject.h"

static struct cupti_collector *inj_col;

static unsigned long env_ul(const char *name, unsigned long def)
{
	const char *v = getenv(name);
	char *end;
	unsigned long x;

	if (!v || !*v)
		return def;
	x = strtoul(v, &end, 10);
	return *end ? def : x;
}

static void at_exit(void)
{
	/* Best effort: os._exit() and SIGKILL skip this; the periodic flush is the main path. */
	cupti_collector__stop(inj_col);
}

bool cupti_inject__claim(void)
{
	static int claimed;

	return !__atomic_exchange_n(&claimed, 1, __ATOMIC_SEQ_CST);
}

int cupti_inject__start(const char *sock_path, uint32_t *cupti_version, char *why,
			size_t why_len)
{
	struct cupti_collector_opts opts = { .sz = sizeof(opts), .sock_path = sock_path };
	struct ttf_gpu_stats st;
	static struct cupti_api api;
	const char *v;
	int err;

	v = getenv("TTFTRACE_CUPTI_DISABLE");
	if (v && *v && strcmp(v, "0")) {
		snprintf(why, why_len, "disabled by TTFTRACE_CUPTI_DISABLE");
		return -ECANCELED;
	}
	err = cupti_api__load(&api, why, why_len);
	if (err)
		return err;
	opts.buf_bytes = env_ul("TTFTRACE_CUPTI_BUF_KB", 2048) * 1024;
	opts.max_buffers = env_ul("TTFTRACE_CUPTI_MAX_BUFFERS", 32);
	opts.flush_period_ms = env_ul("TTFTRACE_CUPTI_FLUSH_MS", 200);
	v = getenv("TTFTRACE_CUPTI_API");
	opts.api_all = v && !strcmp(v, "all");
	err = cupti_collector__new(&api, &opts, &inj_col);
	if (err) {
		snprintf(why, why_len, "cannot create the collector: %s", strerror(-err));
		return err;
	}
	err = cupti_collector__start(inj_col);
	if (err) {
		/* inert; the collector said why on stderr, once */
		snprintf(why, why_len, "CUPTI refused to start (%s): the process's stderr has "
			 "the reason", strerror(-err));
		return err;
	}
	if (cupti_version) {
		cupti_collector__stats(inj_col, &st);
		*cupti_version = (uint32_t)st.cupti_version;
	}
	atexit(at_exit);
	return 0;
}

static void init_once(void)
{
	char why[256];
	int err;

	if (!cupti_inject__claim())
		return; /* attached already */
	err = cupti_inject__start(NULL, NULL, why, sizeof(why));
	if (err == -ENOENT || err == -ENOSYS)
		dprintf(2, "ttftrace-cupti[%d]: GPU breakdown unavailable: %s\n", (int)getpid(), why);
}

/*
 * Called by the CUDA driver during cuInit. Idempotent; returns 1 even when
 * tracing could not start (the return value's effect is undocumented, and
 * the application must run unchanged either way).
 */
__attribute__((visibility("default"))) int InitializeInjection(void)
{
	static pthread_once_t once = PTHREAD_ONCE_INIT;

	pthread_once(&once, init_once);
	return 1;
}
