/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * Inside the engine timeline (timeline.h): the object, and the jobs its files
 * share. timeline.c holds the object and its entries, timeline_pair.c pairs
 * uprobe entries with their returns, timeline_order.c processes completed
 * calls in time order under the watermark, timeline_tickets.c gives prompts
 * to requests, timeline_step.c and timeline_batch.c read steps without and
 * with per-sequence counts, timeline_first_token.c checks prompts against
 * first tokens, timeline_store.c keeps processed steps for queries.
 */
#ifndef TTFTRACE_TIMELINE_INT_H
#define TTFTRACE_TIMELINE_INT_H

#include <stddef.h>
#include <stdint.h>
#include "user/model/timeline/timeline.h"

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

static inline struct tl_step *step_at(const struct timeline *tl, size_t i)
{
	return &tl->steps[(tl->steps_head + i) % MAX_STEPS];
}

/* When k was ready for the engine: its tokenize call's end, else its read. */
static inline uint64_t ready_ns(const struct timeline *tl, const struct tl_ticket *k)
{
	return k->tok_end_ns ? k->tok_end_ns : k->read_done_ns;
}

static inline struct tl_ticket *ticket_by_id(const struct timeline *tl, uint64_t id)
{
	for (size_t i = 0; i < tl->n_tickets; i++)
		if (tl->tickets[i].req_id == id)
			return &tl->tickets[i];
	return NULL;
}

/* timeline.c: the object */
/* Grow *arr (elements of elem bytes) to hold need; 0 or -ENOMEM. */
int tl_grow(void **arr, size_t *cap, size_t need, size_t elem);
int tl_other_process(const struct timeline *tl, const struct tl_ticket *k);
/* The state of sequence seq, made free when new; NULL when the table is full. */
struct seq_slot *tl_seq_slot(struct timeline *tl, int32_t seq);

/* timeline_tickets.c: which request a prompt is */
void tl_join_tokenize(struct timeline *tl, const struct tl_step *c, int64_t ret);
struct tl_ticket *tl_oldest_waiting(struct timeline *tl, uint64_t at, int *n_waiting);
void tl_extend_prefill(struct tl_ticket *k, const struct tl_step *s, int32_t n_tokens);
struct tl_ticket *tl_start_prefill(struct timeline *tl, struct tl_step *s, int32_t seq,
				   int64_t prompt_len, int at_least, int32_t n_tokens);
void tl_swap_prefills(struct timeline *tl, struct tl_ticket *a, struct tl_ticket *b,
		      const char *why);
void tl_confirm_prompt(struct timeline *tl, struct tl_ticket *k);
struct tl_ticket *tl_claim_from_chunked(struct timeline *tl, struct tl_ticket *k, int64_t len);

/* timeline_step.c, timeline_batch.c: one completed call */
void tl_process_step(struct timeline *tl, struct tl_step *s);
void tl_process_counted_step(struct timeline *tl, struct call *c);
void tl_process_sync(struct timeline *tl, const struct tl_step *c);
void tl_orphan_accounting(struct timeline *tl, const struct tl_step *s);

/* timeline_first_token.c */
void tl_check_first_token(struct timeline *tl, struct tl_ticket *k);

/* timeline_store.c */
void tl_store_step(struct timeline *tl, const struct tl_step *s);

#endif /* TTFTRACE_TIMELINE_INT_H */
