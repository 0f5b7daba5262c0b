// SPDX-License-Identifier: GPL-2.0-only
/* The metrics object: one series per label set, fed by each finished request. */
#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "user/model/hops/view.h"
#include "user/export/prom/prom_int.h"

static int status_class(int status)
{
	return status >= 100 && status <= 599 ? status / 100 : 0;
}

struct prom_metrics *prom_metrics__new(const struct prom_buckets *b)
{
	struct prom_metrics *pm = calloc(1, sizeof(*pm));

	if (!pm) {
		errno = ENOMEM;
		return NULL;
	}
	for (int h = 0; h < PROM_H__N; h++) {
		int n;
		const double *v = prom_buckets__get(b, h, &n);

		memcpy(pm->b.bounds[h], v, n * sizeof(*v));
		pm->b.n[h] = n;
	}
	return pm;
}

void prom_metrics__free(struct prom_metrics *pm)
{
	if (!pm)
		return;
	for (int i = 0; i < pm->n_series; i++)
		free(pm->series[i]);
	free(pm);
}

static void init_histo(const struct prom_metrics *pm, struct histo *h, enum prom_hist which)
{
	histo__init(h, pm->b.bounds[which], pm->b.n[which]);
}

static int comm_index(struct prom_metrics *pm, const char *comm)
{
	char c[16];

	snprintf(c, sizeof(c), "%s", comm);
	for (int i = 0; i < pm->n_comms; i++)
		if (!strcmp(pm->comms[i], c))
			return i;
	if (pm->n_comms == PROM_MAX_COMMS || !strcmp(c, "other"))
		return COMM_OTHER;
	memcpy(pm->comms[pm->n_comms], c, sizeof(c));
	return pm->n_comms++;
}

/* Free the series of model slot i (quiet: none in flight), for a new name. */
static void free_model_series(struct prom_metrics *pm, int i)
{
	int k = 0;

	for (int j = 0; j < pm->n_series; j++) {
		if (pm->series[j]->model == i)
			free(pm->series[j]);
		else
			pm->series[k++] = pm->series[j];
	}
	pm->n_series = k;
}

static bool model_in_flight(const struct prom_metrics *pm, int i)
{
	for (int j = 0; j < pm->n_series; j++)
		if (pm->series[j]->model == i && pm->series[j]->in_flight)
			return true;
	return false;
}

/* A slot whose value has been quiet for PROM_MODEL_QUIET_NS before now_ns; -1: none. */
static int quiet_model(const struct prom_metrics *pm, uint64_t now_ns)
{
	for (int i = 0; i < pm->n_models; i++)
		if (pm->model_seen_ns[i] + PROM_MODEL_QUIET_NS < now_ns && !model_in_flight(pm, i))
			return i;
	return -1;
}

/*
 * The model label of a request body's name. Only admit (a successful
 * request) makes a new value, so names on failing requests, which any client
 * can send, go to "other" unless a successful request made them before.
 */
static int model_index(struct prom_metrics *pm, const char *model, bool admit, uint64_t now_ns)
{
	int i;

	if (!model[0])
		return MODEL_UNKNOWN;
	for (i = 0; i < pm->n_models; i++)
		if (!strcmp(pm->models[i], model)) {
			if (admit && now_ns > pm->model_seen_ns[i])
				pm->model_seen_ns[i] = now_ns;
			return i;
		}
	if (!admit || !strcmp(model, "other") || !strcmp(model, "unknown"))
		return MODEL_OTHER;
	if (pm->n_models < PROM_MAX_MODELS) {
		i = pm->n_models++;
	} else {
		i = quiet_model(pm, now_ns);
		if (i < 0)
			return MODEL_OTHER;
		free_model_series(pm, i);
		pm->models_reused++;
	}
	snprintf(pm->models[i], sizeof(pm->models[0]), "%s", model);
	pm->model_seen_ns[i] = now_ns;
	return i;
}

static struct prom_series *series_find(const struct prom_metrics *pm, enum ttf_api api, int comm,
				       int model);

_Static_assert(TTF_ST__ALL <= 32, "stages_seen is a 32-bit mask");

/* The series of (api, comm, model), created on first use; NULL when out of memory. */
static struct prom_series *series_get(struct prom_metrics *pm, enum ttf_api api, int comm,
				      int model)
{
	struct prom_series *s = series_find(pm, api, comm, model);

	if (s)
		return s;
	s = calloc(1, sizeof(*s));
	if (!s)
		return NULL;
	s->api = api;
	s->comm = comm;
	s->model = model;
	init_histo(pm, &s->ttft, PROM_H_TTFT);
	init_histo(pm, &s->tokenize, PROM_H_TOKENIZE);
	init_histo(pm, &s->tpot, PROM_H_TPOT);
	init_histo(pm, &s->itl, PROM_H_ITL);
	init_histo(pm, &s->e2e, PROM_H_E2E);
	for (int i = 0; i < TTF_ST__ALL; i++)
		init_histo(pm, &s->stage[i], PROM_H_STAGE);
	for (int i = 0; i < PROM_MAX_HOP_STAGES; i++)
		init_histo(pm, &s->hop_stage[i], PROM_H_STAGE);
	pm->series[pm->n_series++] = s;
	return s;
}

/* The series of r's labels; admit: r succeeded, its model name may make a value. */
static struct prom_series *series_of(struct prom_metrics *pm, const struct ttf_request *r,
				     bool admit, uint64_t now_ns)
{
	enum ttf_api api = (unsigned)r->api < N_API ? r->api : TTF_API_UNKNOWN;

	return series_get(pm, api, comm_index(pm, r->comm),
			  model_index(pm, r->model, admit, now_ns));
}

/* The series of (api, comm, model) when it exists. */
static struct prom_series *series_find(const struct prom_metrics *pm, enum ttf_api api, int comm,
				       int model)
{
	for (int i = 0; i < pm->n_series; i++)
		if (pm->series[i]->api == api && pm->series[i]->comm == comm &&
		    pm->series[i]->model == model)
			return pm->series[i];
	return NULL;
}

/*
 * r leaves the in-flight gauge. It was counted where its model's label was
 * when it was read: its value's series, or the pending count of "other" when
 * a successful request had not made the value yet. A value made meanwhile:
 * take it from there once the value's own count is spent.
 */
static void leave_in_flight(struct prom_metrics *pm, const struct ttf_request *r)
{
	enum ttf_api api = (unsigned)r->api < N_API ? r->api : TTF_API_UNKNOWN;
	int comm = comm_index(pm, r->comm), model = model_index(pm, r->model, false, 0);
	struct prom_series *s = series_find(pm, api, comm, model);

	if (!(r->flags & TTF_REQ_READ))
		return;
	if (model != MODEL_OTHER && s && s->in_flight)
		s->in_flight--;
	else if (pm->pending[api][comm])
		pm->pending[api][comm]--;
}

/* The index of (hop, stage), registered when new; -1 when the table is full. */
static int hop_stage_index(struct prom_metrics *pm, const char *hop, const char *stage)
{
	for (int i = 0; i < pm->n_hop_stages; i++)
		if (!strcmp(pm->hop_stages[i].hop, hop) && !strcmp(pm->hop_stages[i].stage, stage))
			return i;
	if (pm->n_hop_stages == PROM_MAX_HOP_STAGES)
		return -1;
	pm->hop_stages[pm->n_hop_stages].hop = hop;
	pm->hop_stages[pm->n_hop_stages].stage = stage;
	return pm->n_hop_stages++;
}

/* A request's hop stages (through a gateway, or a message hop to an engine). */
static void add_hop_stages(struct prom_metrics *pm, struct prom_series *s,
			   const struct ttf_attrib *a, uint64_t t_start_ns)
{
	struct ttf_hop_view v;

	if (!ttf_hop_view__build(a, t_start_ns, &v))
		return;
	for (int i = 0; i < v.n_stages; i++) {
		int k = hop_stage_index(pm, v.stages[i].hop, v.stages[i].name);

		if (k < 0)
			pm->hop_stages_over++;
		else
			histo__add(&s->hop_stage[k], v.stages[i].ns / 1e9);
	}
}

static enum ttf_outcome outcome_of(uint32_t flags)
{
	if (flags & TTF_REQ_UNKNOWN)
		return TTF_OC_UNKNOWN;
	if (flags & TTF_REQ_ABORTED)
		return TTF_OC_ABORTED;
	if (flags & TTF_REQ_INCOMPLETE)
		return TTF_OC_INCOMPLETE;
	if (flags & TTF_REQ_ERROR)
		return TTF_OC_ERROR;
	return TTF_OC_OK;
}

void prom_metrics__observe(struct prom_metrics *pm, const struct ttf_request *r,
			   const struct ttf_req_metrics *m, const struct ttf_attrib *a)
{
	enum ttf_outcome o = outcome_of(r->flags);
	int cls = status_class(r->status);
	bool ok = ttf_vocab__success(r);
	struct prom_series *s;

	leave_in_flight(pm, r);
	s = series_of(pm, r, ok, m->t_start_ns);
	if (!s)
		return;
	s->requests[cls][o]++;
	if (o == TTF_OC_UNKNOWN)
		return;
	s->out_tokens += m->n_tokens;
	if (r->flags & TTF_REQ_USAGE)
		s->prompt_tokens += r->usage_prompt_tokens;
	/* latency: successful responses only */
	if (!ttf_vocab__success(r))
		return;
	if (m->ttft_ns >= 0)
		histo__add(&s->ttft, m->ttft_ns / 1e9);
	if (m->tpot_ns >= 0)
		histo__add(&s->tpot, m->tpot_ns / 1e9);
	if (m->e2e_ns >= 0)
		histo__add(&s->e2e, m->e2e_ns / 1e9);
	for (uint32_t i = 0; i + 1 < r->n_events; i++) {
		uint64_t itl_ns;

		if (!ttf_metrics__itl_one(r, i, &itl_ns))
			histo__add(&s->itl, itl_ns / 1e9);
	}
	if (a && a->valid) {
		for (int st = 0; st < TTF_ST__ALL; st++)
			if (st != TTF_ST_TOKENIZE && a->stage_ns[st] >= 0) {
				histo__add(&s->stage[st], a->stage_ns[st] / 1e9);
				pm->stages_seen |= 1u << st;
			}
		if (a->stage_ns[TTF_ST_TOKENIZE] >= 0)
			histo__add(&s->tokenize, a->stage_ns[TTF_ST_TOKENIZE] / 1e9);
		add_hop_stages(pm, s, a, m->t_start_ns);
	}
}

void prom_metrics__set_counters(struct prom_metrics *pm, const struct report_counter *c, int n)
{
	if (n > MAX_COUNTERS)
		n = MAX_COUNTERS;
	for (int i = 0; i < n; i++) {
		snprintf(pm->counters[i].name, sizeof(pm->counters[i].name), "%s", c[i].name);
		pm->counters[i].value = c[i].value;
	}
	pm->n_counters = n;
}

void prom_metrics__add_uprobe_hits(struct prom_metrics *pm, uint64_t n)
{
	pm->uprobe_hits += n;
}

void prom_metrics__read(struct prom_metrics *pm, const struct ttf_request *r)
{
	enum ttf_api api = (unsigned)r->api < N_API ? r->api : TTF_API_UNKNOWN;
	int comm = comm_index(pm, r->comm), model = model_index(pm, r->model, false, 0);
	struct prom_series *s;

	/* a name no successful request made yet: counted aside, no series made for it */
	if (model == MODEL_OTHER) {
		pm->pending[api][comm]++;
		pm->pending_seen[api][comm] = true;
		return;
	}
	s = series_get(pm, api, comm, model);
	if (s)
		s->in_flight++;
}

void prom_metrics__rejected(struct prom_metrics *pm, const struct ttf_request *r)
{
	leave_in_flight(pm, r);
}
