// SPDX-License-Identifier: GPL-2.0-only
/* Completed calls processed in start order once the watermark passed their end. */
#include <stdlib.h>
#include "user/model/timeline/timeline_int.h"

static int cmp_call(const void *a, const void *b)
{
	const struct call *x = a, *y = b;

	if (x->s.start_ns != y->s.start_ns)
		return x->s.start_ns < y->s.start_ns ? -1 : 1;
	return 0;
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
			tl_join_tokenize(tl, &c->s, c->ret);
			break;
		case TTF_ROLE_STEP:
			tl->step_tgid = c->s.tgid;
			if (c->s.n_seq > 0 && c->seq_tokens[0] > 0)
				tl_process_counted_step(tl, c);
			else
				tl_process_step(tl, &c->s);
			break;
		case TTF_ROLE_SYNC:
			tl_process_sync(tl, &c->s);
			break;
		default:
			break;
		}
	}
	tl->n_pending = keep;
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

/*
 * Checked this long after a first token: the other requests whose prompts
 * ended in the same step have written theirs by then (an engine writes
 * every first token of a step right after it).
 */
#define FIRST_TOKEN_CHECK_NS (20 * 1000000ull)

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
			tl_check_first_token(tl, k);
	}
	if (n)
		sweep_released(tl, watermark_ns);
}
