// SPDX-License-Identifier: GPL-2.0-only
#include <arpa/inet.h>
#include <errno.h>
#include <microhttpd.h>
#include <netinet/in.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "user/lib/histo.h"
#include "user/lib/log.h"
#include "user/lib/version.h"
#include "user/model/vocab.h"
#include "user/export/prom.h"
#include "user/model/hops/view.h"
#include "user/export/prom_pcie.h"

/*
 * Default buckets. TTFT: vLLM's (1 ms .. 2560 s); E2E: the same start, on to
 * 7680 s like vLLM's request latency; stages and tokenize: from 0.1 ms (a
 * stage is often below a millisecond) to 2560 s; TPOT and ITL: 0.5 ms .. 60 s,
 * fine at the low end where token gaps are.
 */
static const double ttft_s[] = {
	0.001, 0.005, 0.01, 0.02, 0.04, 0.06, 0.08, 0.1, 0.25, 0.5, 0.75, 1, 2.5, 5, 7.5,
	10, 20, 40, 80, 160, 640, 2560,
};
static const double e2e_s[] = {
	0.001, 0.005, 0.01, 0.02, 0.04, 0.06, 0.08, 0.1, 0.25, 0.5, 0.75, 1, 2.5, 5, 7.5,
	10, 20, 40, 80, 160, 320, 640, 1280, 2560, 5120, 7680,
};
static const double stage_s[] = {
	0.0001, 0.00025, 0.0005, 0.001, 0.0025, 0.005, 0.01, 0.02, 0.04, 0.06, 0.08, 0.1,
	0.25, 0.5, 0.75, 1, 2.5, 5, 10, 20, 40, 80, 160, 640, 2560,
};
static const double itl_s[] = {
	0.0005, 0.001, 0.0025, 0.005, 0.0075, 0.01, 0.015, 0.02, 0.03, 0.05, 0.075, 0.1,
	0.15, 0.2, 0.3, 0.5, 0.75, 1, 1.5, 2, 3, 5, 10, 20, 30, 60,
};
#define NB(a) ((int)(sizeof(a) / sizeof(a[0])))

static const struct {
	const char *name;	/* the --buckets NAME */
	const double *bounds;
	int n;
} hist_defaults[PROM_H__N] = {
	[PROM_H_TTFT] = { "ttft", ttft_s, NB(ttft_s) },
	[PROM_H_STAGE] = { "stage", stage_s, NB(stage_s) },
	[PROM_H_TOKENIZE] = { "tokenize", stage_s, NB(stage_s) },
	[PROM_H_TPOT] = { "tpot", itl_s, NB(itl_s) },
	[PROM_H_ITL] = { "itl", itl_s, NB(itl_s) },
	[PROM_H_E2E] = { "e2e", e2e_s, NB(e2e_s) },
};

const double *prom_buckets__get(const struct prom_buckets *b, enum prom_hist h, int *n)
{
	if (b && b->n[h] > 0) {
		*n = b->n[h];
		return b->bounds[h];
	}
	*n = hist_defaults[h].n;
	return hist_defaults[h].bounds;
}

int prom_buckets__parse(struct prom_buckets *b, const char *arg, char *err, size_t err_len)
{
	const char *eq = strchr(arg, '='), *p;
	double v[HISTO_MAX_BOUNDS];
	int h, n = 0;

	if (!eq || eq == arg) {
		snprintf(err, err_len, "'%s' is not NAME=B1,B2,...", arg);
		return -EINVAL;
	}
	for (h = 0; h < PROM_H__N; h++)
		if (strlen(hist_defaults[h].name) == (size_t)(eq - arg) &&
		    !strncmp(arg, hist_defaults[h].name, eq - arg))
			break;
	if (h == PROM_H__N) {
		snprintf(err, err_len, "unknown histogram '%.*s'", (int)(eq - arg), arg);
		return -EINVAL;
	}
	for (p = eq + 1;; p++) {
		char *end;
		double x;

		if (n == HISTO_MAX_BOUNDS) {
			snprintf(err, err_len, "%s: more than %d bounds", hist_defaults[h].name,
				 HISTO_MAX_BOUNDS);
			return -EINVAL;
		}
		errno = 0;
		x = strtod(p, &end);
		/* digits only: no "inf", "nan", hex, or blanks */
		if (end == p || errno || !(x > 0) || x > 1e9 || (*end && *end != ',') ||
		    strspn(p, "0123456789.eE+-") < (size_t)(end - p)) {
			snprintf(err, err_len, "%s: bad bound '%.*s' (a number of seconds > 0)",
				 hist_defaults[h].name, (int)strcspn(p, ","), p);
			return -EINVAL;
		}
		if (n && x <= v[n - 1]) {
			snprintf(err, err_len, "%s: bounds must be strictly ascending (%g after %g)",
				 hist_defaults[h].name, x, v[n - 1]);
			return -EINVAL;
		}
		v[n++] = x;
		if (!*end)
			break;
		p = end;
	}
	memcpy(b->bounds[h], v, n * sizeof(v[0]));
	b->n[h] = n;
	return 0;
}

/* Exclusive outcomes (the first that applies, see outcome_of), in exposition order. */
static const enum ttf_outcome outcome_order[] = {
	TTF_OC_OK, TTF_OC_ABORTED, TTF_OC_ERROR, TTF_OC_INCOMPLETE, TTF_OC_UNKNOWN,
};
#define N_OUTCOMES ((int)(sizeof(outcome_order) / sizeof(outcome_order[0])))

/* status_class: [0] unknown, [1..5] 1xx..5xx */
#define N_CLASSES 6
static const char *const class_names[N_CLASSES] = { "unknown", "1xx", "2xx", "3xx", "4xx", "5xx" };

static int status_class(int status)
{
	return status >= 100 && status <= 599 ? status / 100 : 0;
}

#define MAX_COUNTERS 128
/* route + comm + model (63) label text, escaped: room for every byte doubled */
#define PROM_LABEL_BYTES 384
#define N_API 4			/* enum ttf_api: unknown, chat, completion, llamacpp */
#define COMM_OTHER PROM_MAX_COMMS	/* comm index of "other" */
#define MODEL_OTHER PROM_MAX_MODELS	/* model index of "other" */
#define MODEL_UNKNOWN (PROM_MAX_MODELS + 1)	/* no model in the request body */

struct prom_counter {
	char name[48];
	uint64_t value;
};

/* The metrics of one (route, comm). */
struct prom_series {
	enum ttf_api api;
	int comm;		/* index into prom_metrics.comms; COMM_OTHER */
	int model;		/* index into prom_metrics.models; MODEL_OTHER, MODEL_UNKNOWN */
	struct histo ttft, tokenize, tpot, itl, e2e;
	struct histo stage[TTF_ST__ALL];
	struct histo hop_stage[PROM_MAX_HOP_STAGES];	/* by prom_metrics.hop_stages */
	uint64_t requests[N_CLASSES][TTF_OC__MAX];	/* by enum ttf_outcome (vocab.h) */
	uint64_t out_tokens, prompt_tokens;
	uint64_t in_flight;	/* read completely, not finished */
};

struct prom_metrics {
	struct prom_buckets b;	/* the bounds every histogram points into */
	char comms[PROM_MAX_COMMS][16];
	int n_comms;
	char models[PROM_MAX_MODELS][64];
	int n_models;
	struct prom_series *series[N_API * (PROM_MAX_COMMS + 1) * (PROM_MAX_MODELS + 2)];
	int n_series;
	/*
	 * The (hop, stage) pairs requests had (user/model/hops/view.h), in the
	 * order first seen: both are names from fixed tables, so the labels are
	 * bounded; a stage appears once a request had it (a prefill call's
	 * only with a disaggregated chain). More are counted, not exported.
	 */
	struct { const char *hop, *stage; } hop_stages[PROM_MAX_HOP_STAGES];
	int n_hop_stages;
	uint64_t hop_stages_over;
	uint64_t uprobe_hits;
	int n_counters;
	struct prom_counter counters[MAX_COUNTERS];
};

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

static const char *comm_name(const struct prom_metrics *pm, int i)
{
	return i == COMM_OTHER ? "other" : pm->comms[i];
}

/* The first PROM_MAX_MODELS distinct names keep their own series, then "other". */
static int model_index(struct prom_metrics *pm, const char *model)
{
	if (!model[0])
		return MODEL_UNKNOWN;
	for (int i = 0; i < pm->n_models; i++)
		if (!strcmp(pm->models[i], model))
			return i;
	if (pm->n_models == PROM_MAX_MODELS || !strcmp(model, "other") ||
	    !strcmp(model, "unknown"))
		return MODEL_OTHER;
	snprintf(pm->models[pm->n_models], sizeof(pm->models[0]), "%s", model);
	return pm->n_models++;
}

static const char *model_name(const struct prom_metrics *pm, int i)
{
	return i == MODEL_UNKNOWN ? "unknown" : i == MODEL_OTHER ? "other" : pm->models[i];
}

/* The series of r's labels, created on first use; NULL when out of memory. */
static struct prom_series *series_of(struct prom_metrics *pm, const struct ttf_request *r)
{
	enum ttf_api api = (unsigned)r->api < N_API ? r->api : TTF_API_UNKNOWN;
	int comm = comm_index(pm, r->comm), model = model_index(pm, r->model);
	struct prom_series *s;

	for (int i = 0; i < pm->n_series; i++)
		if (pm->series[i]->api == api && pm->series[i]->comm == comm &&
		    pm->series[i]->model == model)
			return pm->series[i];
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
	struct prom_series *s = series_of(pm, r);

	if (!s)
		return;
	s->requests[cls][o]++;
	if ((r->flags & TTF_REQ_READ) && s->in_flight)
		s->in_flight--;
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
			if (st != TTF_ST_TOKENIZE && a->stage_ns[st] >= 0)
				histo__add(&s->stage[st], a->stage_ns[st] / 1e9);
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

/* Label value escaping of the text format: backslash, double quote, line feed. */
static void put_label(FILE *f, const char *s)
{
	for (; *s; s++) {
		if (*s == '\\')
			fputs("\\\\", f);
		else if (*s == '"')
			fputs("\\\"", f);
		else if (*s == '\n')
			fputs("\\n", f);
		else
			fputc(*s, f);
	}
}

static void put_head(FILE *f, const char *name, const char *type, const char *help)
{
	fprintf(f, "# HELP %s %s\n# TYPE %s %s\n", name, help, name, type);
}

/* One histogram's series; label is "" or `key="value",` (trailing comma). */
static void put_histo(FILE *f, const char *name, const char *label, const struct histo *h)
{
	uint64_t cum = 0;

	for (int i = 0; i < h->n_bounds; i++) {
		cum += h->counts[i];
		fprintf(f, "%s_bucket{%sle=\"%g\"} %llu\n", name, label, h->bounds[i],
			(unsigned long long)cum);
	}
	fprintf(f, "%s_bucket{%sle=\"+Inf\"} %llu\n", name, label, (unsigned long long)h->count);
	if (*label) {
		/* drop the trailing comma for _sum/_count */
		int n = (int)strlen(label) - 1;

		fprintf(f, "%s_sum{%.*s} %.9g\n%s_count{%.*s} %llu\n", name, n, label, h->sum,
			name, n, label, (unsigned long long)h->count);
	} else {
		fprintf(f, "%s_sum %.9g\n%s_count %llu\n", name, h->sum, name,
			(unsigned long long)h->count);
	}
}

static int is_drop(const char *name)
{
	static const char *const words[] = {
		"full", "lost", "dropped", "refused", "discarded", "evicted", "oom",
	};

	for (size_t i = 0; i < sizeof(words) / sizeof(words[0]); i++)
		if (strstr(name, words[i]))
			return 1;
	return 0;
}

/*
 * A counter of time: NAME_us, NAME_ms or NAME_ns, NAME a metric-name word.
 * Returns the divisor to seconds (0: not one) and the length of NAME.
 */
static double time_unit(const char *name, size_t *stem)
{
	static const struct { const char *suffix; double div; } units[] = {
		{ "_us", 1e6 }, { "_ms", 1e3 }, { "_ns", 1e9 },
	};
	size_t len = strlen(name);

	if (len < 4 || strspn(name, "abcdefghijklmnopqrstuvwxyz0123456789_") != len)
		return 0;
	for (size_t i = 0; i < sizeof(units) / sizeof(units[0]); i++)
		if (!strcmp(name + len - 3, units[i].suffix)) {
			*stem = len - 3;
			return units[i].div;
		}
	return 0;
}

enum counter_family { CF_TIME, CF_DROP, CF_CUPTI, CF_OTHER };

static enum counter_family family_of(const char *name)
{
	size_t stem;

	if (time_unit(name, &stem))
		return CF_TIME;
	if (is_drop(name))
		return CF_DROP;
	if (!strcmp(name, "gpu_records"))
		return CF_CUPTI;
	return CF_OTHER;
}

/* Every tracer counter once, in the first family that applies (prom.h). */
static void put_counters(FILE *f, const struct prom_metrics *pm)
{
	char metric[96];
	size_t stem;

	put_head(f, "ttftrace_dropped_events_total", "counter",
		 "Events the tracer lost, by the counter that saw it (ring buffer full, ...)");
	for (int i = 0; i < pm->n_counters; i++) {
		if (family_of(pm->counters[i].name) != CF_DROP)
			continue;
		fputs("ttftrace_dropped_events_total{reason=\"", f);
		put_label(f, pm->counters[i].name);
		fprintf(f, "\"} %llu\n", (unsigned long long)pm->counters[i].value);
	}
	if (pm->hop_stages_over)	/* never so far: the pairs are a fixed set */
		fprintf(f, "ttftrace_dropped_events_total{reason=\"prom_hop_stages_full\"} %llu\n",
			(unsigned long long)pm->hop_stages_over);
	for (int i = 0; i < pm->n_counters; i++) {
		const char *name = pm->counters[i].name;
		double div;

		if (family_of(name) != CF_TIME)
			continue;
		div = time_unit(name, &stem);
		snprintf(metric, sizeof(metric), "ttftrace_%.*s_seconds_total", (int)stem, name);
		fprintf(f, "# HELP %s The tracer's counter %s, in seconds\n# TYPE %s counter\n",
			metric, name, metric);
		fprintf(f, "%s %.9g\n", metric, pm->counters[i].value / div);
	}
	for (int i = 0; i < pm->n_counters; i++)
		if (family_of(pm->counters[i].name) == CF_CUPTI) {
			put_head(f, "ttftrace_cupti_records_total", "counter",
				 "GPU activity records received from the CUPTI collector");
			fprintf(f, "ttftrace_cupti_records_total %llu\n",
				(unsigned long long)pm->counters[i].value);
			break;
		}
	put_head(f, "ttftrace_tracer_events_total", "counter",
		 "The tracer's other health counters, named as in the summary's counters");
	for (int i = 0; i < pm->n_counters; i++) {
		if (family_of(pm->counters[i].name) != CF_OTHER)
			continue;
		fputs("ttftrace_tracer_events_total{name=\"", f);
		put_label(f, pm->counters[i].name);
		fprintf(f, "\"} %llu\n", (unsigned long long)pm->counters[i].value);
	}
}

/* `route="...",comm="...",model="...",` of a series (escaped). */
static void series_label(const struct prom_metrics *pm, const struct prom_series *s, char *out,
			 size_t len)
{
	char *buf = NULL;
	size_t sz = 0;
	FILE *f = open_memstream(&buf, &sz);

	*out = '\0';
	if (!f)
		return;
	fprintf(f, "route=\"%s\",comm=\"", ttf_api_name(s->api));
	put_label(f, comm_name(pm, s->comm));
	fputs("\",model=\"", f);
	put_label(f, model_name(pm, s->model));
	fputs("\",", f);
	if (!fclose(f))
		snprintf(out, len, "%s", buf);
	free(buf);
}

/* One histogram family, one series per (route, comm); which picks the histogram. */
static void put_family(FILE *f, const struct prom_metrics *pm, const char *name, const char *help,
		       const struct histo *(*which)(const struct prom_series *))
{
	char label[PROM_LABEL_BYTES];

	put_head(f, name, "histogram", help);
	for (int i = 0; i < pm->n_series; i++) {
		series_label(pm, pm->series[i], label, sizeof(label));
		put_histo(f, name, label, which(pm->series[i]));
	}
}

static const struct histo *h_ttft(const struct prom_series *s) { return &s->ttft; }
static const struct histo *h_tokenize(const struct prom_series *s) { return &s->tokenize; }
static const struct histo *h_tpot(const struct prom_series *s) { return &s->tpot; }
static const struct histo *h_itl(const struct prom_series *s) { return &s->itl; }
static const struct histo *h_e2e(const struct prom_series *s) { return &s->e2e; }

/* The disjoint stages (all but tokenize, which lies inside frontend), in NDJSON order. */
static void put_stages(FILE *f, const struct prom_metrics *pm)
{
	char label[PROM_LABEL_BYTES], full[PROM_LABEL_BYTES + 32];

	put_head(f, "ttftrace_ttft_stage_seconds", "histogram",
		 "TTFT split into disjoint stages that sum to TTFT (server = merged frontend..emit)");
	for (int i = 0; i < pm->n_series; i++) {
		series_label(pm, pm->series[i], label, sizeof(label));
		for (int k = 0; k < TTF_STAGE_ORDER_N; k++) {
			enum ttf_stage st = ttf_stage_order[k];

			if (st == TTF_ST_TOKENIZE)
				continue;
			snprintf(full, sizeof(full), "%sstage=\"%s\",", label, ttf_stage_name(st));
			put_histo(f, "ttftrace_ttft_stage_seconds", full, &pm->series[i]->stage[st]);
		}
	}
}

/*
 * Through a gateway or a message hop: the hop stages (docs/metrics.md M20,
 * docs/design.md D15) with their hop, only once a request had them.
 */
static void put_hop_stages(FILE *f, const struct prom_metrics *pm)
{
	char label[PROM_LABEL_BYTES], full[PROM_LABEL_BYTES + 64];

	if (!pm->n_hop_stages)
		return;
	put_head(f, "ttftrace_hop_stage_seconds", "histogram",
		 "TTFT of requests that crossed processes, split per hop (disjoint, sum to TTFT)");
	for (int i = 0; i < pm->n_series; i++) {
		series_label(pm, pm->series[i], label, sizeof(label));
		for (int k = 0; k < pm->n_hop_stages; k++) {
			snprintf(full, sizeof(full), "%shop=\"%s\",stage=\"%s\",", label,
				 pm->hop_stages[k].hop, pm->hop_stages[k].stage);
			put_histo(f, "ttftrace_hop_stage_seconds", full, &pm->series[i]->hop_stage[k]);
		}
	}
}

static void put_series_counter(FILE *f, const struct prom_metrics *pm, const char *name,
			       const char *help, int prompt)
{
	char label[PROM_LABEL_BYTES];

	put_head(f, name, "counter", help);
	for (int i = 0; i < pm->n_series; i++) {
		const struct prom_series *s = pm->series[i];

		series_label(pm, s, label, sizeof(label));
		label[strlen(label) - 1] = '\0';	/* no trailing comma */
		fprintf(f, "%s{%s} %llu\n", name, label,
			(unsigned long long)(prompt ? s->prompt_tokens : s->out_tokens));
	}
}

static void put_in_flight(FILE *f, const struct prom_metrics *pm)
{
	char label[PROM_LABEL_BYTES];

	put_head(f, "ttftrace_requests_in_flight", "gauge",
		 "Requests read completely whose response has not finished");
	for (int i = 0; i < pm->n_series; i++) {
		series_label(pm, pm->series[i], label, sizeof(label));
		label[strlen(label) - 1] = '\0';	/* no trailing comma */
		fprintf(f, "ttftrace_requests_in_flight{%s} %llu\n", label,
			(unsigned long long)pm->series[i]->in_flight);
	}
}

void prom_metrics__read(struct prom_metrics *pm, const struct ttf_request *r)
{
	struct prom_series *s = series_of(pm, r);

	if (s)
		s->in_flight++;
}

void prom_metrics__rejected(struct prom_metrics *pm, const struct ttf_request *r)
{
	struct prom_series *s = series_of(pm, r);

	if (s && (r->flags & TTF_REQ_READ) && s->in_flight)
		s->in_flight--;
}

char *prom_metrics__render(const struct prom_metrics *pm, size_t *len)
{
	char *buf = NULL, label[PROM_LABEL_BYTES];
	size_t sz = 0;
	FILE *f = open_memstream(&buf, &sz);

	if (!f) {
		errno = ENOMEM;
		return NULL;
	}
	put_head(f, "ttftrace_build_info", "gauge", "ttftrace's version; always 1");
	fprintf(f, "ttftrace_build_info{version=\"%s\"} 1\n", TTF_VERSION);
	put_family(f, pm, "ttftrace_ttft_seconds",
		   "Time to first token of successful requests: first request byte in to first "
		   "token out of the server", h_ttft);
	put_stages(f, pm);
	put_hop_stages(f, pm);
	put_family(f, pm, "ttftrace_tokenize_seconds",
		   "Tokenize call of successful requests (a part of the frontend stage)", h_tokenize);
	put_family(f, pm, "ttftrace_tpot_seconds",
		   "Time per output token of successful requests: (last token - first token) / "
		   "(tokens - 1)", h_tpot);
	put_family(f, pm, "ttftrace_itl_seconds",
		   "Inter-token latency of successful requests: each gap between consecutive token "
		   "events", h_itl);
	put_family(f, pm, "ttftrace_e2e_seconds",
		   "End to end of successful requests: first request byte arrives to last response "
		   "byte leaves", h_e2e);
	put_head(f, "ttftrace_requests_total", "counter",
		 "Finished requests by outcome (the first of unknown, aborted, incomplete, error, ok)");
	for (int i = 0; i < pm->n_series; i++) {
		const struct prom_series *s = pm->series[i];

		series_label(pm, s, label, sizeof(label));
		for (int c = 0; c < N_CLASSES; c++)
			for (int k = 0; k < N_OUTCOMES; k++) {
				uint64_t v = s->requests[c][outcome_order[k]];

				if (v)
					fprintf(f, "ttftrace_requests_total{%sstatus_class=\"%s\","
						"outcome=\"%s\"} %llu\n", label, class_names[c],
						ttf_outcome_name(outcome_order[k]),
						(unsigned long long)v);
			}
	}
	put_series_counter(f, pm, "ttftrace_output_tokens_total",
			   "Output tokens (the server's usage report, else token events)", 0);
	put_series_counter(f, pm, "ttftrace_prompt_tokens_total",
			   "Prompt tokens of the requests whose stream reported usage", 1);
	put_in_flight(f, pm);
	put_head(f, "ttftrace_uprobe_hits_total", "counter",
		 "Engine uprobe hits (entry and return) delivered to the tracer");
	fprintf(f, "ttftrace_uprobe_hits_total %llu\n", (unsigned long long)pm->uprobe_hits);
	put_counters(f, pm);
	if (fclose(f)) {
		free(buf);
		errno = ENOMEM;
		return NULL;
	}
	if (len)
		*len = sz;
	return buf;
}

int prom__parse_listen(const char *spec, struct sockaddr_storage *sa, socklen_t *sa_len)
{
	char host[64] = "127.0.0.1";
	const char *port_s = spec, *colon;
	char *end;
	long port;

	if (!spec || !*spec)
		return -EINVAL;
	if (spec[0] == '[') {
		const char *rb = strchr(spec, ']');

		if (!rb || rb[1] != ':' || (size_t)(rb - spec - 1) >= sizeof(host))
			return -EINVAL;
		memcpy(host, spec + 1, rb - spec - 1);
		host[rb - spec - 1] = '\0';
		port_s = rb + 2;
	} else if ((colon = strrchr(spec, ':'))) {
		if ((size_t)(colon - spec) >= sizeof(host) || colon == spec)
			return -EINVAL;
		memcpy(host, spec, colon - spec);
		host[colon - spec] = '\0';
		port_s = colon + 1;
	}
	errno = 0;
	port = strtol(port_s, &end, 10);
	if (errno || end == port_s || *end || port < 0 || port > 65535)
		return -EINVAL;
	if (!strcmp(host, "localhost"))
		strcpy(host, "127.0.0.1");
	memset(sa, 0, sizeof(*sa));
	if (spec[0] == '[') {
		struct sockaddr_in6 *s6 = (struct sockaddr_in6 *)sa;

		s6->sin6_family = AF_INET6;
		s6->sin6_port = htons(port);
		if (inet_pton(AF_INET6, host, &s6->sin6_addr) != 1)
			return -EINVAL;
		*sa_len = sizeof(*s6);
	} else {
		struct sockaddr_in *s4 = (struct sockaddr_in *)sa;

		s4->sin_family = AF_INET;
		s4->sin_port = htons(port);
		if (inet_pton(AF_INET, host, &s4->sin_addr) != 1)
			return -EINVAL;
		*sa_len = sizeof(*s4);
	}
	return 0;
}

struct prom_sink {
	pthread_mutex_t lock;
	struct prom_metrics *pm;
	struct MHD_Daemon *mhd;
	char *sysfs_root;	/* PCIe gauges (user/export/prom_pcie.h); NULL: /sys */
	char *out_path;		/* prom_file_sink__new: written at finish; NULL: served */
};

/* The request metrics, then the PCIe gauges read now (outside the lock). */
static char *scrape(struct prom_sink *ps, size_t *len)
{
	char *text, *all = NULL;
	size_t text_len = 0, sz = 0;
	FILE *f;

	pthread_mutex_lock(&ps->lock);
	text = prom_metrics__render(ps->pm, &text_len);
	pthread_mutex_unlock(&ps->lock);
	if (!text)
		return NULL;
	f = open_memstream(&all, &sz);
	if (!f) {
		free(text);
		return NULL;
	}
	fwrite(text, 1, text_len, f);
	free(text);
	prom_pcie__render(f, ps->sysfs_root);
	if (fclose(f)) {
		free(all);
		return NULL;
	}
	*len = sz;
	return all;
}

static enum MHD_Result on_http(void *cls, struct MHD_Connection *conn, const char *url,
			       const char *method, const char *version, const char *upload_data,
			       size_t *upload_data_size, void **con_cls)
{
	struct prom_sink *ps = cls;
	struct MHD_Response *resp;
	unsigned int code = MHD_HTTP_OK;
	enum MHD_Result ret;
	size_t len = 0;
	char *text;

	if (strcmp(method, "GET") && strcmp(method, "HEAD")) {
		static char msg[] = "only GET\n";

		resp = MHD_create_response_from_buffer(strlen(msg), msg, MHD_RESPMEM_PERSISTENT);
		code = MHD_HTTP_METHOD_NOT_ALLOWED;
	} else if (strcmp(url, "/metrics")) {
		static char msg[] = "ttftrace serves /metrics\n";

		resp = MHD_create_response_from_buffer(strlen(msg), msg, MHD_RESPMEM_PERSISTENT);
		code = MHD_HTTP_NOT_FOUND;
	} else {
		text = scrape(ps, &len);
		if (!text)
			return MHD_NO;
		resp = MHD_create_response_from_buffer(len, text, MHD_RESPMEM_MUST_FREE);
		if (!resp)
			free(text);
	}
	if (!resp)
		return MHD_NO;
	MHD_add_response_header(resp, MHD_HTTP_HEADER_CONTENT_TYPE,
				code == MHD_HTTP_OK ? "text/plain; version=0.0.4; charset=utf-8"
						    : "text/plain");
	ret = MHD_queue_response(conn, code, resp);
	MHD_destroy_response(resp);
	return ret;
}

static void sink_request(void *ctx, const struct ttf_request *r, const struct ttf_req_metrics *m,
			 const struct ttf_attrib *a)
{
	struct prom_sink *ps = ctx;

	pthread_mutex_lock(&ps->lock);
	prom_metrics__observe(ps->pm, r, m, a);
	pthread_mutex_unlock(&ps->lock);
}

static void sink_request_read(void *ctx, const struct ttf_request *r)
{
	struct prom_sink *ps = ctx;

	pthread_mutex_lock(&ps->lock);
	prom_metrics__read(ps->pm, r);
	pthread_mutex_unlock(&ps->lock);
}

static void sink_rejected(void *ctx, const struct ttf_request *r)
{
	struct prom_sink *ps = ctx;

	pthread_mutex_lock(&ps->lock);
	prom_metrics__rejected(ps->pm, r);
	pthread_mutex_unlock(&ps->lock);
}

static void sink_engine_event(void *ctx, const struct ttf_engine_event *e)
{
	struct prom_sink *ps = ctx;

	pthread_mutex_lock(&ps->lock);
	prom_metrics__add_uprobe_hits(ps->pm, 1);
	pthread_mutex_unlock(&ps->lock);
}

static void sink_counters(void *ctx, const struct report_counter *c, int n)
{
	struct prom_sink *ps = ctx;

	pthread_mutex_lock(&ps->lock);
	prom_metrics__set_counters(ps->pm, c, n);
	pthread_mutex_unlock(&ps->lock);
}

static int sink_finish(void *ctx, const struct report_counter *c, int n)
{
	struct prom_sink *ps = ctx;
	char *text;
	size_t len;
	FILE *f;
	int err = 0;

	sink_counters(ctx, c, n);
	if (!ps->out_path)
		return 0;
	text = prom_metrics__render(ps->pm, &len);	/* the tracer's thread: no lock needed */
	if (!text)
		return -ENOMEM;
	f = fopen(ps->out_path, "w");
	if (!f || fwrite(text, 1, len, f) != len)
		err = -errno;
	if (f && fclose(f) && !err)
		err = -errno;
	if (err)
		ttf_error("check that the directory exists and is writable", "cannot write %s: %s",
			  ps->out_path, strerror(-err));
	free(text);
	return err;
}

static void sink_destroy(void *ctx)
{
	struct prom_sink *ps = ctx;

	if (ps->mhd)
		MHD_stop_daemon(ps->mhd);
	pthread_mutex_destroy(&ps->lock);
	prom_metrics__free(ps->pm);
	free(ps->sysfs_root);
	free(ps->out_path);
	free(ps);
}

/* Our own listening socket: bind errors keep their errno, and port 0 can be read back. */
static int open_listener(const struct sockaddr_storage *sa, socklen_t sa_len)
{
	int one = 1, fd = socket(sa->ss_family, SOCK_STREAM | SOCK_CLOEXEC, 0), err;

	if (fd < 0)
		return -errno;
	setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
	if (bind(fd, (const struct sockaddr *)sa, sa_len) || listen(fd, 16)) {
		err = -errno;
		close(fd);
		return err;
	}
	return fd;
}

static void print_url(int fd)
{
	struct sockaddr_storage sa;
	socklen_t len = sizeof(sa);
	char host[INET6_ADDRSTRLEN] = "?";
	int port = 0;

	if (getsockname(fd, (struct sockaddr *)&sa, &len))
		return;
	if (sa.ss_family == AF_INET6) {
		struct sockaddr_in6 *s6 = (struct sockaddr_in6 *)&sa;

		inet_ntop(AF_INET6, &s6->sin6_addr, host, sizeof(host));
		port = ntohs(s6->sin6_port);
		fprintf(stderr, "Serving Prometheus metrics on http://[%s]:%d/metrics\n", host,
			port);
	} else {
		struct sockaddr_in *s4 = (struct sockaddr_in *)&sa;

		inet_ntop(AF_INET, &s4->sin_addr, host, sizeof(host));
		port = ntohs(s4->sin_port);
		fprintf(stderr, "Serving Prometheus metrics on http://%s:%d/metrics\n", host, port);
	}
}

static void sink_of(struct prom_sink *ps, struct ttf_sink *out)
{
	*out = (struct ttf_sink){
		.name = "prometheus", .ctx = ps, .request = sink_request,
		.request_read = sink_request_read, .rejected = sink_rejected,
		.engine_event = sink_engine_event, .counters = sink_counters,
		.finish = sink_finish, .destroy = sink_destroy,
	};
}

int prom_sink__new(const char *spec, const char *sysfs_root, const struct prom_buckets *b,
		   struct ttf_sink *out)
{
	struct sockaddr_storage sa;
	struct prom_sink *ps;
	socklen_t sa_len;
	unsigned int flags = MHD_USE_INTERNAL_POLLING_THREAD;
	int fd, err;

	err = prom__parse_listen(spec, &sa, &sa_len);
	if (err)
		return err;
	ps = calloc(1, sizeof(*ps));
	if (!ps)
		return -ENOMEM;
	pthread_mutex_init(&ps->lock, NULL);
	ps->pm = prom_metrics__new(b);
	if (sysfs_root)
		ps->sysfs_root = strdup(sysfs_root);
	if (!ps->pm || (sysfs_root && !ps->sysfs_root)) {
		err = -ENOMEM;
		goto cleanup;
	}
	fd = open_listener(&sa, sa_len);
	if (fd < 0) {
		err = fd;
		goto cleanup;
	}
	if (sa.ss_family == AF_INET6)
		flags |= MHD_USE_IPv6;
	ps->mhd = MHD_start_daemon(flags, 0, NULL, NULL, on_http, ps,
				   MHD_OPTION_LISTEN_SOCKET, fd,
				   MHD_OPTION_CONNECTION_LIMIT, (unsigned int)16,
				   MHD_OPTION_CONNECTION_TIMEOUT, (unsigned int)10,
				   MHD_OPTION_END);
	if (!ps->mhd) {
		err = errno ? -errno : -EIO;
		close(fd);
		goto cleanup;
	}
	print_url(fd);
	sink_of(ps, out);
	return 0;
cleanup:
	sink_destroy(ps);
	return err;
}

int prom_file_sink__new(const char *path, const struct prom_buckets *b, struct ttf_sink *out)
{
	struct prom_sink *ps = calloc(1, sizeof(*ps));

	if (!ps)
		return -ENOMEM;
	pthread_mutex_init(&ps->lock, NULL);
	ps->pm = prom_metrics__new(b);
	ps->out_path = strdup(path);
	if (!ps->pm || !ps->out_path) {
		sink_destroy(ps);
		return -ENOMEM;
	}
	sink_of(ps, out);
	return 0;
}
