// SPDX-License-Identifier: GPL-2.0-only
/* Uprobe hits to calls: each return paired with its entry on the same thread. */
#include <errno.h>
#include <stdint.h>
#include <string.h>
#include "user/model/timeline/timeline_int.h"

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
	if (tl_grow((void **)&tl->pending, &tl->cap_pending, tl->n_pending + 1, sizeof(*c)))
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
