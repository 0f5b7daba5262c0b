// SPDX-License-Identifier: GPL-2.0-only
/* The stage names of hop chains and the hop each stage lies in (chain.h). */
#include "user/model/hops/chain.h"

static const char *const hop_stage_names[TTF_HS__MAX] = {
	[TTF_HS_NET_IN] = "net_in",		[TTF_HS_READ_WAIT] = "read_wait",
	[TTF_HS_GATEWAY_IN] = "gateway_in",	[TTF_HS_PREFILL_CALL] = "prefill_call",
	[TTF_HS_HANDOFF] = "handoff",		[TTF_HS_UPSTREAM] = "upstream",
	[TTF_HS_UPSTREAM_OUT] = "upstream_out", [TTF_HS_GATEWAY_OUT] = "gateway_out",
	[TTF_HS_NET_OUT] = "net_out",
};

const char *ttf_hop_stage_name(enum ttf_hop_stage s)
{
	return s >= 0 && s < TTF_HS__MAX ? hop_stage_names[s] : "?";
}

int ttf_hop_stage_present(const struct ttf_hop_chain *c, enum ttf_hop_stage s)
{
	if (s == TTF_HS_PREFILL_CALL || s == TTF_HS_HANDOFF)
		return c->pd.seen;
	return s >= 0 && s < TTF_HS__MAX;
}

/* A chain's process names without a stack profile that fits it. */
static const char *const default_roles[MSG_HOPS_PROCS] = { "frontend", "engine", "output" };

static const char *const stage_names[TTF_MS__MAX] = {
	[TTF_MS_NET_IN] = "net_in",	[TTF_MS_READ_WAIT] = "read_wait",
	[TTF_MS_FRONTEND] = "frontend",	[TTF_MS_IPC_IN] = "ipc_in",
	[TTF_MS_QUEUE] = "queue",	[TTF_MS_PREFILL] = "prefill",
	[TTF_MS_IPC_OUT] = "ipc_out",	[TTF_MS_EMIT] = "emit",
	[TTF_MS_NET_OUT] = "net_out",	[TTF_MS_DETOKENIZE] = "detokenize",
	[TTF_MS_IPC_BACK] = "ipc_back",
};

static const uint8_t time_order[TTF_MS__MAX] = {
	TTF_MS_NET_IN, TTF_MS_READ_WAIT, TTF_MS_FRONTEND, TTF_MS_IPC_IN, TTF_MS_QUEUE,
	TTF_MS_PREFILL, TTF_MS_IPC_OUT, TTF_MS_DETOKENIZE, TTF_MS_IPC_BACK, TTF_MS_EMIT,
	TTF_MS_NET_OUT,
};

const char *ttf_msg_stage_name(enum ttf_msg_stage s)
{
	return s >= 0 && s < TTF_MS__MAX ? stage_names[s] : "?";
}

int ttf_msg_chain_stages(const struct ttf_msg_chain *c, enum ttf_msg_stage *out)
{
	for (int i = 0; i < c->n_stages; i++)
		out[i] = c->stage[i];
	return c->n_stages;
}

const char *ttf_msg_stage_hop(const struct ttf_msg_chain *c, enum ttf_msg_stage s,
			      uint32_t *tgid, const char **comm)
{
	int k;

	*tgid = 0;
	*comm = "";
	switch (s) {
	case TTF_MS_NET_IN:
	case TTF_MS_NET_OUT:
		return "net";
	case TTF_MS_IPC_IN:
	case TTF_MS_IPC_OUT:
	case TTF_MS_IPC_BACK:
		return "ipc";
	case TTF_MS_QUEUE:
	case TTF_MS_PREFILL:
		k = 1;
		break;
	case TTF_MS_DETOKENIZE:
		k = 2;
		break;
	default:	/* read_wait, frontend, emit: in the frontend's process */
		k = 0;
		break;
	}
	if (k >= c->n_procs)
		return "ipc";
	*tgid = c->tgid[k];
	*comm = c->comm[k];
	/* by position, not by the stack profile's role: a fixed set of hop names */
	return ttf_msg_proc_role(k);
}

enum ttf_msg_stage ttf_msg_stage_at(int i)
{
	return i >= 0 && i < TTF_MS__MAX ? (enum ttf_msg_stage)time_order[i] : TTF_MS__MAX;
}

const char *ttf_msg_proc_role(int k)
{
	return k >= 0 && k < MSG_HOPS_PROCS ? default_roles[k] : "?";
}
