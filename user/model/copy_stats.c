// SPDX-License-Identifier: GPL-2.0-only
#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include "user/model/copy_stats.h"
#include "user/lib/stats.h"

enum { DIR_HTOD, DIR_DTOH, DIR_OTHER, N_DIR };

static const char *const dir_names[N_DIR] = { "HtoD", "DtoH", "other" };

struct copy_stats {
	struct stats *gbps[N_DIR][2];	/* [dir][pageable] */
	uint64_t bytes[N_DIR][2];
	double link_gbps;
};

struct copy_stats *copy_stats__new(void)
{
	struct copy_stats *cs = calloc(1, sizeof(*cs));

	if (!cs)
		return NULL;
	for (int d = 0; d < N_DIR; d++)
		for (int p = 0; p < 2; p++)
			if (!(cs->gbps[d][p] = stats__new())) {
				copy_stats__free(cs);
				return NULL;
			}
	return cs;
}

void copy_stats__free(struct copy_stats *cs)
{
	if (!cs)
		return;
	for (int d = 0; d < N_DIR; d++)
		for (int p = 0; p < 2; p++)
			stats__free(cs->gbps[d][p]);
	free(cs);
}

int copy_stats__add(struct copy_stats *cs, const struct ttf_gpu_part *g)
{
	int err = 0;

	if (!g->have)
		return 0;
	if (g->link_gbps > 0)
		cs->link_gbps = g->link_gbps;
	for (uint32_t i = 0; i < g->n_copies && i < TTF_MAX_COPIES; i++) {
		const struct ttf_copy *c = &g->copies[i];
		int d = c->copy_kind == 1 ? DIR_HTOD : c->copy_kind == 2 ? DIR_DTOH : DIR_OTHER;

		if (c->gbps <= 0)
			continue;
		err |= stats__add(cs->gbps[d][!!c->pageable], c->gbps);
		cs->bytes[d][!!c->pageable] += c->bytes;
	}
	return err ? -ENOMEM : 0;
}

void copy_stats__text(FILE *out, const struct copy_stats *cs)
{
	int any = 0;

	if (!cs)
		return;
	for (int d = 0; d < N_DIR; d++) {
		for (int p = 0; p < 2; p++) {
			struct stats *s = cs->gbps[d][p];

			if (!stats__count(s))
				continue;
			if (!any++)
				fprintf(out, "Copies in prefill windows (achieved GB/s; PCIe path %s):\n",
					cs->link_gbps > 0 ? "rate below" : "rate unknown");
			fprintf(out, "  %-5s %-8s n=%-6zu %8.1f MB  P50 %6.2f  P95 %6.2f GB/s", dir_names[d],
				p ? "pageable" : "pinned", stats__count(s), cs->bytes[d][p] / 1e6,
				stats__percentile(s, 50), stats__percentile(s, 95));
			if (cs->link_gbps > 0)
				fprintf(out, "  (P50 = %.0f%% of link %.2f GB/s)",
					100 * stats__percentile(s, 50) / cs->link_gbps, cs->link_gbps);
			fprintf(out, "%s\n", p ? "  pageable: not link evidence" : "");
		}
	}
}

void copy_stats__json(cJSON *o, const struct copy_stats *cs, int *err)
{
	cJSON *arr;

	if (!cs)
		return;
	arr = cJSON_AddArrayToObject(o, "copies");
	if (!arr) {
		*err = 1;
		return;
	}
	for (int d = 0; d < N_DIR; d++) {
		for (int p = 0; p < 2; p++) {
			struct stats *s = cs->gbps[d][p];
			cJSON *x;
			double p50;

			if (!stats__count(s))
				continue;
			x = cJSON_CreateObject();
			if (!x || !cJSON_AddItemToArray(arr, x)) {
				cJSON_Delete(x);
				*err = 1;
				continue;
			}
			p50 = stats__percentile(s, 50);
			*err |= !cJSON_AddStringToObject(x, "dir", dir_names[d]);
			*err |= !cJSON_AddStringToObject(x, "host", p ? "pageable" : "pinned");
			*err |= !cJSON_AddNumberToObject(x, "n", stats__count(s));
			*err |= !cJSON_AddNumberToObject(x, "bytes", (double)cs->bytes[d][p]);
			*err |= !cJSON_AddNumberToObject(x, "gbps_p50", round(p50 * 100) / 100);
			*err |= !cJSON_AddNumberToObject(x, "gbps_p95",
							 round(stats__percentile(s, 95) * 100) / 100);
			if (cs->link_gbps > 0) {
				*err |= !cJSON_AddNumberToObject(x, "link_gbps",
								 round(cs->link_gbps * 100) / 100);
				*err |= !cJSON_AddNumberToObject(x, "share_of_link_p50",
								 round(p50 / cs->link_gbps * 1000) / 1000);
			}
		}
	}
}
