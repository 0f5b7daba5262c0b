// SPDX-License-Identifier: GPL-2.0-only
/* Steps without per-sequence counts, sync calls, and the work done for aborted requests. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "user/lib/log.h"
#include "user/model/timeline/timeline_int.h"

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

void tl_orphan_accounting(struct timeline *tl, const struct tl_step *s)
{
	int n = s->n_seq > 0 ? s->n_seq : 1, orphans = 0;

	for (int i = 0; i < s->n_seq; i++) {
		struct seq_slot *sl = tl_seq_slot(tl, s->seq_ids[i]);

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

/*
 * Not a prompt step: its prefilling sequences now decode, but for a last
 * chunk of exactly the prompt's remaining token (chunked prefill).
 */
static void decode_step(struct timeline *tl, struct tl_step *s)
{
	int n_seq = s->n_seq;

	for (int i = 0; i < n_seq; i++) {
		struct seq_slot *sl = tl_seq_slot(tl, s->seq_ids[i]);
		struct tl_ticket *k;

		if (!sl || sl->state != SEQ_PREFILL)
			continue;
		k = ticket_by_id(tl, sl->req_id);
		/* A last chunk of exactly the prompt's remaining token (chunked prefill). */
		if (k && k->tok_count > 0 && n_seq == 1 && s->n_tokens > 0 &&
		    k->prefill_tokens + s->n_tokens == (uint64_t)k->tok_count) {
			tl_extend_prefill(k, s, -1);
			s->req_id = k->req_id;
			s->is_prompt = 1;
			continue;
		}
		sl->state = SEQ_DECODE;
	}
}

/* No sequence ids: every prompt step after a waiting request starts its prefill. */
static void prompt_step_without_seqs(struct timeline *tl, struct tl_step *s)
{
	int n_waiting;
	struct tl_ticket *k = tl_oldest_waiting(tl, s->start_ns, &n_waiting);

	if (k) {
		k = tl_start_prefill(tl, s, -1, s->n_tokens, 0, -1);
		s->req_id = k ? k->req_id : 0;
	} else {
		struct seq_slot *sl = tl_seq_slot(tl, -1);
		struct tl_ticket *prev = sl ? ticket_by_id(tl, sl->req_id) : NULL;

		if (prev && sl->state == SEQ_PREFILL) {
			tl_extend_prefill(prev, s, -1);
			s->req_id = prev->req_id;
		} else {
			tl->stats.orphan_prompt_steps++;
		}
	}
	if (s->req_id) {
		struct seq_slot *sl = tl_seq_slot(tl, -1);

		if (sl)
			*sl = (struct seq_slot){ -1, SEQ_PREFILL, s->req_id, 0, -1 };
	}
}

/* A prompt step with sequence ids: it extends prefills, or starts one per new sequence. */
static void prompt_step_with_seqs(struct timeline *tl, struct tl_step *s)
{
	int n_seq = s->n_seq;

	for (int i = 0; i < n_seq; i++) {
		struct seq_slot *sl = tl_seq_slot(tl, s->seq_ids[i]);
		struct tl_ticket *k;

		if (!sl)
			continue;
		k = sl->state != SEQ_FREE ? ticket_by_id(tl, sl->req_id) : NULL;
		if (sl->state == SEQ_PREFILL && k) {
			tl_extend_prefill(k, s, -1);	/* chunked prefill */
			if (!s->req_id)
				s->req_id = k->req_id;
			continue;
		}
		/* In a batch of several sequences, a decoding one only brings its next token. */
		if (sl->state == SEQ_DECODE && k && n_seq > 1)
			continue;
		/* The step's tokens are all this sequence's when it is alone in the batch. */
		struct tl_ticket *nk = tl_start_prefill(tl, s, s->seq_ids[i],
							n_seq <= 1 ? s->n_tokens : -1, 0, -1);

		if (nk) {
			*sl = (struct seq_slot){ s->seq_ids[i], SEQ_PREFILL, nk->req_id,
						 nk->aborted_ns, -1 };
			if (!s->req_id)
				s->req_id = nk->req_id;
		}
	}
}

void tl_process_step(struct timeline *tl, struct tl_step *s)
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
		struct seq_slot *sl = tl_seq_slot(tl, s->seq_ids[i]);

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
		decode_step(tl, s);
	} else {
		tl->stats.prompt_steps++;
		if (n_seq == 0)
			prompt_step_without_seqs(tl, s);
		else
			prompt_step_with_seqs(tl, s);
	}
	tl_orphan_accounting(tl, s);
	tl_store_step(tl, s);
}

/*
 * A sync call (e.g. llama_synchronize) that had to wait ends the step that
 * ran before it on its thread: the device work finished at its return. A
 * sync that returned at once (CPU backend, or GPU already done) says nothing.
 */
#define SYNC_WAITED_NS 20000

void tl_process_sync(struct timeline *tl, const struct tl_step *c)
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
