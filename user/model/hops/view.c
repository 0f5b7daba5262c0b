// SPDX-License-Identifier: GPL-2.0-only
/* A request's hops as one list of stages and processes (view.h). */
#include <stdio.h>
#include <string.h>
#include "user/model/hops/view.h"

/* Every hop name either chain gives (gateway and message chains); new ones go here too. */
static const char *const hop_names[] = {
	"net", "gateway", "prefill", "upstream", "ipc", "frontend", "engine", "output", NULL,
};

const char *const *ttf_hop_view_hop_names(void)
{
	return hop_names;
}

int ttf_hop_view_hop_index(const char *hop)
{
	for (int i = 0; hop && hop_names[i]; i++)
		if (!strcmp(hop, hop_names[i]))
			return i;
	return -1;
}

/* Append a stage; a process hop is found by its name and tgid, or added. */
static void add(struct ttf_hop_view *v, const char *name, const char *hop, uint32_t tgid,
		const char *comm, uint64_t req_id, int is_proc, uint64_t *t, int64_t ns)
{
	struct ttf_hop_view_stage *s;
	int p = -1;

	if (v->n_stages == TTF_HOP_VIEW_STAGES)
		return;
	for (int i = 0; is_proc && i < v->n_procs && p < 0; i++)
		if (!strcmp(v->procs[i].hop, hop) && v->procs[i].tgid == tgid)
			p = i;
	if (is_proc && p < 0 && v->n_procs < TTF_HOP_VIEW_PROCS) {
		p = v->n_procs++;
		v->procs[p] = (struct ttf_hop_view_proc){ .hop = hop, .tgid = tgid, .req_id = req_id,
							  .start_ns = *t, .end_ns = *t };
		snprintf(v->procs[p].comm, sizeof(v->procs[p].comm), "%.15s", comm ? comm : "");
	}
	s = &v->stages[v->n_stages++];
	*s = (struct ttf_hop_view_stage){ name, hop, p, *t, ns > 0 ? ns : 0 };
	*t += s->ns;
	if (p >= 0) {
		v->procs[p].end_ns = *t;
		v->procs[p].ns += s->ns;
	}
}

static const char *gateway_stage_hop(const struct ttf_hop_chain *c, enum ttf_hop_stage s,
				     uint32_t *tgid, const char **comm)
{
	*tgid = 0;
	*comm = "";
	switch (s) {
	case TTF_HS_NET_IN:
	case TTF_HS_NET_OUT:
		return "net";
	case TTF_HS_UPSTREAM_OUT:
		return "ipc";
	case TTF_HS_PREFILL_CALL:
		*tgid = c->pd.tgid;
		*comm = c->pd.comm;
		return "prefill";
	case TTF_HS_UPSTREAM:
		*tgid = c->up_tgid;
		*comm = c->up_comm;
		return "upstream";
	default:	/* read_wait, gateway_in, handoff, gateway_out */
		*tgid = c->gw_tgid;
		*comm = c->gw_comm;
		return "gateway";
	}
}

static int is_link(const char *hop)
{
	return !strcmp(hop, "net") || !strcmp(hop, "ipc");
}

int ttf_hop_view__build(const struct ttf_attrib *a, uint64_t t_start_ns, struct ttf_hop_view *v)
{
	enum ttf_msg_stage order[TTF_MS__MAX];
	uint64_t t = t_start_ns;
	const char *hop, *comm;
	uint32_t tgid;
	int n;

	memset(v, 0, sizeof(*v));
	if (!a || !a->valid)
		return 0;
	if (a->hops) {
		v->kind = TTF_HOPV_GATEWAY;
		for (int i = 0; i < TTF_HS__MAX; i++) {
			if (!ttf_hop_stage_present(a->hops, i))
				continue;
			hop = gateway_stage_hop(a->hops, i, &tgid, &comm);
			add(v, ttf_hop_stage_name(i), hop, tgid, comm,
			    i == TTF_HS_UPSTREAM ? a->hops->up_req_id :
			    i == TTF_HS_PREFILL_CALL ? a->hops->pd.req_id : 0, !is_link(hop), &t,
			    a->hops->stage_ns[i]);
		}
		return 1;
	}
	if (!a->msg)
		return 0;
	v->kind = TTF_HOPV_MSG;
	n = ttf_msg_chain_stages(a->msg, order);
	for (int k = 0; k < n; k++) {
		hop = ttf_msg_stage_hop(a->msg, order[k], &tgid, &comm);
		add(v, ttf_msg_stage_name(order[k]), hop, tgid, comm, 0, !is_link(hop), &t,
		    a->msg->stage_ns[order[k]]);
	}
	return 1;
}
