// SPDX-License-Identifier: GPL-2.0-only
/*
 * Chrome trace-event JSON timeline (see perfetto.h for the tracks): requests
 * on their lanes, the flows to the threads and GPU work that served them,
 * hops, and the file's end.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "user/lib/log.h"
#include "user/model/vocab.h"
#include "user/export/perfetto/perfetto_int.h"

/* Flow ids: request id * PF_FLOWS_PER_REQ + the target's index. */
#define PF_FLOWS_PER_REQ 64
#define PF_FLOW_READ 0
#define PF_FLOW_WRITE 1
#define PF_FLOW_STEP 2				/* + step index, up to TTF_MAX_STEP_SPANS */
#define PF_FLOW_GPU (PF_FLOW_STEP + TTF_MAX_STEP_SPANS)	/* + step index */

int perfetto_sched__parse(const char *s, enum perfetto_sched *out)
{
	if (!strcmp(s, "served"))
		*out = PERFETTO_SCHED_SERVED;
	else if (!strcmp(s, "all"))
		*out = PERFETTO_SCHED_ALL;
	else if (!strcmp(s, "none"))
		*out = PERFETTO_SCHED_NONE;
	else
		return -EINVAL;
	return 0;
}

/* 1 when a mark was drawn at this place lately (a step or GPU span shared by requests). */
static int seen(struct perfetto *pf, uint32_t pid, uint32_t tid, uint64_t ts_ns)
{
	struct pf_mark_key k = { .ts_ns = ts_ns, .pid = pid, .tid = tid };

	for (int i = 0; i < PF_MARKS_SEEN; i++)
		if (pf->seen[i].ts_ns == ts_ns && pf->seen[i].pid == pid && pf->seen[i].tid == tid)
			return 1;
	pf->seen[pf->seen_next] = k;
	pf->seen_next = (pf->seen_next + 1) % PF_MARKS_SEEN;
	return 0;
}

void pf_flow(struct perfetto *pf, char ph, uint64_t ts_ns, uint32_t pid, uint32_t tid,
	     const char *name, const char *cat, uint64_t flow_id)
{
	pf_ev(&pf->out, ph, ts_ns, pid, tid);
	pf_name(&pf->out, name, cat);
	fprintf(pf->out.f, ",\"id\":%" PRIu64 "%s}", flow_id, ph == 'f' ? ",\"bp\":\"e\"" : "");
}

static void flow_ev(struct perfetto *pf, char ph, uint64_t ts_ns, uint32_t pid, uint32_t tid,
		    uint64_t flow_id)
{
	pf_flow(pf, ph, ts_ns, pid, tid, "serve", "request", flow_id);
}

void pf_flow_start(struct perfetto *pf, uint32_t lane, uint64_t req_start_ns, uint64_t flow_id)
{
	flow_ev(pf, 's', req_start_ns, PERFETTO_PID_REQUESTS, lane, flow_id);
	pf->flows++;
}

void pf_mark_flow(struct perfetto *pf, uint32_t pid, uint32_t tid, uint64_t ts_ns,
		  const char *name, uint64_t flow_id)
{
	if (!seen(pf, pid, tid, ts_ns)) {
		pf_complete(&pf->out, pid, tid, ts_ns, 0, name, "request");
		fputc('}', pf->out.f);
	}
	flow_ev(pf, 'f', ts_ns, pid, tid, flow_id);
}

/*
 * The lane (1-based) whose last request ended latest but before @start_ns,
 * a new one when none did; 0 when all are busy. Requests come in the order
 * they end, not the order they began: a long request reported after the
 * short ones around it needs a lane that was free when it began, and
 * taking the lowest free lane for each short one would have used up those
 * (a keep-alive client's next request takes its previous one's lane here).
 */
static uint32_t lane_take(struct perfetto *pf, uint64_t start_ns, uint64_t end_ns)
{
	uint32_t best = PERFETTO_MAX_LANES, i;
	char name[32];

	for (i = 0; i < PERFETTO_MAX_LANES && pf->lane_end[i]; i++)
		if (pf->lane_end[i] <= start_ns &&
		    (best == PERFETTO_MAX_LANES || pf->lane_end[i] > pf->lane_end[best]))
			best = i;
	if (best == PERFETTO_MAX_LANES) {
		if (i == PERFETTO_MAX_LANES) {
			pf->lanes_full++;
			return 0;
		}
		best = i;	/* the first lane not named yet */
		snprintf(name, sizeof(name), "lane %u", i + 1);
		pf_meta(&pf->out, PERFETTO_PID_REQUESTS, i + 1, "thread_name", name);
	}
	/* never 0 again: 0 marks a lane not named yet */
	pf->lane_end[best] = end_ns ? end_ns : 1;
	return best + 1;
}

/* The request's flags as NDJSON names them (vocab.h): ,"flags":[...] inside args. */
static void flags_arg(struct perfetto *pf, const struct ttf_request *r,
		      const struct ttf_req_metrics *m)
{
	const char *names[TTF_VF__MAX];
	int n = ttf_vocab__flag_names(ttf_vocab__flags(r, m), names, TTF_VF__MAX);

	fputs(",\"flags\":[", pf->out.f);
	for (int i = 0; i < n; i++) {
		if (i)
			fputc(',', pf->out.f);
		pf_jstr(pf->out.f, names[i]);
	}
	fputc(']', pf->out.f);
}

/* Stage slices on the lane, in the order they follow each other inside [start, first token]. */
static void stage_slices(struct perfetto *pf, uint32_t lane, uint64_t start,
			 const struct ttf_attrib *a)
{
	uint64_t t = start;

	for (size_t i = 0; a && a->valid && i < TTF_STAGE_ORDER_N; i++) {
		enum ttf_stage s = ttf_stage_time_order[i];
		int64_t d = a->stage_ns[s];

		/* tokenize is drawn inside frontend, below */
		if (s == TTF_ST_TOKENIZE || d < 0)
			continue;
		pf_complete(&pf->out, PERFETTO_PID_REQUESTS, lane, t, d, ttf_stage_name(s), "stage");
		fputs("}", pf->out.f);
		t += d;
		/* the engine has the request when tokenize returns: tokenize ends frontend */
		if (s == TTF_ST_FRONTEND && a->stage_ns[TTF_ST_TOKENIZE] > 0 &&
		    a->stage_ns[TTF_ST_TOKENIZE] <= d) {
			pf_complete(&pf->out, PERFETTO_PID_REQUESTS, lane,
				    t - a->stage_ns[TTF_ST_TOKENIZE], a->stage_ns[TTF_ST_TOKENIZE],
				    ttf_stage_name(TTF_ST_TOKENIZE), "substage");
			fputs("}", pf->out.f);
		}
	}
}

static void win_push(struct pf_served_win *w, int *n, uint32_t tid, uint32_t tgid, uint64_t a,
		     uint64_t b)
{
	/* one window per thread where they touch (the reader that also writes) */
	for (int i = 0; tid && a < b && i < *n; i++) {
		if (w[i].tid != tid || a > w[i].b || b < w[i].a)
			continue;
		w[i].a = a < w[i].a ? a : w[i].a;
		w[i].b = b > w[i].b ? b : w[i].b;
		return;
	}
	if (tid && a < b && *n < PF_REQ_WINDOWS)
		w[(*n)++] = (struct pf_served_win){ tid, tgid, a, b };
}

/* SERVED: the scheduler slices of the threads that served the request, while they did. */
static void served_sched(struct perfetto *pf, const struct ttf_request *r,
			 const struct ttf_attrib *a, uint32_t etgid, uint64_t start, uint64_t end)
{
	const uint64_t *b = a && a->valid ? a->bound_ns : NULL;
	struct pf_served_win w[PF_REQ_WINDOWS];
	int n = 0;

	if (pf->sched_mode != PERFETTO_SCHED_SERVED || !pf->sched)
		return;
	/* reader: arrival -> the engine has it; engine: -> prefill end; writer: -> first token */
	win_push(w, &n, r->rx_tid, r->tgid, start, b ? b[TTF_ST_QUEUE] : end);
	for (uint32_t i = 0; b && i < a->n_step_spans; i++)
		win_push(w, &n, a->step_spans[i].tid, etgid, b[TTF_ST_QUEUE], b[TTF_ST_EMIT]);
	win_push(w, &n, r->tx_tid, r->tgid, b ? b[TTF_ST_EMIT] : start, b ? b[TTF_ST__MAX] : end);
	/* token gaps named as ITL outliers: the writer while it waited */
	for (uint32_t i = 0; a && i < a->n_causes; i++) {
		uint32_t k = a->causes[i].index;

		if (k + 1 < r->n_events)
			win_push(w, &n, r->tx_tid, r->tgid, ttf_metrics__event_time(&r->events[k]),
				 ttf_metrics__event_time(&r->events[k + 1]));
	}
	pf_served_request(pf, w, n);
}

/* Marks and flows to the threads that served the request, after their scheduler slices. */
static void served(struct perfetto *pf, const struct ttf_request *r,
		   const struct ttf_req_metrics *m, const struct ttf_attrib *a, uint32_t lane,
		   uint64_t start, uint64_t end)
{
	const uint64_t *b = a && a->valid ? a->bound_ns : NULL;
	uint32_t etgid = a && a->engine_tgid ? a->engine_tgid : r->tgid;
	uint64_t base = r->id * PF_FLOWS_PER_REQ, w;
	char name[48];

	served_sched(pf, r, a, etgid, start, end);
	if (r->rx_tid && r->read_done_ns >= start) {
		pf_flow_start(pf, lane, start, base + PF_FLOW_READ);
		pf_thr_get(pf, r->rx_tid, r->tgid);
		snprintf(name, sizeof(name), "read req %" PRIu64, r->id);
		pf_mark_flow(pf, r->tgid, r->rx_tid, r->read_done_ns, name, base + PF_FLOW_READ);
	}
	for (uint32_t i = 0; a && a->valid && i < a->n_step_spans; i++) {
		const struct ttf_step_span *sp = &a->step_spans[i];

		if (!sp->tid || sp->start_ns < start)
			continue;
		pf_flow_start(pf, lane, start, base + PF_FLOW_STEP + i);
		pf_thr_get(pf, sp->tid, etgid);
		pf_mark_flow(pf, etgid, sp->tid, sp->start_ns, "prefill step", base + PF_FLOW_STEP + i);
		if (sp->have_gpu)
			pf_gpu_flow(pf, &(struct pf_gpu_flow){ .flow_id = base + PF_FLOW_GPU + i,
				    .req_start_ns = start, .lane = lane, .pid = etgid,
				    .a = sp->start_ns, .b = sp->end_ns });
	}
	if (a && a->valid && !a->n_step_spans && a->gpu.have)	/* no step probes: the server stage */
		pf_gpu_flow(pf, &(struct pf_gpu_flow){ .flow_id = base + PF_FLOW_GPU,
			    .req_start_ns = start, .lane = lane, .pid = etgid,
			    .a = b[TTF_ST_READ_WAIT + 1], .b = b[TTF_ST_NET_OUT] });
	w = r->n_events ? (r->events[0].write_start_ns ? r->events[0].write_start_ns :
			   r->events[0].write_ns) : 0;
	if (r->tx_tid && w >= start) {
		pf_flow_start(pf, lane, start, base + PF_FLOW_WRITE);
		pf_thr_get(pf, r->tx_tid, r->tgid);
		snprintf(name, sizeof(name), "write req %" PRIu64, r->id);
		pf_mark_flow(pf, r->tgid, r->tx_tid, w, name, base + PF_FLOW_WRITE);
	}
	(void)m;
}

static void on_request(void *ctx, const struct ttf_request *r, const struct ttf_req_metrics *m,
		       const struct ttf_attrib *a)
{
	struct perfetto *pf = ctx;
	uint64_t start = m->t_start_ns, end = m->t_end_ns;
	struct conn *c = pf_conn_find(pf, r->sock_cookie);
	struct pf_out *o = &pf->out;
	uint32_t lane;
	char name[160];

	if (!start)
		return;
	if (!end)
		end = r->closed_ns > m->t_last_token_ns ? r->closed_ns : m->t_last_token_ns;
	if (end < start)
		end = start;
	lane = lane_take(pf, start, end);
	if (!lane)
		return;
	snprintf(name, sizeof(name), "req %" PRIu64 " %s %s", r->id, r->method, r->path);
	pf_complete(o, PERFETTO_PID_REQUESTS, lane, start, end - start, name, "request");
	fprintf(o->f, ",\"args\":{\"id\":%" PRIu64 ",\"ttft_ms\":%.3f,\"e2e_ms\":%.3f,"
		"\"tpot_ms\":%.3f,\"tokens\":%u,\"grade\":\"%c\",\"conn\":%u,\"conn_seq\":%u,"
		"\"conn_cookie\":%" PRIu64, r->id, m->ttft_ns / 1e6, m->e2e_ns / 1e6,
		m->tpot_ns / 1e6, m->n_tokens, m->grade, c ? c->seq : 0, r->conn_seq,
		r->sock_cookie);
	flags_arg(pf, r, m);
	fputs("}}", o->f);
	/* the flows leave from the request slice: their starts follow it, before the stages */
	served(pf, r, m, a, lane, start, end);
	stage_slices(pf, lane, start, a);
	pf_hops(pf, r, m, a);
	for (uint32_t i = 0; i < r->n_events; i++) {
		pf_ev(o, 'i', ttf_metrics__event_time(&r->events[i]), PERFETTO_PID_REQUESTS, lane);
		pf_name(o, "token", "token");
		fputs(",\"s\":\"t\"", o->f);
		if (r->events[i].n_tokens != 1)
			fprintf(o->f, ",\"args\":{\"n_tokens\":%u}", r->events[i].n_tokens);
		fputc('}', o->f);
	}
	if (c) {
		/* the join on the connection's track: the same conn, conn_seq and cookie */
		pf_ev(o, 'i', start, PERFETTO_PID_CONNS, c->seq);
		snprintf(name, sizeof(name), "req %" PRIu64, r->id);
		pf_name(o, name, "net");
		fprintf(o->f, ",\"s\":\"t\",\"args\":{\"req\":%" PRIu64 ",\"conn_seq\":%u,"
			"\"cookie\":%" PRIu64 "}}", r->id, r->conn_seq, r->sock_cookie);
	}
}

static void on_tick(void *ctx, uint64_t now_ns)
{
	struct perfetto *pf = ctx;

	if (!pf->gpu || now_ns < pf->gpu_next_ns)
		return;
	pf->gpu_next_ns = now_ns + 1000000000ull;
	if (now_ns > PERFETTO_GPU_LAG_NS)
		pf_gpu_flush(pf, now_ns - PERFETTO_GPU_LAG_NS);
}

static uint32_t lanes_used(const struct perfetto *pf)
{
	uint32_t n = 0;

	for (uint32_t i = 0; i < PERFETTO_MAX_LANES; i++)
		n += !!pf->lane_end[i];
	return n;
}

static const char *const mode_names[] = { "served", "all", "none" };

static int on_finish(void *ctx, const struct report_counter *cnt, int n)
{
	struct perfetto *pf = ctx;
	FILE *f = pf->out.f;
	int err;

	pf_gpu_flush(pf, UINT64_MAX);
	pf_conns_flush(pf);
	/* Open thread slices end at the last thing seen of the thread: nothing to draw. */
	fprintf(f, "\n],\"otherData\":{\"generator\":\"ttftrace\","
		"\"clock\":\"CLOCK_MONOTONIC\",\"sched\":\"%s\",\"trace_events\":%" PRIu64
		",\"lanes\":%u,\"requests_over_lanes\":%" PRIu64 ",\"flows\":%" PRIu64
		",\"threads_refused\":%" PRIu64 ",\"connections_refused\":%" PRIu64
		",\"sched_reordered\":%" PRIu64 ",\"sched_merged\":%" PRIu64
		",\"sched_served_clipped_ns\":%" PRIu64 ",\"gpu_spans_unread\":%" PRIu64
		",\"gpu_flows_dropped\":%" PRIu64 ",\"hop_slices_over_lanes\":%" PRIu64,
		mode_names[pf->sched_mode], pf->out.events,
		lanes_used(pf), pf->lanes_full, pf->flows, pf->threads_refused, pf->conns_refused,
		pf->sched_reordered, pf->sched_merged, pf->served_clipped_ns, pf->gpu_unread,
		pf->gpu_flows_dropped, pf->hop_slices_over);
	fprintf(f, ",\"sched_slices_per_request\":%d,\"sched_slices\":%" PRIu64
		",\"sched_requests_summarised\":%" PRIu64 ",\"sched_slices_over_cap\":%" PRIu64,
		PERFETTO_SCHED_SLICES_PER_REQ, pf->sched_slices, pf->sched_summarised,
		pf->sched_over_cap);
	for (int i = 0; i < n; i++) {
		fputs(",", f);
		pf_jstr(f, cnt[i].name);
		fprintf(f, ":%" PRIu64, cnt[i].value);
	}
	fputs("}}\n", f);
	err = pf_out__close(&pf->out);
	pf->finished = 1;
	if (err)
		ttf_error(err == -ENOSPC ? "free space on that file system" : "check permissions",
			  "writing %s: %s", pf->out.path, strerror(-err));
	if (pf->hop_slices_over)
		fprintf(stderr, "Warning: perfetto: %" PRIu64 " hop slices over %d lanes "
			"of a process (or %d processes), not drawn\n", pf->hop_slices_over,
			PF_HOP_LANES, PF_HOP_PROCS);
	if (pf->threads_refused || pf->conns_refused || pf->gpu_unread || pf->lanes_full ||
	    pf->gpu_flows_dropped)
		fprintf(stderr, "Warning: perfetto: %" PRIu64 " threads and %" PRIu64
			" connections over the table size, %" PRIu64 " requests over %u lanes, %"
			PRIu64 " GPU spans and %" PRIu64 " GPU flows not drawn\n",
			pf->threads_refused, pf->conns_refused, pf->lanes_full, PERFETTO_MAX_LANES,
			pf->gpu_unread, pf->gpu_flows_dropped);
	return err;
}

/* For the summary: how much the SERVED cap summarised (perfetto.h). */
static int on_stats(void *ctx, struct report_counter *c, int cap)
{
	struct perfetto *pf = ctx;
	int n = 0;

	if (pf->sched_mode != PERFETTO_SCHED_SERVED || cap < 4)
		return 0;
	c[n++] = (struct report_counter){ "perfetto_sched_slices", pf->sched_slices };
	c[n++] = (struct report_counter){ "perfetto_sched_intervals_merged", pf->sched_merged };
	c[n++] = (struct report_counter){ "perfetto_requests_sched_summarised",
					  pf->sched_summarised };
	c[n++] = (struct report_counter){ "perfetto_sched_slices_over_cap", pf->sched_over_cap };
	return n;
}

static void on_destroy(void *ctx)
{
	struct perfetto *pf = ctx;

	if (!pf)
		return;
	pf_out__abort(&pf->out);
	free(pf->thr);
	free(pf->conns);
	free(pf->gpu_pending);
	free(pf);
}

int perfetto_sink__new_opts(const char *path, const struct perfetto_opts *o,
			    struct ttf_sink *out)
{
	struct perfetto *pf = calloc(1, sizeof(*pf));
	int err;

	if (!pf)
		return -ENOMEM;
	pf->out.sync_fd = -1;
	pf->gpu = o->gpu;
	pf->sched = o->sched;
	pf->sched_mode = o->sched_mode;
	pf->thr = calloc(PERFETTO_MAX_THREADS, sizeof(*pf->thr));
	pf->conns = calloc(PERFETTO_MAX_CONNS, sizeof(*pf->conns));
	pf->gpu_pending = calloc(PF_GPU_PENDING, sizeof(*pf->gpu_pending));
	if (!pf->thr || !pf->conns || !pf->gpu_pending) {
		err = -ENOMEM;
		goto cleanup;
	}
	err = pf_out__open(&pf->out, path);
	if (err)
		goto cleanup;
	/* displayTimeUnit first: Perfetto's importer counts it as too late after the first chunk */
	fputs("{\"displayTimeUnit\":\"ms\",\"traceEvents\":[", pf->out.f);
	pf_meta(&pf->out, PERFETTO_PID_REQUESTS, 0, "process_name", "Requests (TTFT stages, tokens)");
	pf_meta(&pf->out, PERFETTO_PID_CONNS, 0, "process_name", "Connections (bytes in/out)");
	*out = (struct ttf_sink){ .name = "perfetto", .ctx = pf, .net_event = pf_on_net,
				  .sched_event = pf_on_sched, .request = on_request,
				  .tick = on_tick, .finish = on_finish, .stats = on_stats,
				  .destroy = on_destroy };
	return 0;
cleanup:
	on_destroy(pf);
	return err;
}

int perfetto_sink__new(const char *path, struct gpu_store *gpu, struct ttf_sink *out)
{
	return perfetto_sink__new_opts(path, &(struct perfetto_opts){ .gpu = gpu }, out);
}
