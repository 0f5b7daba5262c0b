// SPDX-License-Identifier: GPL-2.0-only
/* Message hops: client requests split across a ZMQ hop by request id (msg.h). */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <uthash.h>
#include "user/lib/log.h"
#include "user/model/hops/msg.h"

/*
 * Crossings kept per id: frontend OUT and IN, IN and OUT of each process
 * after it (MSG_HOPS_PROCS), and two spares (a process more than a chain has).
 */
#define CROSSINGS (2 * MSG_HOPS_PROCS + 2)

/*
 * Outputs a join by order may move past the timing's choice towards the
 * first token (advance_if_read): a bound on the walk, several engine steps.
 */
#define MSG_HOPS_ADVANCE_MAX 8

struct crossing {
	uint64_t ts_ns;		/* the first message of this process and direction naming the id */
	uint32_t tgid;
	uint8_t dir;		/* enum zmtp_dir */
	uint32_t n;		/* messages of this process and direction naming it */
};

#define SEEN_IDS 4	/* distinct ids kept per entry, to name the join's rule */

/* One request's messages, by the core of the ids they named (zmtp_id_core). */
struct id_entry {
	char id[ZMTP_ID_BYTES];		/* the key: the ids' core */
	char seen[SEEN_IDS][ZMTP_ID_BYTES];	/* the first distinct ids naming it */
	uint64_t last_msg;		/* 1 + the number of the last message counted */
	struct crossing c[CROSSINGS];
	int n_c;
	UT_hash_handle hh;
};

/* One message's crossing, ids or not (ring msgs, slot n % MSG_HOPS_MSGS). */
struct msg_time {
	uint64_t n;		/* its number: messages seen before it */
	uint64_t ts_ns;
	uint64_t bytes;		/* wire bytes: both ends of a message see the same */
	uint64_t req_id;	/* OUT: the client request it carried, by order (D17); 0 none */
	uint64_t peer;		/* 1 + the number of its other end's message; 0 unpaired */
	struct ttf_conn_addr addr;
	uint32_t tgid;
	uint8_t dir;		/* enum zmtp_dir */
};

struct pending_read {
	uint64_t req_id, read_ns;
	uint32_t tgid;
};

struct msg_hops {
	struct id_entry *ids;		/* uthash, oldest first */
	unsigned int n_ids;
	struct msg_time msgs[MSG_HOPS_MSGS];	/* every message, ring */
	uint64_t n_msgs;			/* messages seen */
	struct pending_read reads[MSG_HOPS_READS];	/* oldest first */
	size_t n_reads;
	struct msg_hops_stats stats;
	struct stack_profiles stacks;
};

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

/* Message number n, NULL when the ring no longer has it (or never had). */
static struct msg_time *msg_at(struct msg_hops *mh, uint64_t n)
{
	struct msg_time *x = &mh->msgs[n % MSG_HOPS_MSGS];

	return n < mh->n_msgs && x->n == n ? x : NULL;
}

/* Are a and b the two ends of one connection (each one's addresses the other's swapped)? */
static int same_conn_swapped(const struct ttf_conn_addr *a, const struct ttf_conn_addr *b)
{
	static const uint8_t zero[16];

	return a->family && a->family == b->family && a->lport == b->rport &&
	       a->rport == b->lport && !memcmp(a->laddr, b->raddr, sizeof(a->laddr)) &&
	       !memcmp(a->raddr, b->laddr, sizeof(a->raddr)) &&
	       memcmp(a->raddr, zero, sizeof(zero));	/* a unix peer not yet known: no pair */
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

/* An OUT message of x->tgid carries the oldest request it read before it (D17). */
static void bind_read(struct msg_hops *mh, struct msg_time *x)
{
	for (size_t i = 0; i < mh->n_reads; i++) {
		if (mh->reads[i].tgid != x->tgid || mh->reads[i].read_ns > x->ts_ns)
			continue;
		x->req_id = mh->reads[i].req_id;
		memmove(&mh->reads[i], &mh->reads[i + 1], (mh->n_reads - i - 1) * sizeof(mh->reads[0]));
		mh->n_reads--;
		return;
	}
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
				.addr = m->addr, .tgid = m->tgid, .dir = m->dir };
	pair(mh, x);
	if (m->dir == ZMTP_DIR_OUT)
		bind_read(mh, x);
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

/* The newest output message of tgid before t_ns; 0 none kept. */
static uint64_t out_before(const struct msg_hops *mh, uint32_t tgid, uint64_t t_ns)
{
	uint64_t best = 0;
	size_t n = mh->n_msgs < MSG_HOPS_MSGS ? (size_t)mh->n_msgs : MSG_HOPS_MSGS;

	for (size_t i = 0; i < n; i++) {
		const struct msg_time *x = &mh->msgs[i];

		if (x->dir == ZMTP_DIR_OUT && x->tgid == tgid && x->ts_ns < t_ns && x->ts_ns > best)
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

/* Where a request crossed each process of its chain: the first messages naming it. */
struct hop_times {
	uint64_t fe_out_ns, fe_in_ns;		/* the frontend wrote, then read */
	uint64_t in_ns[MSG_HOPS_PROCS - 1];	/* each process after it read */
	uint64_t out_ns[MSG_HOPS_PROCS - 1];	/* ... then wrote */
	uint32_t tgid[MSG_HOPS_PROCS - 1];
	uint32_t out_msgs;			/* the engine's output messages naming it; 0 unknown */
	int n;					/* processes after the frontend */
};

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
	prev = out_before(mh, h->tgid[0], h->out_ns[0]);
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

/* The newest (dir -1) or oldest (+1) output of eng to fe from message n on, other than n. */
static struct msg_time *eng_output(struct msg_hops *mh, uint64_t n, int dir, uint32_t eng,
				   uint32_t fe)
{
	uint64_t lo = mh->n_msgs > MSG_HOPS_MSGS ? mh->n_msgs - MSG_HOPS_MSGS : 0;

	for (uint64_t k = n + dir; k >= lo && k < mh->n_msgs; k += dir) {
		struct msg_time *x = msg_at(mh, k), *y;

		if (!x || x->dir != ZMTP_DIR_OUT || x->tgid != eng || !x->peer)
			continue;
		y = msg_at(mh, x->peer - 1);
		if (y && y->tgid == fe)
			return x;
		if (!k)
			break;
	}
	return NULL;
}

/*
 * The process that reads eng's outputs: the reader of its first paired
 * output after message n (the frontend in a chain of two, SGLang's
 * detokenizer in a chain of three). 0 when none is paired yet.
 */
static uint32_t eng_reader(struct msg_hops *mh, uint64_t n, uint32_t eng)
{
	for (uint64_t k = n + 1; k < mh->n_msgs; k++) {
		struct msg_time *x = msg_at(mh, k), *y;

		if (!x || x->dir != ZMTP_DIR_OUT || x->tgid != eng || !x->peer)
			continue;
		y = msg_at(mh, x->peer - 1);
		if (y && y->tgid != eng)
			return y->tgid;
	}
	return 0;
}

/* Did the engine read another message from ein's sender after prev (its last output) and before ein? */
static int request_since(struct msg_hops *mh, const struct msg_time *ein, const struct msg_time *prev)
{
	uint64_t lo = mh->n_msgs > MSG_HOPS_MSGS ? mh->n_msgs - MSG_HOPS_MSGS : 0;

	if (prev && prev->n > lo)
		lo = prev->n;
	for (uint64_t k = ein->n; k-- > lo;) {
		const struct msg_time *x = msg_at(mh, k);

		if (x && x->dir == ZMTP_DIR_IN && x->tgid == ein->tgid &&
		    same_conn_swapped(&x->addr, &msg_at(mh, ein->peer - 1)->addr))
			return 1;
	}
	return 0;
}

/*
 * The frontend fe's read of the engine's output eo: eo's other end when fe
 * read it (a chain of two). In a chain of three (SGLang) the middle process
 * (the detokenizer) read it as *mid_in and wrote one message to fe per
 * message it read, in order (D17): the one answering eo is the next of its
 * outputs to fe after mid_in, past one for each message it read on that
 * connection after its previous output and before mid_in (still to be
 * answered). *mid_in, *mid_out: NULL for two. NULL when not seen.
 */
static struct msg_time *fe_read_of(struct msg_hops *mh, const struct msg_time *eo, uint32_t fe,
				   struct msg_time **mid_in, struct msg_time **mid_out)
{
	uint64_t lo = mh->n_msgs > MSG_HOPS_MSGS ? mh->n_msgs - MSG_HOPS_MSGS : 0;
	struct msg_time *x = msg_at(mh, eo->peer - 1), *last, *o = NULL;
	int skip = 0;

	*mid_in = *mid_out = NULL;
	if (!x || x->tgid == fe)
		return x;
	last = eng_output(mh, x->n, -1, x->tgid, fe);
	if (last && last->n > lo)
		lo = last->n;
	for (uint64_t k = lo; k < x->n; k++) {
		const struct msg_time *y = msg_at(mh, k);

		skip += y && y->dir == ZMTP_DIR_IN && y->tgid == x->tgid &&
			same_conn_swapped(&y->addr, &eo->addr);
	}
	for (o = eng_output(mh, x->n, 1, x->tgid, fe); o && skip--;)
		o = eng_output(mh, o->n, 1, x->tgid, fe);
	if (!o)
		return NULL;
	*mid_in = x;
	*mid_out = o;
	return msg_at(mh, o->peer - 1);
}

/*
 * An engine whose input thread handed the request over after the next step
 * began (a Python thread waiting for the GIL; nothing on the socket shows
 * it) gave its first token one or more outputs later than the timing says.
 * The frontend writes a token soon after it reads the output holding it:
 * when it read the next output too before it wrote the first token, and
 * that output was sent only after it had read the current one, the next
 * one held it (D17). Outputs sent back to back (an engine's output thread
 * that fell behind) are not told apart: the first of them is kept. Wrong
 * where the frontend lagged a whole step behind its reads.
 */
static void advance_if_read(struct msg_hops *mh, uint32_t eng, uint32_t rd, uint32_t fe,
			    uint64_t emit_ns, struct msg_time **eo, struct msg_time **fin,
			    struct msg_time **mid_in, struct msg_time **mid_out)
{
	for (int k = 0; k < MSG_HOPS_ADVANCE_MAX; k++) {
		struct msg_time *nx = eng_output(mh, (*eo)->n, 1, eng, rd), *f, *mi, *mo;

		if (!nx || nx->ts_ns <= (*fin)->ts_ns)
			return;
		f = fe_read_of(mh, nx, fe, &mi, &mo);
		if (!f || f->ts_ns > emit_ns)
			return;
		*eo = nx;
		*fin = f;
		*mid_in = mi;
		*mid_out = mo;
	}
}

/*
 * By order and timing (D17): the message r's process wrote for it (bound at
 * its read) and that message's other end (the engine read it). The step
 * that gave the first token: an engine that had stopped (its previous
 * output further back than the step after the next one lasted, and no
 * other request read since) starts one for it, so its next output; a busy
 * engine finishes the step in flight first, so the output after that one,
 * unless the frontend had written the first token before it read that
 * output (through the middle process in a chain of three, fe_read_of).
 * 1 found.
 */
static int inferred_times(struct msg_hops *mh, const struct ttf_request *r, struct hop_times *h)
{
	const struct ttf_token_event *ev = &r->events[0];
	uint64_t emit_ns = ev->write_start_ns ? ev->write_start_ns : ev->write_ns;
	uint64_t lo = mh->n_msgs > MSG_HOPS_MSGS ? mh->n_msgs - MSG_HOPS_MSGS : 0;
	struct msg_time *mo = NULL, *ein, *prev, *n1, *n2, *eo, *fin, *mid_in, *mid_out;
	uint32_t rd;

	for (uint64_t k = mh->n_msgs; k-- > lo && !mo;) {
		struct msg_time *x = msg_at(mh, k);

		if (x && x->dir == ZMTP_DIR_OUT && x->tgid == r->tgid && x->req_id == r->id)
			mo = x;
	}
	ein = mo && mo->peer ? msg_at(mh, mo->peer - 1) : NULL;
	if (!ein || !(rd = eng_reader(mh, ein->n, ein->tgid)))
		return 0;
	prev = eng_output(mh, ein->n, -1, ein->tgid, rd);
	n1 = eng_output(mh, ein->n, 1, ein->tgid, rd);
	n2 = n1 ? eng_output(mh, n1->n, 1, ein->tgid, rd) : NULL;
	if (!n1)
		return 0;
	eo = n1;
	if (n2 && ((prev && ein->ts_ns - prev->ts_ns <= n2->ts_ns - n1->ts_ns) ||
		   request_since(mh, ein, prev)))
		eo = n2;	/* busy: the step in flight was not its */
	fin = fe_read_of(mh, eo, r->tgid, &mid_in, &mid_out);
	if (eo == n2 && (!fin || fin->ts_ns > emit_ns)) {
		eo = n1;	/* the first token left before the frontend read n2 */
		fin = fe_read_of(mh, eo, r->tgid, &mid_in, &mid_out);
	}
	if (!fin || fin->ts_ns > emit_ns)
		return 0;
	advance_if_read(mh, ein->tgid, rd, r->tgid, emit_ns, &eo, &fin, &mid_in, &mid_out);
	*h = (struct hop_times){ .fe_out_ns = mo->ts_ns, .fe_in_ns = fin->ts_ns,
				 .in_ns = { ein->ts_ns }, .out_ns = { eo->ts_ns },
				 .tgid = { ein->tgid }, .n = 1 };
	if (mid_in && MSG_HOPS_PROCS > 2) {
		h->in_ns[1] = mid_in->ts_ns;
		h->out_ns[1] = mid_out->ts_ns;
		h->tgid[1] = mid_in->tgid;
		h->n = 2;
	}
	return 1;
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

	if (!inferred_times(mh, r, &h)) {
		mh->stats.unjoined += incomplete;
		return 0;
	}
	split(mh, r, m, a, &h, out);
	out->inferred = 1;
	out->id_incomplete = (uint8_t)incomplete;
	mh->stats.joined_inferred++;
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
				.out_msgs = eo[0]->n, .n = n };
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
