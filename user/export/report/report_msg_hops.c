// SPDX-License-Identifier: GPL-2.0-only
/* Message hops in the report (report_msg_hops.h). */
#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include "user/export/report/report_msg_hops.h"
#include "user/lib/stats.h"
#include "user/model/hops/view.h"

struct msg_hop_stats {
	struct stats *st[TTF_MS__MAX];
	uint64_t n;
	uint64_t n_inferred;	/* ... of them joined by order and timing (user/model/hops/msg.h) */
	uint8_t max_procs;	/* the longest chain added */
};

static const double pcts[] = { 50, 95, 99 };
static const char *const pct_keys[] = { "p50", "p95", "p99" };

static double ms(int64_t ns)
{
	return round(ns / 1e3) / 1e3;
}

struct msg_hop_stats *msg_hop_stats__new(void)
{
	struct msg_hop_stats *hs = calloc(1, sizeof(*hs));

	for (int i = 0; hs && i < TTF_MS__MAX; i++) {
		hs->st[i] = stats__new();
		if (!hs->st[i]) {
			msg_hop_stats__free(hs);
			return NULL;
		}
	}
	return hs;
}

void msg_hop_stats__free(struct msg_hop_stats *hs)
{
	if (!hs)
		return;
	for (int i = 0; i < TTF_MS__MAX; i++)
		stats__free(hs->st[i]);
	free(hs);
}

int msg_hop_stats__add(struct msg_hop_stats *hs, const struct ttf_attrib *a)
{
	const struct ttf_msg_chain *c = a ? a->msg : NULL;
	int err = 0;

	if (!c)
		return 0;
	hs->n++;
	hs->n_inferred += c->inferred;
	if (c->n_procs > hs->max_procs)
		hs->max_procs = c->n_procs;
	for (int i = 0; i < c->n_stages; i++)
		err |= stats__add(hs->st[c->stage[i]], c->stage_ns[c->stage[i]] / 1e6);
	return err ? -ENOMEM : 0;
}

static cJSON *hop(cJSON *arr, const char *name, uint32_t pid, const char *comm, int *err)
{
	cJSON *h = cJSON_CreateObject();

	if (!h || !cJSON_AddItemToArray(arr, h)) {
		cJSON_Delete(h);
		*err = 1;
		return NULL;
	}
	*err |= !cJSON_AddStringToObject(h, "hop", name);
	*err |= !(comm[0] ? cJSON_AddStringToObject(h, "comm", comm) :
		  cJSON_AddNullToObject(h, "comm"));
	*err |= !cJSON_AddNumberToObject(h, "pid", pid);
	return h;
}

/* What the scheduler shows of the taking thread in a take window (user/model/hops/msg.h). */
/* Why this chain joined its request: the order-and-timing join, or the id rule. */
static const char *join_why(const struct ttf_msg_chain *c)
{
	static const char *const by_id[] = {
		[TTF_MID_EXACT] = "its response id in the ZMQ messages of both processes",
		[TTF_MID_SUFFIX] = "its response id, with a suffix (vLLM's -<8 hex>, -<n>-<8 hex>), "
				   "in the ZMQ messages of both processes",
		[TTF_MID_CHILD] = "its response id's n>1 children (<n>_ before it) in the ZMQ "
				  "messages of both processes",
		[TTF_MID_CORE] = "the 32-hex or UUID core of its response id in the ZMQ messages "
				 "of both processes",
	};

	if (c->inferred && c->id_incomplete)
		return "order and timing (its id's messages were incomplete): the frontend's next "
		       "message after its read of the request, that message's other end, and the "
		       "newest message the frontend read from the engine before the first token";
	if (c->inferred)
		return "order and timing: the frontend's next message after its read of the "
		       "request, that message's other end, and the newest message the frontend "
		       "read from the engine before the first token";
	return c->id_rule <= TTF_MID_CORE ? by_id[c->id_rule] : by_id[TTF_MID_CORE];
}

static void take_gap(cJSON *h, const struct ttf_msg_take_gap *g, const char *stage, int *err)
{
	cJSON *t;

	if (!h || !g->valid)
		return;
	t = cJSON_AddObjectToObject(h, "take_gap_ms");
	*err |= !t;
	if (!t)
		return;
	*err |= !cJSON_AddStringToObject(t, "stage", stage);
	*err |= !cJSON_AddNumberToObject(t, "tid", g->tid);
	*err |= !cJSON_AddNumberToObject(t, "on_cpu", ms((int64_t)g->ov.on_cpu_ns));
	*err |= !cJSON_AddNumberToObject(t, "runnable", ms((int64_t)g->ov.runnable_ns));
	*err |= !cJSON_AddNumberToObject(t, "blocked", ms((int64_t)g->ov.blocked_ns));
	*err |= !cJSON_AddNumberToObject(t, "unknown", ms((int64_t)g->ov.unknown_ns));
}

void report_msg_hops__json(cJSON *o, const struct ttf_attrib *a, int *err)
{
	const struct ttf_msg_chain *c = a ? a->msg : NULL;
	cJSON *arr, *h, *st;

	if (!c || a->hops)	/* behind a gateway: the gateway's chain is the record's */
		return;
	arr = cJSON_AddArrayToObject(o, "hops");
	*err |= !arr;
	for (int k = 0; arr && k < c->n_procs; k++) {
		h = hop(arr, c->role[k], c->tgid[k], c->comm[k], err);
		if (k < TTF_MT__MAX)	/* frontend: emit, engine: queue */
			take_gap(h, &c->take[k], k == TTF_MT_FRONTEND ? "emit" : "queue", err);
		if (!h || !k)
			continue;
		*err |= !cJSON_AddStringToObject(h, "join", c->inferred ? "inferred" : "exact");
		*err |= !cJSON_AddStringToObject(h, "join_why", join_why(c));
		if (k == 1) {
			*err |= !cJSON_AddStringToObject(h, "split", "inferred");
			*err |= !cJSON_AddStringToObject(h, "inferred_by", "one output message per "
							 "engine step");
			if (!c->inferred)	/* by order: which messages named it is unknown */
				*err |= !cJSON_AddNumberToObject(h, "output_messages", c->out_msgs);
			if (c->order_ambiguous)	/* D17: maybe another connection's message */
				*err |= !cJSON_AddTrueToObject(h, "join_ambiguous");
		} else {
			*err |= !cJSON_AddStringToObject(h, "split", "measured");
		}
	}
	if (arr && c->stack[0])
		*err |= !cJSON_AddStringToObject(o, "hop_stack", c->stack);
	st = cJSON_AddObjectToObject(o, "hop_stages_ms");
	*err |= !st;
	for (int i = 0; st && i < c->n_stages; i++)
		*err |= !cJSON_AddNumberToObject(st, ttf_msg_stage_name(c->stage[i]),
						 ms(c->stage_ns[c->stage[i]]));
}

/* "ROLE (COMM pid N)", or "ROLE (pid N)" with the name unknown. */
static void proc_label(FILE *out, const struct ttf_msg_chain *c, int k)
{
	if (c->comm[k][0])
		fprintf(out, "%s (%s pid %u)", c->role[k], c->comm[k], c->tgid[k]);
	else
		fprintf(out, "%s (pid %u)", c->role[k], c->tgid[k]);
}

void report_msg_hops__text_line(FILE *out, const struct ttf_attrib *a)
{
	const struct ttf_msg_chain *c = a ? a->msg : NULL;

	if (!c || a->hops)
		return;
	fputs("    hops(ms): ", out);
	proc_label(out, c, 0);
	fprintf(out, " frontend %.2f | ipc_in %.2f | ", c->stage_ns[TTF_MS_FRONTEND] / 1e6,
		c->stage_ns[TTF_MS_IPC_IN] / 1e6);
	proc_label(out, c, 1);
	fprintf(out, " queue %.2f prefill %.2f | ipc_out %.2f | ", c->stage_ns[TTF_MS_QUEUE] / 1e6,
		c->stage_ns[TTF_MS_PREFILL] / 1e6, c->stage_ns[TTF_MS_IPC_OUT] / 1e6);
	if (c->n_procs >= 3) {
		proc_label(out, c, 2);
		fprintf(out, " detokenize %.2f | ipc_back %.2f | ",
			c->stage_ns[TTF_MS_DETOKENIZE] / 1e6, c->stage_ns[TTF_MS_IPC_BACK] / 1e6);
	}
	fprintf(out, "emit %.2f [join %s, queue/prefill inferred]\n",
		c->stage_ns[TTF_MS_EMIT] / 1e6, !c->inferred ? "exact" :
		c->order_ambiguous ? "inferred by order, ambiguous" : "inferred by order");
}

/* The stage with the largest P95. */
static int tail_stage(const struct msg_hop_stats *hs)
{
	int best = -1;
	double v = -1;

	for (int i = 0; i < TTF_MS__MAX; i++) {
		double p = stats__count(hs->st[i]) ? stats__percentile(hs->st[i], 95) : -1;

		if (p > v) {
			v = p;
			best = i;
		}
	}
	return best;
}

void report_msg_hops__summary_text(FILE *out, const struct msg_hop_stats *hs)
{
	int t;

	if (!hs || !hs->n)
		return;
	fprintf(out, "Message hops: %llu requests split across their %s (", (unsigned long long)hs->n,
		hs->max_procs > 2 ? "processes" : "frontend and engine");
	if (hs->n_inferred)
		fprintf(out, "%llu joined by request id, %llu by order and timing; ",
			(unsigned long long)(hs->n - hs->n_inferred),
			(unsigned long long)hs->n_inferred);
	else
		fputs("joined by request id; ", out);
	fputs("queue/prefill inferred from output messages):\n", out);
	for (int j = 0; j < TTF_MS__MAX; j++) {
		enum ttf_msg_stage i = ttf_msg_stage_at(j);

		if (!stats__count(hs->st[i]))	/* a stage of no chain seen */
			continue;
		fprintf(out, "  %-13s", ttf_msg_stage_name(i));
		for (size_t k = 0; k < 3; k++)
			fprintf(out, " %s %9.3f", pct_keys[k], stats__percentile(hs->st[i], pcts[k]));
		fputc('\n', out);
	}
	t = tail_stage(hs);
	if (t >= 0)
		fprintf(out, "  the tail (P95) is longest in: %s\n", ttf_msg_stage_name(t));
}

void report_msg_hops__summary_json(cJSON *o, const struct msg_hop_stats *hs, int *err)
{
	cJSON *h, *st;
	int t;

	if (!hs || !hs->n)
		return;
	h = cJSON_AddObjectToObject(o, "msg_hops");
	*err |= !h;
	if (!h)
		return;
	*err |= !cJSON_AddNumberToObject(h, "requests", (double)hs->n);
	st = cJSON_AddObjectToObject(h, "stages_ms");
	*err |= !st;
	for (int j = 0; st && j < TTF_MS__MAX; j++) {
		enum ttf_msg_stage i = ttf_msg_stage_at(j);
		cJSON *s;

		if (!stats__count(hs->st[i]))
			continue;
		s = cJSON_AddObjectToObject(st, ttf_msg_stage_name(i));
		*err |= !s;
		for (size_t k = 0; s && k < 3; k++)
			*err |= !cJSON_AddNumberToObject(s, pct_keys[k], round(1e3 *
				stats__percentile(hs->st[i], pcts[k])) / 1e3);
	}
	t = tail_stage(hs);
	*err |= !cJSON_AddStringToObject(h, "tail_stage", t >= 0 ? ttf_msg_stage_name(t) : "");
}
