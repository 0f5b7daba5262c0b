// SPDX-License-Identifier: GPL-2.0-only
/* The OTLP sink: bounded span queue, metric aggregation, sender thread (otlp.h). */
#include <curl/curl.h>
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <zlib.h>
#include "user/lib/log.h"
#include "user/lib/version.h"
#include "user/export/otlp/otlp.h"
#include "user/export/otlp/otlp_metrics.h"

/* One signal's endpoint. */
struct otlp_signal {
	const struct otlp_signal_cfg *cfg;
	CURL *curl;
	struct curl_slist *hdrs;
};

struct otlp_sink {
	struct otlp_config cfg;
	struct otlp_signal traces, metrics;
	char host[256];
	uint64_t seed;
	int64_t offset_ns;
	pthread_t thread;
	int started, joined;
	pthread_mutex_t lock;
	pthread_cond_t cond;
	/* under lock */
	struct otlp_span_src *q;	/* ring of OTLP_QUEUE_CAP */
	unsigned int head, len;
	uint64_t oldest_ns;		/* when the oldest queued entry came */
	int stopping;
	uint64_t deadline_ns;		/* stopping: give up sending at this time */
	uint64_t exported, dropped_full, dropped_send, dropped_exit, retried;
	struct otlp_metrics *agg;	/* NULL: metrics off */
	uint64_t next_metrics_ns;
	bool metrics_final_done;
	uint64_t metric_exports, metric_exports_failed;
	uint64_t sampled_out;
	struct {			/* failures not yet on stderr (warn_failure) */
		uint64_t posts, dropped, metric_exports;
		uint64_t last_ns;	/* 0: never warned */
		char what[160];		/* the last failure: "HTTP 503", curl's words */
		const char *url;
	} warn;
	struct otlp_span_src batch[OTLP_BATCH];	/* sender thread only */
};

static uint64_t mono_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1000000000ull + ts.tv_nsec;
}

/* Wait on the condition until the CLOCK_MONOTONIC time t_ns (the cond uses that clock). */
static void wait_until(struct otlp_sink *o, uint64_t t_ns)
{
	struct timespec ts = { .tv_sec = t_ns / 1000000000ull, .tv_nsec = t_ns % 1000000000ull };

	pthread_cond_timedwait(&o->cond, &o->lock, &ts);
}

static size_t discard(char *p, size_t size, size_t n, void *ctx)
{
	return size * n;
}

/* gzip (RFC 1952) of in into a malloc'ed *out. 0 or -ENOMEM. */
static int gzip_body(const char *in, size_t n, char **out, size_t *out_len)
{
	z_stream z = { 0 };
	uLong cap;
	int rc;

	if (deflateInit2(&z, Z_DEFAULT_COMPRESSION, Z_DEFLATED, 15 + 16, 8,
			 Z_DEFAULT_STRATEGY) != Z_OK)
		return -ENOMEM;
	cap = deflateBound(&z, n) + 32;
	*out = malloc(cap);
	if (!*out) {
		deflateEnd(&z);
		return -ENOMEM;
	}
	z.next_in = (Bytef *)in;
	z.avail_in = n;
	z.next_out = (Bytef *)*out;
	z.avail_out = cap;
	rc = deflate(&z, Z_FINISH);
	*out_len = z.total_out;
	deflateEnd(&z);
	if (rc != Z_STREAM_END) {
		free(*out);
		*out = NULL;
		return -ENOMEM;
	}
	return 0;
}

enum post_result { POST_OK, POST_RETRY, POST_REJECTED };

/* One POST; *retry_after_ms = the server's Retry-After (seconds) or 0. */
static enum post_result post(struct otlp_signal *sig, const char *body, size_t len,
			     long timeout_ms, long *retry_after_ms, char *what, size_t what_len)
{
	struct curl_header *h;
	long code = 0;
	CURLcode rc;

	*retry_after_ms = 0;
	curl_easy_setopt(sig->curl, CURLOPT_POSTFIELDS, body);
	curl_easy_setopt(sig->curl, CURLOPT_POSTFIELDSIZE_LARGE, (curl_off_t)len);
	curl_easy_setopt(sig->curl, CURLOPT_TIMEOUT_MS, timeout_ms);
	curl_easy_setopt(sig->curl, CURLOPT_CONNECTTIMEOUT_MS,
			 timeout_ms < 2000 ? timeout_ms : 2000);
	rc = curl_easy_perform(sig->curl);
	if (rc != CURLE_OK) {
		snprintf(what, what_len, "%s", curl_easy_strerror(rc));
		ttf_debug("otlp: %s", what);
		return POST_RETRY;
	}
	curl_easy_getinfo(sig->curl, CURLINFO_RESPONSE_CODE, &code);
	if (code >= 200 && code < 300)
		return POST_OK;
	if (curl_easy_header(sig->curl, "Retry-After", 0, CURLH_HEADER, -1, &h) == CURLHE_OK) {
		long s = strtol(h->value, NULL, 10);

		if (s > 0)
			*retry_after_ms = (s > 5 ? 5 : s) * 1000;
	}
	snprintf(what, what_len, "the collector answered HTTP %ld", code);
	ttf_debug("otlp: %s", what);
	return code == 408 || code == 429 || code >= 500 ? POST_RETRY : POST_REJECTED;
}

/*
 * Say on stderr that the export fails, at most once per OTLP_WARN_EVERY_NS
 * (the first failure at once), with what was lost since the last line, so a
 * dead collector shows even when the summary goes nowhere. Called with the
 * lock; force: the last line at exit, if anything is unreported.
 */
static void warn_failure(struct otlp_sink *o, bool force)
{
	uint64_t now = mono_ns();

	if (!o->warn.posts && !o->warn.dropped && !o->warn.metric_exports)
		return;
	if (!force && o->warn.last_ns && now - o->warn.last_ns < OTLP_WARN_EVERY_NS)
		return;
	ttf_warn("OTLP export to %s: %s; since the last warning: %llu posts failed, "
		 "%llu requests dropped, %llu metric exports failed%s",
		 o->warn.url ? o->warn.url : "the collector",
		 o->warn.what[0] ? o->warn.what : "not sent in time (queue full, or the exit's bound)",
		 (unsigned long long)o->warn.posts, (unsigned long long)o->warn.dropped,
		 (unsigned long long)o->warn.metric_exports,
		 force ? "" : " (retrying; next report in 10 s at the earliest)");
	o->warn.posts = o->warn.dropped = o->warn.metric_exports = 0;
	o->warn.what[0] = '\0';	/* the next line says its own cause */
	o->warn.last_ns = now;
}

/* One failed POST to sig (what: why); called without the lock. */
static void note_failed_post(struct otlp_sink *o, struct otlp_signal *sig, const char *what)
{
	pthread_mutex_lock(&o->lock);
	o->warn.posts++;
	o->warn.url = sig->cfg->url;
	snprintf(o->warn.what, sizeof(o->warn.what), "%s", what);
	warn_failure(o, false);
	pthread_mutex_unlock(&o->lock);
}

/*
 * Post body (gzip'ed when configured) with retries; called without the lock.
 * *at_exit: gave up at the exit deadline.
 */
static enum post_result send_body(struct otlp_sink *o, struct otlp_signal *sig, char *body,
				  size_t len, bool *at_exit)
{
	long backoff_ms = 100, retry_after_ms, timeout_ms;
	enum post_result res = POST_RETRY;
	char what[160];
	char *gz = NULL;
	int tries = 0;

	*at_exit = false;
	if (sig->cfg->gzip) {
		if (gzip_body(body, len, &gz, &len))
			return POST_REJECTED;
		body = gz;
	}
	for (;;) {
		uint64_t now = mono_ns(), deadline, until;

		pthread_mutex_lock(&o->lock);
		deadline = o->stopping ? o->deadline_ns : 0;
		pthread_mutex_unlock(&o->lock);
		if (deadline && now >= deadline) {
			*at_exit = true;
			break;
		}
		timeout_ms = deadline ? (long)((deadline - now) / 1000000) + 1 : 5000;
		if (timeout_ms > 5000)
			timeout_ms = 5000;
		res = post(sig, body, len, timeout_ms, &retry_after_ms, what, sizeof(what));
		if (res != POST_OK)
			note_failed_post(o, sig, what);
		if (res != POST_RETRY || ++tries == OTLP_MAX_TRIES)
			break;
		pthread_mutex_lock(&o->lock);
		o->retried++;
		until = mono_ns() + (retry_after_ms ? retry_after_ms : backoff_ms) * 1000000ull;
		/* new requests signal too: sleep the whole backoff, or until the exit deadline */
		while ((now = mono_ns()) < until && (!o->stopping || now < o->deadline_ns))
			wait_until(o, o->stopping && o->deadline_ns < until ? o->deadline_ns
									   : until);
		pthread_mutex_unlock(&o->lock);
		backoff_ms *= 2;
	}
	free(gz);
	return res;
}

/* Send o->batch[0..n) with retries; called without the lock. */
static void send_batch(struct otlp_sink *o, int n)
{
	enum post_result res = POST_REJECTED;
	bool at_exit = false;
	char *body;
	size_t len;

	if (!otlp__build_traces(o->traces.cfg->proto, o->batch, n, o->host[0] ? o->host : NULL,
				&o->cfg, o->seed, o->offset_ns, &body, &len)) {
		res = send_body(o, &o->traces, body, len, &at_exit);
		free(body);
	}
	pthread_mutex_lock(&o->lock);
	if (res == POST_OK)
		o->exported += n;
	else if (at_exit)
		o->dropped_exit += n;
	else
		o->dropped_send += n;
	if (res != POST_OK)
		o->warn.dropped += n;
	pthread_mutex_unlock(&o->lock);
}

/* Export every metric series now; called with the lock, which it drops while sending. */
static void send_metrics(struct otlp_sink *o)
{
	enum post_result res = POST_REJECTED;
	bool at_exit;
	char *body;
	size_t len;

	if (!otlp_metrics__n_series(o->agg))
		return;
	if (otlp_metrics__build(o->agg, o->metrics.cfg->proto, o->host[0] ? o->host : NULL,
				&o->cfg, (uint64_t)((int64_t)mono_ns() + o->offset_ns), &body,
				&len)) {
		o->metric_exports_failed++;
		return;
	}
	pthread_mutex_unlock(&o->lock);
	res = send_body(o, &o->metrics, body, len, &at_exit);
	free(body);
	pthread_mutex_lock(&o->lock);
	if (res == POST_OK) {
		o->metric_exports++;
	} else {
		o->metric_exports_failed++;
		o->warn.metric_exports++;
	}
}

static void *sender(void *arg)
{
	struct otlp_sink *o = arg;

	pthread_mutex_lock(&o->lock);
	for (;;) {
		uint64_t now = mono_ns(), wake = UINT64_MAX;
		int n;

		/* metrics: every interval, and once more when the spans are out at exit */
		if (o->agg && !o->metrics_final_done &&
		    (now >= o->next_metrics_ns || (o->stopping && !o->len))) {
			if (o->stopping && !o->len)
				o->metrics_final_done = true;
			send_metrics(o);
			o->next_metrics_ns = mono_ns() + o->cfg.interval_ms * 1000000ull;
			continue;
		}
		if (o->agg && !o->metrics_final_done)
			wake = o->next_metrics_ns;
		if (!o->len) {
			if (o->stopping)
				break;
			if (wake == UINT64_MAX)
				pthread_cond_wait(&o->cond, &o->lock);
			else
				wait_until(o, wake);
			continue;
		}
		if (o->stopping && now >= o->deadline_ns) {
			o->dropped_exit += o->len;
			o->warn.dropped += o->len;
			o->len = 0;
			continue;
		}
		if (!o->stopping && o->len < OTLP_BATCH &&
		    now < o->oldest_ns + OTLP_BATCH_WAIT_MS * 1000000ull) {
			uint64_t t = o->oldest_ns + OTLP_BATCH_WAIT_MS * 1000000ull;

			wait_until(o, t < wake ? t : wake);
			continue;
		}
		n = o->len < OTLP_BATCH ? (int)o->len : OTLP_BATCH;
		for (int i = 0; i < n; i++)
			o->batch[i] = o->q[(o->head + i) % OTLP_QUEUE_CAP];
		o->head = (o->head + n) % OTLP_QUEUE_CAP;
		o->len -= n;
		o->oldest_ns = now;	/* the rest waited at least this long already */
		pthread_mutex_unlock(&o->lock);
		send_batch(o, n);
		pthread_mutex_lock(&o->lock);
	}
	pthread_mutex_unlock(&o->lock);
	return NULL;
}

static void sink_request(void *ctx, const struct ttf_request *r, const struct ttf_req_metrics *m,
			 const struct ttf_attrib *a)
{
	struct otlp_sink *o = ctx;
	struct otlp_span_src s;
	uint8_t trace[16];

	otlp_span_src__fill(&s, r, m, a);
	/* the trace id its spans get: the caller's, else ours */
	if (s.parent.valid)
		memcpy(trace, s.parent.trace_id, sizeof(trace));
	else
		otlp__ids_bin(o->seed, s.req_id, 0, trace, NULL);
	pthread_mutex_lock(&o->lock);
	if (o->agg)	/* metrics count every request: sampling is for traces */
		otlp_metrics__add(o->agg, &s);
	if (!o->traces.curl) {
		/* traces off */
	} else if (!otlp_sampler__sample(&o->cfg.sampler, trace, &s.parent)) {
		o->sampled_out++;
	} else if (o->len == OTLP_QUEUE_CAP || o->stopping) {
		o->dropped_full++;
		o->warn.dropped++;
	} else {
		if (!o->len)
			o->oldest_ns = mono_ns();
		o->q[(o->head + o->len++) % OTLP_QUEUE_CAP] = s;
		if (o->len == OTLP_BATCH || o->len == 1)
			pthread_cond_signal(&o->cond);
	}
	pthread_mutex_unlock(&o->lock);
}

static void stop(struct otlp_sink *o, uint64_t flush_ns)
{
	if (!o->started || o->joined)
		return;
	pthread_mutex_lock(&o->lock);
	o->stopping = 1;
	o->deadline_ns = mono_ns() + flush_ns;
	if (!flush_ns)
		o->metrics_final_done = true;
	pthread_cond_broadcast(&o->cond);
	pthread_mutex_unlock(&o->lock);
	pthread_join(o->thread, NULL);
	o->joined = 1;
}

static int sink_finish(void *ctx, const struct report_counter *c, int n)
{
	struct otlp_sink *o = ctx;

	stop(o, OTLP_FLUSH_MS * 1000000ull);
	pthread_mutex_lock(&o->lock);
	warn_failure(o, true);	/* nothing lost goes unsaid */
	pthread_mutex_unlock(&o->lock);
	return 0;
}

static int sink_stats(void *ctx, struct report_counter *c, int cap)
{
	struct otlp_sink *o = ctx;
	int n = 0;

	if (cap < 9)
		return 0;
	pthread_mutex_lock(&o->lock);
	if (o->traces.curl) {
		c[n++] = (struct report_counter){ "otlp_requests_exported", o->exported };
		c[n++] = (struct report_counter){ "otlp_requests_dropped_queue_full",
						  o->dropped_full };
		c[n++] = (struct report_counter){ "otlp_requests_dropped_send_failed",
						  o->dropped_send };
		c[n++] = (struct report_counter){ "otlp_requests_dropped_at_exit", o->dropped_exit };
		c[n++] = (struct report_counter){ "otlp_requests_sampled_out", o->sampled_out };
	}
	c[n++] = (struct report_counter){ "otlp_posts_retried", o->retried };
	if (o->agg) {
		c[n++] = (struct report_counter){ "otlp_metric_exports", o->metric_exports };
		c[n++] = (struct report_counter){ "otlp_metric_exports_failed",
						  o->metric_exports_failed };
		c[n++] = (struct report_counter){ "otlp_metric_series_overflow",
						  otlp_metrics__overflowed(o->agg) };
	}
	pthread_mutex_unlock(&o->lock);
	return n;
}

static void signal_free(struct otlp_signal *sig)
{
	if (sig->curl)
		curl_easy_cleanup(sig->curl);
	curl_slist_free_all(sig->hdrs);
	memset(sig, 0, sizeof(*sig));
}

static void sink_destroy(void *ctx)
{
	struct otlp_sink *o = ctx;

	stop(o, 0);
	signal_free(&o->traces);
	signal_free(&o->metrics);
	otlp_metrics__free(o->agg);
	pthread_cond_destroy(&o->cond);
	pthread_mutex_destroy(&o->lock);
	free(o->q);
	free(o);
}

static uint64_t random_seed(void)
{
	uint64_t seed = 0;
	int fd = open("/dev/urandom", O_RDONLY | O_CLOEXEC);

	if (fd < 0 || read(fd, &seed, sizeof(seed)) != sizeof(seed))
		seed = mono_ns() ^ ((uint64_t)getpid() << 32);
	if (fd >= 0)
		close(fd);
	return seed;
}

/* A curl handle for one signal (cfg->url set). 0 or -ENOMEM. */
static int signal_init(struct otlp_signal *sig, const struct otlp_signal_cfg *cfg)
{
	struct curl_slist *l;

	sig->cfg = cfg;
	sig->curl = curl_easy_init();
	if (!sig->curl)
		return -ENOMEM;
	l = curl_slist_append(NULL, cfg->proto == OTLP_PROTO_JSON ?
			      "Content-Type: application/json" :
			      "Content-Type: application/x-protobuf");
	if (l && cfg->gzip)
		l = curl_slist_append(l, "Content-Encoding: gzip") ? l : NULL;
	for (int i = 0; l && i < cfg->n_headers; i++)
		if (!curl_slist_append(l, cfg->headers[i]))
			l = NULL;
	sig->hdrs = l;
	if (!l)
		return -ENOMEM;
	curl_easy_setopt(sig->curl, CURLOPT_URL, cfg->url);
	curl_easy_setopt(sig->curl, CURLOPT_HTTPHEADER, sig->hdrs);
	curl_easy_setopt(sig->curl, CURLOPT_NOSIGNAL, 1L);
	/* the exporter spec's User-Agent: who sends, and its version */
	curl_easy_setopt(sig->curl, CURLOPT_USERAGENT, OTLP_USER_AGENT);
	curl_easy_setopt(sig->curl, CURLOPT_WRITEFUNCTION, discard);
	return 0;
}

static const char *proto_name(const struct otlp_signal_cfg *c)
{
	return c->proto == OTLP_PROTO_JSON ? "http/json" : "http/protobuf";
}

/* The start-up line: that the export is on, what it sends where, how. */
static void announce(const struct otlp_config *c)
{
	char sampler[64];

	if (c->traces.url[0]) {
		otlp_sampler__describe(&c->sampler, sampler, sizeof(sampler));
		fprintf(stderr, "otlp: traces to %s (%s%s, sampler %s)\n", c->traces.url,
			proto_name(&c->traces), c->traces.gzip ? ", gzip" : "", sampler);
	}
	if (c->metrics.url[0])
		fprintf(stderr, "otlp: metrics to %s (%s%s, every %ld ms and at exit)\n",
			c->metrics.url, proto_name(&c->metrics), c->metrics.gzip ? ", gzip" : "",
			c->interval_ms);
}

int otlp_sink__new(const struct otlp_config *cfg, struct ttf_sink *out)
{
	pthread_condattr_t ca;
	struct otlp_sink *o;
	int err = -ENOMEM;

	if (!otlp_config__enabled(cfg))
		return -EINVAL;
	if (curl_global_init(CURL_GLOBAL_DEFAULT))
		return -ENOMEM;
	o = calloc(1, sizeof(*o));
	if (!o)
		return -ENOMEM;
	o->cfg = *cfg;
	pthread_mutex_init(&o->lock, NULL);
	pthread_condattr_init(&ca);
	pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
	pthread_cond_init(&o->cond, &ca);
	pthread_condattr_destroy(&ca);
	if (gethostname(o->host, sizeof(o->host) - 1))
		o->host[0] = '\0';
	o->seed = random_seed();
	o->offset_ns = otlp__clock_offset_ns();
	if (o->cfg.traces.url[0]) {
		o->q = malloc(OTLP_QUEUE_CAP * sizeof(*o->q));
		if (!o->q || signal_init(&o->traces, &o->cfg.traces))
			goto cleanup;
	}
	if (o->cfg.metrics.url[0]) {
		o->agg = otlp_metrics__new((uint64_t)((int64_t)mono_ns() + o->offset_ns));
		if (!o->agg || signal_init(&o->metrics, &o->cfg.metrics))
			goto cleanup;
		o->next_metrics_ns = mono_ns() + o->cfg.interval_ms * 1000000ull;
	}
	err = -pthread_create(&o->thread, NULL, sender, o);
	if (err)
		goto cleanup;
	o->started = 1;
	announce(&o->cfg);
	*out = (struct ttf_sink){
		.name = "otlp", .ctx = o, .request = sink_request, .finish = sink_finish,
		.stats = sink_stats, .destroy = sink_destroy,
	};
	return 0;
cleanup:
	sink_destroy(o);
	return err;
}
