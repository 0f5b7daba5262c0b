// SPDX-License-Identifier: GPL-2.0-only
/* Steps whose probe counted each sequence of the batch (timeline.h, docs/design.md D10). */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "user/lib/log.h"
#include "user/model/timeline/timeline_int.h"

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

		if (!k->done && k->tok_count == len && ready_ns(tl, k) <= at_ns && !tl_other_process(tl, k))
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
 * Sequence entry i of counted step c starts a prompt (or resumes one whose
 * first chunks were unclaimed): give it to a waiting ticket, else keep its
 * chunks unclaimed. seqs[] gathers the step's prompt entries.
 */
static void start_new_prompt(struct timeline *tl, struct call *c, int i, int *seqs, int *n_seqs)
{
	struct tl_step *s = &c->s;
	struct seq_slot *sl = tl_seq_slot(tl, s->seq_ids[i]);
	int32_t n = c->seq_tokens[i];
	int64_t pos = c->seq_pos0[i] > 0 ? c->seq_pos0[i] : 0;
	int ends = !!(c->seq_out_mask & (1u << i));
	int resumes = sl->state == SEQ_UNCLAIMED && (sl->next_pos < 0 || c->seq_pos0[i] < 0 ||
						      c->seq_pos0[i] == sl->next_pos);
	struct tl_ticket *k;

	if (!resumes)
		sl->un = (struct unclaimed){ s->start_ns, c->seq_pos0[i], 0, 0 };
	k = tl_start_prefill(tl, s, s->seq_ids[i], pos + n, !ends, n);
	if (!k) {
		/* Keep a first chunk: its request may be known by a later one. */
		struct unclaimed un = sl->un;

		un.tokens += n;
		un.steps++;
		*sl = (struct seq_slot){ s->seq_ids[i], ends ? SEQ_FREE : SEQ_UNCLAIMED, 0, 0,
					 ends || c->seq_pos0[i] < 0 ? -1 : c->seq_pos0[i] + n,
					 ends ? (struct unclaimed){ 0 } : un };
		return;
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
		k = tl_claim_from_chunked(tl, k, pos + n);
	*sl = (struct seq_slot){ s->seq_ids[i], ends ? SEQ_DECODE : SEQ_PREFILL, k->req_id,
				 k->aborted_ns, c->seq_pos0[i] >= 0 ? c->seq_pos0[i] + n : -1 };
	note_prompt_seq(s, i, n, seqs, n_seqs);
}

/* Who prefilled in step s (seqs[]: its prompt entries), once reassignments in it are done. */
static void note_prefillers(struct timeline *tl, struct tl_step *s, const int *seqs, int n_seqs)
{
	for (int j = 0; j < n_seqs; j++) {
		struct seq_slot *sl = tl_seq_slot(tl, s->seq_ids[seqs[j]]);

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
		struct seq_slot *sl = tl_seq_slot(tl, s->seq_ids[seqs[j]]);
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
}

/*
 * A step whose probe counted each sequence's tokens (timeline.h): chunks
 * extend prefills, decode tokens advance their sequence, new prompts start
 * prefills in batch order; then every request prefilling in it learns that
 * it shared the step.
 */
void tl_process_counted_step(struct timeline *tl, struct call *c)
{
	struct tl_step *s = &c->s;
	int new_k[TL_MAX_SEQ], n_new = 0, seqs[TL_MAX_SEQ], n_seqs = 0;

	tl->stats.counted_steps++;
	s->prompt_tokens = 0;
	if (ttf_verbosity >= 2)
		debug_step(s, c);
	for (int i = 0; i < s->n_seq; i++) {
		struct seq_slot *sl = tl_seq_slot(tl, s->seq_ids[i]);
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
			tl_extend_prefill(k, s, n);
			note_prompt_seq(s, i, n, seqs, &n_seqs);
			if (c->seq_out_mask & (1u << i)) {
				k->prompt_done = 1;
				sl->state = SEQ_DECODE;
				tl_confirm_prompt(tl, k);
			}
			break;
		case PART_NEW:
		case PART_RESUME:
			new_k[n_new++] = i;
			continue;	/* next_pos once its request is known */
		}
		sl->next_pos = pos >= 0 ? pos + n : -1;
	}
	for (int j = 0; j < n_new; j++)
		start_new_prompt(tl, c, new_k[j], seqs, &n_seqs);
	note_prefillers(tl, s, seqs, n_seqs);
	tl_orphan_accounting(tl, s);
	tl_store_step(tl, s);
}
