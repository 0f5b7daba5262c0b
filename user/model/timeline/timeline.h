/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * Engine timeline: which engine step served which request.
 *
 * Inputs, in any order within one drain of the ring buffers:
 *   - tickets: a request was read completely (conn.c on_request_read);
 *   - engine calls from uprobes: tokenize [start,end] on a thread, and
 *     steps (llama_decode-like) [start,end] with n_tokens and sequence ids;
 *     sync calls extend the step they follow (docs/cases.md #17: on a GPU the host
 *     call returns before the work is done).
 * timeline__advance(watermark) processes everything older than the
 * watermark in time order:
 *   - a tokenize call joins the ticket its thread read last (same tid,
 *     read before the call started): "the engine has it" at tokenize end;
 *   - steps with per-sequence counts (the probe walked the batch: tokens,
 *     first position and output flag of each sequence id), docs/design.md D10:
 *     each sequence of the batch is one of
 *       . a chunk of a prompt it is prefilling (its position continues the
 *         last chunk): extends that request's prefill; the chunk whose last
 *         token wants logits ends it;
 *       . one decode token (1 token, position continuing its last);
 *       . a new prompt (otherwise; also after the sequence id was freed by
 *         its request's end: slot reuse). Its first position is the length
 *         of the prompt prefix served from the engine's cache; prompt
 *         length = that + its tokens when the chunk ends the prompt.
 *     A new prompt starts the prefill of a waiting ticket: the only one
 *     whose tokenize count equals the prompt length (exact), else the
 *     oldest of those that tie (inferred: arrival order), else the oldest
 *     waiting (inferred: FIFO). Several new prompts of one step are taken in
 *     batch order. Every request prefilling in a step has the whole step in
 *     its prefill: the step is shared.
 *   - steps without counts (older kernels, engines that give no sequence
 *     ids): a prompt step (some sequence brings several tokens: fewer
 *     distinct sequence ids than tokens among the sampled ones) for a
 *     sequence that is not already prefilling starts the prefill of a
 *     waiting ticket, chosen as above with the step's tokens as the
 *     prompt length when one sequence is in it; further prompt steps of
 *     that sequence extend its prefill (chunked prefill), and so does a step
 *     that brings exactly the prompt's remaining tokens (a 1-token last chunk).
 * All times CLOCK_MONOTONIC ns.
 */
#ifndef TTFTRACE_TIMELINE_H
#define TTFTRACE_TIMELINE_H

#include <stdint.h>
#include <stddef.h>
#include "bpf/engine.h"

/* Sequence ids sampled per step (the engine record's). */
#define TL_MAX_SEQ TTF_ENGINE_MAX_SEQ

/* Requests named per step as prefilling in it (n_prompt_reqs counts them all). */
#define TL_STEP_REQS 4

struct tl_step {
	uint64_t start_ns, end_ns;
	uint32_t tgid;
	uint32_t tid;
	int32_t n_tokens;	/* -1 unknown */
	int n_seq;
	int32_t seq_ids[TL_MAX_SEQ];
	int is_prompt;		/* brings prompt tokens (prefill) */
	uint64_t req_id;	/* first request whose prefill it is (prompt steps), 0 unknown */
	int32_t prompt_tokens;	/* prompt tokens in it, all requests; -1 not counted */
	uint16_t n_prompt_reqs;	/* requests prefilling in it */
	uint64_t prompt_reqs[TL_STEP_REQS];	/* the first of them, batch order */
};

/* How a prompt was given to its request (docs/design.md D10). */
enum tl_match {
	TL_MATCH_ALONE = 0,	/* the only request waiting: exact */
	TL_MATCH_COUNT,		/* the only one whose tokenize count is the prompt length: exact */
	TL_MATCH_TIE,		/* oldest of n_tied with that count (preferring a response
				   begun in the step): inferred */
	TL_MATCH_FIFO,		/* oldest waiting, no count matched: inferred */
};

/* What the timeline knows about one request's way through the engine. */
struct tl_ticket {
	uint64_t req_id;
	uint64_t sock_cookie;
	uint32_t rx_tid;
	uint32_t tgid;		/* process that read it; 0 unknown */
	uint64_t read_done_ns;
	uint64_t resp_begin_ns;	/* its response's first byte was written; 0 not yet */
	uint64_t first_token_ns;	/* its first token was written; 0 not yet */
	int first_token_checked;	/* its prefill was checked against that write */
	uint64_t tok_start_ns, tok_end_ns;	/* 0: no tokenize call joined */
	int64_t tok_count;	/* tokens the tokenize call returned; <= 0 unknown */
	uint64_t prefill_start_ns, prefill_end_ns; /* 0: no prompt step joined */
	uint32_t prefill_steps;
	uint64_t prefill_tokens;	/* its own prompt tokens computed (counted), else its steps' */
	uint32_t step_tid;	/* thread that ran its prefill */
	uint32_t step_tgid;	/* ... and its process (the GPU owner for CUPTI joins) */
	int32_t seq;		/* sequence id of its prompt, -1 unknown */
	int n_waiting;		/* tickets waiting (itself included) when its prefill began */
	enum tl_match match;	/* how its prompt step was given to it */
	int n_tied;		/* TL_MATCH_TIE: waiting tickets with its prompt length */
	int by_first_chunk;	/* picked at a first chunk: its length only bounded the prompt's */
	int64_t cached_tokens;	/* prompt tokens the engine had cached (first position); -1 unknown */
	int prompt_done;	/* the chunk ending its prompt was seen (counted batches) */
	uint32_t shared_steps;	/* its prefill steps that also prefilled other requests */
	uint16_t max_sharing;	/* most requests prefilling in one of its steps (itself included) */
	uint64_t step_tokens;	/* all tokens of its prefill steps (for its token share) */
	int done;		/* prefill assigned */
	uint64_t queued_behind_orphan_ns; /* waited while the engine served an aborted request */
	uint64_t aborted_ns;	/* its client left at this time; 0 never */
	int released;		/* output done; kept only to absorb the engine's orphaned work */
};

struct timeline_stats {
	uint64_t steps, prompt_steps, tokenize_calls, tickets;
	uint64_t counted_steps;		/* steps with per-sequence counts */
	uint64_t shared_prompt_steps;	/* prompt steps that prefilled several requests */
	uint64_t reassigned;		/* chunked prompts re-given once their length was known */
	uint64_t reassigned_by_token;	/* guessed prompts exchanged by their first token's time */
	uint64_t unmatched_returns;	/* a return without its entry */
	uint64_t orphan_prompt_steps;	/* a prompt step with no waiting ticket */
	uint64_t chunks_claimed_late;	/* first chunks with no ticket, given with a later chunk */
	uint64_t dropped_old;		/* items evicted by the memory bound */
	uint64_t steps_capped;		/* of them, steps evicted by the count cap before the horizon */
	uint64_t aborted;		/* requests whose client left before the response ended */
	uint64_t orphaned_steps;	/* engine steps that served an aborted request */
	uint64_t orphaned_ns;		/* their time (a batch's time split by its sequences) */
	uint64_t delayed_by_orphans;	/* requests that waited while orphaned work ran */
	uint64_t delay_by_orphans_ns;	/* total of those waits */
};

struct timeline;

/* horizon_ns: how long steps are kept for queries (outlier causes). NULL + errno on failure. */
struct timeline *timeline__new(uint64_t horizon_ns);
void timeline__free(struct timeline *tl);

/* Feed one uprobe hit (role and type from the record). -ENOMEM. */
int timeline__on_engine_event(struct timeline *tl, const struct ttf_engine_event *ev);
/*
 * A request was read completely by process tgid (0 unknown). Steps of
 * another process never serve it once tgid is known as a gateway. -ENOMEM.
 */
int timeline__on_request_read(struct timeline *tl, uint64_t req_id, uint64_t sock_cookie,
			      uint32_t rx_tid, uint64_t read_done_ns, uint32_t tgid);
/* Process tgid called an upstream (user/model/hops/gateway.h): its requests are a gateway's. */
void timeline__on_gateway(struct timeline *tl, uint32_t tgid);
/*
 * The first byte of req_id's response was written at ts_ns. Among waiting
 * requests a prompt cannot tell apart, one whose response began during the
 * step comes first (llama-server writes a streamed response's headers when a
 * slot takes the request).
 */
void timeline__on_response_begin(struct timeline *tl, uint64_t req_id, uint64_t ts_ns);
/*
 * The first token of req_id was written at ts_ns. Its prefill must have ended
 * by then: once the timeline has processed past ts_ns, a request given a
 * prompt that had not ended is exchanged with one that tied with it (same
 * prompt length, picked by a guess) whose prompt had ended and whose first
 * token is not out (docs/design.md D10).
 */
void timeline__on_first_token(struct timeline *tl, uint64_t req_id, uint64_t ts_ns);
/* Process every input older than watermark_ns, in time order. */
void timeline__advance(struct timeline *tl, uint64_t watermark_ns);

/*
 * The client of req_id left at closed_ns. The engine may go on serving it:
 * its prefill and decode steps from then on are orphaned work, and requests
 * waiting meanwhile are delayed by it (counted in the stats and tickets).
 */
void timeline__on_abort(struct timeline *tl, uint64_t req_id, uint64_t closed_ns);

/* The ticket of a request (NULL when none); valid until timeline__release(). */
const struct tl_ticket *timeline__ticket(const struct timeline *tl, uint64_t req_id);
/* Forget a request's ticket once its attribution is done. */
void timeline__release(struct timeline *tl, uint64_t req_id);

/*
 * Steps overlapping [start_ns, end_ns], oldest first: calls cb for each;
 * stops early when cb returns non-zero.
 */
void timeline__steps_in(const struct timeline *tl, uint64_t start_ns, uint64_t end_ns,
			int (*cb)(void *ctx, const struct tl_step *s), void *ctx);

/* 1 once any step event was seen. */
int timeline__has_steps(const struct timeline *tl);
const struct timeline_stats *timeline__stats(const struct timeline *tl);

#endif /* TTFTRACE_TIMELINE_H */
