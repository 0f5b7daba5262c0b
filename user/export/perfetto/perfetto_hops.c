// SPDX-License-Identifier: GPL-2.0-only
/*
 * Hops on the timeline (perfetto.h, docs/design.md D12, D11, D15): each
 * process a request crossed (a gateway, its prefill server and upstream; a
 * frontend and its engine) gets its slice on a hop lane of that process
 * (lanes, so that concurrent requests' slices never overlap on a track),
 * and one flow runs from the client-facing process through every other
 * process and back to a mark where the first token left the last of them.
 * The hops come from user/model/hops/view.h, so a chain of any length is
 * drawn alike.
 */
#include <inttypes.h>
#include <stdio.h>
#include <string.h>
#include "user/export/perfetto/perfetto_int.h"
#include "user/model/hops/view.h"

/* The track of lane k of tgid's hops: tids above any real tid (pid_max <= 2^22). */
static uint32_t lane_tid(uint32_t tgid, int k)
{
	return PERFETTO_TID_HOPS + tgid + (uint32_t)k * 0x400000u;
}

/* A free hop lane of tgid over [start, end] (named once); its tid, 0 none (counted). */
static uint32_t hop_lane(struct perfetto *pf, uint32_t tgid, uint64_t start, uint64_t end)
{
	struct pf_hop_lanes *hl = NULL;
	char name[48];

	for (int i = 0; i < pf->n_hop_lanes && !hl; i++)
		if (pf->hop_lanes[i].tgid == tgid)
			hl = &pf->hop_lanes[i];
	if (!hl && pf->n_hop_lanes < PF_HOP_PROCS) {
		hl = &pf->hop_lanes[pf->n_hop_lanes++];
		hl->tgid = tgid;
		pf_name_process(pf, tgid);
	}
	for (int k = 0; hl && k < PF_HOP_LANES; k++) {
		if (hl->end[k] && hl->end[k] > start)
			continue;
		if (!hl->end[k]) {
			snprintf(name, sizeof(name), "hops lane %d", k + 1);
			pf_meta(&pf->out, tgid, lane_tid(tgid, k), "thread_name", name);
		}
		hl->end[k] = end ? end : 1;
		return lane_tid(tgid, k);
	}
	pf->hop_slices_over++;
	return 0;
}

static void flow(struct perfetto *pf, char ph, uint64_t ts_ns, uint32_t pid, uint32_t tid,
		 uint64_t id)
{
	pf_flow(pf, ph, ts_ns, pid, tid, "hop", "hop", id);
	pf->flows += ph == 's';
}

/* One process's slice: "HOP: req N" (" (its M)": its own request), its stages (ms) in args. */
static void proc_slice(struct perfetto *pf, const struct ttf_attrib *a, const struct ttf_hop_view *v,
		       int p, uint32_t tid, uint64_t start, uint64_t end, uint64_t req_id)
{
	const struct ttf_hop_view_proc *h = &v->procs[p];
	char name[64];
	int first = 1;

	snprintf(name, sizeof(name), "%s: req %" PRIu64, h->hop, req_id);
	if (h->req_id)
		snprintf(name + strlen(name), sizeof(name) - strlen(name), " (its %" PRIu64 ")",
			 h->req_id);
	pf_complete(&pf->out, h->tgid, tid, start, end - start, name, "hop");
	fputs(",\"args\":{", pf->out.f);
	if (p == 0 && a->hops) {
		fprintf(pf->out.f, "\"join\":\"%s\",\"buffering\":%s", a->hops->exact ? "exact" :
			"inferred", a->hops->buffering ? "true" : "false");
		first = 0;
	}
	for (int i = 0; i < v->n_stages; i++) {
		if (v->stages[i].proc != p)
			continue;
		fprintf(pf->out.f, "%s\"%s_ms\":%.3f", first ? "" : ",", v->stages[i].name,
			v->stages[i].ns / 1e6);
		first = 0;
	}
	fputs("}}", pf->out.f);
}

void pf_hops(struct perfetto *pf, const struct ttf_request *r, const struct ttf_req_metrics *m,
	     const struct ttf_attrib *a)
{
	struct ttf_hop_view v;
	uint32_t tid[TTF_HOP_VIEW_PROCS] = { 0 };
	uint64_t back, end0 = m->t_start_ns + (m->ttft_ns > 0 ? (uint64_t)m->ttft_ns : 0);
	int last = -1, others = 0;
	char name[48];

	if (!a || !ttf_hop_view__build(a, m->t_start_ns, &v) || !v.n_procs || !v.procs[0].tgid)
		return;
	tid[0] = hop_lane(pf, v.procs[0].tgid, m->t_start_ns, end0);
	if (!tid[0])
		return;
	proc_slice(pf, a, &v, 0, tid[0], m->t_start_ns, end0, r->id);
	for (int p = 1; p < v.n_procs; p++) {
		if (!v.procs[p].tgid)	/* not traced: the flow would skip it */
			return;
		tid[p] = hop_lane(pf, v.procs[p].tgid, v.procs[p].start_ns, v.procs[p].end_ns);
		if (tid[p])
			proc_slice(pf, a, &v, p, tid[p], v.procs[p].start_ns, v.procs[p].end_ns,
				   r->id);
		others += tid[p] != 0;
	}
	/* back where the first token left the last other process */
	for (int i = 0; i < v.n_stages; i++)
		if (v.stages[i].proc > 0)
			last = i;
	if (last < 0 || !others)
		return;
	back = v.stages[last].start_ns + (uint64_t)v.stages[last].ns;
	snprintf(name, sizeof(name), "first token from %s", v.procs[v.stages[last].proc].hop);
	pf_complete(&pf->out, v.procs[0].tgid, tid[0], back, 0, name, "hop");
	fputs("}", pf->out.f);
	flow(pf, 's', m->t_start_ns, v.procs[0].tgid, tid[0], r->id);
	for (int p = 1; p < v.n_procs; p++)
		if (tid[p])
			flow(pf, 't', v.procs[p].start_ns, v.procs[p].tgid, tid[p], r->id);
	flow(pf, 'f', back, v.procs[0].tgid, tid[0], r->id);
}
