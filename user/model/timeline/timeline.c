// SPDX-License-Identifier: GPL-2.0-only
/* Engine timeline (timeline.h): the object, its tickets and sequences, and its entry points. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "user/lib/log.h"
#include "user/model/timeline/timeline_int.h"

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

int tl_grow(void **arr, size_t *cap, size_t need, size_t elem)
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

	if (tl_grow((void **)&tl->tickets, &tl->cap_tickets, tl->n_tickets + 1, sizeof(*k)))
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

/*
 * A request a gateway read (a process that calls upstreams, hops.h) is
 * served by the upstream's engine as another request: not this step's.
 */
int tl_other_process(const struct timeline *tl, const struct tl_ticket *k)
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

struct seq_slot *tl_seq_slot(struct timeline *tl, int32_t seq)
{
	for (int i = 0; i < tl->n_seqs; i++)
		if (tl->seqs[i].seq == seq)
			return &tl->seqs[i];
	if (tl->n_seqs == MAX_SEQ_STATE)
		return NULL;
	tl->seqs[tl->n_seqs] = (struct seq_slot){ .seq = seq, .next_pos = -1 };
	return &tl->seqs[tl->n_seqs++];
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
		tl_check_first_token(tl, k);
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

int timeline__has_steps(const struct timeline *tl)
{
	return tl->has_steps;
}

const struct timeline_stats *timeline__stats(const struct timeline *tl)
{
	return &tl->stats;
}
