// SPDX-License-Identifier: GPL-2.0-only
/* The summary per hop and the hop that dominates the tail (report_hop_split.h). */
#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include "user/export/report/report_hop_split.h"
#include "user/lib/stats.h"
#include "user/lib/tail_bucket.h"
#include "user/model/hops/view.h"

#define NH 16		/* hop names (ttf_hop_view_hop_names) at most */

struct bucket {
	uint64_t n;
	double sum[NH];		/* ns per hop */
	double ttft;		/* ns */
};

struct hop_split {
	struct stats *st[NH];	/* ms per request, by hop name index */
	uint64_t seen[NH];	/* requests with that hop */
	uint64_t n;
	struct bucket *b[TAIL_BUCKETS];
};

static const double pcts[] = { 50, 95, 99 };
static const char *const pct_keys[] = { "p50", "p95", "p99" };

struct hop_split *hop_split__new(void)
{
	struct hop_split *hs = calloc(1, sizeof(*hs));

	for (int i = 0; hs && i < NH; i++)
		if (!(hs->st[i] = stats__new())) {
			hop_split__free(hs);
			return NULL;
		}
	return hs;
}

void hop_split__free(struct hop_split *hs)
{
	if (!hs)
		return;
	for (int i = 0; i < NH; i++)
		stats__free(hs->st[i]);
	for (size_t i = 0; i < TAIL_BUCKETS; i++)
		free(hs->b[i]);
	free(hs);
}

int hop_split__add(struct hop_split *hs, const struct ttf_attrib *a, uint64_t t_start_ns,
		   int64_t ttft_ns)
{
	struct ttf_hop_view v;
	double ns[NH] = { 0 };
	int has[NH] = { 0 }, err = 0;
	size_t b;

	if (!hs || ttft_ns < 0 || !ttf_hop_view__build(a, t_start_ns, &v))
		return 0;
	for (int i = 0; i < v.n_stages; i++) {
		int h = ttf_hop_view_hop_index(v.stages[i].hop);

		if (h >= 0 && h < NH) {
			ns[h] += v.stages[i].ns;
			has[h] = 1;
		}
	}
	b = tail_bucket_of(ttft_ns);
	if (!hs->b[b] && !(hs->b[b] = calloc(1, sizeof(*hs->b[b]))))
		return -ENOMEM;
	hs->n++;
	hs->b[b]->n++;
	hs->b[b]->ttft += ttft_ns;
	for (int h = 0; h < NH; h++) {
		if (!has[h])
			continue;
		hs->seen[h]++;
		hs->b[b]->sum[h] += ns[h];
		err |= stats__add(hs->st[h], ns[h] / 1e6);
	}
	return err ? -ENOMEM : 0;
}

/* The hop with the largest share of the tail's TTFT; -1 none. *share: that share. */
static int tail_hop(const struct hop_split *hs, double *share)
{
	size_t rank = (size_t)ceil(0.95 * hs->n) - 1, b;
	double sum[NH] = { 0 }, ttft = 0;
	int best = -1;

	for (b = 0; b < TAIL_BUCKETS; b++) {
		uint64_t n = hs->b[b] ? hs->b[b]->n : 0;

		if (rank < n)
			break;
		rank -= n;
	}
	for (; b < TAIL_BUCKETS; b++)
		for (int h = 0; hs->b[b] && h < NH; h++) {
			sum[h] += hs->b[b]->sum[h];
			ttft += h ? 0 : hs->b[b]->ttft;
		}
	for (int h = 0; h < NH; h++)
		if (hs->seen[h] && (best < 0 || sum[h] > sum[best]))
			best = h;
	*share = best >= 0 && ttft > 0 ? sum[best] / ttft : 0;
	return best;
}

void hop_split__summary_text(FILE *out, struct hop_split *hs)
{
	const char *const *names = ttf_hop_view_hop_names();
	double share;
	int t;

	if (!hs || !hs->n)
		return;
	fprintf(out, "Per hop over %llu requests (ms; a process's stages, or a link's: ipc, net):\n",
		(unsigned long long)hs->n);
	for (int h = 0; h < NH && names[h]; h++) {
		if (!hs->seen[h])
			continue;
		fprintf(out, "  %-13s", names[h]);
		for (size_t k = 0; k < 3; k++)
			fprintf(out, " %s %9.3f", pct_keys[k], stats__percentile(hs->st[h], pcts[k]));
		fputc('\n', out);
	}
	t = tail_hop(hs, &share);
	if (t >= 0)
		fprintf(out, "  the tail (requests at or above P95 TTFT) is dominated by hop: %s "
			"(%.0f%% of its TTFT)\n", names[t], 100 * share);
}

void hop_split__summary_json(cJSON *o, struct hop_split *hs, int *err)
{
	const char *const *names = ttf_hop_view_hop_names();
	cJSON *h, *st;
	double share;
	int t;

	if (!hs || !hs->n)
		return;
	h = cJSON_AddObjectToObject(o, "hop_split");
	*err |= !h;
	if (!h)
		return;
	*err |= !cJSON_AddNumberToObject(h, "requests", (double)hs->n);
	st = cJSON_AddObjectToObject(h, "hops_ms");
	*err |= !st;
	for (int i = 0; st && i < NH && names[i]; i++) {
		cJSON *s;

		if (!hs->seen[i])
			continue;
		s = cJSON_AddObjectToObject(st, names[i]);
		*err |= !s;
		for (size_t k = 0; s && k < 3; k++)
			*err |= !cJSON_AddNumberToObject(s, pct_keys[k], round(1e3 *
				stats__percentile(hs->st[i], pcts[k])) / 1e3);
	}
	t = tail_hop(hs, &share);
	*err |= !cJSON_AddStringToObject(h, "tail_hop", t >= 0 ? names[t] : "");
	*err |= !cJSON_AddNumberToObject(h, "tail_hop_share", round(1e4 * share) / 1e4);
}
