// SPDX-License-Identifier: GPL-2.0-only
/* Message hops: client requests split across a ZMQ hop by request id (msg_hops.h). */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <uthash.h>
#include "user/lib/log.h"
#include "user/model/msg_hops.h"

/* Crossings kept per id: frontend OUT, engine IN, engine OUT, frontend IN, and spares. */
#define CROSSINGS 6

struct crossing {
	uint64_t ts_ns;		/* the first message of this process and direction naming the id */
	uint32_t tgid;
	uint8_t dir;		/* enum zmtp_dir */
	uint32_t n;		/* messages of this process and direction naming it */
};

struct id_entry {
	char id[ZMTP_ID_BYTES];
	struct crossing c[CROSSINGS];
	int n_c;
	UT_hash_handle hh;
};

struct out_time {
	uint64_t ts_ns;
	uint32_t tgid;
};

struct msg_hops {
	struct id_entry *ids;		/* uthash, oldest first */
	unsigned int n_ids;
	struct out_time outs[MSG_HOPS_OUTS];	/* every OUT message, ring */
	size_t n_outs, outs_head;
	struct msg_hops_stats stats;
};

static const char *const stage_names[TTF_MS__MAX] = {
	[TTF_MS_NET_IN] = "net_in",	[TTF_MS_READ_WAIT] = "read_wait",
	[TTF_MS_FRONTEND] = "frontend",	[TTF_MS_IPC_IN] = "ipc_in",
	[TTF_MS_QUEUE] = "queue",	[TTF_MS_PREFILL] = "prefill",
	[TTF_MS_IPC_OUT] = "ipc_out",	[TTF_MS_EMIT] = "emit",
	[TTF_MS_NET_OUT] = "net_out",
};

const char *ttf_msg_stage_name(enum ttf_msg_stage s)
{
	return s >= 0 && s < TTF_MS__MAX ? stage_names[s] : "?";
}

int ttf_msg_chain_stages(const struct ttf_msg_chain *c, enum ttf_msg_stage *out)
{
	(void)c;	/* one shape so far: frontend -> engine -> frontend */
	for (int i = 0; i < TTF_MS__MAX; i++)
		out[i] = i;
	return TTF_MS__MAX;
}

const char *ttf_msg_stage_hop(const struct ttf_msg_chain *c, enum ttf_msg_stage s,
			      uint32_t *tgid, const char **comm)
{
	*tgid = 0;
	*comm = "";
	switch (s) {
	case TTF_MS_NET_IN:
	case TTF_MS_NET_OUT:
		return "net";
	case TTF_MS_IPC_IN:
	case TTF_MS_IPC_OUT:
		return "ipc";
	case TTF_MS_QUEUE:
	case TTF_MS_PREFILL:
		*tgid = c->eng_tgid;
		*comm = c->eng_comm;
		return "engine";
	default:	/* read_wait, frontend, emit: in the frontend's process */
		*tgid = c->fe_tgid;
		*comm = c->fe_comm;
		return "frontend";
	}
}

struct msg_hops *msg_hops__new(void)
{
	return calloc(1, sizeof(struct msg_hops));
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

static struct id_entry *entry(struct msg_hops *mh, const char *id)
{
	struct id_entry *e;

	HASH_FIND_STR(mh->ids, id, e);
	if (e)
		return e;
	if (mh->n_ids == MSG_HOPS_IDS) {	/* the oldest: its request is long gone */
		mh->stats.ids_evicted++;
		drop(mh, mh->ids);
	}
	e = calloc(1, sizeof(*e));
	if (!e)
		return NULL;
	snprintf(e->id, sizeof(e->id), "%s", id);
	HASH_ADD_STR(mh->ids, id, e);
	mh->n_ids++;
	mh->stats.ids++;
	return e;
}

int msg_hops__on_msg(struct msg_hops *mh, const struct ttf_zmtp_msg *m)
{
	int err = 0;

	if (m->dir == ZMTP_DIR_OUT) {
		struct out_time *o;

		if (mh->n_outs < MSG_HOPS_OUTS) {
			o = &mh->outs[mh->n_outs++];
		} else {
			o = &mh->outs[mh->outs_head];
			mh->outs_head = (mh->outs_head + 1) % MSG_HOPS_OUTS;
		}
		*o = (struct out_time){ m->ts_ns, m->tgid };
	}
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

/* The newest output message of tgid before t_ns; 0 none kept. */
static uint64_t out_before(const struct msg_hops *mh, uint32_t tgid, uint64_t t_ns)
{
	uint64_t best = 0;

	for (size_t i = 0; i < mh->n_outs; i++)
		if (mh->outs[i].tgid == tgid && mh->outs[i].ts_ns < t_ns && mh->outs[i].ts_ns > best)
			best = mh->outs[i].ts_ns;
	return best;
}

static uint64_t clamp(uint64_t t, uint64_t lo, uint64_t hi)
{
	return t < lo ? lo : t > hi ? hi : t;
}

int msg_hops__join(struct msg_hops *mh, const struct ttf_request *r,
		   const struct ttf_req_metrics *m, const struct ttf_attrib *a,
		   struct ttf_msg_chain *out)
{
	const struct crossing *fe_out, *eng_in, *eng_out, *fe_in;
	const struct ttf_token_event *ev;
	struct id_entry *e;
	uint64_t b[TTF_MS__MAX + 1], prev;

	if (!r->resp_id[0] || !r->n_events || !a || !a->valid || m->ttft_ns < 0)
		return 0;
	HASH_FIND_STR(mh->ids, r->resp_id, e);
	if (!e)
		return 0;
	fe_out = find(e, r->tgid, 1, ZMTP_DIR_OUT);
	eng_in = find(e, r->tgid, 0, ZMTP_DIR_IN);
	fe_in = find(e, r->tgid, 1, ZMTP_DIR_IN);
	eng_out = eng_in ? find(e, eng_in->tgid, 1, ZMTP_DIR_OUT) : NULL;
	if (!fe_out || !eng_in || !eng_out || !fe_in) {
		mh->stats.unjoined++;
		ttf_debug("msg hops: request %llu: its id's messages are incomplete (%d crossings)",
			  (unsigned long long)r->id, e->n_c);
		drop(mh, e);
		return 0;
	}
	memset(out, 0, sizeof(*out));
	out->fe_tgid = r->tgid;
	snprintf(out->fe_comm, sizeof(out->fe_comm), "%.15s", r->comm);
	out->eng_tgid = eng_in->tgid;
	out->out_msgs = eng_out->n;
	ev = &r->events[0];
	b[TTF_MS_NET_IN] = m->t_start_ns;
	b[TTF_MS_READ_WAIT] = a->bound_ns[1];
	b[TTF_MS_FRONTEND] = a->bound_ns[2];
	b[TTF_MS_IPC_IN] = fe_out->ts_ns;
	b[TTF_MS_QUEUE] = eng_in->ts_ns;
	prev = out_before(mh, eng_in->tgid, eng_out->ts_ns);
	b[TTF_MS_PREFILL] = prev > eng_in->ts_ns ? prev : eng_in->ts_ns;
	b[TTF_MS_IPC_OUT] = eng_out->ts_ns;
	b[TTF_MS_EMIT] = fe_in->ts_ns;
	b[TTF_MS_NET_OUT] = ev->write_start_ns ? ev->write_start_ns : ev->write_ns;
	b[TTF_MS__MAX] = m->t_first_token_ns;
	for (int i = 1; i <= TTF_MS__MAX; i++)
		b[i] = clamp(b[i], b[i - 1], m->t_first_token_ns);
	for (int i = 0; i < TTF_MS__MAX; i++)
		out->stage_ns[i] = (int64_t)(b[i + 1] - b[i]);
	out->take[TTF_MT_FRONTEND] = (struct ttf_msg_take_gap){
		.tid = r->tx_tid, .start_ns = b[TTF_MS_EMIT], .end_ns = b[TTF_MS_NET_OUT] };
	out->take[TTF_MT_ENGINE] = (struct ttf_msg_take_gap){
		.tid = eng_in->tgid, .start_ns = b[TTF_MS_QUEUE], .end_ns = b[TTF_MS_PREFILL] };
	mh->stats.joined++;
	drop(mh, e);
	return 1;
}

const struct msg_hops_stats *msg_hops__stats(const struct msg_hops *mh)
{
	return &mh->stats;
}
