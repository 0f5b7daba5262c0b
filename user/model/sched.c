// SPDX-License-Identifier: GPL-2.0-only
/* Scheduler view: per-thread state changes and overlay queries (see sched.h). */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include "user/lib/hash.h"
#include "user/model/attrib.h"
#include "user/model/sched.h"

#define DEF_HORIZON_NS (60ULL * 1000000000ULL)
#define DEF_MAX_MARKS 65536
#define DEF_MAX_THREADS 65536
#define DEF_MAX_MARKS_TOTAL 262144
#define MIN_SHARE 16
#define MIN_MARKS 16
#define GC_PERIOD_NS 1000000000ULL
#define N_RETIRED 16

/*
 * A state change: the thread is in `state` from ts_ns until the next mark.
 * 8 bytes: CLOCK_MONOTONIC ns fit 60 bits for 36 years of uptime. Marks are
 * most of the view's memory, and the tracer's CPU on a busy server goes to
 * first writes of them (page faults, cache misses: bench/README.md).
 * GCC computes arithmetic between ts_ns and a constant in 60 bits: every
 * use here subtracts or compares it with a uint64_t.
 */
struct mark {
	uint64_t ts_ns : 60;
	uint64_t state : 3;	/* enum sched_state */
	uint64_t partial : 1;	/* RUNNABLE from a seed: the wait began earlier */
};
_Static_assert(sizeof(struct mark) == 8, "a mark is one word");

struct thread {
	struct mark *marks;	/* ring: oldest at head */
	uint32_t head, n, cap;
	uint64_t last_ns;	/* newest record applied (reorder clamp) */
	uint64_t cut_ns;	/* marks before this were dropped by a cap; 0 none */
	uint64_t exit_ns;
	struct sched_thread_summary sum;	/* closed intervals only; sum.tid is the key */
	UT_hash_handle hh;	/* sched_view.threads */
};

struct sched_view {
	struct sched_view_opts opts;
	struct thread *threads;	/* uthash by tid */
	struct sched_thread_summary retired[N_RETIRED];
	int n_retired;
	uint64_t last_ns;
	uint64_t next_gc_ns;
	uint64_t hist[SCHED_HIST_BUCKETS];
	struct sched_stats st;
	uint64_t *overlays_cut;	/* counted by the const queries: a separate allocation */
	struct thread *last_added;	/* the thread of the last record: a span's are one thread's */
};

struct sched_view *sched__new(const struct sched_view_opts *opts)
{
	struct sched_view *v = calloc(1, sizeof(*v));

	if (!v) {
		errno = ENOMEM;
		return NULL;
	}
	if (opts)
		v->opts = *opts;
	if (!v->opts.horizon_ns)
		v->opts.horizon_ns = DEF_HORIZON_NS;
	if (!v->opts.max_marks_per_thread)
		v->opts.max_marks_per_thread = DEF_MAX_MARKS;
	if (v->opts.max_marks_per_thread < 2)
		v->opts.max_marks_per_thread = 2;
	if (!v->opts.max_threads)
		v->opts.max_threads = DEF_MAX_THREADS;
	if (!v->opts.max_marks_total)
		v->opts.max_marks_total = DEF_MAX_MARKS_TOTAL;
	v->overlays_cut = calloc(1, sizeof(*v->overlays_cut));
	if (!v->overlays_cut) {
		free(v);
		errno = ENOMEM;
		return NULL;
	}
	return v;
}

void sched__free(struct sched_view *v)
{
	struct thread *t, *tmp;

	if (!v)
		return;
	HASH_ITER(hh, v->threads, t, tmp) {
		HASH_DEL(v->threads, t);
		free(t->marks);
		free(t);
	}
	free(v->overlays_cut);
	free(v);
}

static struct mark *mark_at(const struct thread *t, uint32_t i)
{
	return &t->marks[(t->head + i) % t->cap];
}

static struct mark *last_mark(const struct thread *t)
{
	return t->n ? mark_at(t, t->n - 1) : NULL;
}

static enum sched_state cur_state(const struct thread *t)
{
	return t->n ? last_mark(t)->state : SCHED_UNKNOWN;
}

static struct thread *find(const struct sched_view *v, uint32_t tid)
{
	struct thread *t;

	HASH_FIND(hh, v->threads, &tid, sizeof(tid), t);
	return t;
}

static struct thread *create(struct sched_view *v, uint32_t tid, uint32_t tgid, int *err)
{
	struct thread *t;

	if (v->st.threads >= v->opts.max_threads) {
		v->st.threads_refused++;
		*err = -ENOSPC;
		return NULL;
	}
	t = calloc(1, sizeof(*t));
	if (!t) {
		v->st.alloc_failed++;
		*err = -ENOMEM;
		return NULL;
	}
	t->sum.tid = tid;
	t->sum.tgid = tgid;
	HASH_ADD(hh, v->threads, sum.tid, sizeof(t->sum.tid), t);
	if (!ttf_hash_added(t)) {
		free(t);
		v->st.alloc_failed++;
		*err = -ENOMEM;
		return NULL;
	}
	v->st.threads++;
	return t;
}

static void drop_oldest(struct sched_view *v, struct thread *t)
{
	t->head = (t->head + 1) % t->cap;
	t->n--;
	v->st.marks--;
}

/* Marks one thread may hold: the per-thread cap, or its share of the total. */
static uint32_t thread_cap(const struct sched_view *v)
{
	uint64_t share = v->opts.max_marks_total / (v->st.threads ? v->st.threads : 1);

	if (share < MIN_SHARE)
		share = MIN_SHARE;
	return share < v->opts.max_marks_per_thread ? (uint32_t)share : v->opts.max_marks_per_thread;
}

/* Drop the oldest marks beyond cap (counted), and give back memory far above it. */
static void cap_thread(struct sched_view *v, struct thread *t, uint32_t cap)
{
	struct mark *m;

	while (t->n > cap && t->n >= 2) {
		drop_oldest(v, t);
		v->st.marks_cap++;
		t->cut_ns = mark_at(t, 0)->ts_ns;
	}
	if (t->cap <= 2 * cap || t->cap <= MIN_MARKS || t->n > t->cap / 4)
		return;
	m = malloc((t->cap / 2) * sizeof(*m));
	if (!m)
		return;	/* keep the larger ring */
	for (uint32_t i = 0; i < t->n; i++)
		m[i] = *mark_at(t, i);
	free(t->marks);
	t->marks = m;
	t->head = 0;
	t->cap /= 2;
}

/* Drop state changes whose interval ended more than the horizon before now_ns. */
static void trim(struct sched_view *v, struct thread *t, uint64_t now_ns)
{
	if (now_ns < v->opts.horizon_ns)
		return;
	while (t->n >= 2 && mark_at(t, 1)->ts_ns < now_ns - v->opts.horizon_ns) {
		drop_oldest(v, t);
		v->st.marks_horizon++;
	}
}

static int grow(struct thread *t, uint32_t max)
{
	uint32_t cap = t->cap ? t->cap * 2 : MIN_MARKS;
	struct mark *m;

	if (cap > max)
		cap = max;
	m = malloc(cap * sizeof(*m));
	if (!m)
		return -ENOMEM;
	for (uint32_t i = 0; i < t->n; i++)
		m[i] = *mark_at(t, i);
	free(t->marks);
	t->marks = m;
	t->head = 0;
	t->cap = cap;
	return 0;
}

static uint32_t hist_bucket(uint64_t wait_ns)
{
	uint64_t us = wait_ns / 1000;
	uint32_t b;

	if (!us)
		return 0;
	b = 64 - __builtin_clzll(us);
	return b < SCHED_HIST_BUCKETS ? b : SCHED_HIST_BUCKETS - 1;
}

uint64_t sched__hist_lo_us(int i)
{
	return i <= 0 ? 0 : 1ULL << (i - 1);
}

/* Close the current interval into the totals and start `st` at ts_ns. */
static int set_state(struct sched_view *v, struct thread *t, uint64_t ts_ns,
		     enum sched_state st, bool partial)
{
	struct mark *cur = last_mark(t);
	uint32_t cap;
	uint64_t dur;

	if (cur && cur->state == st)
		return 0;
	if (cur) {
		dur = ts_ns - cur->ts_ns;
		switch (cur->state) {
		case SCHED_ON_CPU:
			t->sum.on_cpu_ns += dur;
			break;
		case SCHED_RUNNABLE:
			t->sum.runnable_ns += dur;
			if (st == SCHED_ON_CPU && !cur->partial) {
				t->sum.n_runq++;
				if (dur > t->sum.max_runq_ns)
					t->sum.max_runq_ns = dur;
				v->hist[hist_bucket(dur)]++;
			}
			break;
		case SCHED_BLOCKED:
			t->sum.blocked_ns += dur;
			break;
		}
	}
	trim(v, t, ts_ns);
	cap = thread_cap(v);
	if (t->n >= cap)
		cap_thread(v, t, cap - 1);
	if (t->n == t->cap && grow(t, cap)) {
		v->st.alloc_failed++;
		return -ENOMEM;
	}
	*mark_at(t, t->n) = (struct mark){ .ts_ns = ts_ns, .state = st, .partial = partial };
	t->n++;
	v->st.marks++;
	return 0;
}

/* Keep the n_retired threads with the most runqueue wait among the freed ones. */
static void retire(struct sched_view *v, const struct sched_thread_summary *s)
{
	int min = 0;

	if (v->n_retired < N_RETIRED) {
		v->retired[v->n_retired++] = *s;
		return;
	}
	for (int i = 1; i < N_RETIRED; i++)
		if (v->retired[i].runnable_ns < v->retired[min].runnable_ns)
			min = i;
	if (s->runnable_ns > v->retired[min].runnable_ns)
		v->retired[min] = *s;
}

static void gc(struct sched_view *v, uint64_t now_ns)
{
	uint32_t cap = thread_cap(v);
	struct thread *t, *tmp;

	HASH_ITER(hh, v->threads, t, tmp) {
		trim(v, t, now_ns);
		cap_thread(v, t, cap);
		if (cur_state(t) == SCHED_EXITED && t->exit_ns + v->opts.horizon_ns < now_ns) {
			t->sum.exited = true;
			retire(v, &t->sum);
			HASH_DEL(v->threads, t);
			if (v->last_added == t)
				v->last_added = NULL;
			v->st.marks -= t->n;
			free(t->marks);
			free(t);
			v->st.threads--;
			v->st.threads_freed++;
		}
	}
	v->next_gc_ns = now_ns + GC_PERIOD_NS;
}

/*
 * A transition that needs a record we never got: the current interval mixes
 * states at unknown times, so it becomes unknown rather than a wrong state.
 */
static void lost_record(struct sched_view *v, struct thread *t)
{
	struct mark *cur = last_mark(t);

	v->st.inconsistent++;
	if (cur && cur->state != SCHED_EXITED)
		cur->state = SCHED_UNKNOWN;
}

int sched__add(struct sched_view *v, const struct ttf_sched_event *e)
{
	struct thread *t;
	uint64_t ts = e->ts_ns;
	enum sched_state cur, next;
	int is_new = 0, err = 0;

	if (e->type < TTF_SCHED_OUT_RUNNABLE || e->type > TTF_SCHED_WAKEUP_NEW)
		return -EINVAL;
	if (ts > v->last_ns)
		v->last_ns = ts;
	if (v->last_ns >= v->next_gc_ns)
		gc(v, v->last_ns);	/* before the lookup: it may free the thread */
	t = v->last_added && v->last_added->sum.tid == e->tid ? v->last_added : find(v, e->tid);
	if (!t) {
		t = create(v, e->tid, e->tgid, &err);
		if (!t)
			return err;
		is_new = 1;
	}
	v->last_added = t;
	if (ts < t->last_ns) {
		ts = t->last_ns;
		v->st.reordered++;
	}
	t->last_ns = ts;
	cur = cur_state(t);
	switch (e->type) {
	case TTF_SCHED_OUT_RUNNABLE:
	case TTF_SCHED_OUT_BLOCKED:
	case TTF_SCHED_OUT_DEAD:
		if (cur != SCHED_ON_CPU && cur != SCHED_UNKNOWN)
			lost_record(v, t);	/* its switch-in was lost */
		next = e->type == TTF_SCHED_OUT_RUNNABLE ? SCHED_RUNNABLE :
		       e->type == TTF_SCHED_OUT_BLOCKED ? SCHED_BLOCKED : SCHED_EXITED;
		if (next == SCHED_EXITED)
			t->exit_ns = ts;
		break;
	case TTF_SCHED_IN:
		if (cur == SCHED_BLOCKED || cur == SCHED_ON_CPU || cur == SCHED_EXITED)
			lost_record(v, t);	/* a wakeup or switch-out was lost */
		next = SCHED_ON_CPU;
		break;
	default:	/* WAKEUP, WAKEUP_NEW */
		if (cur == SCHED_ON_CPU || cur == SCHED_RUNNABLE) {
			v->st.events++;
			return is_new;
		}
		if (cur == SCHED_EXITED && e->type == TTF_SCHED_WAKEUP_NEW) {
			/* The tid was reused by a new thread: keep the old one's totals. */
			t->sum.exited = true;
			retire(v, &t->sum);
			memset(&t->sum, 0, sizeof(t->sum));
			t->sum.tid = e->tid;
			t->sum.tgid = e->tgid;
			is_new = 1;
		}
		next = SCHED_RUNNABLE;
		break;
	}
	err = set_state(v, t, ts, next, false);
	if (err)
		return err;
	v->st.events++;
	return is_new;
}

int sched__seed(struct sched_view *v, uint32_t tid, uint32_t tgid, uint64_t ts_ns,
		enum sched_state st)
{
	struct thread *t = find(v, tid);
	int err = 0;

	if (st != SCHED_ON_CPU && st != SCHED_RUNNABLE && st != SCHED_BLOCKED)
		return -EINVAL;
	if (t && t->n)
		return -EEXIST;
	if (!t) {
		t = create(v, tid, tgid, &err);
		if (!t)
			return err;
	}
	if (ts_ns > t->last_ns)
		t->last_ns = ts_ns;
	if (ts_ns > v->last_ns)
		v->last_ns = ts_ns;
	return set_state(v, t, t->last_ns, st, st == SCHED_RUNNABLE);
}

int sched__set_comm(struct sched_view *v, uint32_t tid, const char *comm)
{
	struct thread *t = find(v, tid);

	if (!t)
		return -ENOENT;
	strncpy(t->sum.comm, comm, SCHED_COMM_LEN - 1);
	t->sum.comm[SCHED_COMM_LEN - 1] = '\0';
	return 0;
}

void sched__forget_tgid(struct sched_view *v, uint32_t tgid, uint64_t ts_ns)
{
	for (struct thread *t = v->threads; t; t = t->hh.next) {
		uint64_t ts = ts_ns > t->last_ns ? ts_ns : t->last_ns;

		if (t->sum.tgid != tgid || cur_state(t) == SCHED_EXITED)
			continue;
		if (!set_state(v, t, ts, SCHED_EXITED, false)) {
			t->last_ns = ts;
			t->exit_ns = ts;
		}
	}
	if (ts_ns > v->last_ns)
		v->last_ns = ts_ns;
}

uint64_t sched__last_ns(const struct sched_view *v)
{
	return v->last_ns;
}

/* Index of the newest mark at or before ts_ns; -1 when all are later. */
static int64_t search(const struct thread *t, uint64_t ts_ns)
{
	int64_t lo = 0, hi = (int64_t)t->n - 1, ans = -1;

	while (lo <= hi) {
		int64_t mid = lo + (hi - lo) / 2;

		if (mark_at(t, mid)->ts_ns <= ts_ns) {
			ans = mid;
			lo = mid + 1;
		} else {
			hi = mid - 1;
		}
	}
	return ans;
}

static void overlay_thread(const struct sched_view *v, const struct thread *t, uint64_t a,
			   uint64_t b, struct sched_overlay *out)
{
	int64_t i = search(t, a);

	if (t->cut_ns && a < t->cut_ns && b > a)
		(*v->overlays_cut)++;
	if (i < 0)
		i = 0;	/* [a, first mark) is unknown */
	for (; i < t->n; i++) {
		const struct mark *m = mark_at(t, i);
		uint64_t s = m->ts_ns;
		uint64_t e = i + 1 < t->n ? mark_at(t, i + 1)->ts_ns : v->last_ns;

		if (s >= b)
			break;
		if (s < a)
			s = a;
		if (e > b)
			e = b;
		if (e <= s)
			continue;
		switch (m->state) {
		case SCHED_ON_CPU:
			out->on_cpu_ns += e - s;
			break;
		case SCHED_RUNNABLE:
			out->runnable_ns += e - s;
			break;
		case SCHED_BLOCKED:
			out->blocked_ns += e - s;
			break;
		}
	}
}

int sched__intervals(const struct sched_view *v, uint32_t tid, uint64_t a, uint64_t b,
		     sched_interval_fn fn, void *ctx)
{
	const struct thread *t;
	int64_t i;

	if (b < a)
		return -EINVAL;
	t = find(v, tid);
	if (!t)
		return -ENOENT;
	i = search(t, a);
	for (i = i < 0 ? 0 : i; i < t->n; i++) {
		const struct mark *m = mark_at(t, i);
		uint64_t s = m->ts_ns;
		uint64_t e = i + 1 < t->n ? mark_at(t, i + 1)->ts_ns : v->last_ns;
		int ret;

		if (s >= b)
			break;
		s = s < a ? a : s;
		e = e > b ? b : e;
		if (e <= s || m->state == SCHED_UNKNOWN)
			continue;
		ret = fn(ctx, t->sum.tgid, m->state, s, e);
		if (ret)
			return ret;
	}
	return 0;
}

static void add_unknown(struct sched_overlay *o, uint64_t window_ns)
{
	uint64_t known_ns = o->on_cpu_ns + o->runnable_ns + o->blocked_ns + o->unknown_ns;

	o->unknown_ns += window_ns - known_ns;
}

int sched__overlay(const struct sched_view *v, uint32_t tid, uint64_t start_ns, uint64_t end_ns,
		   struct sched_overlay *out)
{
	const struct thread *t;

	memset(out, 0, sizeof(*out));
	if (end_ns < start_ns)
		return -EINVAL;
	t = find(v, tid);
	if (t)
		overlay_thread(v, t, start_ns, end_ns, out);
	add_unknown(out, end_ns - start_ns);
	return t ? 0 : -ENOENT;
}

static void summarize(const struct sched_view *v, const struct thread *t,
		      struct sched_thread_summary *s)
{
	const struct mark *m = last_mark(t);
	uint64_t open_ns;

	*s = t->sum;
	if (!m)
		return;
	open_ns = v->last_ns > m->ts_ns ? v->last_ns - m->ts_ns : 0;
	if (m->state == SCHED_ON_CPU)
		s->on_cpu_ns += open_ns;
	else if (m->state == SCHED_RUNNABLE)
		s->runnable_ns += open_ns;
	else if (m->state == SCHED_BLOCKED)
		s->blocked_ns += open_ns;
	s->exited = m->state == SCHED_EXITED;
}

static int cmp_runq(const void *pa, const void *pb)
{
	const struct sched_thread_summary *a = pa, *b = pb;

	if (a->runnable_ns != b->runnable_ns)
		return a->runnable_ns < b->runnable_ns ? 1 : -1;
	return a->tid < b->tid ? -1 : a->tid > b->tid;
}

size_t sched__top_runq(const struct sched_view *v, struct sched_thread_summary *out, size_t max)
{
	size_t n = 0, total = v->st.threads + v->n_retired;
	struct sched_thread_summary *all = calloc(total ? total : 1, sizeof(*all));

	if (!all)
		return 0;
	for (const struct thread *t = v->threads; t; t = t->hh.next)
		summarize(v, t, &all[n++]);
	for (int i = 0; i < v->n_retired; i++)
		all[n++] = v->retired[i];
	qsort(all, n, sizeof(*all), cmp_runq);
	if (n > max)
		n = max;
	memcpy(out, all, n * sizeof(*out));
	free(all);
	return n;
}

void sched__runq_hist(const struct sched_view *v, uint64_t out[SCHED_HIST_BUCKETS])
{
	memcpy(out, v->hist, sizeof(v->hist));
}

void sched__stats(const struct sched_view *v, struct sched_stats *out)
{
	*out = v->st;
	out->overlays_cut = *v->overlays_cut;
}

int sched__attrib_overlay(void *view, uint32_t tid, uint64_t start_ns, uint64_t end_ns,
			  struct ttf_overlay *out)
{
	struct sched_overlay so;
	int err = sched__overlay(view, tid, start_ns, end_ns, &so);

	if (err)
		return err;
	*out = (struct ttf_overlay){ so.on_cpu_ns, so.runnable_ns, so.blocked_ns, so.unknown_ns };
	return 0;
}
