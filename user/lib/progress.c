// SPDX-License-Identifier: GPL-2.0-only
#include <math.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include "user/lib/stats.h"
#include "user/lib/progress.h"

struct progress {
	FILE *f;
	char prefix[32];
	char step[48];
	double total_s;
	unsigned n_done;
	unsigned n_expected;
	struct stats *ttft_ms;
	uint64_t t0_ns;
	uint64_t last_draw_ns;
	bool drawn;		/* something is on the line */
};

static uint64_t mono_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + ts.tv_nsec;
}

struct progress *progress__new(FILE *f, const char *prefix)
{
	struct progress *p;

	if (!f || !isatty(fileno(f)))
		return NULL;
	p = calloc(1, sizeof(*p));
	if (!p)
		return NULL;
	p->ttft_ms = stats__new();
	if (!p->ttft_ms) {
		free(p);
		return NULL;
	}
	p->f = f;
	snprintf(p->prefix, sizeof(p->prefix), "%s", prefix ? prefix : "");
	p->t0_ns = mono_ns();
	return p;
}

void progress__clear(struct progress *p)
{
	if (!p || !p->drawn)
		return;
	fputs("\r\033[K", p->f);
	fflush(p->f);
	p->drawn = false;
}

void progress__free(struct progress *p)
{
	if (!p)
		return;
	progress__clear(p);
	stats__free(p->ttft_ms);
	free(p);
}

void progress__set_total(struct progress *p, double total_s)
{
	if (p)
		p->total_s = total_s > 0 ? total_s : 0;
}

void progress__set_step(struct progress *p, const char *label, unsigned n_expected)
{
	struct stats *fresh;

	if (!p)
		return;
	snprintf(p->step, sizeof(p->step), "%s", label ? label : "");
	p->n_expected = n_expected;
	p->n_done = 0;
	fresh = stats__new();
	if (fresh) {
		stats__free(p->ttft_ms);
		p->ttft_ms = fresh;
	}
	/* Show the new step at the next tick. */
	p->last_draw_ns = 0;
}

void progress__request(struct progress *p, double ttft_ms)
{
	if (!p)
		return;
	p->n_done++;
	if (!isnan(ttft_ms))
		stats__add(p->ttft_ms, ttft_ms);
}

void progress__tick(struct progress *p, uint64_t now_ns)
{
	double elapsed_s;

	if (!p || (p->last_draw_ns && now_ns - p->last_draw_ns < PROGRESS_REDRAW_NS))
		return;
	p->last_draw_ns = now_ns;
	elapsed_s = now_ns > p->t0_ns ? (now_ns - p->t0_ns) / 1e9 : 0;
	fprintf(p->f, "\r\033[K%s: %.1f", p->prefix, elapsed_s);
	if (p->total_s > 0)
		fprintf(p->f, "/%.0f", p->total_s);
	fputs(" s", p->f);
	if (p->step[0])
		fprintf(p->f, "  %s", p->step);
	fprintf(p->f, "  %u", p->n_done);
	if (p->n_expected)
		fprintf(p->f, "/%u", p->n_expected);
	fprintf(p->f, " requests");
	if (stats__count(p->ttft_ms))
		fprintf(p->f, "  TTFT p50 %.1f ms", stats__percentile(p->ttft_ms, 50));
	fflush(p->f);
	p->drawn = true;
}
