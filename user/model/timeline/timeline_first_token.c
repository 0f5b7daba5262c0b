// SPDX-License-Identifier: GPL-2.0-only
/* First tokens: a prompt given by a guess is checked against its request's first token. */
#include "user/model/timeline/timeline_int.h"

void timeline__on_first_token(struct timeline *tl, uint64_t req_id, uint64_t ts_ns)
{
	struct tl_ticket *k = ticket_by_id(tl, req_id);

	if (k && !k->first_token_ns)
		k->first_token_ns = ts_ns;
}

/*
 * k's first token was out before its prefill ended, or with no prefill given
 * to it at all: a guess gave its prompt to another request of the same
 * length. Take back the latest such prompt that ended before the token.
 */
void tl_check_first_token(struct timeline *tl, struct tl_ticket *k)
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

		tl_swap_prefills(tl, k, best, "first token out before its prompt ended");
		if (!had) {	/* it gets the guess that was made for best */
			k->match = best->match;
			k->n_tied = best->n_tied;
		}
		tl->stats.reassigned_by_token++;
	}
}
