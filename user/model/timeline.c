// SPDX-License-Identifier: GPL-2.0-only
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "user/lib/log.h"
#include "user/model/timeline.h"

#define MAX_OPEN 256		/* entries waiting for their return */
#define MAX_STEPS 65536	/* steps kept for queries: 10 MiB at 152 bytes each */
#define MAX_SEQ_STATE 256

/* A completed call (tokenize or step) waiting for the watermark. */
struct call {
	int role;			/* enum ttf_engine_role */
	struct tl_step s;	/* start/end/tid (+ step fields) */
	int64_t ret;		/* return value */
	/* steps: the entry's per-sequence counts (bpf/engine.h); seq_tokens[0] 0: none */
	int32_t seq_tokens[TL_MAX_SEQ];
	int32_t seq_pos0[TL_MAX_SEQ];
	uint32_t seq_out_mask;
};

struct open_call {
	uint32_t tid;
	int role;			/* enum ttf_engine_role */
	struct ttf_engine_event entry;
};

/* SEQ_UNCLAIMED: first chunks of a prompt that no waiting ticket could take yet. */
enum seq_state { SEQ_FREE = 0, SEQ_PREFILL, SEQ_DECODE, SEQ_UNCLAIMED };

/* Chunks of a prompt not given to a request yet (SEQ_UNCLAIMED). */
struct unclaimed {
	uint64_t start_ns;		/* its first chunk's step start */
	int64_t pos0;			/* its first position: the cached prefix */
	uint64_t tokens;
	int steps;
};

struct seq_slot {
	int32_t seq;
	enum seq_state state;
	uint64_t req_id;
	uint64_t orphan_since_ns;	/* != 0: serves a request whose client left */
	int64_t next_pos;		/* position its next token continues at; -1 unknown */
	struct unclaimed un;		/* SEQ_UNCLAIMED only */
};

#define MAX_GATEWAYS 64

/* An aborted request still waiting for the engine is forgotten after this. */
#define ORPHAN_TICKET_NS (30ull * 1000000000ull)

struct timeline {
	uint64_t horizon_ns;
	struct open_call open[MAX_OPEN];
	int n_open;
	struct call *pending;		/* completed, not yet processed */
	size_t n_pending, cap_pending;
	struct tl_ticket *tickets;	/* requests read, not yet released */
	size_t n_tickets, cap_tickets;
	struct tl_step *steps;		/* ring of processed steps, by start time */
	size_t steps_head, n_steps;
	uint64_t max_step_ns;		/* longest step ever stored: bounds the search in steps_in */
	struct seq_slot seqs[MAX_SEQ_STATE];
	int n_seqs;
	int has_steps, has_tokenize;
	uint32_t step_tgid;		/* process of the step being processed */
	uint32_t gateways[MAX_GATEWAYS];	/* processes seen calling an upstream */
	int n_gateways;
	struct timeline_stats stats;
};

struct timeline *timeline__new(uint64_t horizon_ns)
{
	struct timeline *tl = calloc(1, sizeof(*tl));

	if (!tl)
		return NULL;
	tl->horizon_ns = horizon_ns;
	tl->steps = calloc(MAX_STEPS, sizeof(*tl->steps));
	if (!tl->steps) {
		free(tl);
		errno = ENOMEM;
		return NULL;
	}
	return tl;
}

void timeline__free(struct timeline *tl)
{
	if (!tl)
		return;
	free(tl->pending);
	free(tl->tickets);
	free(tl->steps);
	free(tl);
}

static int grow(void **arr, size_t *cap, size_t need, size_t elem)
{
	size_t n = *cap ? *cap : 16;
	void *p;

	if (need <= *cap)
		return 0;
	while (n < need)
		n *= 2;
	p = realloc(*arr, n * elem);
	if (!p)
		return -ENOMEM;
	*arr = p;
	*cap = n;
	return 0;
}

int timeline__on_request_read(struct timeline *tl, uint64_t req_id, uint64_t sock_cookie,
			      uint32_t rx_tid, uint64_t read_done_ns, uint32_t tgid)
{
	struct tl_ticket *k;

	if (grow((void **)&tl->tickets, &tl->cap_tickets, tl->n_tickets + 1, sizeof(*k)))
		return -ENOMEM;
	k = &tl->tickets[tl->n_tickets++];
	memset(k, 0, sizeof(*k));
	k->req_id = req_id;
	k->sock_cookie = sock_cookie;
	k->rx_tid = rx_tid;
	k->tgid = tgid;
	k->read_done_ns = read_done_ns;
	k->seq = -1;
	k->cached_tokens = -1;
	tl->stats.tickets++;
	ttf_debug("timeline: request %llu read by thread %u at %.3f ms", (unsigned long long)req_id,
		  rx_tid, read_done_ns / 1e6);
	return 0;
}

int timeline__on_engine_event(struct timeline *tl, const struct ttf_engine_event *ev)
{
	struct call *c;
	int i;

	if (ev->role == TTF_ROLE_STEP)
		tl->has_steps = 1;
	else if (ev->role == TTF_ROLE_TOKENIZE)
		tl->has_tokenize = 1;
	if (ev->type != TTF_ENG_RETURN) {
		if (tl->n_open == MAX_OPEN) {	/* lost returns: forget the oldest */
			memmove(tl->open, tl->open + 1, (MAX_OPEN - 1) * sizeof(tl->open[0]));
			tl->n_open--;
			tl->stats.unmatched_returns++;
		}
		tl->open[tl->n_open++] = (struct open_call){ ev->tid, ev->role, *ev };
		return 0;
	}
	/* Innermost open call of this role on this thread. */
	for (i = tl->n_open - 1; i >= 0; i--)
		if (tl->open[i].tid == ev->tid && tl->open[i].role == ev->role)
			break;
	if (i < 0) {
		tl->stats.unmatched_returns++;
		return 0;
	}
	if (grow((void **)&tl->pending, &tl->cap_pending, tl->n_pending + 1, sizeof(*c)))
		return -ENOMEM;
	c = &tl->pending[tl->n_pending++];
	memset(c, 0, sizeof(*c));
	c->role = ev->role;
	c->s.start_ns = tl->open[i].entry.ts_ns;
	c->s.end_ns = ev->ts_ns;
	c->s.tid = ev->tid;
	c->s.tgid = ev->tgid;
	c->ret = ev->value;
	c->s.n_tokens = tl->open[i].entry.value > INT32_MAX ? -1 : (int32_t)tl->open[i].entry.value;
	c->s.n_seq = tl->open[i].entry.n_seq;
	if (c->s.n_seq > TL_MAX_SEQ)
		c->s.n_seq = TL_MAX_SEQ;
	memcpy(c->s.seq_ids, tl->open[i].entry.seq_ids, sizeof(c->s.seq_ids));
	c->s.prompt_tokens = -1;
	memcpy(c->seq_tokens, tl->open[i].entry.seq_tokens, sizeof(c->seq_tokens));
	memcpy(c->seq_pos0, tl->open[i].entry.seq_pos0, sizeof(c->seq_pos0));
	c->seq_out_mask = tl->open[i].entry.seq_out_mask;
	memmove(&tl->open[i], &tl->open[i + 1], (tl->n_open - i - 1) * sizeof(tl->open[0]));
	tl->n_open--;
	return 0;
}

static int cmp_call(const void *a, const void *b)
{
	const struct call *x = a, *y = b;

	if (x->s.start_ns != y->s.start_ns)
		return x->s.start_ns < y->s.start_ns ? -1 : 1;
	return 0;
}

static struct tl_step *step_at(const struct timeline *tl, size_t i)
{
	return &tl->steps[(tl->steps_head + i) % MAX_STEPS];
}

/* Keep the step ring sorted by start time; evict beyond the horizon or cap. */
static void store_step(struct timeline *tl, const struct tl_step *s)
{
	size_t i;

	while (tl->n_steps && (tl->n_steps == MAX_STEPS ||
			       step_at(tl, 0)->end_ns + tl->horizon_ns < s->start_ns)) {
		tl->steps_head = (tl->steps_head + 1) % MAX_STEPS;
		if (tl->n_steps == MAX_STEPS)
			tl->stats.steps_capped++;
		tl->n_steps--;
		tl->stats.dropped_old++;
	}
	i = tl->n_steps++;
	while (i > 0 && step_at(tl, i - 1)->start_ns > s->start_ns) {
		*step_at(tl, i) = *step_at(tl, i - 1);
		i--;
	}
	*step_at(tl, i) = *s;
	if (s->end_ns > s->start_ns && s->end_ns - s->start_ns > tl->max_step_ns)
		tl->max_step_ns = s->end_ns - s->start_ns;
}

/*
 * A request a gateway read (a process that calls upstreams, hops.h) is
 * served by the upstream's engine as another request: not this step's.
 */
static int other_process(const struct timeline *tl, const struct tl_ticket *k)
{
	if (!k->tgid || k->tgid == tl->step_tgid)
		return 0;
	for (int i = 0; i < tl->n_gateways; i++)
		if (tl->gateways[i] == k->tgid)
			return 1;
	return 0;
}

void timeline__on_gateway(struct timeline *tl, uint32_t tgid)
{
	for (int i = 0; i < tl->n_gateways; i++)
		if (tl->gateways[i] == tgid)
			return;
	if (tl->n_gateways < MAX_GATEWAYS)
		tl->gateways[tl->n_gateways++] = tgid;
}

static uint64_t ready_ns(const struct timeline *tl, const struct tl_ticket *k)
{
	return k->tok_end_ns ? k->tok_end_ns : k->read_done_ns;
}

static void join_tokenize(struct timeline *tl, const struct tl_step *c, int64_t ret)
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

static struct seq_slot *seq_slot(struct timeline *tl, int32_t seq)
{
	for (int i = 0; i < tl->n_seqs; i++)
		if (tl->seqs[i].seq == seq)
			return &tl->seqs[i];
	if (tl->n_seqs == MAX_SEQ_STATE)
		return NULL;
	tl->seqs[tl->n_seqs] = (struct seq_slot){ .seq = seq, .next_pos = -1 };
	return &tl->seqs[tl->n_seqs++];
}

static struct tl_ticket *ticket_by_id(const struct timeline *tl, uint64_t id)
{
	for (size_t i = 0; i < tl->n_tickets; i++)
		if (tl->tickets[i].req_id == id)
			return &tl->tickets[i];
	return NULL;
}

/*
 * The ticket a prompt of prompt_len tokens (<= 0 unknown) whose first step
 * starts at `at` serves, among those ready by then without a prefill: the
 * only one whose tokenize count is prompt_len (or, for a first chunk, more
 * than min_len: at_least), else the oldest of those that tie, else the
 * oldest. *n_waiting counts them all, *n_tied the ties; *match says how.
 */
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

static struct tl_ticket *pick_waiting(struct timeline *tl, uint64_t at, uint64_t end,
				      int64_t prompt_len, int at_least, int *n_waiting,
				      enum tl_match *match, int *n_tied)
{
	struct tl_ticket *best = NULL, *same = NULL;
	int n_same = 0;

	*n_waiting = 0;
	for (size_t i = 0; i < tl->n_tickets; i++) {
		struct tl_ticket *k = &tl->tickets[i];

		if (k->done || ready_ns(tl, k) > at || other_process(tl, k))
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

static struct tl_ticket *oldest_waiting(struct timeline *tl, uint64_t at, int *n_waiting)
{
	enum tl_match match;
	int n_tied;

	return pick_waiting(tl, at, 0, -1, 0, n_waiting, &match, &n_tied);
}

/* Step s is part of k's prefill; n_tokens of them are k's (-1: the step's). */
static void extend_prefill(struct tl_ticket *k, const struct tl_step *s, int32_t n_tokens)
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
static struct tl_ticket *start_prefill(struct timeline *tl, struct tl_step *s, int32_t seq,
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
	extend_prefill(k, s, n_tokens);
	return k;
}

/* Requests waiting while step s served an aborted request are delayed by it. */
static void charge_orphan(struct timeline *tl, const struct tl_step *s, uint64_t share_ns)
{
	tl->stats.orphaned_steps++;
	tl->stats.orphaned_ns += share_ns;
	for (size_t i = 0; i < tl->n_tickets; i++) {
		struct tl_ticket *k = &tl->tickets[i];
		uint64_t from = ready_ns(tl, k);

		if (k->done || k->aborted_ns || from >= s->end_ns)
			continue;
		if (from < s->start_ns)
			from = s->start_ns;
		if (!k->queued_behind_orphan_ns)
			tl->stats.delayed_by_orphans++;
		k->queued_behind_orphan_ns += s->end_ns - from;
		tl->stats.delay_by_orphans_ns += s->end_ns - from;
	}
}

static void orphan_accounting(struct timeline *tl, const struct tl_step *s)
{
	int n = s->n_seq > 0 ? s->n_seq : 1, orphans = 0;

	for (int i = 0; i < s->n_seq; i++) {
		struct seq_slot *sl = seq_slot(tl, s->seq_ids[i]);

		if (sl && sl->orphan_since_ns && s->start_ns >= sl->orphan_since_ns)
			orphans++;
	}
	if (!s->n_seq && s->req_id) {
		struct tl_ticket *k = ticket_by_id(tl, s->req_id);

		orphans = k && k->aborted_ns && s->start_ns >= k->aborted_ns;
	}
	if (orphans)
		charge_orphan(tl, s, (s->end_ns - s->start_ns) * orphans / n);
}

static void process_step(struct timeline *tl, struct tl_step *s)
{
	int n_seq = s->n_seq;

	tl->stats.steps++;
	ttf_debug("timeline: step %.3f-%.3f ms, %d tokens, %d sequences, no counts",
		  s->start_ns / 1e6, s->end_ns / 1e6, s->n_tokens, n_seq);
	/*
	 * Its sequences' positions moved by unknown amounts (a counted step
	 * whose walk faulted comes here too): the next counted chunk of each
	 * continues whatever its first position.
	 */
	for (int i = 0; i < n_seq; i++) {
		struct seq_slot *sl = seq_slot(tl, s->seq_ids[i]);

		if (sl)
			sl->next_pos = -1;
	}
	/*
	 * The probe samples up to TL_MAX_SEQ tokens spread over the batch: fewer
	 * distinct sequences than samples means some sequence brought several
	 * tokens, i.e. a prompt.
	 */
	s->is_prompt = n_seq > 0 ? n_seq < (s->n_tokens < TL_MAX_SEQ ? s->n_tokens : TL_MAX_SEQ)
				 : s->n_tokens > 1;
	if (!s->is_prompt) {
		for (int i = 0; i < n_seq; i++) {
			struct seq_slot *sl = seq_slot(tl, s->seq_ids[i]);
			struct tl_ticket *k;

			if (!sl || sl->state != SEQ_PREFILL)
				continue;
			k = ticket_by_id(tl, sl->req_id);
			/* A last chunk of exactly the prompt's remaining token (chunked prefill). */
			if (k && k->tok_count > 0 && n_seq == 1 && s->n_tokens > 0 &&
			    k->prefill_tokens + s->n_tokens == (uint64_t)k->tok_count) {
				extend_prefill(k, s, -1);
				s->req_id = k->req_id;
				s->is_prompt = 1;
				continue;
			}
			sl->state = SEQ_DECODE;
		}
		orphan_accounting(tl, s);
		store_step(tl, s);
		return;
	}
	tl->stats.prompt_steps++;
	if (n_seq == 0) {
		/* No sequence ids: every prompt step after a waiting request starts its prefill. */
		int n_waiting;
		struct tl_ticket *k = oldest_waiting(tl, s->start_ns, &n_waiting);

		if (k) {
			k = start_prefill(tl, s, -1, s->n_tokens, 0, -1);
			s->req_id = k ? k->req_id : 0;
		} else {
			struct seq_slot *sl = seq_slot(tl, -1);
			struct tl_ticket *prev = sl ? ticket_by_id(tl, sl->req_id) : NULL;

			if (prev && sl->state == SEQ_PREFILL) {
				extend_prefill(prev, s, -1);
				s->req_id = prev->req_id;
			} else {
				tl->stats.orphan_prompt_steps++;
			}
		}
		if (s->req_id) {
			struct seq_slot *sl = seq_slot(tl, -1);

			if (sl)
				*sl = (struct seq_slot){ -1, SEQ_PREFILL, s->req_id, 0, -1 };
		}
		orphan_accounting(tl, s);
		store_step(tl, s);
		return;
	}
	for (int i = 0; i < n_seq; i++) {
		struct seq_slot *sl = seq_slot(tl, s->seq_ids[i]);
		struct tl_ticket *k;

		if (!sl)
			continue;
		k = sl->state != SEQ_FREE ? ticket_by_id(tl, sl->req_id) : NULL;
		if (sl->state == SEQ_PREFILL && k) {
			extend_prefill(k, s, -1);	/* chunked prefill */
			if (!s->req_id)
				s->req_id = k->req_id;
			continue;
		}
		/* In a batch of several sequences, a decoding one only brings its next token. */
		if (sl->state == SEQ_DECODE && k && n_seq > 1)
			continue;
		/* The step's tokens are all this sequence's when it is alone in the batch. */
		struct tl_ticket *nk = start_prefill(tl, s, s->seq_ids[i],
						     n_seq <= 1 ? s->n_tokens : -1, 0, -1);

		if (nk) {
			*sl = (struct seq_slot){ s->seq_ids[i], SEQ_PREFILL, nk->req_id,
						 nk->aborted_ns, -1 };
			if (!s->req_id)
				s->req_id = nk->req_id;
		}
	}
	orphan_accounting(tl, s);
	store_step(tl, s);
}

/* Sequence entry i of step s brings n_tokens of a prompt; seqs[] gathers them. */
static void note_prompt_seq(struct tl_step *s, int i, int32_t n_tokens, int *seqs, int *n_seqs)
{
	seqs[(*n_seqs)++] = i;
	s->prompt_tokens += n_tokens;
	s->is_prompt = 1;
}

/* What sequence entry i of a counted step is (timeline.h). */
/* PART_RESUME: the next chunk of a prompt whose first chunks were unclaimed. */
enum seq_part { PART_DECODE, PART_CHUNK, PART_NEW, PART_RESUME };

/* Is a request that was ready by at_ns, and has no prompt yet, len tokens long? */
static int waiting_with_count(const struct timeline *tl, uint64_t at_ns, int64_t len)
{
	for (size_t i = 0; i < tl->n_tickets; i++) {
		const struct tl_ticket *k = &tl->tickets[i];

		if (!k->done && k->tok_count == len && ready_ns(tl, k) <= at_ns && !other_process(tl, k))
			return 1;
	}
	return 0;
}

static enum seq_part classify(struct timeline *tl, const struct seq_slot *sl, int32_t n,
			      int64_t pos, uint64_t at_ns)
{
	int continues = pos < 0 || sl->next_pos < 0 || pos == sl->next_pos;
	struct tl_ticket *k = sl->state != SEQ_FREE ? ticket_by_id(tl, sl->req_id) : NULL;

	if (sl->state == SEQ_UNCLAIMED)
		return continues ? PART_RESUME : PART_NEW;
	if (!k && !sl->orphan_since_ns) {
		/*
		 * Its request is gone. One token continuing its positions is still a
		 * decode token (of a request released under a mapping that was a guess,
		 * or ended early), and so is one token past position 0 on a sequence
		 * never seen (tracing began while it decoded), unless a waiting
		 * request is pos + 1 tokens long: a whole-prompt cache hit on a slot
		 * filled before tracing began. A new prompt jumps back to its cached
		 * prefix, or brings several tokens.
		 */
		if (n == 1 && pos > 0 && sl->next_pos < 0)
			return waiting_with_count(tl, at_ns, pos + 1) ? PART_NEW : PART_DECODE;
		return n == 1 && pos > 0 && pos == sl->next_pos ? PART_DECODE : PART_NEW;
	}
	if (sl->state == SEQ_PREFILL && continues)
		return PART_CHUNK;
	if (sl->state == SEQ_DECODE && n == 1 && continues)
		return PART_DECODE;
	return PART_NEW;
}

/*
 * Exchange the prefills given to two tickets (and their sequences); one may
 * have none yet (still waiting): the other then waits again.
 */
static void swap_prefills(struct timeline *tl, struct tl_ticket *a, struct tl_ticket *b,
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
static void confirm_prompt(struct timeline *tl, struct tl_ticket *k)
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
	swap_prefills(tl, k, best, "its prompt's length is the other's count");
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
static struct tl_ticket *claim_from_chunked(struct timeline *tl, struct tl_ticket *k,
					    int64_t len)
{
	for (size_t i = 0; i < tl->n_tickets; i++) {
		struct tl_ticket *o = &tl->tickets[i];

		if (o == k || !o->done || !o->by_first_chunk || o->prompt_done || o->tok_count != len)
			continue;
		swap_prefills(tl, k, o, "a whole prompt of the other's count");
		o->match = TL_MATCH_COUNT;
		o->by_first_chunk = 0;
		k->by_first_chunk = 1;	/* its chunked prompt is confirmed when it ends */
		tl->stats.reassigned++;
		return o;
	}
	return k;
}

/* -vv: one line per counted step, its sequences as seq:tokens@pos (+ output). */
static void debug_step(const struct tl_step *s, const struct call *c)
{
	char buf[TL_MAX_SEQ * 32] = "";
	size_t off = 0;

	for (int i = 0; i < s->n_seq && off < sizeof(buf); i++)
		off += snprintf(buf + off, sizeof(buf) - off, " %d:%d@%lld%s", s->seq_ids[i],
				c->seq_tokens[i], (long long)c->seq_pos0[i],
				c->seq_out_mask & (1u << i) ? "+" : "");
	ttf_debug("timeline: step %.3f-%.3f ms, %d tokens:%s", s->start_ns / 1e6,
		  s->end_ns / 1e6, s->n_tokens, buf);
}

/*
 * A step whose probe counted each sequence's tokens (timeline.h): chunks
 * extend prefills, decode tokens advance their sequence, new prompts start
 * prefills in batch order; then every request prefilling in it learns that
 * it shared the step.
 */
static void process_counted_step(struct timeline *tl, struct call *c)
{
	struct tl_step *s = &c->s;
	int new_k[TL_MAX_SEQ], n_new = 0, seqs[TL_MAX_SEQ], n_seqs = 0;

	tl->stats.counted_steps++;
	s->prompt_tokens = 0;
	if (ttf_verbosity >= 2)
		debug_step(s, c);
	for (int i = 0; i < s->n_seq; i++) {
		struct seq_slot *sl = seq_slot(tl, s->seq_ids[i]);
		int32_t n = c->seq_tokens[i];
		int64_t pos = c->seq_pos0[i];
		struct tl_ticket *k;

		if (!sl || n <= 0)
			continue;
		switch (classify(tl, sl, n, pos, s->start_ns)) {
		case PART_DECODE:
			break;
		case PART_CHUNK:
			k = ticket_by_id(tl, sl->req_id);
			if (!k)
				break;	/* an orphan's chunk: its client left and was released */
			extend_prefill(k, s, n);
			note_prompt_seq(s, i, n, seqs, &n_seqs);
			if (c->seq_out_mask & (1u << i)) {
				k->prompt_done = 1;
				sl->state = SEQ_DECODE;
				confirm_prompt(tl, k);
			}
			break;
		case PART_NEW:
		case PART_RESUME:
			new_k[n_new++] = i;
			continue;	/* next_pos once its request is known */
		}
		sl->next_pos = pos >= 0 ? pos + n : -1;
	}
	for (int j = 0; j < n_new; j++) {
		int i = new_k[j];
		struct seq_slot *sl = seq_slot(tl, s->seq_ids[i]);
		int32_t n = c->seq_tokens[i];
		int64_t pos = c->seq_pos0[i] > 0 ? c->seq_pos0[i] : 0;
		int ends = !!(c->seq_out_mask & (1u << i));
		int resumes = sl->state == SEQ_UNCLAIMED && (sl->next_pos < 0 || c->seq_pos0[i] < 0 ||
							      c->seq_pos0[i] == sl->next_pos);
		struct tl_ticket *k;

		if (!resumes)
			sl->un = (struct unclaimed){ s->start_ns, c->seq_pos0[i], 0, 0 };
		k = start_prefill(tl, s, s->seq_ids[i], pos + n, !ends, n);
		if (!k) {
			/* Keep a first chunk: its request may be known by a later one. */
			struct unclaimed un = sl->un;

			un.tokens += n;
			un.steps++;
			*sl = (struct seq_slot){ s->seq_ids[i], ends ? SEQ_FREE : SEQ_UNCLAIMED, 0, 0,
						 ends || c->seq_pos0[i] < 0 ? -1 : c->seq_pos0[i] + n,
						 ends ? (struct unclaimed){ 0 } : un };
			continue;
		}
		if (resumes) {
			/* Its prefill began with the unclaimed chunks. */
			k->prefill_start_ns = sl->un.start_ns;
			k->prefill_tokens += sl->un.tokens;
			k->prefill_steps += sl->un.steps;
			tl->stats.chunks_claimed_late++;
			ttf_debug("timeline: seq %d: request %llu takes %llu unclaimed prompt tokens "
				  "from %.3f ms", s->seq_ids[i], (unsigned long long)k->req_id,
				  (unsigned long long)sl->un.tokens, sl->un.start_ns / 1e6);
		}
		k->cached_tokens = sl->un.pos0 >= 0 ? sl->un.pos0 : -1;
		k->prompt_done = ends;
		if (ends && k->tok_count != pos + n)
			k = claim_from_chunked(tl, k, pos + n);
		*sl = (struct seq_slot){ s->seq_ids[i], ends ? SEQ_DECODE : SEQ_PREFILL, k->req_id,
					 k->aborted_ns, c->seq_pos0[i] >= 0 ? c->seq_pos0[i] + n : -1 };
		note_prompt_seq(s, i, n, seqs, &n_seqs);
	}
	/* Who prefilled in it, once reassignments in it are done. */
	for (int j = 0; j < n_seqs; j++) {
		struct seq_slot *sl = seq_slot(tl, s->seq_ids[seqs[j]]);

		if (!sl)
			continue;
		if (s->n_prompt_reqs < TL_STEP_REQS)
			s->prompt_reqs[s->n_prompt_reqs] = sl->req_id;
		s->n_prompt_reqs++;
		if (!s->req_id)
			s->req_id = sl->req_id;
	}
	if (s->is_prompt) {
		tl->stats.prompt_steps++;
		if (s->n_prompt_reqs > 1)
			tl->stats.shared_prompt_steps++;
	}
	for (int j = 0; j < n_seqs; j++) {
		struct seq_slot *sl = seq_slot(tl, s->seq_ids[seqs[j]]);
		struct tl_ticket *k = sl ? ticket_by_id(tl, sl->req_id) : NULL;

		if (!k)
			continue;
		if (s->n_prompt_reqs > 1)
			k->shared_steps++;
		if (s->n_prompt_reqs > k->max_sharing)
			k->max_sharing = s->n_prompt_reqs;
		if (s->n_tokens > 0)
			k->step_tokens += s->n_tokens;
	}
	orphan_accounting(tl, s);
	store_step(tl, s);
}

/*
 * A sync call (e.g. llama_synchronize) that had to wait ends the step that
 * ran before it on its thread: the device work finished at its return. A
 * sync that returned at once (CPU backend, or GPU already done) says nothing.
 */
#define SYNC_WAITED_NS 20000

static void process_sync(struct timeline *tl, const struct tl_step *c)
{
	if (c->end_ns - c->start_ns < SYNC_WAITED_NS)
		return;
	for (size_t i = tl->n_steps; i-- > 0;) {
		struct tl_step *s = step_at(tl, i);

		if (s->tid != c->tid)
			continue;
		if (s->start_ns <= c->start_ns && c->end_ns > s->end_ns) {
			s->end_ns = c->end_ns;
			if (s->end_ns - s->start_ns > tl->max_step_ns)
				tl->max_step_ns = s->end_ns - s->start_ns;
			if (s->req_id) {
				struct tl_ticket *k = ticket_by_id(tl, s->req_id);

				if (k && k->prefill_end_ns < c->end_ns)
					k->prefill_end_ns = c->end_ns;
			}
		}
		break;
	}
}

/* Drop released tickets that got their prefill, or waited too long for one. */
static void sweep_released(struct timeline *tl, uint64_t now_ns)
{
	for (size_t i = 0; i < tl->n_tickets;) {
		struct tl_ticket *k = &tl->tickets[i];

		if (k->released && (k->done || k->read_done_ns + ORPHAN_TICKET_NS < now_ns))
			*k = tl->tickets[--tl->n_tickets];
		else
			i++;
	}
}

void timeline__on_first_token(struct timeline *tl, uint64_t req_id, uint64_t ts_ns)
{
	struct tl_ticket *k = ticket_by_id(tl, req_id);

	if (k && !k->first_token_ns)
		k->first_token_ns = ts_ns;
}

/*
 * Checked this long after a first token: the other requests whose prompts
 * ended in the same step have written theirs by then (an engine writes
 * every first token of a step right after it).
 */
#define FIRST_TOKEN_CHECK_NS (20 * 1000000ull)

/*
 * k's first token was out before its prefill ended, or with no prefill given
 * to it at all: a guess gave its prompt to another request of the same
 * length. Take back the latest such prompt that ended before the token.
 */
static void check_first_token(struct timeline *tl, struct tl_ticket *k)
{
	struct tl_ticket *best = NULL;

	k->first_token_checked = 1;
	if (k->done && k->prompt_done && k->prefill_end_ns <= k->first_token_ns)
		return;
	for (size_t i = 0; i < tl->n_tickets; i++) {
		struct tl_ticket *o = &tl->tickets[i];

		/*
		 * Its prompt ended before k's token, and its own first token is not
		 * out, or (k holding a prompt that ended) came after the end of k's
		 * prompt: the two fit exchanged.
		 */
		if (o == k || !o->done || !o->prompt_done || o->prefill_end_ns > k->first_token_ns ||
		    o->tok_count != k->tok_count)
			continue;
		if (o->first_token_ns && (!k->done || !k->prompt_done ||
					  o->first_token_ns < k->prefill_end_ns))
			continue;
		if (o->match == TL_MATCH_COUNT)
			continue;	/* its count named it */
		/* the latest such prefill: the one that ended right before the token */
		if (!best || o->prefill_end_ns > best->prefill_end_ns)
			best = o;
	}
	if (best) {
		int had = k->done;

		swap_prefills(tl, k, best, "first token out before its prompt ended");
		if (!had) {	/* it gets the guess that was made for best */
			k->match = best->match;
			k->n_tied = best->n_tied;
		}
		tl->stats.reassigned_by_token++;
	}
}

/*
 * Pending calls by start, stable (equal starts keep their order, as glibc's
 * merge-sort qsort keeps them). The list is short and mostly in order
 * already (the kept ones are sorted, new ones come in end order): an
 * insertion sort moves only what is out of place; a long list goes to qsort.
 */
#define PENDING_INSERTION_MAX 64

static void sort_pending(struct timeline *tl)
{
	struct call *v = tl->pending, tmp;

	if (tl->n_pending > PENDING_INSERTION_MAX) {
		qsort(v, tl->n_pending, sizeof(*v), cmp_call);
		return;
	}
	for (size_t i = 1; i < tl->n_pending; i++) {
		size_t j = i;

		if (v[i].s.start_ns >= v[i - 1].s.start_ns)
			continue;
		tmp = v[i];
		while (j > 0 && v[j - 1].s.start_ns > tmp.s.start_ns) {
			v[j] = v[j - 1];
			j--;
		}
		v[j] = tmp;
	}
}

/* Process the pending calls that ended by watermark_ns, in start order. */
static void process_pending(struct timeline *tl, uint64_t watermark_ns)
{
	size_t keep = 0;

	sort_pending(tl);
	for (size_t i = 0; i < tl->n_pending; i++) {
		struct call *c = &tl->pending[i];

		if (c->s.end_ns > watermark_ns) {
			tl->pending[keep++] = *c;
			continue;
		}
		switch (c->role) {
		case TTF_ROLE_TOKENIZE:
			join_tokenize(tl, &c->s, c->ret);
			break;
		case TTF_ROLE_STEP:
			tl->step_tgid = c->s.tgid;
			if (c->s.n_seq > 0 && c->seq_tokens[0] > 0)
				process_counted_step(tl, c);
			else
				process_step(tl, &c->s);
			break;
		case TTF_ROLE_SYNC:
			process_sync(tl, &c->s);
			break;
		default:
			break;
		}
	}
	tl->n_pending = keep;
}

void timeline__advance(struct timeline *tl, uint64_t watermark_ns)
{
	size_t n = 0;

	/* Calls that completed before the watermark, by start time. */
	for (size_t i = 0; i < tl->n_pending; i++)
		if (tl->pending[i].s.end_ns <= watermark_ns)
			n++;
	if (n)
		process_pending(tl, watermark_ns);
	for (size_t i = 0; i < tl->n_tickets; i++) {
		struct tl_ticket *k = &tl->tickets[i];

		if (k->first_token_ns && !k->first_token_checked &&
		    k->first_token_ns + FIRST_TOKEN_CHECK_NS <= watermark_ns)
			check_first_token(tl, k);
	}
	if (n)
		sweep_released(tl, watermark_ns);
}

const struct tl_ticket *timeline__ticket(const struct timeline *tl, uint64_t req_id)
{
	return ticket_by_id(tl, req_id);
}

void timeline__on_response_begin(struct timeline *tl, uint64_t req_id, uint64_t ts_ns)
{
	struct tl_ticket *k = ticket_by_id(tl, req_id);

	if (k && !k->resp_begin_ns)
		k->resp_begin_ns = ts_ns;
}

void timeline__on_abort(struct timeline *tl, uint64_t req_id, uint64_t closed_ns)
{
	struct tl_ticket *k = ticket_by_id(tl, req_id);

	if (!k || !closed_ns)
		return;
	tl->stats.aborted++;
	k->aborted_ns = closed_ns;
	for (int i = 0; i < tl->n_seqs; i++)
		if (tl->seqs[i].req_id == req_id && tl->seqs[i].state != SEQ_FREE)
			tl->seqs[i].orphan_since_ns = closed_ns;
}

void timeline__release(struct timeline *tl, uint64_t req_id)
{
	struct tl_ticket *k = ticket_by_id(tl, req_id);

	if (!k)
		return;
	if (k->first_token_ns && !k->first_token_checked)
		check_first_token(tl, k);
	/* An aborted request the engine has not started yet will still take a prefill. */
	if (k->aborted_ns && !k->done) {
		k->released = 1;
		return;
	}
	for (int i = 0; i < tl->n_seqs; i++)
		if (tl->seqs[i].req_id == req_id && !tl->seqs[i].orphan_since_ns)
			tl->seqs[i].state = SEQ_FREE;
	*k = tl->tickets[--tl->n_tickets];
}


void timeline__steps_in(const struct timeline *tl, uint64_t start_ns, uint64_t end_ns,
			int (*cb)(void *ctx, const struct tl_step *s), void *ctx)
{
	/*
	 * The ring is sorted by start and no step is longer than max_step_ns:
	 * one starting before start_ns - max_step_ns ended before start_ns.
	 * Binary search for the first that may overlap, then scan.
	 */
	uint64_t lo_ns = start_ns > tl->max_step_ns ? start_ns - tl->max_step_ns : 0;
	size_t lo = 0, hi = tl->n_steps;

	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;

		if (step_at(tl, mid)->start_ns < lo_ns)
			lo = mid + 1;
		else
			hi = mid;
	}
	for (size_t i = lo; i < tl->n_steps; i++) {
		const struct tl_step *s = step_at(tl, i);

		if (s->start_ns > end_ns)
			break;
		if (s->end_ns < start_ns)
			continue;
		if (cb(ctx, s))
			break;
	}
}

int timeline__has_steps(const struct timeline *tl)
{
	return tl->has_steps;
}

const struct timeline_stats *timeline__stats(const struct timeline *tl)
{
	return &tl->stats;
}
