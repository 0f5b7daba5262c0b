// SPDX-License-Identifier: GPL-2.0-only
/* Interval summaries: see interval.h. */
#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <stdlib.h>
#include <time.h>
#include <cjson/cJSON.h>
#include "user/export/interval.h"
#include "user/lib/stats.h"
#include "user/model/vocab.h"

enum { IV_TTFT, IV_TPOT, IV_NR };

static const char *const iv_text[IV_NR] = { "TTFT(ms)", "TPOT(ms)" };
static const char *const iv_json[IV_NR] = { "ttft_ms", "tpot_ms" };
static const double iv_pct[3] = { 50, 95, 99 };
static const char *const iv_pct_key[3] = { "p50", "p95", "p99" };

struct interval {
	struct interval_opts o;
	uint64_t start_ns;		/* this interval's start */
	uint64_t index;			/* 1-based */
	struct stats *st[IV_NR];	/* ms, this interval's successful requests */
	uint64_t n, n_success, out_tokens;
	uint64_t samples_lost;
	int err;			/* first write error (negative errno) */
};

static void reset(struct interval *iv, uint64_t start_ns)
{
	for (int i = 0; i < IV_NR; i++) {
		stats__free(iv->st[i]);
		iv->st[i] = stats__new();
		if (!iv->st[i])
			iv->samples_lost++;
	}
	iv->start_ns = start_ns;
	iv->n = iv->n_success = iv->out_tokens = 0;
}

static double pct(struct stats *s, int k)
{
	return s && stats__count(s) ? stats__percentile(s, iv_pct[k]) : NAN;
}

static void print_text(struct interval *iv, uint64_t end_ns)
{
	double d = (end_ns - iv->start_ns) / 1e9;
	FILE *f = iv->o.out;

	fprintf(f, "INTERVAL %" PRIu64 " %.3f-%.3fs: %" PRIu64 " requests, %" PRIu64 " errors",
		iv->index, (iv->start_ns - iv->o.t0_ns) / 1e9, (end_ns - iv->o.t0_ns) / 1e9, iv->n,
		iv->n - iv->n_success);
	for (int i = 0; i < IV_NR; i++) {
		fprintf(f, "; %s", iv_text[i]);
		for (int k = 0; k < 3; k++) {
			double v = pct(iv->st[i], k);

			if (isnan(v))
				fprintf(f, " P%.0f -", iv_pct[k]);
			else
				fprintf(f, " P%.0f %.1f", iv_pct[k], v);
		}
	}
	fprintf(f, "; %.1f req/s, %.1f tok/s\n", d > 0 ? iv->n_success / d : 0,
		d > 0 ? iv->out_tokens / d : 0);
}

/* v rounded to 1e-3 (1 us for ms), or null when NAN; returns 0 or 1 on ENOMEM */
static int add_num(cJSON *o, const char *k, double v)
{
	return isnan(v) ? !cJSON_AddNullToObject(o, k) :
			  !cJSON_AddNumberToObject(o, k, round(v * 1e3) / 1e3);
}

static int print_json(struct interval *iv, uint64_t end_ns)
{
	double d = (end_ns - iv->start_ns) / 1e9;
	cJSON *o = cJSON_CreateObject();
	char *s;
	int err = !o;

	if (o) {
		err |= !cJSON_AddStringToObject(o, "type", "interval");
		err |= add_num(o, "index", iv->index);
		err |= add_num(o, "t_start_s", (iv->start_ns - iv->o.t0_ns) / 1e9);
		err |= add_num(o, "t_end_s", (end_ns - iv->o.t0_ns) / 1e9);
		err |= add_num(o, "duration_s", d);
		err |= add_num(o, "requests", iv->n);
		err |= add_num(o, "successful", iv->n_success);
		err |= add_num(o, "errors", iv->n - iv->n_success);
		for (int i = 0; i < IV_NR; i++) {
			cJSON *sub = cJSON_AddObjectToObject(o, iv_json[i]);

			err |= !sub;
			if (!sub)
				continue;
			err |= add_num(sub, "n", iv->st[i] ? stats__count(iv->st[i]) : 0);
			for (int k = 0; k < 3; k++)
				err |= add_num(sub, iv_pct_key[k], pct(iv->st[i], k));
		}
		err |= add_num(o, "output_tokens", iv->out_tokens);
		err |= add_num(o, "request_throughput", d > 0 ? iv->n_success / d : NAN);
		err |= add_num(o, "output_token_throughput", d > 0 ? iv->out_tokens / d : NAN);
	}
	s = err ? NULL : cJSON_PrintUnformatted(o);
	cJSON_Delete(o);
	if (!s)
		return -ENOMEM;
	fprintf(iv->o.out, "%s\n", s);
	free(s);
	return 0;
}

/* Print the interval [start_ns, end_ns) and start the next one at end_ns. */
static void emit(struct interval *iv, uint64_t end_ns)
{
	if (iv->o.json) {
		if (print_json(iv, end_ns))
			iv->samples_lost++;
	} else {
		print_text(iv, end_ns);
	}
	/* one line per interval, as it ends: a reader of a pipe sees it now */
	if (fflush(iv->o.out) && !iv->err)
		iv->err = errno ? -errno : -EIO;
	iv->index++;
	reset(iv, end_ns);
}

static void on_request(void *ctx, const struct ttf_request *r, const struct ttf_req_metrics *m,
		       const struct ttf_attrib *a)
{
	struct interval *iv = ctx;

	iv->n++;
	if (!ttf_vocab__success(r))
		return;
	iv->n_success++;
	iv->out_tokens += m->n_tokens;
	if (m->ttft_ns >= 0 && (!iv->st[IV_TTFT] || stats__add(iv->st[IV_TTFT], m->ttft_ns / 1e6)))
		iv->samples_lost++;
	if (m->tpot_ns >= 0 && (!iv->st[IV_TPOT] || stats__add(iv->st[IV_TPOT], m->tpot_ns / 1e6)))
		iv->samples_lost++;
}

/* A rejected request is one of the summary's requests too (report_requests_invalid). */
static void on_rejected(void *ctx, const struct ttf_request *r)
{
	struct interval *iv = ctx;

	iv->n++;
}

static void on_tick(void *ctx, uint64_t now_ns)
{
	struct interval *iv = ctx;

	/* a late tick (a stalled loop) prints each interval it passed, empty ones too */
	while (now_ns >= iv->start_ns + iv->o.interval_ns)
		emit(iv, iv->start_ns + iv->o.interval_ns);
}

static int on_finish(void *ctx, const struct report_counter *c, int n)
{
	struct interval *iv = ctx;
	struct timespec ts;
	uint64_t now;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	now = (uint64_t)ts.tv_sec * 1000000000ull + ts.tv_nsec;
	on_tick(iv, now);
	/* the last, partial interval: only when something finished in it */
	if (iv->n)
		emit(iv, now > iv->start_ns ? now : iv->start_ns);
	if (iv->samples_lost)
		fprintf(stderr, "ttftrace: interval samples lost (out of memory): %" PRIu64 "\n",
			iv->samples_lost);
	return iv->err;
}

static void on_destroy(void *ctx)
{
	struct interval *iv = ctx;

	for (int i = 0; i < IV_NR; i++)
		stats__free(iv->st[i]);
	free(iv);
}

int interval_sink__new(const struct interval_opts *o, struct ttf_sink *out)
{
	struct interval *iv;

	if (!o || !o->out || !o->interval_ns || !out)
		return -EINVAL;
	iv = calloc(1, sizeof(*iv));
	if (!iv)
		return -ENOMEM;
	iv->o = *o;
	iv->index = 1;
	reset(iv, o->t0_ns);
	if (iv->samples_lost) {
		on_destroy(iv);
		return -ENOMEM;
	}
	*out = (struct ttf_sink){ .name = "interval", .ctx = iv, .request = on_request,
				  .rejected = on_rejected, .tick = on_tick, .finish = on_finish,
				  .destroy = on_destroy };
	return 0;
}
