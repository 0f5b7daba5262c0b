// SPDX-License-Identifier: GPL-2.0-only
/*
 * Thread tracks of the Perfetto sink: naming, and the scheduler slices of
 * the mode ALL (streamed from the switch records; SERVED is
 * perfetto_served.c). See perfetto.h.
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

void pf_sched_slice(struct perfetto *pf, uint32_t tgid, uint32_t tid, enum thr_state st,
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
		pf_sched_slice(pf, t->tgid, t->tid, t->state, t->since_ns, ts_ns);
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
