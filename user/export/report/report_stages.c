// SPDX-License-Identifier: GPL-2.0-only
#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include "user/export/report/report_stages.h"
#include "user/model/copy_stats.h"
#include "user/model/vocab.h"
#include "user/lib/fit.h"
#include "user/lib/json_print.h"
#include "user/lib/stats.h"
#include "user/lib/tail_bucket.h"

struct row {
	int64_t ttft_ns;
	int64_t stage_ns[TTF_ST__ALL];
};

/*
 * Past STATS_EXACT_MAX requests the rows give way to TTFT buckets (64 per
 * power of two of ns, allocated when first used), each with its request
 * count and per-stage sums: fixed-size memory for the tail stage.
 */
struct tail_bucket {
	uint64_t n;
	double sum[TTF_ST__ALL];
};

struct stage_stats {
	struct linfit prefill_fit;	/* prefill ms vs prompt tokens, exact attributions */
	struct copy_stats *copies;	/* CUPTI copies in prefill windows; NULL until one */
	struct stats *st[TTF_ST__ALL];
	struct row *rows;		/* the first STATS_EXACT_MAX requests; then NULL */
	size_t n, cap;
	struct tail_bucket **tail;	/* bucket mode: TAIL_BUCKETS pointers */
	uint64_t n_kind[TTF_ATTR_MERGED + 1];	/* requests by attribution kind */
	uint64_t n_cache_known, n_cache_hit;	/* requests with a known cached count; > 0 */
	uint64_t cached_tokens, computed_tokens; /* over the n_cache_known requests */
	uint64_t n_shared;			/* requests whose prefill shared a step */
	struct stats *share;			/* their token shares, percent */
};

/* Stages that count towards the tail (as stage_sum_ms: SERVER and COPY are merges). */
static void tail_sums(const int64_t *stage_ns, double *sum)
{
	for (int s = 0; s < TTF_ST__MAX; s++)
		if (stage_ns[s] > 0)
			sum[s] += stage_ns[s];
	if (stage_ns[TTF_ST_SERVER] > 0)
		sum[TTF_ST_SERVER] += stage_ns[TTF_ST_SERVER];
	if (stage_ns[TTF_ST_COPY] > 0)
		sum[TTF_ST_COPY] += stage_ns[TTF_ST_COPY];
}

static int tail_add(struct stage_stats *ss, int64_t ttft_ns, const int64_t *stage_ns)
{
	size_t b = tail_bucket_of(ttft_ns);

	if (!ss->tail[b] && !(ss->tail[b] = calloc(1, sizeof(*ss->tail[b]))))
		return -ENOMEM;
	ss->tail[b]->n++;
	tail_sums(stage_ns, ss->tail[b]->sum);
	return 0;
}

/* STATS_EXACT_MAX requests recorded: move the rows into the buckets. */
static int to_buckets(struct stage_stats *ss)
{
	ss->tail = calloc(TAIL_BUCKETS, sizeof(*ss->tail));
	if (!ss->tail)
		return -ENOMEM;
	for (size_t i = 0; i < ss->n; i++)
		if (tail_add(ss, ss->rows[i].ttft_ns, ss->rows[i].stage_ns))
			return -ENOMEM;
	free(ss->rows);
	ss->rows = NULL;
	ss->cap = 0;
	return 0;
}

static double ms(int64_t ns)
{
	return round(ns / 1e3) / 1e3;
}

struct stage_stats *stage_stats__new(void)
{
	struct stage_stats *ss = calloc(1, sizeof(*ss));

	if (!ss)
		return NULL;
	for (int i = 0; i < TTF_ST__ALL; i++) {
		ss->st[i] = stats__new();
		if (!ss->st[i]) {
			stage_stats__free(ss);
			return NULL;
		}
	}
	ss->share = stats__new();
	if (!ss->share) {
		stage_stats__free(ss);
		return NULL;
	}
	return ss;
}

void stage_stats__free(struct stage_stats *ss)
{
	if (!ss)
		return;
	for (int i = 0; i < TTF_ST__ALL; i++)
		stats__free(ss->st[i]);
	stats__free(ss->share);
	free(ss->rows);
	for (size_t b = 0; ss->tail && b < TAIL_BUCKETS; b++)
		free(ss->tail[b]);
	free(ss->tail);
	copy_stats__free(ss->copies);
	free(ss);
}

int stage_stats__add(struct stage_stats *ss, const struct ttf_attrib *a, int64_t ttft_ns)
{
	int err = 0;

	if (!a->valid)
		return 0;
	if (!ss->tail && ss->n == STATS_EXACT_MAX && to_buckets(ss))
		return -ENOMEM;
	if (ss->tail) {
		if (tail_add(ss, ttft_ns, a->stage_ns))
			return -ENOMEM;
	} else if (ss->n == ss->cap) {
		size_t cap = ss->cap ? ss->cap * 2 : 64;
		struct row *p = realloc(ss->rows, cap * sizeof(*p));

		if (!p)
			return -ENOMEM;
		ss->rows = p;
		ss->cap = cap;
	}
	if (!ss->tail) {
		ss->rows[ss->n].ttft_ns = ttft_ns;
		memcpy(ss->rows[ss->n].stage_ns, a->stage_ns, sizeof(a->stage_ns));
	}
	ss->n++;
	for (int i = 0; i < TTF_ST__ALL; i++)
		if (a->stage_ns[i] >= 0)
			err |= stats__add(ss->st[i], a->stage_ns[i] / 1e6);
	if (a->kind <= TTF_ATTR_MERGED)
		ss->n_kind[a->kind]++;
	if (a->cached_tokens >= 0) {
		ss->n_cache_known++;
		ss->n_cache_hit += a->cached_tokens > 0;
		ss->cached_tokens += a->cached_tokens;
		ss->computed_tokens += a->prefill_tokens;
	}
	ss->n_shared += a->prefill_shared_with > 0;
	if (a->prefill_shared_with && a->prefill_token_share >= 0)
		err |= stats__add(ss->share, 100 * a->prefill_token_share);
	/* A shared step's time is not its own tokens' cost: fit unshared prefills only. */
	if (a->prefill_tokens && a->stage_ns[TTF_ST_PREFILL] >= 0 && !a->prefill_shared_with)
		linfit__add(&ss->prefill_fit, a->prefill_tokens, a->stage_ns[TTF_ST_PREFILL] / 1e6);
	if (a->gpu.have && a->gpu.n_copies) {
		if (!ss->copies)
			ss->copies = copy_stats__new();
		err |= !ss->copies || copy_stats__add(ss->copies, &a->gpu);
	}
	return err ? -ENOMEM : 0;
}

static int cmp_i64(const void *a, const void *b)
{
	int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;

	return x < y ? -1 : x > y;
}

/* Bucket mode: the sums of the buckets from the one holding nearest-rank P95 up. */
static void tail_from_buckets(const struct stage_stats *ss, double *sum)
{
	size_t rank = (size_t)ceil(0.95 * ss->n) - 1, b;

	for (b = 0; b < TAIL_BUCKETS; b++) {
		uint64_t n = ss->tail[b] ? ss->tail[b]->n : 0;

		if (rank < n)
			break;
		rank -= n;
	}
	for (; b < TAIL_BUCKETS; b++)
		for (int s = 0; ss->tail[b] && s < TTF_ST__ALL; s++)
			sum[s] += ss->tail[b]->sum[s];
}

int stage_stats__tail_stage(const struct stage_stats *ss)
{
	double sum[TTF_ST__ALL] = { 0 };
	int64_t *t, p95;
	int best = -1;

	if (!ss->n)
		return -1;
	if (ss->tail) {
		tail_from_buckets(ss, sum);
		goto pick;
	}
	t = malloc(ss->n * sizeof(*t));
	if (!t)
		return -1;
	for (size_t i = 0; i < ss->n; i++)
		t[i] = ss->rows[i].ttft_ns;
	qsort(t, ss->n, sizeof(*t), cmp_i64);
	/* nearest-rank P95: the requests at or above it form the tail */
	p95 = t[(size_t)ceil(0.95 * ss->n) - 1];
	free(t);
	for (size_t i = 0; i < ss->n; i++)
		if (ss->rows[i].ttft_ns >= p95)
			tail_sums(ss->rows[i].stage_ns, sum);
pick:
	for (int s = 0; s < TTF_ST__ALL; s++)
		if (s != TTF_ST_TOKENIZE && sum[s] > 0 && (best < 0 || sum[s] > sum[best]))
			best = s;
	return best;
}

static void add_ms(cJSON *o, const char *k, int64_t ns, int *err)
{
	*err |= !(ns < 0 ? json_add__null(o, k) : json_add__num(o, k, ms(ns)));
}

static const char *copy_dir(uint8_t kind)
{
	switch (kind) {
	case 1: return "HtoD";
	case 2: return "DtoH";
	case 8: return "DtoD";
	case 10: return "PtoP";
	}
	return "other";
}

/* "gpu": prefill GPU time, copies with achieved GB/s next to the link's rate. */
static void gpu_json(cJSON *o, const struct ttf_gpu_part *g, int *err)
{
	cJSON *x, *arr;

	if (!g->have)
		return;
	x = json_add__obj(o, "gpu");
	if (!x) {
		*err = 1;
		return;
	}
	add_ms(x, "prefill_gpu_ms", g->compute_ns, err);
	add_ms(x, "copy_ms", g->copy_ns, err);
	add_ms(x, "host_gap_ms", g->host_gap_ns, err);
	*err |= !json_add__num(x, "kernels", g->kernels);
	*err |= !(g->link_gbps > 0 ? json_add__num(x, "link_gbps",
							     round(g->link_gbps * 100) / 100)
				   : json_add__null(x, "link_gbps"));
	arr = json_add__arr(x, "copies");
	if (!arr) {
		*err = 1;
		return;
	}
	for (uint32_t i = 0; i < g->n_copies && i < TTF_MAX_COPIES; i++) {
		const struct ttf_copy *c = &g->copies[i];
		cJSON *it = cJSON_CreateObject();

		if (!it || !cJSON_AddItemToArray(arr, it)) {
			cJSON_Delete(it);
			*err = 1;
			continue;
		}
		*err |= !json_add__str(it, "dir", copy_dir(c->copy_kind));
		*err |= !json_add__num(it, "bytes", (double)c->bytes);
		add_ms(it, "ms", c->dur_ns, err);
		*err |= !json_add__num(it, "gbps", round(c->gbps * 100) / 100);
		*err |= !json_add__bool(it, "pageable", c->pageable);
		if (g->link_gbps > 0)
			*err |= !json_add__num(it, "share_of_link",
							 round(c->gbps / g->link_gbps * 1000) / 1000);
	}
}

void report_stages__json(cJSON *o, const struct ttf_attrib *a, int *err)
{
	cJSON *st, *ov;
	int64_t sum = 0;

	if (!a || !a->valid)
		return;
	st = json_add__obj(o, "stages_ms");
	if (!st) {
		*err = 1;
		return;
	}
	for (size_t i = 0; i < TTF_STAGE_ORDER_N; i++) {
		enum ttf_stage s = ttf_stage_order[i];

		add_ms(st, ttf_stage_name(s), a->stage_ns[s], err);
	}
	for (int i = 0; i < TTF_ST__MAX; i++)
		if (a->stage_ns[i] > 0)
			sum += a->stage_ns[i];
	if (a->stage_ns[TTF_ST_SERVER] > 0)
		sum += a->stage_ns[TTF_ST_SERVER];
	if (a->stage_ns[TTF_ST_COPY] > 0)
		sum += a->stage_ns[TTF_ST_COPY];
	add_ms(o, "stage_sum_ms", sum, err);
	/* net_in's part that was the client waiting for 100-continue (docs/metrics.md M18) */
	add_ms(o, "net_in_expect_wait_ms", a->expect_wait_ns, err);
	gpu_json(o, &a->gpu, err);
	*err |= !json_add__str(o, "attribution", ttf_attrib_kind_name(a->kind));
	*err |= !(a->inferred_by[0] ? json_add__str(o, "inferred_by", a->inferred_by)
				    : json_add__null(o, "inferred_by"));
	*err |= !(a->merged[0] ? json_add__str(o, "merged", a->merged)
			       : json_add__null(o, "merged"));
	*err |= !json_add__num(o, "prefill_steps", a->prefill_steps);
	*err |= !json_add__num(o, "prefill_tokens", (double)a->prefill_tokens);
	*err |= !(a->cached_tokens >= 0 ?
		  json_add__num(o, "cached_tokens", (double)a->cached_tokens) :
		  json_add__null(o, "cached_tokens"));
	*err |= !json_add__num(o, "prefill_shared_with", a->prefill_shared_with);
	*err |= !(a->prefill_token_share >= 0 ?
		  json_add__num(o, "prefill_token_share",
					  round(a->prefill_token_share * 1e4) / 1e4) :
		  json_add__null(o, "prefill_token_share"));
	add_ms(o, "queued_behind_aborted_ms", a->queued_behind_aborted_ns, err);
	ov = json_add__obj(o, "overlay");
	if (!ov) {
		*err = 1;
		return;
	}
	for (int s = 0; s < TTF_ST__MAX; s++) {
		cJSON *x;

		if (!a->have_overlay[s])
			continue;
		x = json_add__obj(ov, ttf_stage_name(s));
		if (!x) {
			*err = 1;
			continue;
		}
		add_ms(x, "on_cpu_ms", a->overlay[s].on_cpu_ns, err);
		add_ms(x, "runnable_ms", a->overlay[s].runnable_ns, err);
		add_ms(x, "blocked_ms", a->overlay[s].blocked_ns, err);
		add_ms(x, "unknown_ms", a->overlay[s].unknown_ns, err);
	}
}

void report_stages__json_causes(cJSON *o, const struct ttf_attrib *a, int *err)
{
	cJSON *arr = cJSON_GetObjectItem(o, "outliers"), *it;

	if (!a || !arr)
		return;
	cJSON_ArrayForEach(it, arr) {
		cJSON *idx = cJSON_GetObjectItem(it, "index");
		const char *cause = "none visible";

		for (uint32_t i = 0; idx && i < a->n_causes; i++)
			if (a->causes[i].index == (uint32_t)idx->valuedouble)
				cause = a->causes[i].cause;
		*err |= !json_add__str(it, "cause", cause);
	}
}

void report_stages__text_line(FILE *out, const struct ttf_attrib *a, int verbose)
{
	if (!a || !a->valid)
		return;
	fprintf(out, "    stages(ms):");
	for (size_t i = 0; i < TTF_STAGE_ORDER_N; i++) {
		enum ttf_stage s = ttf_stage_time_order[i];

		if (a->stage_ns[s] < 0)
			continue;
		fprintf(out, " %s%s %.2f", s == TTF_ST_TOKENIZE ? "(" : "", ttf_stage_name(s),
			a->stage_ns[s] / 1e6);
		if (s == TTF_ST_TOKENIZE)
			fputc(')', out);
		if (s == TTF_ST_NET_IN && a->expect_wait_ns >= 0)
			fprintf(out, " [expect-100 wait %.2f]", a->expect_wait_ns / 1e6);
		if (s < TTF_ST__MAX && a->have_overlay[s] && a->overlay[s].runnable_ns >= 1000000)
			fprintf(out, " [runnable %.1f]", a->overlay[s].runnable_ns / 1e6);
	}
	fprintf(out, " [%s%s%s]", ttf_attrib_kind_name(a->kind), a->inferred_by[0] ? ": " : "",
		a->inferred_by);
	if (a->prefill_shared_with)
		fprintf(out, " [prefill step shared with %u other%s, %.0f%% of its tokens]",
			a->prefill_shared_with, a->prefill_shared_with > 1 ? "s" : "",
			a->prefill_token_share >= 0 ? 100 * a->prefill_token_share : 0);
	if (a->cached_tokens > 0)
		fprintf(out, " [%lld prompt tokens cached, %llu computed]",
			(long long)a->cached_tokens, (unsigned long long)a->prefill_tokens);
	fputc('\n', out);
	if (a->gpu.have) {
		fprintf(out, "    gpu: prefill busy %.2f ms, copies on path %.2f ms, host gaps %.2f ms,"
			" %u kernels", a->gpu.compute_ns / 1e6, a->gpu.copy_ns / 1e6,
			a->gpu.host_gap_ns / 1e6, a->gpu.kernels);
		for (uint32_t i = 0; i < a->gpu.n_copies && i < TTF_MAX_COPIES; i++) {
			const struct ttf_copy *c = &a->gpu.copies[i];

			fprintf(out, "; %s %.1f MB %.1f GB/s%s", copy_dir(c->copy_kind),
				c->bytes / 1e6, c->gbps, c->pageable ? " PAGEABLE" : "");
			if (a->gpu.link_gbps > 0)
				fprintf(out, " (%.0f%% of link %.1f)", 100 * c->gbps / a->gpu.link_gbps,
					a->gpu.link_gbps);
		}
		fputc('\n', out);
	}
	for (uint32_t i = 0; i < a->n_causes; i++)
		fprintf(out, "    ITL outlier #%u %.1f ms: %s\n", a->causes[i].index,
			a->causes[i].itl_ns / 1e6, a->causes[i].cause);
	(void)verbose;
}

static const double pcts[] = { 50, 95, 99 };
static const char *const pct_keys[] = { "p50", "p95", "p99" };

void report_stages__summary_text(FILE *out, const struct stage_stats *ss)
{
	int tail;

	if (!ss || !ss->n)
		return;
	fprintf(out, "\nTTFT stages over %zu requests (ms):\n", ss->n);
	fprintf(out, "%-12s %8s %10s %10s %10s\n", "stage", "n", "P50", "P95", "P99");
	for (size_t i = 0; i < TTF_STAGE_ORDER_N; i++) {
		struct stats *s = ss->st[ttf_stage_order[i]];

		if (!stats__count(s))
			continue;
		fprintf(out, "%-12s %8zu", ttf_stage_name(ttf_stage_order[i]), stats__count(s));
		for (int p = 0; p < 3; p++)
			fprintf(out, " %10.3f", stats__percentile(s, pcts[p]));
		fputc('\n', out);
	}
	{
		uint64_t attributed = ss->n_kind[0] + ss->n_kind[1] + ss->n_kind[2];

		fprintf(out, "Attribution: %llu exact (%.0f%%), %llu inferred, %llu merged;"
			" %llu prefills shared a step",
			(unsigned long long)ss->n_kind[TTF_ATTR_EXACT],
			attributed ? 100.0 * ss->n_kind[TTF_ATTR_EXACT] / attributed : 0,
			(unsigned long long)ss->n_kind[TTF_ATTR_INFERRED],
			(unsigned long long)ss->n_kind[TTF_ATTR_MERGED],
			(unsigned long long)ss->n_shared);
		if (stats__count(ss->share))
			fprintf(out, " (their token share: min %.0f%%, P50 %.0f%%, max %.0f%%)",
				stats__min(ss->share), stats__percentile(ss->share, 50),
				stats__max(ss->share));
		fputc('\n', out);
		if (ss->n_cache_known)
			fprintf(out, "Prefix cache: %llu of %llu requests hit (%.0f%%), %llu of %llu"
				" prompt tokens cached\n", (unsigned long long)ss->n_cache_hit,
				(unsigned long long)ss->n_cache_known,
				100.0 * ss->n_cache_hit / ss->n_cache_known,
				(unsigned long long)ss->cached_tokens,
				(unsigned long long)(ss->cached_tokens + ss->computed_tokens));
	}
	tail = stage_stats__tail_stage(ss);
	if (tail >= 0)
		fprintf(out, "Tail (requests at or above P95 TTFT) is dominated by: %s\n",
			ttf_stage_name(tail));
	{
		double a, b, r2;

		if (!linfit__solve(&ss->prefill_fit, &a, &b, &r2))
			fprintf(out, "Prefill vs prompt: %.3f ms + %.4f ms/token (r2 %.3f, %.0f requests, "
				"%.0f..%.0f tokens)\n", a, b, r2, ss->prefill_fit.n,
				ss->prefill_fit.x_min, ss->prefill_fit.x_max);
	}
	copy_stats__text(out, ss->copies);
}

void report_stages__summary_json(cJSON *o, const struct stage_stats *ss, int *err)
{
	cJSON *st;
	int tail;

	if (!ss || !ss->n)
		return;
	copy_stats__json(o, ss->copies, err);
	st = json_add__obj(o, "stages_ms");
	if (!st) {
		*err = 1;
		return;
	}
	for (size_t i = 0; i < TTF_STAGE_ORDER_N; i++) {
		struct stats *s = ss->st[ttf_stage_order[i]];
		cJSON *x;

		if (!stats__count(s))
			continue;
		x = json_add__obj(st, ttf_stage_name(ttf_stage_order[i]));
		if (!x) {
			*err = 1;
			continue;
		}
		*err |= !json_add__num(x, "n", stats__count(s));
		for (int p = 0; p < 3; p++)
			*err |= !json_add__num(
				x, pct_keys[p], round(stats__percentile(s, pcts[p]) * 1e3) / 1e3);
	}
	{
		cJSON *ak = json_add__obj(o, "attribution");
		uint64_t attributed = ss->n_kind[0] + ss->n_kind[1] + ss->n_kind[2];

		*err |= !ak;
		for (int k = 0; ak && k <= TTF_ATTR_MERGED; k++)
			*err |= !json_add__num(ak, ttf_attrib_kind_name(k),
							 (double)ss->n_kind[k]);
		if (ak) {
			*err |= !json_add__num(ak, "exact_share", attributed ?
				round(1e4 * ss->n_kind[TTF_ATTR_EXACT] / attributed) / 1e4 : 0);
			*err |= !json_add__num(ak, "shared_prefill", (double)ss->n_shared);
			if (stats__count(ss->share)) {
				*err |= !json_add__num(ak, "shared_token_share_min",
					round(100 * stats__min(ss->share)) / 1e4);
				*err |= !json_add__num(ak, "shared_token_share_p50",
					round(100 * stats__percentile(ss->share, 50)) / 1e4);
			}
		}
	}
	if (ss->n_cache_known) {
		cJSON *pc = json_add__obj(o, "prefix_cache");

		*err |= !pc;
		if (pc) {
			*err |= !json_add__num(pc, "requests", (double)ss->n_cache_known);
			*err |= !json_add__num(pc, "hits", (double)ss->n_cache_hit);
			*err |= !json_add__num(pc, "hit_share",
				round(1e4 * ss->n_cache_hit / ss->n_cache_known) / 1e4);
			*err |= !json_add__num(pc, "cached_tokens", (double)ss->cached_tokens);
			*err |= !json_add__num(pc, "computed_tokens",
							 (double)ss->computed_tokens);
		}
	}
	tail = stage_stats__tail_stage(ss);
	*err |= !(tail >= 0 ? json_add__str(o, "tail_stage", ttf_stage_name(tail))
			    : json_add__null(o, "tail_stage"));
	{
		double a, b, r2;
		cJSON *f;

		if (linfit__solve(&ss->prefill_fit, &a, &b, &r2)) {
			*err |= !json_add__null(o, "prefill_fit");
			return;
		}
		f = json_add__obj(o, "prefill_fit");
		if (!f) {
			*err = 1;
			return;
		}
		*err |= !json_add__num(f, "intercept_ms", round(a * 1e3) / 1e3);
		*err |= !json_add__num(f, "ms_per_token", round(b * 1e6) / 1e6);
		*err |= !json_add__num(f, "r2", round(r2 * 1e4) / 1e4);
		*err |= !json_add__num(f, "n", ss->prefill_fit.n);
	}
}
