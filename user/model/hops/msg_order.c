// SPDX-License-Identifier: GPL-2.0-only
/* Message hops joined by order and timing (docs/design.md D17; msg_impl.h). */
#include "user/model/hops/msg_impl.h"

/*
 * Outputs a join by order may move past the timing's choice towards the
 * first token (advance_if_read): a bound on the walk, several engine steps.
 */
#define MSG_HOPS_ADVANCE_MAX 8

/* Are a and b the same end of one connection? */
static int same_conn(const struct ttf_conn_addr *a, const struct ttf_conn_addr *b)
{
	return a->family == b->family && a->lport == b->lport && a->rport == b->rport &&
	       !memcmp(a->laddr, b->laddr, sizeof(a->laddr)) &&
	       !memcmp(a->raddr, b->raddr, sizeof(a->raddr));
}

/*
 * Could x and y (OUT messages of one process, bound by order) have carried
 * each other's requests? libzmq's I/O thread writes each connection's queue
 * in turn (one write may hold several messages), so the order holds on one
 * connection, not across two: requests handed over before both writes may
 * leave in either order. So when they are on different connections and each
 * was written after the other's request was read.
 */
static int could_swap(const struct msg_time *x, const struct msg_time *y)
{
	return x != y && x->req_id && y->req_id && y->ts_ns >= x->read_ns &&
	       x->ts_ns >= y->read_ns && !same_conn(&x->addr, &y->addr);
}

/*
 * An OUT message of x->tgid carries the oldest request it read before it
 * (D17); it and the messages it could have swapped with are marked.
 */
void msg_order__bind(struct msg_hops *mh, struct msg_time *x)
{
	uint64_t lo = x->n > MSG_HOPS_PAIR_SCAN ? x->n - MSG_HOPS_PAIR_SCAN : 0;

	for (size_t i = 0; i < mh->n_reads; i++) {
		if (mh->reads[i].tgid != x->tgid || mh->reads[i].read_ns > x->ts_ns)
			continue;
		x->req_id = mh->reads[i].req_id;
		x->read_ns = mh->reads[i].read_ns;
		memmove(&mh->reads[i], &mh->reads[i + 1], (mh->n_reads - i - 1) * sizeof(mh->reads[0]));
		mh->n_reads--;
		break;
	}
	for (uint64_t k = x->n; x->req_id && k-- > lo;) {
		struct msg_time *y = msg_at(mh, k);

		if (y && y->dir == ZMTP_DIR_OUT && y->tgid == x->tgid && could_swap(x, y))
			x->order_ambiguous = y->order_ambiguous = 1;
	}
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
 * By order and timing (D17), through mo (the message r's process wrote for
 * it) and mo's other end (the engine read it). The step
 * that gave the first token: an engine that had stopped (its previous
 * output further back than the step after the next one lasted, and no
 * other request read since) starts one for it, so its next output; a busy
 * engine finishes the step in flight first, so the output after that one,
 * unless the frontend had written the first token before it read that
 * output (through the middle process in a chain of three, fe_read_of).
 * 1 found.
 */
static int times_via(struct msg_hops *mh, const struct ttf_request *r, struct msg_time *mo,
		     struct hop_times *h)
{
	const struct ttf_token_event *ev = &r->events[0];
	uint64_t emit_ns = ev->write_start_ns ? ev->write_start_ns : ev->write_ns;
	struct msg_time *ein, *prev, *n1, *n2, *eo, *fin, *mid_in, *mid_out;
	uint32_t rd;

	ein = mo->peer ? msg_at(mh, mo->peer - 1) : NULL;
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
				 .tgid = { ein->tgid }, .n = 1,
				 .order_ambiguous = mo->order_ambiguous };
	if (mid_in && MSG_HOPS_PROCS > 2) {
		h->in_ns[1] = mid_in->ts_ns;
		h->out_ns[1] = mid_out->ts_ns;
		h->tgid[1] = mid_in->tgid;
		h->n = 2;
	}
	return 1;
}

/*
 * r's message by order; when the join through it finds no output the
 * first token can have come from and another connection's message could
 * have carried r instead (could_swap), the first of those that does.
 */
int msg_order__times(struct msg_hops *mh, const struct ttf_request *r, struct hop_times *h)
{
	uint64_t lo = mh->n_msgs > MSG_HOPS_MSGS ? mh->n_msgs - MSG_HOPS_MSGS : 0;
	struct msg_time *mo = NULL;

	for (uint64_t k = mh->n_msgs; k-- > lo && !mo;) {
		struct msg_time *x = msg_at(mh, k);

		if (x && x->dir == ZMTP_DIR_OUT && x->tgid == r->tgid && x->req_id == r->id)
			mo = x;
	}
	if (!mo)
		return 0;
	if (times_via(mh, r, mo, h))
		return 1;
	if (!mo->order_ambiguous)
		return 0;
	for (uint64_t k = mo->n > MSG_HOPS_PAIR_SCAN ? mo->n - MSG_HOPS_PAIR_SCAN : 0;
	     k < mo->n + MSG_HOPS_PAIR_SCAN && k < mh->n_msgs; k++) {
		struct msg_time *y = msg_at(mh, k);

		if (y && y->dir == ZMTP_DIR_OUT && y->tgid == r->tgid && could_swap(mo, y) &&
		    times_via(mh, r, y, h))
			return 1;
	}
	return 0;
}
