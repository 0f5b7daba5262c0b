// SPDX-License-Identifier: GPL-2.0-only
#include <math.h>
#include <stdlib.h>
#include <unistd.h>
#include "user/lib/exit.h"
#include "user/lib/log.h"
#include "user/lib/progress.h"
#include "user/model/slo.h"
#include "user/lib/stats.h"
#include "user/cmd/live.h"

struct live {
	struct slo_set slo;
	int has_slo;
	struct stats *st[SLO_N_METRICS];	/* ms */
	uint64_t samples_lost;
	struct progress *progress;
};

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
	/* Same rule as the summary: a request that lost sync feeds no percentile. */
	if (!l->has_slo || (r->flags & TTF_REQ_UNKNOWN))
		return;
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
	if (l->samples_lost)
		fprintf(stderr, "ttftrace: SLO samples lost (out of memory): %llu\n",
			(unsigned long long)l->samples_lost);
	if (!r.n_failed)
		return 0;
	fprintf(stderr, "ttftrace: %d of %d SLOs not met (exit %d)\n", r.n_failed, l->slo.n,
		TTF_EXIT_SLO);
	return TTF_EXIT_SLO;
}
