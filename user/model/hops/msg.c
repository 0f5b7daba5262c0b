// SPDX-License-Identifier: GPL-2.0-only
/* Message hops: client requests split across a ZMQ hop by request id (msg.h). */
#include <errno.h>
#include <stdlib.h>
#include "user/lib/log.h"
#include "user/model/hops/msg_impl.h"

struct msg_hops *msg_hops__new(void)
{
	return calloc(1, sizeof(struct msg_hops));
}

void msg_hops__set_stacks(struct msg_hops *mh, const struct stack_profiles *sp)
{
	if (sp)
		mh->stacks = *sp;
	else
		memset(&mh->stacks, 0, sizeof(mh->stacks));
}

static void drop(struct msg_hops *mh, struct id_entry *e)
{
	HASH_DEL(mh->ids, e);
	free(e);
	mh->n_ids--;
}

void msg_hops__free(struct msg_hops *mh)
{
	struct id_entry *e, *tmp;

	if (!mh)
		return;
	HASH_ITER(hh, mh->ids, e, tmp)
		drop(mh, e);
	free(mh);
}

/* The table's key of id: its core, or the id itself when it has none. */
static const char *id_key(const char *id, char *key)
{
	return zmtp_id_core(id, key, ZMTP_ID_BYTES) ? key : id;
}

static void remember(struct id_entry *e, const char *id)
{
	for (int i = 0; i < SEEN_IDS; i++) {
		if (!e->seen[i][0]) {
			snprintf(e->seen[i], sizeof(e->seen[i]), "%s", id);
			return;
		}
		if (!strcmp(e->seen[i], id))
			return;
	}
}

static struct id_entry *entry(struct msg_hops *mh, const char *id)
{
	char key_room[ZMTP_ID_BYTES];
	const char *key = id_key(id, key_room);
	struct id_entry *e;

	HASH_FIND_STR(mh->ids, key, e);
	if (e)
		return e;
	if (mh->n_ids == MSG_HOPS_IDS) {	/* the oldest: its request is long gone */
		mh->stats.ids_evicted++;
		drop(mh, mh->ids);
	}
	e = calloc(1, sizeof(*e));
	if (!e)
		return NULL;
	snprintf(e->id, sizeof(e->id), "%s", key);
	HASH_ADD_STR(mh->ids, id, e);
	mh->n_ids++;
	mh->stats.ids++;
	return e;
}

static uint64_t absdiff(uint64_t a, uint64_t b)
{
	return a > b ? a - b : b - a;
}

/* Pair x with the oldest unpaired message at the other end of its connection. */
static void pair(struct msg_hops *mh, struct msg_time *x)
{
	struct msg_time *best = NULL;
	uint64_t lo = x->n > MSG_HOPS_PAIR_SCAN ? x->n - MSG_HOPS_PAIR_SCAN : 0;

	for (uint64_t k = x->n; k-- > lo;) {
		struct msg_time *y = msg_at(mh, k);

		if (y && !y->peer && y->dir != x->dir && y->tgid != x->tgid &&
		    y->bytes == x->bytes && absdiff(y->ts_ns, x->ts_ns) <= MSG_HOPS_PAIR_NS &&
		    same_conn_swapped(&x->addr, &y->addr))
			best = y;
	}
	if (!best)
		return;
	best->peer = x->n + 1;
	x->peer = best->n + 1;
}

void msg_hops__on_read(struct msg_hops *mh, uint32_t tgid, uint64_t req_id, uint64_t read_ns)
{
	if (mh->n_reads == MSG_HOPS_READS) {	/* the oldest: no message will take it now */
		mh->stats.reads_dropped++;
		memmove(&mh->reads[0], &mh->reads[1], (MSG_HOPS_READS - 1) * sizeof(mh->reads[0]));
		mh->n_reads--;
	}
	mh->reads[mh->n_reads++] = (struct pending_read){ req_id, read_ns, tgid };
}

void msg_hops__request_done(struct msg_hops *mh, uint64_t req_id)
{
	for (size_t i = 0; i < mh->n_reads; i++)
		if (mh->reads[i].req_id == req_id) {
			memmove(&mh->reads[i], &mh->reads[i + 1],
				(mh->n_reads - i - 1) * sizeof(mh->reads[0]));
			mh->n_reads--;
			return;
		}
}

int msg_hops__on_msg(struct msg_hops *mh, const struct ttf_zmtp_msg *m)
{
	struct msg_time *x = &mh->msgs[mh->n_msgs % MSG_HOPS_MSGS];
	int err = 0;

	ttf_debug("msg hops: pid %u %s at %llu ns: %u ids, first %s", m->tgid,
		  m->dir == ZMTP_DIR_OUT ? "out" : "in", (unsigned long long)m->ts_ns,
		  m->n_ids + m->n_more_ids, m->n_ids ? m->ids[0] : "-");

	*x = (struct msg_time){ .n = mh->n_msgs++, .ts_ns = m->ts_ns, .bytes = m->bytes,
				.addr = m->addr, .tgid = m->tgid, .dir = m->dir,
				.named = m->n_ids + m->n_more_ids > 0 };
	pair(mh, x);
	if (m->dir == ZMTP_DIR_OUT)
		msg_order__bind(mh, x);
	for (uint32_t i = 0; i < m->n_ids + m->n_more_ids; i++) {
		const char *id = i < m->n_ids ? m->ids[i] : m->more_ids[i - m->n_ids];
		struct id_entry *e;
		int k;

		e = entry(mh, id);
		if (!e) {
			mh->stats.ids_evicted++;
			err = -ENOMEM;
			continue;
		}
		remember(e, id);
		if (e->last_msg == x->n + 1)
			continue;	/* this message named it twice (vLLM: with and without suffix) */
		e->last_msg = x->n + 1;
		for (k = 0; k < e->n_c; k++)
			if (e->c[k].tgid == m->tgid && e->c[k].dir == m->dir)
				break;
		if (k < e->n_c) {
			e->c[k].n++;
			continue;
		}
		if (e->n_c == CROSSINGS)
			continue;	/* more processes than a hop has: the first are kept */
		e->c[e->n_c++] = (struct crossing){ m->ts_ns, m->tgid, m->dir, 1 };
	}
	return err;
}

static const struct crossing *find(const struct id_entry *e, uint32_t tgid, int same, uint8_t dir)
{
	for (int k = 0; k < e->n_c; k++)
		if (e->c[k].dir == dir && (same ? e->c[k].tgid == tgid : e->c[k].tgid != tgid))
			return &e->c[k];
	return NULL;
}

/*
 * The newest output message of tgid before t_ns; 0 none kept. named: only
 * one that named a request (the engine's outputs to its frontends), not an
 * id-less one such as vLLM's request counts to its data-parallel
 * coordinator, written after the step's outputs and late by however long
 * the engine's I/O thread waited in between.
 */
static uint64_t out_before(const struct msg_hops *mh, uint32_t tgid, uint64_t t_ns, int named)
{
	uint64_t best = 0;
	size_t n = mh->n_msgs < MSG_HOPS_MSGS ? (size_t)mh->n_msgs : MSG_HOPS_MSGS;

	for (size_t i = 0; i < n; i++) {
		const struct msg_time *x = &mh->msgs[i];

		if (x->dir == ZMTP_DIR_OUT && x->tgid == tgid && x->ts_ns < t_ns && x->ts_ns > best &&
		    (x->named || !named))
			best = x->ts_ns;
	}
	return best;
}

static uint64_t clamp(uint64_t t, uint64_t lo, uint64_t hi)
{
	return t < lo ? lo : t > hi ? hi : t;
}

/* *out_ns = in_ns where the crossing out was stamped after the crossing in; 1 then. */
static int bound_out(uint64_t *out_ns, uint64_t in_ns)
{
	if (*out_ns <= in_ns)
		return 0;
	*out_ns = in_ns;
	return 1;
}

/*
 * The processes after the frontend fe, in the order they first read a
 * message naming the id: in[k], out[k] their first IN and OUT crossings.
 * Returns how many (1 .. MSG_HOPS_PROCS-1), 0 when one of them wrote no
 * message naming it or none read one, -1 when more processes read it than
 * a chain has.
 */
static int chain_of(const struct id_entry *e, uint32_t fe, const struct crossing **in,
		    const struct crossing **out)
{
	int n = 0;

	for (;;) {
		const struct crossing *best = NULL;

		for (int k = 0; k < e->n_c; k++) {
			const struct crossing *c = &e->c[k];
			int seen = c->tgid == fe;

			for (int j = 0; j < n; j++)
				seen |= in[j]->tgid == c->tgid;
			if (c->dir == ZMTP_DIR_IN && !seen && (!best || c->ts_ns < best->ts_ns))
				best = c;
		}
		if (!best)
			return n;
		if (n == MSG_HOPS_PROCS - 1)
			return -1;
		in[n] = best;
		out[n] = find(e, best->tgid, 1, ZMTP_DIR_OUT);
		if (!out[n])
			return 0;
		n++;
	}
}

static void name_roles(struct ttf_msg_chain *c, const struct stack_profile *sp)
{
	for (int k = 0; k < c->n_procs; k++)
		snprintf(c->role[k], sizeof(c->role[k]), "%s",
			 sp ? sp->role[k] : ttf_msg_proc_role(k));
	snprintf(c->stack, sizeof(c->stack), "%s", sp ? sp->name : "");
}
/* The split of r over the crossings h (the id join or the inferred one). */
static void split(struct msg_hops *mh, const struct ttf_request *r,
		  const struct ttf_req_metrics *m, const struct ttf_attrib *a,
		  const struct hop_times *h, struct ttf_msg_chain *out)
{
	const struct ttf_token_event *ev = &r->events[0];
	uint64_t end[TTF_MS__MAX], from[TTF_MS__MAX], prev, t;
	int n = h->n, late;

	memset(out, 0, sizeof(*out));
	out->fe_tgid = out->tgid[0] = r->tgid;
	snprintf(out->comm[0], sizeof(out->comm[0]), "%.15s", r->comm);
	out->eng_tgid = h->tgid[0];
	for (int k = 0; k < n; k++)
		out->tgid[k + 1] = h->tgid[k];
	out->n_procs = (uint8_t)(n + 1);
	name_roles(out, stack_profiles__match(&mh->stacks, n + 1, r->resp_id));
	out->out_msgs = h->out_msgs;
	/* each stage's end, in time order; the ones not in this chain are left out */
	end[TTF_MS_NET_IN] = a->bound_ns[1];
	end[TTF_MS_READ_WAIT] = a->bound_ns[2];
	end[TTF_MS_FRONTEND] = h->fe_out_ns;
	end[TTF_MS_IPC_IN] = h->in_ns[0];
	prev = out_before(mh, h->tgid[0], h->out_ns[0], h->by_id);
	end[TTF_MS_QUEUE] = prev > h->in_ns[0] ? prev : h->in_ns[0];
	end[TTF_MS_PREFILL] = h->out_ns[0];
	end[TTF_MS_IPC_OUT] = n > 1 ? h->in_ns[1] : h->fe_in_ns;
	end[TTF_MS_DETOKENIZE] = n > 1 ? h->out_ns[1] : 0;
	end[TTF_MS_IPC_BACK] = n > 1 ? h->fe_in_ns : 0;
	end[TTF_MS_EMIT] = ev->write_start_ns ? ev->write_start_ns : ev->write_ns;
	end[TTF_MS_NET_OUT] = m->t_first_token_ns;
	/*
	 * A message leaves before it is read, but a crossing out is stamped when
	 * the sender's syscall returns: a sender preempted after its bytes were
	 * queued returns after the reader has them (us apart on 2 CPUs, 4 ms in
	 * one CI run; or its first message was missed). Those bytes left by the
	 * read, so the stage ends there.
	 */
	late = bound_out(&end[TTF_MS_FRONTEND], h->in_ns[0]);
	late |= bound_out(&end[TTF_MS_PREFILL], n > 1 ? h->in_ns[1] : h->fe_in_ns);
	if (n > 1)
		late |= bound_out(&end[TTF_MS_DETOKENIZE], h->fe_in_ns);
	mh->stats.out_after_in += late;
	if (late)
		ttf_debug("msg hops: request %llu (%s): a first message out was stamped after the "
			  "next process read it", (unsigned long long)r->id, r->resp_id);
	t = m->t_start_ns;
	for (int i = 0; i < TTF_MS__MAX; i++) {
		enum ttf_msg_stage s = ttf_msg_stage_at(i);
		uint64_t x;

		if (n == 1 && (s == TTF_MS_DETOKENIZE || s == TTF_MS_IPC_BACK))
			continue;
		x = clamp(end[s], t, m->t_first_token_ns);
		from[s] = t;
		out->stage_ns[s] = (int64_t)(x - t);
		out->stage[out->n_stages++] = (uint8_t)s;
		t = x;
	}
	/* the stages after a crossing in whose taking thread is known (take windows) */
	out->take[TTF_MT_FRONTEND] = (struct ttf_msg_take_gap){ .tid = r->tx_tid,
		.start_ns = from[TTF_MS_EMIT],
		.end_ns = from[TTF_MS_EMIT] + (uint64_t)out->stage_ns[TTF_MS_EMIT] };
	out->take[TTF_MT_ENGINE] = (struct ttf_msg_take_gap){ .tid = h->tgid[0],
		.start_ns = from[TTF_MS_QUEUE],
		.end_ns = from[TTF_MS_QUEUE] + (uint64_t)out->stage_ns[TTF_MS_QUEUE] };
}
/*
 * The loosest relation between the response id and the distinct ids the
 * messages named (its entry's key is their shared core).
 */
static enum ttf_msg_id_rule id_rule(const struct id_entry *e, const char *resp_id)
{
	enum ttf_msg_id_rule rule = TTF_MID_EXACT, r;
	size_t n = strlen(resp_id);

	for (int i = 0; i < SEEN_IDS && e->seen[i][0]; i++) {
		const char *s = e->seen[i], *at = strstr(s, resp_id);

		if (!strcmp(s, resp_id))
			r = TTF_MID_EXACT;
		else if (at == s && s[n] == '-')
			r = TTF_MID_SUFFIX;
		else if (at > s && at[-1] == '_')
			r = TTF_MID_CHILD;
		else
			r = TTF_MID_CORE;
		if (r > rule)
			rule = r;
	}
	return rule;
}

/* By order and timing (D17); incomplete: its id was seen, its messages were not all. */
static int join_inferred(struct msg_hops *mh, const struct ttf_request *r,
			 const struct ttf_req_metrics *m, const struct ttf_attrib *a,
			 struct ttf_msg_chain *out, int incomplete)
{
	struct hop_times h;

	if (!msg_order__times(mh, r, &h)) {
		mh->stats.unjoined += incomplete;
		return 0;
	}
	split(mh, r, m, a, &h, out);
	out->inferred = 1;
	out->id_incomplete = (uint8_t)incomplete;
	out->order_ambiguous = (uint8_t)h.order_ambiguous;
	mh->stats.joined_inferred++;
	mh->stats.inferred_ambiguous += h.order_ambiguous;
	mh->stats.inferred_id_incomplete += incomplete;
	return 1;
}

int msg_hops__join(struct msg_hops *mh, const struct ttf_request *r,
		   const struct ttf_req_metrics *m, const struct ttf_attrib *a,
		   struct ttf_msg_chain *out)
{
	char key_room[ZMTP_ID_BYTES];
	const struct crossing *fe_out, *fe_in, *in[MSG_HOPS_PROCS - 1], *eo[MSG_HOPS_PROCS - 1];
	struct hop_times h;
	struct id_entry *e = NULL;
	int n;

	if (!r->n_events || !a || !a->valid || m->ttft_ns < 0)
		return 0;
	if (r->resp_id[0])
		HASH_FIND_STR(mh->ids, id_key(r->resp_id, key_room), e);
	if (!e)
		return join_inferred(mh, r, m, a, out, 0);
	fe_out = find(e, r->tgid, 1, ZMTP_DIR_OUT);
	fe_in = find(e, r->tgid, 1, ZMTP_DIR_IN);
	n = chain_of(e, r->tgid, in, eo);
	if (!fe_out || !fe_in || n <= 0) {
		ttf_debug("msg hops: request %llu: its id's messages are %s (%d crossings)",
			  (unsigned long long)r->id, n < 0 ? "read by more processes than a chain has" :
			  "incomplete", e->n_c);
		drop(mh, e);
		/* not straight to unjoined: the order-and-timing join may still find it */
		return join_inferred(mh, r, m, a, out, 1);
	}
	h = (struct hop_times){ .fe_out_ns = fe_out->ts_ns, .fe_in_ns = fe_in->ts_ns,
				.out_msgs = eo[0]->n, .n = n, .by_id = 1 };
	for (int k = 0; k < n; k++) {
		h.in_ns[k] = in[k]->ts_ns;
		h.out_ns[k] = eo[k]->ts_ns;
		h.tgid[k] = in[k]->tgid;
	}
	split(mh, r, m, a, &h, out);
	out->id_rule = id_rule(e, r->resp_id);
	mh->stats.joined++;
	mh->stats.joined_by_rule[out->id_rule]++;
	drop(mh, e);
	return 1;
}

const struct msg_hops_stats *msg_hops__stats(const struct msg_hops *mh)
{
	return &mh->stats;
}
