// SPDX-License-Identifier: GPL-2.0-only
/* Requests grouped by route or model, for the report page (html_groups.h). */
#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include "user/export/html/html_groups.h"
#include "user/lib/stats.h"

struct group {
	char *key;
	unsigned n, failed;
	struct stats *ttft_ms, *tpot_ms;
};

struct html_groups {
	struct group g[HTML_GROUPS_MAX + 1];	/* the last one is "other" */
	int n;
};

struct html_groups *html_groups__new(void)
{
	return calloc(1, sizeof(struct html_groups));
}

void html_groups__free(struct html_groups *hg)
{
	if (!hg)
		return;
	for (int i = 0; i < hg->n; i++) {
		free(hg->g[i].key);
		stats__free(hg->g[i].ttft_ms);
		stats__free(hg->g[i].tpot_ms);
	}
	free(hg);
}

static struct group *find(struct html_groups *hg, const char *key)
{
	struct group *g;

	for (int i = 0; i < hg->n; i++)
		if (!strcmp(hg->g[i].key, key))
			return &hg->g[i];
	if (hg->n >= HTML_GROUPS_MAX && strcmp(key, "other"))
		return find(hg, "other");	/* the bound reached: "other" takes the slot past it */
	g = &hg->g[hg->n];
	g->key = strdup(key);
	g->ttft_ms = stats__new();
	g->tpot_ms = stats__new();
	if (!g->key || !g->ttft_ms || !g->tpot_ms) {
		free(g->key);
		stats__free(g->ttft_ms);
		stats__free(g->tpot_ms);
		memset(g, 0, sizeof(*g));
		return NULL;
	}
	hg->n++;
	return g;
}

int html_groups__add(struct html_groups *hg, const char *key, int success, double ttft_ms,
		     double tpot_ms)
{
	struct group *g = find(hg, key ? key : "(none)");
	int err = 0;

	if (!g)
		return -ENOMEM;
	g->n++;
	if (!success) {
		g->failed++;
		return 0;
	}
	if (isfinite(ttft_ms))
		err |= stats__add(g->ttft_ms, ttft_ms);
	if (isfinite(tpot_ms))
		err |= stats__add(g->tpot_ms, tpot_ms);
	return err ? -ENOMEM : 0;
}

static int pcts_json(cJSON *o, const char *name, struct stats *s)
{
	static const double pcts[] = { 50, 95, 99 };
	static const char *const keys[] = { "p50", "p95", "p99" };
	cJSON *p = cJSON_AddObjectToObject(o, name);
	size_t n = stats__count(s);
	int ok = p && cJSON_AddNumberToObject(p, "n", n);

	for (int i = 0; ok && i < 3; i++)
		ok = cJSON_AddItemToObject(p, keys[i], n ? cJSON_CreateNumber(stats__percentile(s, pcts[i]))
							 : cJSON_CreateNull());
	return ok;
}

static int by_count(const void *a, const void *b)
{
	const struct group *x = a, *y = b;

	return x->n != y->n ? (x->n < y->n ? 1 : -1) : strcmp(x->key, y->key);
}

cJSON *html_groups__json(struct html_groups *hg)
{
	cJSON *arr = cJSON_CreateArray();

	qsort(hg->g, hg->n, sizeof(hg->g[0]), by_count);
	for (int i = 0; arr && i < hg->n; i++) {
		struct group *g = &hg->g[i];
		cJSON *o = cJSON_CreateObject();

		if (!o || !cJSON_AddItemToArray(arr, o) || !cJSON_AddStringToObject(o, "key", g->key) ||
		    !cJSON_AddNumberToObject(o, "n", g->n) ||
		    !cJSON_AddNumberToObject(o, "failed", g->failed) ||
		    !pcts_json(o, "ttft", g->ttft_ms) || !pcts_json(o, "tpot", g->tpot_ms)) {
			cJSON_Delete(arr);
			return NULL;
		}
	}
	return arr;
}
