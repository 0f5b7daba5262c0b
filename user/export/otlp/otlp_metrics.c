// SPDX-License-Identifier: GPL-2.0-only
/* GenAI server histograms for OTLP (otlp_metrics.h). */
#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "user/lib/version.h"
#include "user/export/otlp/otlp_metrics.h"

#define MAX_BOUNDS 16

/* Field numbers of opentelemetry-proto's metrics.proto */
enum {
	F_REQ_RESOURCE_METRICS = 1,				/* ExportMetricsServiceRequest */
	F_RM_RESOURCE = 1, F_RM_SCOPE_METRICS = 2,		/* ResourceMetrics */
	F_SM_SCOPE = 1, F_SM_METRICS = 2, F_SM_SCHEMA_URL = 3,	/* ScopeMetrics */
	F_SCOPE_NAME = 1, F_SCOPE_VERSION = 2,
	F_M_NAME = 1, F_M_DESCRIPTION = 2, F_M_UNIT = 3, F_M_HISTOGRAM = 9,	/* Metric */
	F_H_DATA_POINTS = 1, F_H_TEMPORALITY = 2,		/* Histogram */
	F_DP_START = 2, F_DP_TIME = 3, F_DP_COUNT = 4, F_DP_SUM = 5, F_DP_BUCKETS = 6,
	F_DP_BOUNDS = 7, F_DP_ATTRIBUTES = 9, F_DP_MIN = 11, F_DP_MAX = 12,	/* HistogramDataPoint */
};
#define TEMPORALITY_CUMULATIVE 2

static const struct {
	const char *name, *description;
	int n;
	double bounds[MAX_BOUNDS];
} defs[OTLP_M__N] = {
	[OTLP_M_DURATION] = { "gen_ai.server.request.duration",
		"Generative AI server request duration such as time-to-last byte or last output token.",
		14, { 0.01, 0.02, 0.04, 0.08, 0.16, 0.32, 0.64, 1.28, 2.56, 5.12, 10.24, 20.48,
		      40.96, 81.92 } },
	[OTLP_M_TTFT] = { "gen_ai.server.time_to_first_token",
		"Time to generate first token for successful responses.",
		16, { 0.001, 0.005, 0.01, 0.02, 0.04, 0.06, 0.08, 0.1, 0.25, 0.5, 0.75, 1.0, 2.5,
		      5.0, 7.5, 10.0 } },
	[OTLP_M_TPOT] = { "gen_ai.server.time_per_output_token",
		"Time per output token generated after the first token for successful responses.",
		13, { 0.01, 0.025, 0.05, 0.075, 0.1, 0.15, 0.2, 0.3, 0.4, 0.5, 0.75, 1.0, 2.5 } },
};

struct hist {
	uint64_t count;
	double sum, min, max;
	uint64_t buckets[MAX_BOUNDS + 1];
};

struct series {
	uint32_t tgid;
	char comm[16];
	bool overflow;
	char op[16];
	char model[64];
	char addr[64];
	uint16_t port;
	char error[16];
	struct hist h[OTLP_M__N];
};

struct otlp_metrics {
	uint64_t start_unix_ns;
	int n;
	struct series s[OTLP_MAX_SERIES + 1];	/* [n]: the overflow series once used */
	bool overflow_used;
	uint64_t overflowed;
};

struct otlp_metrics *otlp_metrics__new(uint64_t start_unix_ns)
{
	struct otlp_metrics *m = calloc(1, sizeof(*m));

	if (!m) {
		errno = ENOMEM;
		return NULL;
	}
	m->start_unix_ns = start_unix_ns;
	return m;
}

void otlp_metrics__free(struct otlp_metrics *m)
{
	free(m);
}

int otlp_metrics__n_series(const struct otlp_metrics *m)
{
	return m->n + m->overflow_used;
}

uint64_t otlp_metrics__overflowed(const struct otlp_metrics *m)
{
	return m->overflowed;
}

static void observe(struct hist *h, int metric, double v)
{
	int i = 0;

	if (!h->count || v < h->min)
		h->min = v;
	if (!h->count || v > h->max)
		h->max = v;
	h->count++;
	h->sum += v;
	/* bucket i holds (bounds[i-1], bounds[i]]; the last one (bounds[n-1], +inf) */
	while (i < defs[metric].n && v > defs[metric].bounds[i])
		i++;
	h->buckets[i]++;
}

static struct series *find(struct otlp_metrics *m, const struct series *key)
{
	for (int i = 0; i < m->n; i++) {
		struct series *s = &m->s[i];

		if (s->tgid == key->tgid && s->port == key->port && !strcmp(s->op, key->op) &&
		    !strcmp(s->model, key->model) && !strcmp(s->addr, key->addr) &&
		    !strcmp(s->error, key->error))
			return s;
	}
	if (m->n < OTLP_MAX_SERIES) {
		m->s[m->n] = *key;
		return &m->s[m->n++];
	}
	m->overflowed++;
	if (!m->overflow_used) {
		m->overflow_used = true;
		memset(&m->s[OTLP_MAX_SERIES], 0, sizeof(m->s[0]));
		m->s[OTLP_MAX_SERIES].overflow = true;
	}
	return &m->s[OTLP_MAX_SERIES];
}

void otlp_metrics__add(struct otlp_metrics *m, const struct otlp_span_src *src)
{
	const char *op = otlp__operation(src->api), *et;
	struct series key = { 0 }, *s;
	int64_t dur_ns;

	if (!op || (src->flags & (TTF_REQ_INCOMPLETE | TTF_REQ_UNKNOWN)))
		return;
	key.tgid = src->tgid;
	memcpy(key.comm, src->comm, sizeof(key.comm));
	snprintf(key.op, sizeof(key.op), "%s", op);
	memcpy(key.model, src->model, sizeof(key.model));
	otlp__server_address(src, key.addr, sizeof(key.addr));
	key.port = src->server_port;
	et = otlp__error_type(src, key.error, sizeof(key.error));
	if (!et)
		key.error[0] = '\0';
	s = find(m, &key);
	dur_ns = src->e2e_ns >= 0 ? src->e2e_ns : (int64_t)(src->end_ns - src->start_ns);
	observe(&s->h[OTLP_M_DURATION], OTLP_M_DURATION, dur_ns / 1e9);
	if (et)
		return;
	if (src->ttft_ns >= 0)
		observe(&s->h[OTLP_M_TTFT], OTLP_M_TTFT, src->ttft_ns / 1e9);
	if (src->tpot_ns >= 0)
		observe(&s->h[OTLP_M_TPOT], OTLP_M_TPOT, src->tpot_ns / 1e9);
}

static void point(struct otlp_enc *e, const struct otlp_metrics *m, const struct series *s,
		  int metric, uint64_t now, const struct otlp_config *cfg)
{
	const char *provider = otlp__provider(cfg, s->comm);

	const struct hist *h = &s->h[metric];

	otlp_enc__begin(e, F_H_DATA_POINTS, "dataPoints", true);
	if (s->overflow) {
		otlp_enc__attr_bool(e, F_DP_ATTRIBUTES, "otel.metric.overflow", true);
	} else {
		otlp_enc__attr_str(e, F_DP_ATTRIBUTES, "gen_ai.operation.name", s->op);
		if (provider)
			otlp_enc__attr_str(e, F_DP_ATTRIBUTES, "gen_ai.provider.name", provider);
		if (s->model[0])
			otlp_enc__attr_str(e, F_DP_ATTRIBUTES, "gen_ai.request.model", s->model);
		if (s->addr[0])
			otlp_enc__attr_str(e, F_DP_ATTRIBUTES, "server.address", s->addr);
		otlp_enc__attr_int(e, F_DP_ATTRIBUTES, "server.port", s->port);
		if (s->error[0])
			otlp_enc__attr_str(e, F_DP_ATTRIBUTES, "error.type", s->error);
	}
	otlp_enc__fixed64(e, F_DP_START, "startTimeUnixNano", m->start_unix_ns);
	otlp_enc__fixed64(e, F_DP_TIME, "timeUnixNano", now);
	otlp_enc__fixed64(e, F_DP_COUNT, "count", h->count);
	otlp_enc__double(e, F_DP_SUM, "sum", h->sum);
	otlp_enc__fixed64s(e, F_DP_BUCKETS, "bucketCounts", h->buckets, defs[metric].n + 1);
	otlp_enc__doubles(e, F_DP_BOUNDS, "explicitBounds", defs[metric].bounds, defs[metric].n);
	otlp_enc__double(e, F_DP_MIN, "min", h->min);
	otlp_enc__double(e, F_DP_MAX, "max", h->max);
	otlp_enc__end(e);
}

/* Series i is in use and belongs to process tgid's scope (overflow: the overflow series). */
static bool in_scope(const struct otlp_metrics *m, int i, uint32_t tgid, bool overflow)
{
	const struct series *s = &m->s[i];

	return (i < m->n || (i == OTLP_MAX_SERIES && m->overflow_used)) &&
	       s->overflow == overflow && (overflow || s->tgid == tgid);
}

/* The metrics of process tgid (overflow: the overflow series). */
static void scope_metrics(struct otlp_enc *e, const struct otlp_metrics *m, uint32_t tgid,
			  bool overflow, uint64_t now, const struct otlp_config *cfg)
{
	otlp_enc__begin(e, F_RM_SCOPE_METRICS, "scopeMetrics", true);
	otlp_enc__begin(e, F_SM_SCOPE, "scope", false);
	otlp_enc__str(e, F_SCOPE_NAME, "name", "ttftrace");
	otlp_enc__str(e, F_SCOPE_VERSION, "version", TTF_VERSION);
	otlp_enc__end(e);
	for (int k = 0; k < OTLP_M__N; k++) {
		int points = 0;

		for (int i = 0; i <= OTLP_MAX_SERIES; i++)
			points += in_scope(m, i, tgid, overflow) && m->s[i].h[k].count > 0;
		if (!points)
			continue;
		otlp_enc__begin(e, F_SM_METRICS, "metrics", true);
		otlp_enc__str(e, F_M_NAME, "name", defs[k].name);
		otlp_enc__str(e, F_M_DESCRIPTION, "description", defs[k].description);
		otlp_enc__str(e, F_M_UNIT, "unit", "s");
		otlp_enc__begin(e, F_M_HISTOGRAM, "histogram", false);
		for (int i = 0; i <= OTLP_MAX_SERIES; i++)
			if (in_scope(m, i, tgid, overflow) && m->s[i].h[k].count)
				point(e, m, &m->s[i], k, now, cfg);
		otlp_enc__uint(e, F_H_TEMPORALITY, "aggregationTemporality",
			       TEMPORALITY_CUMULATIVE);
		otlp_enc__end(e);
		otlp_enc__end(e);
	}
	otlp_enc__str(e, F_SM_SCHEMA_URL, "schemaUrl",
		      "https://opentelemetry.io/schemas/" OTLP_SEMCONV_VERSION);
	otlp_enc__end(e);
}

int otlp_metrics__build(const struct otlp_metrics *m, enum otlp_proto proto, const char *host,
			const struct otlp_config *cfg, uint64_t now_unix_ns, char **out,
			size_t *len)
{
	struct otlp_enc *e = otlp_enc__new(proto);

	*out = NULL;
	*len = 0;
	if (!e)
		return -ENOMEM;
	/* one resourceMetrics per process, in order of first appearance */
	for (int i = 0; i < m->n; i++) {
		bool seen = false;

		for (int j = 0; j < i && !seen; j++)
			seen = m->s[j].tgid == m->s[i].tgid;
		if (seen)
			continue;
		otlp_enc__begin(e, F_REQ_RESOURCE_METRICS, "resourceMetrics", true);
		otlp__resource(e, F_RM_RESOURCE, m->s[i].tgid, m->s[i].comm, host, cfg);
		scope_metrics(e, m, m->s[i].tgid, false, now_unix_ns, cfg);
		otlp_enc__end(e);
	}
	if (m->overflow_used) {
		otlp_enc__begin(e, F_REQ_RESOURCE_METRICS, "resourceMetrics", true);
		otlp__resource(e, F_RM_RESOURCE, 0, NULL, host, cfg);
		scope_metrics(e, m, 0, true, now_unix_ns, cfg);
		otlp_enc__end(e);
	}
	return otlp_enc__finish(e, out, len);
}
