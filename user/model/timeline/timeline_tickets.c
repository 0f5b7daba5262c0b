// SPDX-License-Identifier: GPL-2.0-only
/* Ticket assignment: which waiting request a tokenize call or a prompt is (docs/design.md D10). */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "user/lib/log.h"
#include "user/model/timeline/timeline_int.h"

void tl_join_tokenize(struct timeline *tl, const struct tl_step *c, int64_t ret)
{
	struct tl_ticket *best = NULL;

	tl->stats.tokenize_calls++;
	/* The request this thread read last before the call started. */
	for (size_t i = 0; i < tl->n_tickets; i++) {
		struct tl_ticket *k = &tl->tickets[i];

		if (k->rx_tid != c->tid || k->tok_end_ns || k->done || k->read_done_ns > c->start_ns)
			continue;
		if (!best || k->read_done_ns > best->read_done_ns)
			best = k;
	}
	if (best) {
		best->tok_start_ns = c->start_ns;
		best->tok_end_ns = c->end_ns;
		best->tok_count = ret;
	}
	ttf_debug("timeline: tokenize on thread %u, %lld tokens, %.3f-%.3f ms -> request %llu",
		  c->tid, (long long)ret, c->start_ns / 1e6, c->end_ns / 1e6,
		  best ? (unsigned long long)best->req_id : 0ull);
}

/* k's response began inside [start_ns, end_ns]: the engine took it then. */
static int began_in(const struct tl_ticket *k, uint64_t start_ns, uint64_t end_ns)
{
	return k->resp_begin_ns >= start_ns && k->resp_begin_ns <= end_ns;
}

/* Is a better than b as the oldest candidate, preferring a response begun in the step? */
static int earlier(const struct timeline *tl, const struct tl_ticket *a,
		   const struct tl_ticket *b, uint64_t start_ns, uint64_t end_ns)
{
	int ia = began_in(a, start_ns, end_ns), ib;

	if (!b)
		return 1;
	ib = began_in(b, start_ns, end_ns);
	if (ia != ib)
		return ia;
	return ready_ns(tl, a) < ready_ns(tl, b);
}

/*
 * The ticket a prompt of prompt_len tokens (<= 0 unknown) whose first step
 * starts at `at` serves, among those ready by then without a prefill: the
 * only one whose tokenize count is prompt_len (or, for a first chunk, more
 * than min_len: at_least), else the oldest of those that tie, else the
 * oldest. *n_waiting counts them all, *n_tied the ties; *match says how.
 */
static struct tl_ticket *pick_waiting(struct timeline *tl, uint64_t at, uint64_t end,
				      int64_t prompt_len, int at_least, int *n_waiting,
				      enum tl_match *match, int *n_tied)
{
	struct tl_ticket *best = NULL, *same = NULL;
	int n_same = 0;

	*n_waiting = 0;
	for (size_t i = 0; i < tl->n_tickets; i++) {
		struct tl_ticket *k = &tl->tickets[i];

		if (k->done || ready_ns(tl, k) > at || tl_other_process(tl, k))
			continue;
		(*n_waiting)++;
		if (earlier(tl, k, best, at, end))
			best = k;
		if (prompt_len > 0 && k->tok_count > 0 &&
		    (at_least ? k->tok_count > prompt_len : k->tok_count == prompt_len)) {
			if (earlier(tl, k, same, at, end))
				same = k;
			n_same++;
		}
	}
	*n_tied = n_same;
	if (*n_waiting <= 1) {
		*match = TL_MATCH_ALONE;
		return best;
	}
	if (n_same == 1) {
		*match = TL_MATCH_COUNT;
		return same;
	}
	*match = n_same > 1 ? TL_MATCH_TIE : TL_MATCH_FIFO;
	return n_same > 1 ? same : best;
}

struct tl_ticket *tl_oldest_waiting(struct timeline *tl, uint64_t at, int *n_waiting)
{
	enum tl_match match;
	int n_tied;

	return pick_waiting(tl, at, 0, -1, 0, n_waiting, &match, &n_tied);
}

/* Step s is part of k's prefill; n_tokens of them are k's (-1: the step's). */
void tl_extend_prefill(struct tl_ticket *k, const struct tl_step *s, int32_t n_tokens)
{
	if (s->end_ns > k->prefill_end_ns)
		k->prefill_end_ns = s->end_ns;
	k->prefill_steps++;
	if (n_tokens < 0)
		n_tokens = s->n_tokens;
	if (n_tokens > 0)
		k->prefill_tokens += n_tokens;
}

/*
 * Give a new prompt of sequence seq in step s to a waiting ticket. prompt_len
 * (<= 0 unknown; at_least: a first chunk, the prompt is longer) picks it;
 * n_tokens of the step are its (-1: the step's). Returns its ticket or NULL.
 */
struct tl_ticket *tl_start_prefill(struct timeline *tl, struct tl_step *s, int32_t seq,
				   int64_t prompt_len, int at_least, int32_t n_tokens)
{
	struct tl_ticket *k;
	int n_waiting, n_tied;
	enum tl_match match;

	k = pick_waiting(tl, s->start_ns, s->end_ns, prompt_len, at_least, &n_waiting, &match,
			 &n_tied);
	if (!k) {
		tl->stats.orphan_prompt_steps++;
		ttf_debug("timeline: seq %d: a prompt at %.3f ms with no request waiting",
			  seq, s->start_ns / 1e6);
		return NULL;
	}
	ttf_debug("timeline: seq %d: prompt of %s%lld tokens at %.3f ms -> request %llu "
		  "(match %d, %d waiting, %d tied)", seq, at_least ? "more than " : "",
		  (long long)prompt_len, s->start_ns / 1e6, (unsigned long long)k->req_id,
		  (int)match, n_waiting, n_tied);
	k->done = 1;
	k->seq = seq;
	k->n_waiting = n_waiting;
	k->match = match;
	k->n_tied = n_tied;
	k->by_first_chunk = at_least;
	k->step_tid = s->tid;
	k->step_tgid = s->tgid;
	k->prefill_start_ns = s->start_ns;
	tl_extend_prefill(k, s, n_tokens);
	return k;
}

/*
 * Exchange the prefills given to two tickets (and their sequences); one may
 * have none yet (still waiting): the other then waits again.
 */
void tl_swap_prefills(struct timeline *tl, struct tl_ticket *a, struct tl_ticket *b,
		      const char *why)
{
	struct tl_ticket t = *a;

	ttf_debug("timeline: requests %llu and %llu exchange prompts (%s)",
		  (unsigned long long)a->req_id, (unsigned long long)b->req_id, why);

#define SWAP(f) do { a->f = b->f; b->f = t.f; } while (0)
	SWAP(seq); SWAP(prefill_start_ns); SWAP(prefill_end_ns); SWAP(prefill_steps);
	SWAP(prefill_tokens); SWAP(cached_tokens); SWAP(prompt_done); SWAP(shared_steps);
	SWAP(max_sharing); SWAP(step_tokens); SWAP(step_tid); SWAP(step_tgid); SWAP(done);
	SWAP(n_waiting);
#undef SWAP
	for (int i = 0; i < tl->n_seqs; i++) {
		if (tl->seqs[i].req_id == a->req_id)
			tl->seqs[i].req_id = b->req_id;
		else if (tl->seqs[i].req_id == b->req_id)
			tl->seqs[i].req_id = a->req_id;
	}
}

/*
 * k's prompt just ended. A pick made at a first chunk only knew the prompt
 * was longer than that chunk; now its length is known. If it is not k's
 * tokenize count but is that of another ticket picked the same way and still
 * prefilling, the two were given each other's prompts: exchange them.
 */
void tl_confirm_prompt(struct timeline *tl, struct tl_ticket *k)
{
	struct tl_ticket *best = NULL;
	int64_t len;

	if (!k->by_first_chunk || k->cached_tokens < 0 || k->tok_count <= 0)
		return;
	len = k->cached_tokens + (int64_t)k->prefill_tokens;
	if (len == k->tok_count) {
		/* Right: exact when no other candidate of its pick had that count. */
		int others = 0;

		for (size_t i = 0; i < tl->n_tickets; i++) {
			const struct tl_ticket *o = &tl->tickets[i];

			others += o != k && o->tok_count == len &&
				  (o->done ? o->by_first_chunk && !o->prompt_done :
					     ready_ns(tl, o) <= k->prefill_start_ns);
		}
		if (!others) {
			k->match = TL_MATCH_COUNT;
			k->by_first_chunk = 0;
		}
		return;
	}
	for (size_t i = 0; i < tl->n_tickets; i++) {
		struct tl_ticket *o = &tl->tickets[i];

		if (o == k || o->tok_count != len)
			continue;
		if (o->done ? o->by_first_chunk && !o->prompt_done :
			      ready_ns(tl, o) <= k->prefill_start_ns && (!best || best->done ||
			      ready_ns(tl, o) < ready_ns(tl, best)))
			best = o;
	}
	if (!best)
		return;
	tl_swap_prefills(tl, k, best, "its prompt's length is the other's count");
	best->match = TL_MATCH_COUNT;
	best->by_first_chunk = 0;
	k->by_first_chunk = k->done;	/* a chunked prompt it now holds is checked when it ends */
	tl->stats.reassigned++;
}

/*
 * A whole prompt of len tokens was given to k with no count to go by. If a
 * ticket picked at a first chunk (still prefilling) has that tokenize count,
 * the prompt is that ticket's, and k's is that chunked one: exchange them.
 * Returns the ticket that now holds the whole prompt.
 */
struct tl_ticket *tl_claim_from_chunked(struct timeline *tl, struct tl_ticket *k, int64_t len)
{
	for (size_t i = 0; i < tl->n_tickets; i++) {
		struct tl_ticket *o = &tl->tickets[i];

		if (o == k || !o->done || !o->by_first_chunk || o->prompt_done || o->tok_count != len)
			continue;
		tl_swap_prefills(tl, k, o, "a whole prompt of the other's count");
		o->match = TL_MATCH_COUNT;
		o->by_first_chunk = 0;
		k->by_first_chunk = 1;	/* its chunked prompt is confirmed when it ends */
		tl->stats.reassigned++;
		return o;
	}
	return k;
}
