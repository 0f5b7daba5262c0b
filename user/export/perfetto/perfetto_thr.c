// SPDX-License-Identifier: GPL-2.0-only
/*
 * Thread tracks of the Perfetto sink: naming, and the scheduler slices of
 * the modes ALL (streamed from the switch records) and SERVED (read from the
 * scheduler view when a request is drawn). See perfetto.h.
 */
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>
#include "user/export/perfetto/perfetto_int.h"

/* The comm of a live task, from procfs (named once per thread, so the read is rare). */
static void proc_comm(uint32_t tgid, uint32_t tid, char *buf, size_t sz)
{
	char path[64];
	ssize_t n;
	int fd;

	if (tid)
		snprintf(path, sizeof(path), "/proc/%u/task/%u/comm", tgid, tid);
	else
		snprintf(path, sizeof(path), "/proc/%u/comm", tgid);
	buf[0] = 0;
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return;
	n = read(fd, buf, sz - 1);
	close(fd);
	buf[n > 0 ? n : 0] = 0;
	buf[strcspn(buf, "\n")] = 0;
}

int pf_name_process(struct perfetto *pf, uint32_t tgid)
{
	char comm[32], name[64];

	for (int i = 0; i < pf->n_tgids; i++)
		if (pf->tgids[i] == tgid)
			return i;
	proc_comm(tgid, 0, comm, sizeof(comm));
	snprintf(name, sizeof(name), "%s %u (threads)", comm[0] ? comm : "process", tgid);
	pf_meta(&pf->out, tgid, 0, "process_name", name);
	if (pf->n_tgids >= (int)(sizeof(pf->tgids) / sizeof(pf->tgids[0])))
		return -1;	/* past the table, processes are named again: harmless */
	pf->tgids[pf->n_tgids] = tgid;
	return pf->n_tgids++;
}

struct thr *pf_thr_get(struct perfetto *pf, uint32_t tid, uint32_t tgid)
{
	uint32_t h = tid * 2654435761u;

	for (uint32_t i = 0; i < PERFETTO_MAX_THREADS; i++) {
		struct thr *t = &pf->thr[(h + i) % PERFETTO_MAX_THREADS];
		char comm[32];

		if (t->tid == tid)
			return t;
		if (t->tid)
			continue;
		*t = (struct thr){ .tid = tid, .tgid = tgid };
		pf_name_process(pf, tgid);
		proc_comm(tgid, tid, comm, sizeof(comm));
		pf_meta(&pf->out, tgid, tid, "thread_name", comm[0] ? comm : "thread");
		return t;
	}
	pf->threads_refused++;
	return NULL;
}

static const char *const thr_names[] = { "unknown", "running", "runnable", "blocked" };
/* Reserved trace-viewer colour names (catapult tracing/base/color_scheme.html). */
static const char *const thr_colors[] = { "grey", "thread_state_running",
					  "thread_state_runnable", "thread_state_sleeping" };

static void sched_slice(struct perfetto *pf, uint32_t tgid, uint32_t tid, enum thr_state st,
			uint64_t start_ns, uint64_t end_ns)
{
	pf_complete(&pf->out, tgid, tid, start_ns, end_ns - start_ns, thr_names[st], "sched");
	fprintf(pf->out.f, ",\"cname\":\"%s\"", thr_colors[st]);
}

/* ALL: ends the thread's current slice at ts_ns and starts state @next there. */
static void thr_switch(struct perfetto *pf, struct thr *t, uint64_t ts_ns, enum thr_state next)
{
	if (ts_ns < t->since_ns) {
		/* records of different CPUs reach the ring slightly out of order */
		pf->sched_reordered++;
		ts_ns = t->since_ns;
	}
	if (t->state != THR_UNKNOWN) {
		sched_slice(pf, t->tgid, t->tid, t->state, t->since_ns, ts_ns);
		fputc('}', pf->out.f);
	}
	t->state = next;
	t->since_ns = ts_ns;
}

void pf_on_sched(void *ctx, const struct ttf_sched_event *e)
{
	struct perfetto *pf = ctx;
	struct thr *t;

	if (pf->sched_mode != PERFETTO_SCHED_ALL)
		return;
	t = pf_thr_get(pf, e->tid, e->tgid);
	if (!t)
		return;
	switch (e->type) {
	case TTF_SCHED_IN:
		thr_switch(pf, t, e->ts_ns, THR_RUNNING);
		break;
	case TTF_SCHED_OUT_RUNNABLE:
		thr_switch(pf, t, e->ts_ns, THR_RUNNABLE);
		break;
	case TTF_SCHED_OUT_BLOCKED:
		thr_switch(pf, t, e->ts_ns, THR_BLOCKED);
		break;
	case TTF_SCHED_OUT_DEAD:
		thr_switch(pf, t, e->ts_ns, THR_UNKNOWN);
		break;
	case TTF_SCHED_WAKEUP:
	case TTF_SCHED_WAKEUP_NEW:
		if (t->state == THR_BLOCKED || t->state == THR_UNKNOWN)
			thr_switch(pf, t, e->ts_ns, THR_RUNNABLE);
		break;
	}
}

/* SERVED: a run of short intervals, drawn as one slice named by its main state. */
struct merge {
	struct perfetto *pf;
	uint32_t tid, tgid;	/* the track (the thread table's process) */
	uint64_t start_ns, end_ns;
	uint64_t ns[4];		/* by enum thr_state */
	uint32_t n;
};

static void merge_flush(struct merge *m)
{
	enum thr_state main = THR_RUNNING;

	if (!m->n)
		return;
	for (int s = THR_RUNNING; s <= THR_BLOCKED; s++)
		if (m->ns[s] > m->ns[main])
			main = s;
	sched_slice(m->pf, m->tgid, m->tid, main, m->start_ns, m->end_ns);
	if (m->n > 1) {
		fprintf(m->pf->out.f, ",\"args\":{\"on_cpu_us\":%.3f,\"runnable_us\":%.3f,"
			"\"blocked_us\":%.3f,\"n\":%u}", m->ns[THR_RUNNING] / 1e3,
			m->ns[THR_RUNNABLE] / 1e3, m->ns[THR_BLOCKED] / 1e3, m->n);
		m->pf->sched_merged += m->n - 1;
	}
	fputc('}', m->pf->out.f);
	memset(m->ns, 0, sizeof(m->ns));
	m->n = 0;
}

static int served_interval(void *ctx, uint32_t view_tgid, enum sched_state st, uint64_t s,
			   uint64_t e)
{
	struct merge *m = ctx;
	enum thr_state ts = st == SCHED_ON_CPU ? THR_RUNNING : st == SCHED_RUNNABLE ?
			    THR_RUNNABLE : st == SCHED_BLOCKED ? THR_BLOCKED : THR_UNKNOWN;

	(void)view_tgid;

	if (ts == THR_UNKNOWN || (m->n && s != m->end_ns) || e - s >= PERFETTO_SCHED_MERGE_NS)
		merge_flush(m);
	if (ts == THR_UNKNOWN)
		return 0;
	if (!m->n)
		m->start_ns = s;
	m->end_ns = e;
	m->ns[ts] += e - s;
	m->n++;
	if (e - s >= PERFETTO_SCHED_MERGE_NS)
		merge_flush(m);
	return 0;
}

static void draw_gap(struct perfetto *pf, uint32_t tid, uint32_t tgid, uint64_t a, uint64_t b)
{
	struct merge m = { .pf = pf, .tid = tid, .tgid = tgid };

	if (a >= b)
		return;
	sched__intervals(pf->sched, tid, a, b, served_interval, &m);
	merge_flush(&m);
}

/* Adds [a, b) to the thread's drawn windows (sorted, disjoint, merged when they touch). */
static void win_add(struct perfetto *pf, struct thr *t, uint64_t a, uint64_t b)
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
	(void)pf;
}

void pf_served(struct perfetto *pf, uint32_t tid, uint32_t tgid, uint64_t a, uint64_t b)
{
	struct thr *t;
	uint64_t at;

	if (pf->sched_mode != PERFETTO_SCHED_SERVED || !pf->sched || !tid || a >= b)
		return;
	t = pf_thr_get(pf, tid, tgid);
	if (!t)
		return;
	if (a < t->floor_ns) {
		pf->served_clipped_ns += (b < t->floor_ns ? b : t->floor_ns) - a;
		a = t->floor_ns;
		if (a >= b)
			return;
	}
	/* draw the parts of [a, b) no earlier window drew */
	at = a;
	for (int i = 0; i < t->n_win && at < b; i++) {
		if (t->win[i].b <= at)
			continue;
		if (t->win[i].a >= b)
			break;
		draw_gap(pf, tid, t->tgid, at, t->win[i].a > at ? t->win[i].a : at);
		at = t->win[i].b;
	}
	if (at < b)
		draw_gap(pf, tid, t->tgid, at, b);
	win_add(pf, t, a, b);
}
