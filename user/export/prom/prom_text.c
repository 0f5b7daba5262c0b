// SPDX-License-Identifier: GPL-2.0-only
/* The exposition text (format 0.0.4) of a struct prom_metrics. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "user/lib/version.h"
#include "user/export/prom/prom_int.h"

/* Exclusive outcomes (the first that applies, see outcome_of in prom_series.c), in exposition order. */
static const enum ttf_outcome outcome_order[] = {
	TTF_OC_OK, TTF_OC_ABORTED, TTF_OC_ERROR, TTF_OC_INCOMPLETE, TTF_OC_UNKNOWN,
};
#define N_OUTCOMES ((int)(sizeof(outcome_order) / sizeof(outcome_order[0])))

static const char *const class_names[N_CLASSES] = { "unknown", "1xx", "2xx", "3xx", "4xx", "5xx" };

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

/*
 * Data lost before it was used. Routine trimming of old history is not a
 * drop (sched_marks_trimmed, engine_steps_trimmed: no query reaches past the
 * horizon), so an alert on this family does not fire on a healthy run; a
 * scheduler overlay that reached into capped time did lose data.
 */
static int is_drop(const char *name)
{
	static const char *const words[] = {
		"full", "lost", "dropped", "refused", "discarded", "evicted", "oom",
	};

	if (!strcmp(name, "sched_overlays_cut"))
		return 1;
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
		 "Data the tracer lost before using it, by the counter that saw it (ring buffer full, ...)");
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
	if (pm->models_reused)
		fprintf(f, "ttftrace_tracer_events_total{name=\"prom_model_slots_reused\"} %llu\n",
			(unsigned long long)pm->models_reused);
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
	put_label(f, prom_comm_name(pm, s->comm));
	fputs("\",model=\"", f);
	put_label(f, prom_model_name(pm, s->model));
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

/*
 * The disjoint stages (all but tokenize, which lies inside frontend), in
 * NDJSON order, those some request had: a stage this run cannot see would
 * only be empty series (NaN quantiles).
 */
static void put_stages(FILE *f, const struct prom_metrics *pm)
{
	char label[PROM_LABEL_BYTES], full[PROM_LABEL_BYTES + 32];

	put_head(f, "ttftrace_ttft_stage_seconds", "histogram",
		 "TTFT split into disjoint stages that sum to TTFT (server = merged frontend..emit)");
	for (int i = 0; i < pm->n_series; i++) {
		series_label(pm, pm->series[i], label, sizeof(label));
		for (int k = 0; k < TTF_STAGE_ORDER_N; k++) {
			enum ttf_stage st = ttf_stage_order[k];

			/* a stage no request had (copy without CUPTI) has no series */
			if (st == TTF_ST_TOKENIZE || !(pm->stages_seen & (1u << st)))
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

static bool has_series(const struct prom_metrics *pm, int api, int comm, int model)
{
	for (int i = 0; i < pm->n_series; i++)
		if ((int)pm->series[i]->api == api && pm->series[i]->comm == comm &&
		    pm->series[i]->model == model)
			return true;
	return false;
}

static void put_in_flight(FILE *f, const struct prom_metrics *pm)
{
	char label[PROM_LABEL_BYTES];

	put_head(f, "ttftrace_requests_in_flight", "gauge",
		 "Requests read completely whose response has not finished");
	for (int i = 0; i < pm->n_series; i++) {
		const struct prom_series *s = pm->series[i];
		uint64_t n = s->in_flight;

		if (s->model == MODEL_OTHER)
			n += pm->pending[s->api][s->comm];
		series_label(pm, s, label, sizeof(label));
		label[strlen(label) - 1] = '\0';	/* no trailing comma */
		fprintf(f, "ttftrace_requests_in_flight{%s} %llu\n", label, (unsigned long long)n);
	}
	/* "other" in flight where no "other" series exists */
	for (int api = 0; api < N_API; api++)
		for (int comm = 0; comm <= PROM_MAX_COMMS; comm++) {
			struct prom_series o = { .api = api, .comm = comm, .model = MODEL_OTHER };

			if (!pm->pending_seen[api][comm] || has_series(pm, api, comm, MODEL_OTHER))
				continue;
			series_label(pm, &o, label, sizeof(label));
			label[strlen(label) - 1] = '\0';
			fprintf(f, "ttftrace_requests_in_flight{%s} %llu\n", label,
				(unsigned long long)pm->pending[api][comm]);
		}
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
