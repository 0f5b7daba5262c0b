/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * Message hops (docs/design.md D15, D16): an API server that hands each
 * request to an engine process over ZMQ (vLLM: ROUTER/DEALER for requests,
 * PUSH/PULL for one output message per engine step), or a chain of them
 * (SGLang: tokenizer manager -> scheduler -> detokenizer -> tokenizer
 * manager, each hop PUSH/PULL).
 *
 * Every ZMTP message the recognizer reports (user/proto/zmtp/zmtp.h) with
 * request ids is indexed by id: for each id, the first time each traced
 * process wrote (OUT) and read (IN) a message naming it, where the message
 * crossed the socket (libzmq's I/O threads do the socket I/O: a crossing is
 * not when the application took it from ZMQ's queue). A client request
 * whose SSE stream names the same id (ttf_request.resp_id) is then split.
 * The processes after the frontend are taken in the order they first read
 * a message naming the id; the first of them is the engine that runs the
 * steps. One engine process (vLLM):
 *
 *   frontend  its read -> the frontend wrote the engine request message
 *   ipc_in    -> the engine process read it
 *   queue     -> the engine's previous output message (a step ended; the
 *                step that gave the first token began then), or 0
 *   prefill   -> the engine wrote the first output message naming it
 *   ipc_out   -> the frontend read that message
 *   emit      -> the frontend began writing the first token
 *
 * Two (SGLang): ipc_out ends where the second process (the detokenizer)
 * read the engine's first output message naming the id, then
 *
 *   detokenize -> the second process wrote its first message naming it
 *   ipc_back   -> the frontend read that message
 *   emit       -> the frontend began writing the first token
 *
 * after net_in and read_wait and before net_out: disjoint, summing to TTFT.
 * The join is exact (the id); queue/prefill are inferred from the output
 * cadence (one message per step).
 *
 * Without an id on both sides (messages that name requests by a number, or
 * not at all), one engine process is joined by order and timing instead
 * (docs/design.md D17), marked inferred:
 *
 *   - each message is paired with the one at the other end of its
 *     connection: the oldest unpaired message of the other direction whose
 *     addresses are this one's swapped (loopback 4-tuple, unix inodes), of
 *     the same wire bytes, within MSG_HOPS_PAIR_NS (a byte stream is FIFO);
 *   - the k-th client request a process read is the request of the k-th
 *     message it wrote after that read (msg_hops__on_read); marked
 *     ambiguous where a message on another connection of that process
 *     could have carried it instead (the order holds per connection);
 *   - the engine's output that carried the first token is the newest
 *     message the frontend read from that engine before it began writing
 *     the token.
 *
 * Bounded: MSG_HOPS_IDS ids (the oldest forgotten first, counted), the
 * newest MSG_HOPS_MSGS message crossings and MSG_HOPS_READS requests read
 * and not yet given a message (the oldest dropped, counted).
 */
#ifndef TTFTRACE_HOPS_MSG_H
#define TTFTRACE_HOPS_MSG_H

#include <stdint.h>
#include "user/model/hops/chain.h"
#include "user/model/metrics.h"
#include "user/model/stack_profile.h"
#include "user/proto/request.h"
#include "user/proto/zmtp/zmtp.h"

#define MSG_HOPS_IDS 16384
#define MSG_HOPS_MSGS 8192
#define MSG_HOPS_READS 1024
#define MSG_HOPS_PAIR_NS (100 * 1000000ull)	/* the two ends of one message: at most this apart */
#define MSG_HOPS_PAIR_SCAN 512	/* the newest messages searched for a message's other end */

struct msg_hops_stats {
	uint64_t ids;			/* ids indexed */
	uint64_t ids_evicted;		/* forgotten before any request claimed them */
	uint64_t joined;		/* client requests split by their id */
	uint64_t unjoined;		/* requests with an id the messages did not complete, nor the order-and-timing join */
	/*
	 * joined requests where a process's first message out naming the id was
	 * stamped (its syscall's return) after the next process read one: that
	 * stage ends at the read instead (docs/design.md D16)
	 */
	uint64_t out_after_in;
	uint64_t joined_inferred;	/* client requests split by order and timing (D17) */
	/* of those, requests whose id was seen but its messages incomplete */
	uint64_t inferred_id_incomplete;
	/*
	 * of those, requests whose message could have been another one of its
	 * process on another connection (written after its read): libzmq
	 * writes each connection's queue in turn, so across connections the
	 * order is not known (D17). Data-parallel engines: maybe the other rank.
	 */
	uint64_t inferred_ambiguous;
	/* joined by id, by enum ttf_msg_id_rule (user/model/hops/chain.h) */
	uint64_t joined_by_rule[4];
	uint64_t reads_dropped;		/* requests read past MSG_HOPS_READS waiting for a message */
};

struct msg_hops;

/* NULL on ENOMEM. */
struct msg_hops *msg_hops__new(void);
void msg_hops__free(struct msg_hops *mh);
/* The stack profiles that name a chain's processes (copied; NULL: none, the default names). */
void msg_hops__set_stacks(struct msg_hops *mh, const struct stack_profiles *sp);
/*
 * One ZMTP message, with ids or without (its ids, crossing, size and
 * connection are kept). 0 or -ENOMEM (counted as evicted).
 */
int msg_hops__on_msg(struct msg_hops *mh, const struct ttf_zmtp_msg *m);
/*
 * Client request req_id of process tgid was read (its last byte at
 * read_ns, CLOCK_MONOTONIC): the next message tgid writes after read_ns is
 * its message by order (D17).
 */
void msg_hops__on_read(struct msg_hops *mh, uint32_t tgid, uint64_t req_id, uint64_t read_ns);
/* Request req_id ended: forget its read if no message took it. */
void msg_hops__request_done(struct msg_hops *mh, uint64_t req_id);
/*
 * r (a client request whose response named r->resp_id, with metrics m and
 * attribution a): fill *out and forget the id. Without messages naming its
 * id, by order and timing (out->inferred 1). 1 split, 0 not (its messages
 * incomplete, or neither join found them).
 */
int msg_hops__join(struct msg_hops *mh, const struct ttf_request *r,
		   const struct ttf_req_metrics *m, const struct ttf_attrib *a,
		   struct ttf_msg_chain *out);
const struct msg_hops_stats *msg_hops__stats(const struct msg_hops *mh);

#endif /* TTFTRACE_HOPS_MSG_H */
