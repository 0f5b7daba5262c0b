// SPDX-License-Identifier: GPL-2.0-only
/*
 * SERVED scheduler slices of the Perfetto sink (perfetto.h): per request,
 * the states of the threads that served it while they did, read from the
 * scheduler view, in at most PERFETTO_SCHED_SLICES_PER_REQ slices.
 *
 * Runs of intervals shorter than a quantum are merged into one slice named
 * by its main state (args: the split). The quantum starts at
 * PERFETTO_SCHED_MERGE_NS and grows to the finest at which the request's
 * slices fit the cap (fit_grain()): a thread that CPU hogs preempt every few
 * ms costs no more bytes than the cap allows, drawn at a coarser grain. Past the longest window, runs also
 * span the time the view does not know; what still does not fit is counted,
 * not drawn. Requests drawn coarser than the finest quantum are counted
 * (otherData and the summary), so the trace says it was summarised.
 */
#include <inttypes.h>
#include <stdio.h>
#include <string.h>
#include "user/export/perfetto/perfetto_int.h"

#define PF_PIECES (PF_REQ_WINDOWS * (PF_THR_WINDOWS + 1))

/* A part of a served window that no earlier request drew. */
struct piece {
	uint32_t tid, tgid;
	uint64_t a, b;
};

/* A run of intervals on one thread, drawn (or counted) as one slice. */
struct merge {
	struct perfetto *pf;
	uint32_t tid, tgid;	/* the track (the thread table's process) */
	uint64_t quantum_ns;	/* intervals this long are slices of their own */
	int bridge;		/* runs go on across time the view does not know */
	int draw;		/* 0: count only */
	uint32_t slices;	/* slices counted (or drawn) so far */
	uint32_t left;		/* slices the request may still draw */
	uint64_t start_ns, end_ns;
	uint64_t ns[4];		/* by enum thr_state */
	uint32_t n;
};

static void merge_flush(struct merge *m)
{
	enum thr_state main = THR_RUNNING;
	struct perfetto *pf = m->pf;

	if (!m->n)
		return;
	m->slices++;
	if (m->draw && !m->left) {
		pf->sched_over_cap++;
	} else if (m->draw) {
		m->left--;
		for (int s = THR_RUNNING; s <= THR_BLOCKED; s++)
			if (m->ns[s] > m->ns[main])
				main = s;
		pf_sched_slice(pf, m->tgid, m->tid, main, m->start_ns, m->end_ns);
		if (m->n > 1) {
			fprintf(pf->out.f, ",\"args\":{\"on_cpu_us\":%.3f,\"runnable_us\":%.3f,"
				"\"blocked_us\":%.3f,\"n\":%u}", m->ns[THR_RUNNING] / 1e3,
				m->ns[THR_RUNNABLE] / 1e3, m->ns[THR_BLOCKED] / 1e3, m->n);
			pf->sched_merged += m->n - 1;
		}
		fputc('}', pf->out.f);
		pf->sched_slices++;
	}
	memset(m->ns, 0, sizeof(m->ns));
	m->n = 0;
}

static int served_interval(void *ctx, uint32_t view_tgid, enum sched_state st, uint64_t s,
			   uint64_t e)
{
	struct merge *m = ctx;
	enum thr_state ts = st == SCHED_ON_CPU ? THR_RUNNING : st == SCHED_RUNNABLE ?
			    THR_RUNNABLE : st == SCHED_BLOCKED ? THR_BLOCKED : THR_UNKNOWN;
	int own = e - s >= m->quantum_ns;

	(void)view_tgid;

	if (ts == THR_UNKNOWN) {
		if (!m->bridge)
			merge_flush(m);
		return 0;
	}
	if (own || (m->n && s != m->end_ns && !m->bridge))
		merge_flush(m);
	if (!m->n)
		m->start_ns = s;
	m->end_ns = e;
	m->ns[ts] += e - s;
	m->n++;
	if (own)
		merge_flush(m);
	return 0;
}

/* Slices of the pieces at this grain: drawn when m->draw, else only counted. */
static uint32_t pieces_run(struct merge *m, const struct piece *p, int n)
{
	for (int i = 0; i < n; i++) {
		m->tid = p[i].tid;
		m->tgid = p[i].tgid;
		sched__intervals(m->pf->sched, p[i].tid, p[i].a, p[i].b, served_interval, m);
		merge_flush(m);
	}
	return m->slices;
}

/* How many slices the pieces make at m's grain (nothing drawn). */
static uint32_t pieces_count(struct merge *m, const struct piece *p, int n)
{
	m->slices = 0;
	return pieces_run(m, p, n);
}

/*
 * Sets m's quantum to the finest grain at which the pieces fit the cap:
 * doubling from PERFETTO_SCHED_MERGE_NS, then halving the last step four
 * times; past the longest piece, runs bridge unknown time instead.
 */
static void fit_grain(struct merge *m, const struct piece *p, int n, uint64_t longest)
{
	uint64_t lo, hi;

	while (pieces_count(m, p, n) > PERFETTO_SCHED_SLICES_PER_REQ) {
		if (m->quantum_ns > longest) {
			m->bridge = 1;
			return;
		}
		m->quantum_ns *= 2;
	}
	if (m->quantum_ns == PERFETTO_SCHED_MERGE_NS)
		return;
	lo = m->quantum_ns / 2;	/* did not fit */
	hi = m->quantum_ns;	/* fits */
	for (int i = 0; i < 4; i++) {
		m->quantum_ns = lo + (hi - lo) / 2;
		if (pieces_count(m, p, n) > PERFETTO_SCHED_SLICES_PER_REQ)
			lo = m->quantum_ns;
		else
			hi = m->quantum_ns;
	}
	m->quantum_ns = hi;
}

/* Adds [a, b) to the thread's drawn windows (sorted, disjoint, merged when they touch). */
static void win_add(struct thr *t, uint64_t a, uint64_t b)
{
	struct pf_window w = { a, b };
	int i = 0, j, n = t->n_win;

	while (i < n && t->win[i].b < w.a)
		i++;
	for (j = i; j < n && t->win[j].a <= w.b; j++) {
		w.a = t->win[j].a < w.a ? t->win[j].a : w.a;
		w.b = t->win[j].b > w.b ? t->win[j].b : w.b;
	}
	/* windows i..j-1 merge into w */
	memmove(&t->win[i + 1], &t->win[j], (n - j) * sizeof(w));
	t->win[i] = w;
	t->n_win = n - (j - i) + 1;
	if (t->n_win > PF_THR_WINDOWS - 1) {
		/* forget the oldest: everything before its end counts as drawn */
		t->floor_ns = t->win[0].b;
		memmove(&t->win[0], &t->win[1], (t->n_win - 1) * sizeof(w));
		t->n_win--;
	}
}

static void piece_push(struct piece *p, int *n, const struct thr *t, uint64_t a, uint64_t b)
{
	if (a < b && *n < PF_PIECES)
		p[(*n)++] = (struct piece){ t->tid, t->tgid, a, b };
}

/* The parts of [a, b) on thread t that no earlier window drew. */
static void pieces_of(struct perfetto *pf, const struct thr *t, uint64_t a, uint64_t b,
		      struct piece *p, int *n)
{
	uint64_t at;

	if (a < t->floor_ns) {
		pf->served_clipped_ns += (b < t->floor_ns ? b : t->floor_ns) - a;
		a = t->floor_ns;
	}
	at = a;
	for (int i = 0; i < t->n_win && at < b; i++) {
		if (t->win[i].b <= at)
			continue;
		if (t->win[i].a >= b)
			break;
		piece_push(p, n, t, at, t->win[i].a > at ? t->win[i].a : at);
		at = t->win[i].b;
	}
	piece_push(p, n, t, at, b);
}

void pf_served_request(struct perfetto *pf, const struct pf_served_win *w, int n_win)
{
	struct merge m = { .pf = pf, .quantum_ns = PERFETTO_SCHED_MERGE_NS };
	struct piece p[PF_PIECES];
	struct thr *t[PF_REQ_WINDOWS];
	uint64_t longest = 0;
	int n = 0;

	if (pf->sched_mode != PERFETTO_SCHED_SERVED || !pf->sched)
		return;
	for (int i = 0; i < n_win; i++) {
		t[i] = w[i].tid && w[i].a < w[i].b ? pf_thr_get(pf, w[i].tid, w[i].tgid) : NULL;
		if (t[i])
			pieces_of(pf, t[i], w[i].a, w[i].b, p, &n);
	}
	for (int i = 0; i < n; i++)
		longest = p[i].b - p[i].a > longest ? p[i].b - p[i].a : longest;
	fit_grain(&m, p, n, longest);
	if (m.quantum_ns > PERFETTO_SCHED_MERGE_NS || m.bridge)
		pf->sched_summarised++;
	m.draw = 1;
	m.slices = 0;
	m.left = PERFETTO_SCHED_SLICES_PER_REQ;
	pieces_run(&m, p, n);
	for (int i = 0; i < n_win; i++)
		if (t[i] && w[i].b > t[i]->floor_ns)
			win_add(t[i], w[i].a > t[i]->floor_ns ? w[i].a : t[i]->floor_ns, w[i].b);
}
