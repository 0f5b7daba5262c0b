// SPDX-License-Identifier: GPL-2.0-only
#include <math.h>
#include <stdlib.h>
#include <unistd.h>
#include "user/lib/exit.h"
#include "user/lib/log.h"
#include "user/lib/progress.h"
#include "user/model/slo.h"
#include "user/lib/stats.h"
#include "user/model/vocab.h"
#include "user/cmd/live.h"

struct live {
	struct slo_set slo;
	int has_slo;
	struct stats *st[SLO_N_METRICS];	/* ms */
	uint64_t samples_lost;
	struct progress *progress;
	/* goodput: successful requests within every SLO limit, over the run's span */
	uint64_t n_success, n_good;
	uint64_t t_first_ns, t_last_ns;
};

/* Every SLO limit holds for this one request (ITL: its largest gap). */
static int within_limits(const struct live *l, const struct ttf_req_metrics *m,
			 const uint64_t *itl, int n_itl)
{
	for (int i = 0; i < l->slo.n; i++) {
		const struct slo *s = &l->slo.items[i];
		double v = NAN;

		switch (s->metric) {
		case SLO_TTFT: v = m->ttft_ns >= 0 ? m->ttft_ns / 1e6 : NAN; break;
		case SLO_TTFV: v = m->ttfv_ns >= 0 ? m->ttfv_ns / 1e6 : NAN; break;
		case SLO_TPOT: v = m->tpot_ns >= 0 ? m->tpot_ns / 1e6 : NAN; break;
		case SLO_E2E: v = m->e2e_ns >= 0 ? m->e2e_ns / 1e6 : NAN; break;
		case SLO_ITL:
			v = 0;
			for (int k = 0; k < n_itl; k++)
				if (itl[k] / 1e6 > v)
					v = itl[k] / 1e6;
			break;
		default: break;
		}
		/* not measured (no token, one token): that limit does not apply */
		if (!isnan(v) && v > s->limit_ms)
			return 0;
	}
	return 1;
}

static void add(struct live *l, enum slo_metric m, double v_ms)
{
	if (l->st[m] && stats__add(l->st[m], v_ms))
		l->samples_lost++;
}

static void on_request(void *ctx, const struct ttf_request *r, const struct ttf_req_metrics *m,
		       const struct ttf_attrib *a)
{
	struct live *l = ctx;
	uint64_t *itl = NULL;
	int n;

	progress__request(l->progress, m->ttft_ns >= 0 ? m->ttft_ns / 1e6 : NAN);
	/* Same rule as the summary: only successful requests feed the percentiles. */
	if (!l->has_slo || !ttf_vocab__success(r))
		return;
	{
		uint64_t t0 = r->arrival_first_ns ? r->arrival_first_ns : r->read_first_ns;
		uint64_t t1 = r->end_xmit_ns > r->end_write_ns ? r->end_xmit_ns : r->end_write_ns;

		if (t0 && (!l->t_first_ns || t0 < l->t_first_ns))
			l->t_first_ns = t0;
		if (t1 > l->t_last_ns)
			l->t_last_ns = t1;
	}
	if (m->ttft_ns >= 0)
		add(l, SLO_TTFT, m->ttft_ns / 1e6);
	if (m->ttfv_ns >= 0)
		add(l, SLO_TTFV, m->ttfv_ns / 1e6);
	if (m->tpot_ns >= 0)
		add(l, SLO_TPOT, m->tpot_ns / 1e6);
	if (m->e2e_ns >= 0)
		add(l, SLO_E2E, m->e2e_ns / 1e6);
	n = ttf_metrics__itl_alloc(r, &itl);
	if (n < 0) {
		l->samples_lost++;
		return;
	}
	for (int i = 0; i < n; i++)
		add(l, SLO_ITL, itl[i] / 1e6);
	l->n_success++;
	l->n_good += within_limits(l, m, itl, n);
	free(itl);
}

static void on_tick(void *ctx, uint64_t now_ns)
{
	struct live *l = ctx;

	progress__tick(l->progress, now_ns);
}

static int on_finish(void *ctx, const struct report_counter *c, int n)
{
	struct live *l = ctx;

	progress__clear(l->progress);
	return 0;
}

static void on_destroy(void *ctx)
{
	struct live *l = ctx;

	progress__free(l->progress);
	for (int i = 0; i < SLO_N_METRICS; i++)
		stats__free(l->st[i]);
	free(l);
}

int live__open(const struct ttf_opts *o, struct pipeline *p, struct live **out)
{
	struct ttf_sink s = { .name = "live", .request = on_request, .tick = on_tick,
			      .finish = on_finish, .destroy = on_destroy };
	int show = isatty(STDERR_FILENO) && (o->output || !isatty(STDOUT_FILENO));
	char err[160];
	struct live *l;

	*out = NULL;
	if (!o->slo_spec && !show)
		return 0;
	l = calloc(1, sizeof(*l));
	if (!l)
		goto nomem;
	if (o->slo_spec) {
		/* cli__parse checked the spec already */
		if (slo__parse(o->slo_spec, &l->slo, err, sizeof(err))) {
			ttf_error(SLO_HINT, "--slo: %s", err);
			free(l);
			return TTF_EXIT_USAGE;
		}
		l->has_slo = 1;
		for (int i = 0; i < SLO_N_METRICS; i++)
			if (!(l->st[i] = stats__new()))
				goto nomem;
	}
	if (show) {
		l->progress = progress__new(stderr, "ttftrace");
		progress__set_total(l->progress, o->duration_s);
	}
	s.ctx = l;
	if (pipeline__add_sink(p, &s)) {
		on_destroy(l);
		ttf_error(NULL, "too many sinks for the live view");
		return TTF_EXIT_INTERNAL;
	}
	*out = l;
	return 0;
nomem:
	if (l)
		on_destroy(l);
	ttf_error(NULL, "out of memory");
	return TTF_EXIT_INTERNAL;
}

int live__slo_verdict(struct live *l)
{
	struct slo_values v;
	struct slo_result r;

	if (!l || !l->has_slo)
		return 0;
	progress__clear(l->progress);
	slo_values__init(&v);
	for (int i = 0; i < SLO_N_METRICS; i++)
		slo_values__from_stats(&v, i, l->st[i]);
	slo__check(&l->slo, &v, &r);
	slo__print(stderr, "ttftrace", &l->slo, &r);
	/* goodput as vllm bench counts it: requests within every limit, per second */
	if (l->t_last_ns > l->t_first_ns && l->t_first_ns)
		fprintf(stderr, "ttftrace: goodput %llu of %llu successful requests within every "
			"SLO limit, %.3f requests/s\n", (unsigned long long)l->n_good,
			(unsigned long long)l->n_success,
			l->n_good / ((l->t_last_ns - l->t_first_ns) / 1e9));
	else
		fprintf(stderr, "ttftrace: goodput %llu of %llu successful requests within every "
			"SLO limit\n", (unsigned long long)l->n_good,
			(unsigned long long)l->n_success);
	if (l->samples_lost)
		fprintf(stderr, "ttftrace: SLO samples lost (out of memory): %llu\n",
			(unsigned long long)l->samples_lost);
	if (!r.n_failed)
		return 0;
	fprintf(stderr, "ttftrace: %d of %d SLOs not met (exit %d)\n", r.n_failed, l->slo.n,
		TTF_EXIT_SLO);
	return TTF_EXIT_SLO;
}
