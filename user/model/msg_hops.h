/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * Message hops (docs/design.md D15, D16): an API server that hands each
 * request to an engine process over ZMQ (vLLM: ROUTER/DEALER for requests,
 * PUSH/PULL for one output message per engine step), or a chain of them
 * (SGLang: tokenizer manager -> scheduler -> detokenizer -> tokenizer
 * manager, each hop PUSH/PULL).
 *
 * Every ZMTP message the recognizer reports (user/proto/zmtp.h) with
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
 *     message it wrote after that read (msg_hops__on_read);
 *   - the engine's output that carried the first token is the newest
 *     message the frontend read from that engine before it began writing
 *     the token.
 *
 * Bounded: MSG_HOPS_IDS ids (the oldest forgotten first, counted), the
 * newest MSG_HOPS_MSGS message crossings and MSG_HOPS_READS requests read
 * and not yet given a message (the oldest dropped, counted).
 */
#ifndef TTFTRACE_MSG_HOPS_H
#define TTFTRACE_MSG_HOPS_H

#include <stdint.h>
#include "user/model/attrib.h"
#include "user/model/metrics.h"
#include "user/model/stack_profile.h"
#include "user/proto/request.h"
#include "user/proto/zmtp/zmtp.h"

#define MSG_HOPS_IDS 16384
#define MSG_HOPS_MSGS 8192
#define MSG_HOPS_READS 1024
#define MSG_HOPS_PAIR_NS (100 * 1000000ull)	/* the two ends of one message: at most this apart */
#define MSG_HOPS_PAIR_SCAN 512	/* the newest messages searched for a message's other end */
#define MSG_HOPS_PROCS 3	/* the frontend and up to two processes after it */

enum ttf_msg_stage {
	TTF_MS_NET_IN = 0,
	TTF_MS_READ_WAIT,
	TTF_MS_FRONTEND,
	TTF_MS_IPC_IN,
	TTF_MS_QUEUE,
	TTF_MS_PREFILL,
	TTF_MS_IPC_OUT,
	TTF_MS_EMIT,
	TTF_MS_NET_OUT,
	TTF_MS_DETOKENIZE,	/* chains of two processes after the frontend only */
	TTF_MS_IPC_BACK,	/* ditto */
	TTF_MS__MAX,
};

/* Which hop's input a take window is (ttf_msg_chain.take). */
enum ttf_msg_take {
	TTF_MT_FRONTEND = 0,	/* stage emit, on the thread that wrote the first token */
	TTF_MT_ENGINE,		/* stage queue, on the engine's main thread (tid = its pid) */
	TTF_MT__MAX,
};

/*
 * A message crossed into a process (libzmq's I/O thread read it) and the
 * application thread that takes it works on later: that window, and what
 * the scheduler shows of that thread in it (docs/design.md D15). The
 * overlay is filled by the caller that has a scheduler view (valid 1).
 */
struct ttf_msg_take_gap {
	uint32_t tid;
	uint64_t start_ns, end_ns;	/* = the stage's boundaries */
	int valid;
	struct ttf_overlay ov;		/* sums to end_ns - start_ns */
};

struct ttf_msg_chain {
	uint32_t fe_tgid;		/* the frontend (the client request's process) */
	uint32_t eng_tgid;		/* the engine process that read the request message */
	int64_t stage_ns[TTF_MS__MAX];	/* sum = TTFT; 0 for a stage not in this chain */
	uint32_t out_msgs;		/* the engine's output messages naming it, so far */
	/* the processes in the order the request passed them: [0] fe_tgid, [1] eng_tgid */
	uint32_t tgid[MSG_HOPS_PROCS];
	char comm[MSG_HOPS_PROCS][16];	/* their names; "" unknown (user/model/proc_names.h) */
	uint8_t n_procs;		/* 2 (vLLM-shaped) or 3 (SGLang-shaped) */
	uint8_t n_stages;		/* stage[0 .. n_stages): this chain's stages, in time order */
	uint8_t stage[TTF_MS__MAX];	/* enum ttf_msg_stage */
	/*
	 * each process's role, from the stack profile whose roles and id
	 * pattern fit the chain (user/model/stack_profile.h), else "frontend",
	 * "engine", "output"; stack: that profile's name, "" none
	 */
	char role[MSG_HOPS_PROCS][STACK_NAME_BYTES];
	char stack[STACK_NAME_BYTES];
	struct ttf_msg_take_gap take[TTF_MT__MAX];
	uint8_t inferred;		/* 0: joined by its id; 1: by order and timing (D17) */
};

struct msg_hops_stats {
	uint64_t ids;			/* ids indexed */
	uint64_t ids_evicted;		/* forgotten before any request claimed them */
	uint64_t joined;		/* client requests split by their id */
	uint64_t unjoined;		/* requests with an id the messages did not complete */
	/*
	 * joined requests where a process's first message out naming the id was
	 * stamped (its syscall's return) after the next process read one: that
	 * stage ends at the read instead (docs/design.md D16)
	 */
	uint64_t out_after_in;
	uint64_t joined_inferred;	/* client requests split by order and timing (D17) */
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
/*
 * "net_in", "read_wait", "frontend", "ipc_in", "queue", "prefill", "ipc_out",
 * "emit", "net_out", "detokenize", "ipc_back"
 */
const char *ttf_msg_stage_name(enum ttf_msg_stage s);
/* The i-th stage (0 .. TTF_MS__MAX) in time order: ... ipc_out, detokenize, ipc_back, emit ... */
enum ttf_msg_stage ttf_msg_stage_at(int i);

/*
 * The stages of chain c in time order into out (TTF_MS__MAX entries at
 * most); returns how many. The outputs iterate over these, never over the
 * enum (a chain of another shape has other stages).
 */
int ttf_msg_chain_stages(const struct ttf_msg_chain *c, enum ttf_msg_stage *out);
/*
 * The hop a stage lies in: a process by its position in the chain
 * ("frontend", "engine", "output": a fixed set, whatever role a stack
 * profile gives it) or a link ("ipc", "net"); for a process, its tgid and
 * comm in c (*tgid 0, *comm "" for a link). The outputs iterate over these
 * (user/model/hop_view.h).
 */
const char *ttf_msg_stage_hop(const struct ttf_msg_chain *c, enum ttf_msg_stage s,
			      uint32_t *tgid, const char **comm);

#endif /* TTFTRACE_MSG_HOPS_H */
