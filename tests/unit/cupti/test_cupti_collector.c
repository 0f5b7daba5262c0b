// SPDX-License-Identifier: GPL-2.0-only
/*
 * Control flow of the CUPTI collector (cupti/collector.c) behind a fake
 * struct cupti_api, the socket transport (cupti/sender.c -> user/probe/gpu_rx.c),
 * and InitializeInjection against the real libcupti without a driver.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>
#include <setjmp.h>
#include <cmocka.h>

#include "cupti/collector.h"
#include "cupti/sender.h"
#include "tests/unit/cupti/cupti_records.h"
#include "user/probe/gpu_rx.h"
#include "user/model/gpu_store.h"

/* The receiver's items into a store, as the pipeline does. */
static int to_store(void *ctx, uint32_t pid, uint32_t kind, const void *body, size_t len)
{
	return gpu_store__add_item(ctx, pid, kind, body, len);
}

static int poll_into(struct gpu_rx *rx, struct gpu_store *st)
{
	struct ttf_records out = { .ctx = st, .gpu = to_store };

	return gpu_rx__poll(rx, &out);
}

int InitializeInjection(void);

#define T0 7000000000ull

/* ---- fake libcupti ---------------------------------------------------------------- */

struct pending {
	uint8_t *p;
	size_t size, valid;
};

static struct fake {
	CUptiResult subscribe_ret;
	CUptiResult enable_ret;          /* for enable_fail_kind */
	int enable_fail_kind;
	const char *holder;              /* written to oldSubscriberName on failure */
	uint32_t version;
	int subscribes, unsubscribes;
	int thread_id_type;
	int ts_registered, ts_before_first_enable;
	int enabled[16], n_enabled;
	CUpti_BuffersCallbackRequestFunc req;
	CUpti_BuffersCallbackCompleteFunc done;
	int flushes[2];                  /* by flag: 0 and FORCED */
	size_t dropped;                  /* reported once by get_num_dropped */
	struct pending pending[8];
	int npending;
} fk;

static CUptiResult f_get_version(uint32_t *v)
{
	*v = fk.version;
	return CUPTI_SUCCESS;
}

static const char *f_result_string(CUptiResult r)
{
	return r == CUPTI_ERROR_MULTIPLE_SUBSCRIBERS_NOT_SUPPORTED ? "MULTIPLE_SUBSCRIBERS"
	       : r == CUPTI_ERROR_INSUFFICIENT_PRIVILEGES        ? "INSUFFICIENT_PRIVILEGES"
								  : "other";
}

static CUptiResult f_subscribe_v2(CUpti_SubscriberHandle *s, CUpti_CallbackFunc cb, void *ud,
				  CUpti_SubscriberParams *p)
{
	fk.subscribes++;
	if (fk.subscribe_ret != CUPTI_SUCCESS && fk.holder)
		snprintf(p->oldSubscriberName, p->oldSubscriberSize, "%s", fk.holder);
	*s = (CUpti_SubscriberHandle)&fk;
	return fk.subscribe_ret;
}

static CUptiResult f_subscribe(CUpti_SubscriberHandle *s, CUpti_CallbackFunc cb, void *ud)
{
	return CUPTI_ERROR_UNKNOWN; /* _v2 must be preferred */
}

static CUptiResult f_unsubscribe(CUpti_SubscriberHandle s)
{
	fk.unsubscribes++;
	return CUPTI_SUCCESS;
}

static CUptiResult f_enable_callback(uint32_t en, CUpti_SubscriberHandle s,
				     CUpti_CallbackDomain d, CUpti_CallbackId cbid)
{
	return CUPTI_SUCCESS;
}

static CUptiResult f_set_thread_id_type(CUpti_ActivityThreadIdType t)
{
	fk.thread_id_type = t;
	return CUPTI_SUCCESS;
}

static CUptiResult f_register_ts(CUpti_TimestampCallbackFunc fn)
{
	fk.ts_registered = fn != NULL;
	fk.ts_before_first_enable = fk.n_enabled == 0;
	return CUPTI_SUCCESS;
}

static CUptiResult f_get_timestamp(uint64_t *ts)
{
	*ts = T0;
	return CUPTI_SUCCESS;
}

static CUptiResult f_register_callbacks(CUpti_BuffersCallbackRequestFunc req,
					CUpti_BuffersCallbackCompleteFunc done)
{
	fk.req = req;
	fk.done = done;
	return CUPTI_SUCCESS;
}

static CUptiResult f_enable(CUpti_ActivityKind kind)
{
	if ((int)kind == fk.enable_fail_kind)
		return fk.enable_ret;
	fk.enabled[fk.n_enabled++] = kind;
	return CUPTI_SUCCESS;
}

/* Hand every held buffer back, as cuptiActivityFlushAll does. */
static CUptiResult f_flush_all(uint32_t flag)
{
	fk.flushes[flag ? 1 : 0]++;
	while (fk.npending) {
		struct pending p = fk.pending[--fk.npending];

		fk.done(NULL, 0, p.p, p.size, p.valid);
	}
	return CUPTI_SUCCESS;
}

static size_t rec_size(CUpti_ActivityKind kind)
{
	switch (kind) {
	case CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL:
		return sizeof(CUpti_ActivityKernel10);
	case CUPTI_ACTIVITY_KIND_MEMCPY:
		return sizeof(CUpti_ActivityMemcpy6);
	case CUPTI_ACTIVITY_KIND_MEMSET:
		return sizeof(CUpti_ActivityMemset4);
	default:
		return sizeof(CUpti_ActivityAPI);
	}
}

/* Same contract as cuptiActivityGetNextRecord for the kinds above. */
static CUptiResult f_next(uint8_t *buf, size_t valid, CUpti_Activity **rec)
{
	size_t off = *rec ? (size_t)((uint8_t *)*rec - buf) + rec_size((*rec)->kind) : 0;

	if (off + sizeof(CUpti_Activity) > valid ||
	    off + rec_size(((CUpti_Activity *)(buf + off))->kind) > valid)
		return CUPTI_ERROR_MAX_LIMIT_REACHED;
	*rec = (CUpti_Activity *)(buf + off);
	return CUPTI_SUCCESS;
}

static CUptiResult f_get_num_dropped(CUcontext ctx, uint32_t stream, size_t *dropped)
{
	*dropped = fk.dropped;
	fk.dropped = 0;
	return CUPTI_SUCCESS;
}

static const struct cupti_api fake_api = {
	.get_version = f_get_version,
	.result_string = f_result_string,
	.subscribe_v2 = f_subscribe_v2,
	.subscribe = f_subscribe,
	.unsubscribe = f_unsubscribe,
	.enable_callback = f_enable_callback,
	.set_thread_id_type = f_set_thread_id_type,
	.register_timestamp_cb = f_register_ts,
	.get_timestamp = f_get_timestamp,
	.register_callbacks = f_register_callbacks,
	.enable = f_enable,
	.flush_all = f_flush_all,
	.get_next_record = f_next,
	.get_num_dropped = f_get_num_dropped,
};

/* CUPTI asks for a buffer and writes @recs into it; returns 0 if it got none. */
static int cupti_writes(const struct abuf *recs)
{
	uint8_t *p = NULL;
	size_t size = 0, max = 0;

	fk.req(&p, &size, &max);
	if (!p)
		return 0;
	assert_true(size >= recs->len);
	assert_int_equal((uintptr_t)p % 8, 0);
	memcpy(p, recs->p, recs->len);
	fk.pending[fk.npending++] = (struct pending){ .p = p, .size = size, .valid = recs->len };
	return 1;
}

/* ---- fixture ---------------------------------------------------------------------- */

struct fixture {
	struct cupti_collector *c;
	struct cupti_collector_opts opts;
	char sock[64];
	int log[2];
	struct abuf recs;
};

static int seq;

static int setup(void **state)
{
	struct fixture *f = calloc(1, sizeof(*f));

	memset(&fk, 0, sizeof(fk));
	fk.version = 130001;
	fk.enable_fail_kind = -1;
	snprintf(f->sock, sizeof(f->sock), "@ttftrace-test-%d-%d", (int)getpid(), seq++);
	if (pipe2(f->log, O_NONBLOCK | O_CLOEXEC))
		return -1;
	f->opts = (struct cupti_collector_opts){
		.sz = sizeof(f->opts),
		.sock_path = f->sock,
		.buf_bytes = 64 * 1024,
		.max_buffers = 4,
		.flush_period_ms = 10000, /* tests flush explicitly unless they test the period */
		.log_fd = f->log[1],
	};
	*state = f;
	return 0;
}

static int teardown(void **state)
{
	struct fixture *f = *state;

	cupti_collector__free(f->c);
	close(f->log[0]);
	close(f->log[1]);
	abuf_free(&f->recs);
	free(f);
	return 0;
}

/* Lines written to the log pipe so far (kept in @text). */
static int log_lines(struct fixture *f, char *text, size_t len)
{
	ssize_t n = read(f->log[0], text, len - 1);
	int lines = 0;

	text[n > 0 ? n : 0] = 0;
	for (char *p = text; *p; p++)
		lines += *p == '\n';
	return lines;
}

static int start(struct fixture *f)
{
	assert_int_equal(cupti_collector__new(&fake_api, &f->opts, &f->c), 0);
	return cupti_collector__start(f->c);
}

/* Poll @rx until @want records arrived or about 2 s passed. */
static int receive(struct gpu_rx *rx, struct gpu_store *st, int want)
{
	int got = 0;

	for (int i = 0; i < 200 && got < want; i++) {
		got += poll_into(rx, st);
		if (got < want)
			usleep(10000);
	}
	return got;
}

/* ---- tests ------------------------------------------------------------------------ */

static void test_init_order(void **state)
{
	struct fixture *f = *state;
	char text[512];

	assert_int_equal(start(f), 0);
	assert_int_equal(cupti_collector__state(f->c), CUPTI_COL_RUNNING);
	assert_int_equal(fk.subscribes, 1);
	assert_int_equal(fk.thread_id_type, CUPTI_ACTIVITY_THREAD_ID_TYPE_SYSTEM);
	assert_true(fk.ts_registered);
	assert_true(fk.ts_before_first_enable);
	assert_int_equal(fk.n_enabled, 5);
	assert_int_equal(fk.enabled[0], CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL);
	assert_int_equal(fk.enabled[1], CUPTI_ACTIVITY_KIND_MEMCPY);
	assert_int_equal(fk.enabled[2], CUPTI_ACTIVITY_KIND_MEMSET);
	assert_int_equal(fk.enabled[3], CUPTI_ACTIVITY_KIND_RUNTIME);
	assert_int_equal(fk.enabled[4], CUPTI_ACTIVITY_KIND_DRIVER);
	for (int i = 0; i < fk.n_enabled; i++)
		assert_int_not_equal(fk.enabled[i], CUPTI_ACTIVITY_KIND_KERNEL); /* docs/cases.md #19 */
	assert_int_equal(log_lines(f, text, sizeof(text)), 0);
	assert_int_equal(cupti_collector__start(f->c), -EALREADY);
	/* One collector per process. */
	struct cupti_collector *other;
	assert_int_equal(cupti_collector__new(&fake_api, &f->opts, &other), -EBUSY);
}

/* docs/cases.md #18b: torch.profiler/Kineto already subscribed. */
static void test_subscriber_conflict(void **state)
{
	struct fixture *f = *state;
	char text[1024];

	fk.subscribe_ret = CUPTI_ERROR_MULTIPLE_SUBSCRIBERS_NOT_SUPPORTED;
	fk.holder = "CUPTI for Kineto";
	assert_int_equal(start(f), -EBUSY);
	assert_int_equal(cupti_collector__state(f->c), CUPTI_COL_INERT);
	assert_int_equal(log_lines(f, text, sizeof(text)), 1);
	assert_non_null(strstr(text, "GPU breakdown unavailable"));
	assert_non_null(strstr(text, "held by CUPTI for Kineto"));
	assert_non_null(strstr(text, "MULTIPLE_SUBSCRIBERS"));
	assert_int_equal(fk.n_enabled, 0);
	assert_null(fk.req);
	cupti_collector__stop(f->c);
	assert_int_equal(fk.flushes[0] + fk.flushes[1], 0);
	assert_int_equal(log_lines(f, text, sizeof(text)), 0);
}

/* docs/cases.md #18a: profiling restricted to admins. */
static void test_insufficient_privileges(void **state)
{
	struct fixture *f = *state;
	char text[1024];
	uint8_t *p = (uint8_t *)1;
	size_t size = 1, max = 0;

	fk.enable_fail_kind = CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL;
	fk.enable_ret = CUPTI_ERROR_INSUFFICIENT_PRIVILEGES;
	assert_int_equal(start(f), -EPERM);
	assert_int_equal(cupti_collector__state(f->c), CUPTI_COL_INERT);
	assert_int_equal(fk.unsubscribes, 1);
	assert_int_equal(log_lines(f, text, sizeof(text)), 1);
	assert_non_null(strstr(text, "RmProfilingAdminOnly"));
	/* A late buffer request is refused: nothing is traced. */
	fk.req(&p, &size, &max);
	assert_null(p);
	assert_int_equal(size, 0);
}

/*
 * Forced flush at stop hands over CUPTI's held buffers; the records, their
 * kernel names and the final stats reach ttftrace's receiver.
 */
static void test_flush_at_stop_delivers(void **state)
{
	struct fixture *f = *state;
	struct gpu_rx_opts ro = { .sz = sizeof(ro), .sock_path = f->sock };
	struct gpu_rx *rx = gpu_rx__new(&ro);
	struct gpu_store *st = gpu_store__new();
	struct gpu_kernel_span ks[4];
	struct ttf_gpu_stats stats;

	assert_non_null(rx);
	assert_int_equal(start(f), 0);
	put_api(&f->recs, CUPTI_ACTIVITY_KIND_DRIVER, CUPTI_DRIVER_TRACE_CBID_cuLaunchKernel, 11, 321,
		T0, T0 + 500);
	put_kernel(&f->recs, 11, T0 + 1000, T0 + 2000, 0, "flash_fwd");
	put_kernel(&f->recs, 12, T0 + 3000, T0 + 4000, 0, "flash_fwd");
	put_kernel(&f->recs, 13, T0 + 5000, T0 + 6000, 0, "rms_norm");
	assert_int_equal(cupti_writes(&f->recs), 1);
	fk.dropped = 17;
	cupti_collector__stop(f->c);
	assert_int_equal(fk.flushes[1], 1);
	assert_int_equal(cupti_collector__state(f->c), CUPTI_COL_STOPPED);

	assert_int_equal(receive(rx, st, 4), 4);
	poll_into(rx, st); /* the stats message may trail */
	assert_int_equal(gpu_store__kernels(st, getpid(), 0, UINT64_MAX, ks, 4), 3);
	assert_string_equal(ks[0].name, "flash_fwd");
	assert_string_equal(ks[2].name, "rms_norm");
	assert_int_equal(ks[0].tid, 321);
	assert_int_equal(ks[1].tid, 0); /* its API record was never seen */
	assert_int_equal(gpu_store__stats(st, getpid(), &stats), 0);
	assert_int_equal(stats.records[TTF_GPU_REC_KERNEL], 3);
	assert_int_equal(stats.records[TTF_GPU_REC_API], 1);
	assert_int_equal(stats.cupti_dropped, 17);
	assert_int_equal(stats.buffers, 1);
	assert_int_equal(stats.clock_mode, 1);
	assert_int_equal(stats.cupti_version, 130001);
	assert_int_equal(gpu_rx__bad_msgs(rx), 0);
	gpu_store__free(st);
	gpu_rx__free(rx);
}

/* The collector's own thread flushes (complete records only) every period. */
static void test_periodic_flush(void **state)
{
	struct fixture *f = *state;
	struct gpu_rx_opts ro = { .sz = sizeof(ro), .sock_path = f->sock };
	struct gpu_rx *rx = gpu_rx__new(&ro);
	struct gpu_store *st = gpu_store__new();

	f->opts.flush_period_ms = 20;
	assert_non_null(rx);
	assert_int_equal(start(f), 0);
	put_memcpy(&f->recs, 5, T0, T0 + 1000, 1 << 20, 1, 2, 3);
	assert_int_equal(cupti_writes(&f->recs), 1);
	assert_int_equal(receive(rx, st, 1), 1);
	assert_true(fk.flushes[0] >= 1);
	assert_int_equal(fk.flushes[1], 0);
	gpu_store__free(st);
	gpu_rx__free(rx);
}

/* Bounded: past max_buffers, CUPTI >= v27 gets a NULL buffer (docs/cupti.md A3), older a scratch one. */
static void test_buffer_cap(void **state)
{
	struct fixture *f = *state;
	struct ttf_gpu_stats stats;
	uint8_t *p;
	size_t size, max;

	put_api(&f->recs, CUPTI_ACTIVITY_KIND_RUNTIME, CUPTI_RUNTIME_TRACE_CBID_cudaLaunchKernel_v7000,
		1, 1, T0, T0 + 1);
	assert_int_equal(start(f), 0);
	for (int i = 0; i < 4; i++)
		assert_int_equal(cupti_writes(&f->recs), 1);
	fk.req(&p, &size, &max);
	assert_null(p);
	cupti_collector__stats(f->c, &stats);
	assert_int_equal(stats.buffers_refused, 1);
	assert_int_equal(stats.buffers_discarded, 0);

	/* Once drained, buffers are available again. */
	assert_int_equal(cupti_collector__flush(f->c, false), 0);
	assert_int_equal(cupti_writes(&f->recs), 1);
}

static void test_buffer_cap_old_cupti(void **state)
{
	struct fixture *f = *state;
	struct ttf_gpu_stats stats;
	uint8_t *p = NULL;
	size_t size = 0, max;

	fk.version = 26;
	f->opts.max_buffers = 1;
	put_api(&f->recs, CUPTI_ACTIVITY_KIND_RUNTIME, CUPTI_RUNTIME_TRACE_CBID_cudaLaunchKernel_v7000,
		1, 1, T0, T0 + 1);
	assert_int_equal(start(f), 0);
	assert_int_equal(cupti_writes(&f->recs), 1);
	fk.req(&p, &size, &max);
	assert_non_null(p);
	assert_true(size > 0);
	fk.done(NULL, 0, p, size, 0); /* the scratch buffer comes back: ignored */
	cupti_collector__stats(f->c, &stats);
	assert_int_equal(stats.buffers_discarded, 1);
	assert_int_equal(stats.buffers_refused, 0);
}

/* Nobody listens: records are dropped and counted, the caller never blocks. */
static void test_drops_when_nobody_listens(void **state)
{
	struct fixture *f = *state;
	struct ttf_gpu_stats stats;

	assert_int_equal(start(f), 0);
	for (int i = 0; i < 5; i++)
		put_kernel(&f->recs, 100 + i, T0 + i * 10, T0 + i * 10 + 5, 0, "k");
	assert_int_equal(cupti_writes(&f->recs), 1);
	assert_int_equal(cupti_collector__flush(f->c, false), 0);
	cupti_collector__stats(f->c, &stats);
	assert_int_equal(stats.records[TTF_GPU_REC_KERNEL], 5);
	assert_int_equal(stats.send_dropped, 5);
}

/* docs/cases.md #5: a forked child goes silent; the parent's records were flushed before fork. */
static void test_fork_child_inert(void **state)
{
	struct fixture *f = *state;
	int status = -1;
	pid_t pid;

	assert_int_equal(start(f), 0);
	put_api(&f->recs, CUPTI_ACTIVITY_KIND_RUNTIME, CUPTI_RUNTIME_TRACE_CBID_cudaLaunchKernel_v7000,
		1, 1, T0, T0 + 1);
	assert_int_equal(cupti_writes(&f->recs), 1); /* starts the collector thread */
	pid = fork();
	assert_true(pid >= 0);
	if (pid == 0) {
		int flushes = fk.flushes[0] + fk.flushes[1];
		uint8_t *p = (uint8_t *)1;
		size_t size = 1, max;
		int bad = 0;

		bad |= cupti_collector__state(f->c) != CUPTI_COL_CHILD;
		cupti_collector__stop(f->c); /* what the inherited atexit handler would do */
		bad |= fk.flushes[0] + fk.flushes[1] != flushes;
		fk.req(&p, &size, &max);
		bad |= p != NULL;
		_exit(bad);
	}
	assert_int_equal(waitpid(pid, &status, 0), pid);
	assert_true(WIFEXITED(status));
	assert_int_equal(WEXITSTATUS(status), 0);
	assert_int_equal(fk.flushes[1], 1); /* pthread_atfork prepare: forced flush */
	assert_int_equal(cupti_collector__state(f->c), CUPTI_COL_RUNNING);
}

static uint64_t fake_now;

static uint64_t fake_clock(void)
{
	return fake_now;
}

/*
 * Transport: drops while nobody listens, a reconnect at most once a second,
 * and kernel names resent on the new connection.
 */
static void test_sender_reconnect(void **state)
{
	struct fixture *f = *state;
	struct ttf_gpu_stats stats = { 0 };
	struct cupti_sender *s = calloc(1, sizeof(*s));
	struct cupti_name name = { .id = 99, .str = "gemm", .len = 4 };
	struct ttf_gpu_rec r = { .type = TTF_GPU_REC_KERNEL, .start_ns = 10, .end_ns = 20,
				 .correlation_id = 1, .kernel.name_id = 99 };
	struct gpu_rx_opts ro = { .sz = sizeof(ro), .sock_path = f->sock };
	struct gpu_store *st = gpu_store__new();
	struct gpu_kernel_span ks[2];
	struct gpu_rx *rx;

	assert_int_equal(cupti_sender__init(s, f->sock, 4242, &stats), 0);
	s->now_ns = fake_clock;
	fake_now = 5000000000ull;
	for (int i = 0; i < 3; i++)
		cupti_sender__push(s, &r, &name);
	cupti_sender__flush(s);
	assert_int_equal(stats.send_dropped, 3);

	rx = gpu_rx__new(&ro);
	assert_non_null(rx);
	fake_now += 500000000ull; /* within the retry interval: still dropped */
	cupti_sender__push(s, &r, &name);
	cupti_sender__flush(s);
	assert_int_equal(stats.send_dropped, 4);
	fake_now += 600000000ull;
	cupti_sender__push(s, &r, &name);
	cupti_sender__flush(s);
	assert_int_equal(stats.send_dropped, 4);
	assert_int_equal(name.sent_epoch, s->epoch);
	assert_int_equal(receive(rx, st, 1), 1);
	assert_int_equal(gpu_store__kernels(st, getpid(), 0, UINT64_MAX, ks, 2), 1);
	assert_string_equal(ks[0].name, "gemm");
	cupti_sender__close(s);
	free(s);
	gpu_store__free(st);
	gpu_rx__free(rx);
}

/*
 * A listener that does not read: the socket fills, the sender waits once
 * (bounded) and then drops; every record is either delivered or counted.
 */
static void test_sender_full_socket(void **state)
{
	struct fixture *f = *state;
	struct ttf_gpu_stats stats = { 0 };
	struct cupti_sender *s = calloc(1, sizeof(*s));
	struct ttf_gpu_rec r = { .type = TTF_GPU_REC_API, .start_ns = 10, .end_ns = 20 };
	struct gpu_rx_opts ro = { .sz = sizeof(ro), .sock_path = f->sock };
	struct gpu_rx *rx = gpu_rx__new(&ro);
	struct gpu_store *st = gpu_store__new();
	const int total = 1000 * TTF_GPU_MSG_MAX_RECS; /* 32 MiB: over any sndbuf */
	int got = 0, n;

	assert_non_null(rx);
	assert_int_equal(cupti_sender__init(s, f->sock, 4242, &stats), 0);
	for (int i = 0; i < total; i++) {
		r.correlation_id = i + 1;
		cupti_sender__push(s, &r, NULL);
	}
	cupti_sender__flush(s);
	assert_true(stats.send_dropped > 0);
	while ((n = poll_into(rx, st)) > 0)
		got += n;
	assert_true(got > 0);
	assert_int_equal(got + stats.send_dropped, total);
	cupti_sender__close(s);
	free(s);
	gpu_store__free(st);
	gpu_rx__free(rx);
}

/*
 * The real library entry point with the real libcupti and no driver:
 * cuptiSubscribe fails, so it says so once and stays inert; repeated calls
 * return 1 and print nothing more. Run in a child: it installs a global collector.
 */
static void test_initialize_injection_without_driver(void **state)
{
	const char *home = getenv("CUDA_HOME");
	char lib[512], text[2048] = "";
	int out[2], status = -1, lines = 0;
	ssize_t n;
	pid_t pid;

	snprintf(lib, sizeof(lib), "%s/lib/libcupti.so.13",
		 home && *home ? home : "/usr/local/cuda-13.0");
	assert_int_equal(pipe(out), 0);
	pid = fork();
	assert_true(pid >= 0);
	if (pid == 0) {
		int r1, r2;

		dup2(out[1], 2);
		setenv("TTFTRACE_CUPTI_LIB", lib, 1);
		setenv(TTF_GPU_SOCK_ENV, "@ttftrace-test-nobody", 1);
		r1 = InitializeInjection();
		r2 = InitializeInjection();
		_exit(r1 == 1 && r2 == 1 ? 0 : 1);
	}
	close(out[1]);
	assert_int_equal(waitpid(pid, &status, 0), pid);
	n = read(out[0], text, sizeof(text) - 1);
	close(out[0]);
	text[n > 0 ? n : 0] = 0;
	for (char *p = text; *p; p++)
		lines += *p == '\n';
	assert_true(WIFEXITED(status));
	assert_int_equal(WEXITSTATUS(status), 0);
	assert_int_equal(lines, 1);
	assert_non_null(strstr(text, "GPU breakdown unavailable"));
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_init_order, setup, teardown),
		cmocka_unit_test_setup_teardown(test_subscriber_conflict, setup, teardown),
		cmocka_unit_test_setup_teardown(test_insufficient_privileges, setup, teardown),
		cmocka_unit_test_setup_teardown(test_flush_at_stop_delivers, setup, teardown),
		cmocka_unit_test_setup_teardown(test_periodic_flush, setup, teardown),
		cmocka_unit_test_setup_teardown(test_buffer_cap, setup, teardown),
		cmocka_unit_test_setup_teardown(test_buffer_cap_old_cupti, setup, teardown),
		cmocka_unit_test_setup_teardown(test_drops_when_nobody_listens, setup, teardown),
		cmocka_unit_test_setup_teardown(test_fork_child_inert, setup, teardown),
		cmocka_unit_test_setup_teardown(test_sender_reconnect, setup, teardown),
		cmocka_unit_test_setup_teardown(test_sender_full_socket, setup, teardown),
		cmocka_unit_test(test_initialize_injection_without_driver),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
