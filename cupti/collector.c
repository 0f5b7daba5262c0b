// SPDX-License-Identifier: GPL-2.0-only
#include <errno.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "cupti/clock.h"
#include "cupti/collector.h"
#include "cupti/decode.h"
#include "cupti/sender.h"

#define BUF_HDR_BYTES 64
#define DISCARD_BYTES (64 * 1024)
#define STATS_PERIOD_NS 1000000000ull
/* cuptiGetVersion() from which a NULL buffer may refuse a request (v27 = CUDA 12.9; docs/cupti.md A3). */
#define CUPTI_VERSION_NULL_BUFFER_OK 27
/*
 * CUPTI's fatal-error callback, by value: CUDA 11.8's headers do not name it
 * (an older libcupti refuses the enable, which is ignored). cupti_callbacks.h.
 */
#define CB_DOMAIN_STATE 6
#define CBID_STATE_FATAL_ERROR 1
#if CUPTI_API_VERSION >= 130000
_Static_assert(CUPTI_CB_DOMAIN_STATE == CB_DOMAIN_STATE, "CUPTI_CB_DOMAIN_STATE");
_Static_assert(CUPTI_CBID_STATE_FATAL_ERROR == CBID_STATE_FATAL_ERROR, "FATAL_ERROR");
#endif

/* A host activity buffer; CUPTI gets the bytes after this header. */
struct cbuf {
	struct cbuf *next;
	size_t valid;
};
_Static_assert(sizeof(struct cbuf) <= BUF_HDR_BYTES, "buffer header");

struct cupti_collector {
	struct cupti_api api;
	struct cupti_collector_opts opts;
	pid_t pid;
	volatile int state;          /* enum cupti_collector_state */
	bool null_ok;                /* CUPTI accepts a NULL buffer to refuse a request */
	bool subscribed;
	bool stopping;
	CUpti_SubscriberHandle sub;
	int64_t clock_offset_ns;     /* 0 when CUPTI stamps CLOCK_MONOTONIC for us */

	pthread_mutex_t lock;        /* queue, outstanding, thread state */
	pthread_cond_t cond;
	struct cbuf *ready_head, *ready_tail;
	uint32_t outstanding;        /* buffers handed to CUPTI or queued, not yet freed */
	bool thread_started, thread_stop;
	pthread_t thread;

	pthread_mutex_t decode_lock; /* decoder and sender: collector thread or flush/stop */
	bool decoder_ready;
	struct cupti_decoder dec;
	struct cupti_sender *tx;
	struct ttf_gpu_stats stats;  /* decoder/sender fields under decode_lock, the rest atomic */
	uint64_t next_stats_ns;
};

static struct cupti_collector *g_col;
static uint8_t discard_buf[DISCARD_BYTES] __attribute__((aligned(8)));

static void say(struct cupti_collector *c, const char *fmt, ...)
{
	char line[512];
	va_list ap;
	int n;

	n = snprintf(line, sizeof(line), "ttftrace-cupti[%d]: ", (int)c->pid);
	va_start(ap, fmt);
	n += vsnprintf(line + n, sizeof(line) - n - 1, fmt, ap);
	va_end(ap);
	if (n > (int)sizeof(line) - 2)
		n = sizeof(line) - 2;
	line[n++] = '\n';
	if (write(c->opts.log_fd ? c->opts.log_fd : 2, line, n) < 0)
		return; /* nowhere left to complain */
}

static void add_stat(uint64_t *field, uint64_t v)
{
	__atomic_fetch_add(field, v, __ATOMIC_RELAXED);
}

static uint64_t cupti_now(void)
{
	uint64_t ts = 0;

	if (!g_col || g_col->api.get_timestamp(&ts) != CUPTI_SUCCESS)
		return 0;
	return ts;
}

/* Decoder, sender; called with decode_lock held. */
static int setup_decoder(struct cupti_collector *c)
{
	struct cupti_decode_sink sink = { .rec = cupti_sender__sink };
	int err;

	if (c->decoder_ready)
		return 0;
	c->tx = malloc(sizeof(*c->tx));
	if (!c->tx)
		return -ENOMEM;
	err = cupti_sender__init(c->tx, c->opts.sock_path, (uint32_t)c->pid, &c->stats);
	if (err)
		goto cleanup;
	sink.ctx = c->tx;
	err = cupti_decoder__init(&c->dec, c->api.get_next_record, &sink, &c->stats);
	if (err)
		goto cleanup;
	c->dec.api_all = c->opts.api_all;
	c->dec.clock_offset_ns = c->clock_offset_ns;
	c->decoder_ready = true;
	return 0;
cleanup:
	free(c->tx);
	c->tx = NULL;
	return err;
}

/* Decode and free every queued buffer. */
static void drain(struct cupti_collector *c)
{
	size_t dropped = 0;
	struct cbuf *b;

	pthread_mutex_lock(&c->decode_lock);
	if (setup_decoder(c)) {
		pthread_mutex_unlock(&c->decode_lock);
		return;
	}
	for (;;) {
		pthread_mutex_lock(&c->lock);
		b = c->ready_head;
		if (b) {
			c->ready_head = b->next;
			if (!c->ready_head)
				c->ready_tail = NULL;
		}
		pthread_mutex_unlock(&c->lock);
		if (!b)
			break;
		add_stat(&c->stats.buffers, 1);
		cupti_decoder__buffer(&c->dec, (uint8_t *)b + BUF_HDR_BYTES, b->valid);
		free(b);
		pthread_mutex_lock(&c->lock);
		c->outstanding--;
		pthread_mutex_unlock(&c->lock);
	}
	/* Global queue (NULL context): buffers are process-wide since CUDA 6 (docs/cupti.md A3). */
	if (c->api.get_num_dropped(NULL, 0, &dropped) == CUPTI_SUCCESS && dropped)
		add_stat(&c->stats.cupti_dropped, dropped);
	cupti_sender__flush(c->tx);
	if (cupti_clock__mono_ns() >= c->next_stats_ns) {
		c->next_stats_ns = cupti_clock__mono_ns() + STATS_PERIOD_NS;
		cupti_sender__send_stats(c->tx);
	}
	pthread_mutex_unlock(&c->decode_lock);
}

static void *collector_thread(void *arg)
{
	struct cupti_collector *c = arg;
	uint64_t period_ns = (uint64_t)c->opts.flush_period_ms * 1000000ull;
	uint64_t next_flush = cupti_clock__mono_ns() + period_ns;
	struct timespec deadline;
	bool stop;

	for (;;) {
		pthread_mutex_lock(&c->lock);
		if (!c->ready_head && !c->thread_stop) {
			deadline.tv_sec = next_flush / 1000000000ull;
			deadline.tv_nsec = next_flush % 1000000000ull;
			pthread_cond_timedwait(&c->cond, &c->lock, &deadline);
		}
		stop = c->thread_stop;
		pthread_mutex_unlock(&c->lock);
		if (stop)
			break;
		if (cupti_clock__mono_ns() >= next_flush) {
			/* Never while holding our locks: the flush calls buffer_done. */
			c->api.flush_all(0);
			next_flush = cupti_clock__mono_ns() + period_ns;
		}
		drain(c);
	}
	return NULL;
}

static void start_thread_locked(struct cupti_collector *c)
{
	pthread_attr_t attr;

	if (c->thread_started)
		return;
	c->thread_started = true;
	pthread_attr_init(&attr);
	pthread_attr_setstacksize(&attr, 256 * 1024);
	if (pthread_create(&c->thread, &attr, collector_thread, c)) {
		/* Buffers are then decoded only by flush/stop; the cap bounds them. */
		c->thread_started = false;
	}
	pthread_attr_destroy(&attr);
}

static void refuse(struct cupti_collector *c, uint8_t **buffer, size_t *size)
{
	if (c && !c->null_ok) {
		/* Old CUPTI may crash on NULL: give it a scratch buffer we never decode. */
		add_stat(&c->stats.buffers_discarded, 1);
		*buffer = discard_buf;
		*size = sizeof(discard_buf);
		return;
	}
	if (c)
		add_stat(&c->stats.buffers_refused, 1);
	*buffer = NULL;
	*size = 0;
}

static void CUPTIAPI buffer_requested(uint8_t **buffer, size_t *size, size_t *max_records)
{
	struct cupti_collector *c = g_col;
	struct cbuf *b;

	*max_records = 0;
	if (!c || c->state != CUPTI_COL_RUNNING || c->stopping) {
		refuse(c, buffer, size);
		return;
	}
	pthread_mutex_lock(&c->lock);
	if (c->outstanding >= c->opts.max_buffers) {
		pthread_mutex_unlock(&c->lock);
		refuse(c, buffer, size);
		return;
	}
	c->outstanding++;
	start_thread_locked(c);
	pthread_mutex_unlock(&c->lock);

	/* A fresh buffer per request, never shared between threads (docs/cases.md #22a). */
	b = aligned_alloc(BUF_HDR_BYTES, BUF_HDR_BYTES + c->opts.buf_bytes);
	if (!b) {
		pthread_mutex_lock(&c->lock);
		c->outstanding--;
		pthread_mutex_unlock(&c->lock);
		refuse(c, buffer, size);
		return;
	}
	*buffer = (uint8_t *)b + BUF_HDR_BYTES;
	*size = c->opts.buf_bytes;
}

static void CUPTIAPI buffer_completed(CUcontext ctx, uint32_t stream_id, uint8_t *buffer,
				      size_t size, size_t valid)
{
	struct cupti_collector *c = g_col;
	struct cbuf *b;

	if (!buffer || buffer == discard_buf || !c || c->state == CUPTI_COL_CHILD)
		return;
	b = (struct cbuf *)(buffer - BUF_HDR_BYTES);
	b->next = NULL;
	b->valid = valid;
	pthread_mutex_lock(&c->lock);
	if (c->ready_tail)
		c->ready_tail->next = b;
	else
		c->ready_head = b;
	c->ready_tail = b;
	pthread_cond_signal(&c->cond);
	pthread_mutex_unlock(&c->lock);
}

static void CUPTIAPI on_callback(void *ud, CUpti_CallbackDomain domain, CUpti_CallbackId cbid,
				 const void *data)
{
	struct cupti_collector *c = ud;

	if ((int)domain == CB_DOMAIN_STATE && cbid == CBID_STATE_FATAL_ERROR && c &&
	    c->state == CUPTI_COL_RUNNING) {
		say(c, "CUPTI reported a fatal error; GPU breakdown stops here");
		c->state = CUPTI_COL_INERT;
	}
}

/* pthread_atfork: a forced flush before fork, so that the parent's records are not lost. */
static void atfork_prepare(void)
{
	struct cupti_collector *c = g_col;

	if (c && c->state == CUPTI_COL_RUNNING && getpid() == c->pid)
		c->api.flush_all(CUPTI_ACTIVITY_FLAG_FLUSH_FORCED);
}

/*
 * The child has our memory but neither CUPTI's threads nor ours, and CUDA
 * cannot be used after fork (docs/cupti.md A1, "fork"): go silent and never
 * touch the parent's buffers, locks or thread.
 */
static void atfork_child(void)
{
	struct cupti_collector *c = g_col;

	if (!c)
		return;
	c->state = CUPTI_COL_CHILD;
	if (c->tx)
		cupti_sender__close(c->tx);
}

static void register_atfork(void)
{
	pthread_atfork(atfork_prepare, NULL, atfork_child);
}

int cupti_collector__new(const struct cupti_api *api, const struct cupti_collector_opts *opts,
			 struct cupti_collector **out)
{
	static pthread_once_t atfork_once = PTHREAD_ONCE_INIT;
	struct cupti_collector *c;
	pthread_condattr_t ca;

	if (opts && opts->sz > sizeof(*opts))
		return -EINVAL;
	if (g_col)
		return -EBUSY;
	c = calloc(1, sizeof(*c));
	if (!c)
		return -ENOMEM;
	c->api = *api;
	if (opts)
		memcpy(&c->opts, opts, opts->sz);
	c->opts.sz = sizeof(c->opts);
	if (!c->opts.buf_bytes)
		c->opts.buf_bytes = 2u << 20;
	c->opts.buf_bytes = (c->opts.buf_bytes + 7) & ~(size_t)7;
	if (!c->opts.max_buffers)
		c->opts.max_buffers = 32;
	if (!c->opts.flush_period_ms)
		c->opts.flush_period_ms = 200;
	c->pid = getpid();
	c->state = CUPTI_COL_READY;
	pthread_mutex_init(&c->lock, NULL);
	pthread_mutex_init(&c->decode_lock, NULL);
	pthread_condattr_init(&ca);
	pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
	pthread_cond_init(&c->cond, &ca);
	pthread_condattr_destroy(&ca);
	pthread_once(&atfork_once, register_atfork);
	g_col = c;
	*out = c;
	return 0;
}

static int go_inert(struct cupti_collector *c, CUptiResult r, const char *what)
{
	const char *hint = "";
	int err = -EIO;

	if (r == CUPTI_ERROR_MULTIPLE_SUBSCRIBERS_NOT_SUPPORTED) {
		hint = "; HINT: another CUPTI client (torch.profiler/Kineto, Nsight) holds this "
		       "process; only one is allowed before CUDA 13.3";
		err = -EBUSY;
	} else if (r == CUPTI_ERROR_INSUFFICIENT_PRIVILEGES ||
		   r == CUPTI_ERROR_VIRTUALIZED_DEVICE_INSUFFICIENT_PRIVILEGES) {
		hint = "; HINT: the driver restricts profiling to admins (RmProfilingAdminOnly=1)";
		err = -EPERM;
	}
	say(c, "GPU breakdown unavailable: %s failed: %s (%d)%s", what,
	    c->api.result_string(r), (int)r, hint);
	if (c->subscribed)
		c->api.unsubscribe(c->sub);
	c->subscribed = false;
	c->state = CUPTI_COL_INERT;
	return err;
}

int cupti_collector__start(struct cupti_collector *c)
{
	static const CUpti_ActivityKind kinds[] = {
		CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL, CUPTI_ACTIVITY_KIND_MEMCPY,
		CUPTI_ACTIVITY_KIND_MEMSET, CUPTI_ACTIVITY_KIND_RUNTIME, CUPTI_ACTIVITY_KIND_DRIVER,
	};
#ifdef TTF_CUPTI_SUBSCRIBE_V2
	char holder[CUPTI_OLD_SUBSCRIBER_NAME_MIN_LEN + 64] = "";
	CUpti_SubscriberParams params = {
		.structSize = CUpti_SubscriberParams_STRUCT_SIZE,
		.subscriberName = "ttftrace",
		.oldSubscriberName = holder,
		.oldSubscriberSize = sizeof(holder),
	};
#else
	char holder[1] = "";
	void *params = NULL;
#endif
	uint32_t version = 0;
	CUptiResult r;
	char what[160];

	if (c->state != CUPTI_COL_READY)
		return -EALREADY;
	if (c->api.get_version(&version) == CUPTI_SUCCESS)
		c->stats.cupti_version = version;
	c->null_ok = version >= CUPTI_VERSION_NULL_BUFFER_OK;

	if (c->api.subscribe_v2)
		r = c->api.subscribe_v2(&c->sub, on_callback, c, &params);
	else
		r = c->api.subscribe(&c->sub, on_callback, c);
	if (r != CUPTI_SUCCESS) {
		snprintf(what, sizeof(what), "cuptiSubscribe%s%s%s", holder[0] ? " (held by " : "",
			 holder, holder[0] ? ")" : "");
		return go_inert(c, r, what);
	}
	c->subscribed = true;
	/* gettid() values, joinable with BPF (default is pthread_self(), docs/cupti.md A8). */
	r = c->api.set_thread_id_type(CUPTI_ACTIVITY_THREAD_ID_TYPE_SYSTEM);
	if (r != CUPTI_SUCCESS)
		return go_inert(c, r, "cuptiSetThreadIdType");
	/* Must precede any enable; records then share bpf_ktime_get_ns()'s clock (docs/cupti.md A4). */
	r = c->api.register_timestamp_cb ? c->api.register_timestamp_cb(cupti_clock__mono_ns)
					 : CUPTI_ERROR_NOT_SUPPORTED;
	if (r == CUPTI_SUCCESS) {
		c->stats.clock_mode = 1;
	} else {
		c->stats.clock_mode = 2;
		c->clock_offset_ns = cupti_clock__offset_ns(cupti_now, cupti_clock__mono_ns, 16);
	}
	c->api.enable_callback(1, c->sub, (CUpti_CallbackDomain)CB_DOMAIN_STATE,
			       CBID_STATE_FATAL_ERROR);
	r = c->api.register_callbacks(buffer_requested, buffer_completed);
	if (r != CUPTI_SUCCESS)
		return go_inert(c, r, "cuptiActivityRegisterCallbacks");
	c->state = CUPTI_COL_RUNNING;
	for (size_t i = 0; i < sizeof(kinds) / sizeof(kinds[0]); i++) {
		r = c->api.enable(kinds[i]);
		if (r != CUPTI_SUCCESS) {
			snprintf(what, sizeof(what), "cuptiActivityEnable(kind %d)", (int)kinds[i]);
			return go_inert(c, r, what);
		}
	}
	return 0;
}

int cupti_collector__flush(struct cupti_collector *c, bool forced)
{
	if (c->state != CUPTI_COL_RUNNING || getpid() != c->pid)
		return -EINVAL;
	c->api.flush_all(forced ? CUPTI_ACTIVITY_FLAG_FLUSH_FORCED : 0);
	drain(c);
	return 0;
}

void cupti_collector__stop(struct cupti_collector *c)
{
	bool joined = false;

	if (!c || c->state == CUPTI_COL_CHILD || getpid() != c->pid)
		return;
	if (c->state == CUPTI_COL_RUNNING) {
		/* Forced: also the buffers with incomplete records (docs/cases.md #22c). */
		c->api.flush_all(CUPTI_ACTIVITY_FLAG_FLUSH_FORCED);
		c->stopping = true;
	}
	pthread_mutex_lock(&c->lock);
	c->thread_stop = true;
	pthread_cond_signal(&c->cond);
	if (c->thread_started) {
		c->thread_started = false;
		joined = true;
	}
	pthread_mutex_unlock(&c->lock);
	if (joined)
		pthread_join(c->thread, NULL);
	if (c->state == CUPTI_COL_RUNNING) {
		c->next_stats_ns = 0; /* final stats now */
		drain(c);
		c->state = CUPTI_COL_STOPPED;
	}
}

void cupti_collector__free(struct cupti_collector *c)
{
	struct cbuf *b;

	if (!c)
		return;
	cupti_collector__stop(c);
	if (c->state == CUPTI_COL_CHILD)
		return; /* the parent's memory: leave it alone */
	if (c->subscribed)
		c->api.unsubscribe(c->sub);
	while ((b = c->ready_head)) {
		c->ready_head = b->next;
		free(b);
	}
	if (c->decoder_ready) {
		cupti_decoder__fini(&c->dec);
		cupti_sender__close(c->tx);
		free(c->tx);
	}
	pthread_cond_destroy(&c->cond);
	pthread_mutex_destroy(&c->lock);
	pthread_mutex_destroy(&c->decode_lock);
	if (g_col == c)
		g_col = NULL;
	free(c);
}

enum cupti_collector_state cupti_collector__state(const struct cupti_collector *c)
{
	return c->state;
}

void cupti_collector__stats(const struct cupti_collector *c, struct ttf_gpu_stats *out)
{
	const uint64_t *src = (const uint64_t *)&c->stats;
	uint64_t *dst = (uint64_t *)out;

	for (size_t i = 0; i < sizeof(*out) / sizeof(uint64_t); i++)
		dst[i] = __atomic_load_n(&src[i], __ATOMIC_RELAXED);
}
