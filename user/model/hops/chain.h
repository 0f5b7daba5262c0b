/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * The chains of one request's hops, as the joins fill them and the
 * outputs read them (through user/model/hops/view.h):
 *
 *   struct ttf_hop_chain  through a gateway over HTTP (docs/design.md D11,
 *                         D13; user/model/hops/gateway.h joins it)
 *   struct ttf_msg_chain  to an engine process over ZMQ (D15, D16, D17;
 *                         user/model/hops/msg.h joins it)
 *
 * with their stage names and the hop each stage lies in.
 */
#ifndef TTFTRACE_HOPS_CHAIN_H
#define TTFTRACE_HOPS_CHAIN_H

#include <stdint.h>
#include "user/model/attrib.h"
#include "user/model/stack_profile.h"
#include "user/proto/request.h"

/* Disjoint stages of a client request's TTFT through a gateway; they sum to TTFT. */
enum ttf_hop_stage {
	TTF_HS_NET_IN = 0,	/* client -> gateway (as net_in of a request) */
	TTF_HS_READ_WAIT,	/* arrived -> the gateway read it */
	TTF_HS_GATEWAY_IN,	/* the gateway read it -> its (first) upstream request was written */
	/*
	 * Disaggregated prefill and decode (docs/design.md D13): a prefill call
	 * the proxy makes first, whose answer it reads to the end before its
	 * decode call. 0 for a chain without one (ttf_hop_chain.pd.seen).
	 */
	TTF_HS_PREFILL_CALL,	/* prefill call written -> its response read to the end */
	TTF_HS_HANDOFF,		/* that response read -> the decode call written */
	TTF_HS_UPSTREAM,	/* upstream request written -> the upstream's first token left it */
	TTF_HS_UPSTREAM_OUT,	/* ... -> the gateway read that token */
	TTF_HS_GATEWAY_OUT,	/* the gateway read it -> began writing it to the client */
	TTF_HS_NET_OUT,		/* that write -> the client's first token (write or xmit) */
	TTF_HS__MAX,
};

struct ttf_hop_chain {
	uint32_t gw_tgid;		/* the gateway process */
	char gw_comm[16];
	uint32_t up_tgid;		/* the upstream server process; 0 not traced */
	char up_comm[16];
	uint16_t up_port;		/* the upstream's port (U's remote port) */
	struct ttf_conn_addr up_addr;	/* U's addresses as the gateway's socket has them */
	uint16_t gw_port;		/* U's local port: the gateway's end of that connection */
	int up_unix;			/* U is over a unix stream socket: ports 0, inodes below */
	uint64_t up_ino, gw_ino;	/* unix: the upstream's end of U (its peer inode), the gateway's */
	int exact;			/* r-U join: 1 exact, 0 inferred */
	char why[128];			/* how r and U were joined */
	char up_why[96];		/* "" when E was seen, else why the upstream merges */
	int64_t stage_ns[TTF_HS__MAX];	/* sum = TTFT */
	/*
	 * The upstream's own split inside TTF_HS_UPSTREAM (its stages clamped
	 * to start where U's request was written); -1 not observed.
	 */
	int64_t up_stage_ns[TTF_ST__ALL];
	enum ttf_attrib_kind up_kind;
	char up_merged[64];
	char up_inferred_by[96];
	uint64_t up_req_id;		/* E's id, 0 none */
	uint32_t held_reads;		/* upstream reads after the first token's, before the gateway's first write */
	int64_t held_ns;		/* first upstream token read -> first client write */
	int buffering;			/* the gateway held tokens back (held_reads >= 1 and held > 1 ms) */
	double itl_in_mean_ns;		/* mean ITL at the gateway's input (upstream reads); -1 */
	double itl_out_mean_ns;		/* ... at its output (client writes); -1 */
	/* The prefill call of a disaggregated chain (the upstream above is its decode call). */
	struct {
		int seen;		/* 0: no prefill call; its two stages are 0 */
		uint16_t port;		/* the prefill server's port */
		uint32_t tgid;		/* the prefill server's process; 0 not traced */
		char comm[16];
		uint64_t req_id;	/* its request there; 0 not seen */
		int64_t server_ns;	/* there: request read -> response end written; -1 */
		uint32_t tokens;	/* tokens in its response (usage, or events): none reach the client */
	} pd;
};

/* A stage a chain has: the prefill stages only with a prefill call. */
int ttf_hop_stage_present(const struct ttf_hop_chain *c, enum ttf_hop_stage s);
/*
 * The gateway stage names: "net_in", "read_wait", "gateway_in",
 * "prefill_call", "handoff", "upstream", "upstream_out", "gateway_out",
 * "net_out"
 */
const char *ttf_hop_stage_name(enum ttf_hop_stage s);

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
	uint8_t id_rule;		/* joined by its id: enum ttf_msg_id_rule */
	uint8_t id_incomplete;		/* inferred although its id was seen (messages incomplete) */
	/* inferred, and its message could have been another connection's (D17) */
	uint8_t order_ambiguous;
};

/*
 * How the ids in the messages related to the response's id when they joined
 * (the loosest relation among them; docs/protocols.md "Request ids").
 */
enum ttf_msg_id_rule {
	TTF_MID_EXACT,		/* every message named the response id itself */
	TTF_MID_SUFFIX,		/* some named it with a suffix: vLLM's -X{8}, -0-X{8} */
	TTF_MID_CHILD,		/* some named an n>1 child: N_ before it */
	TTF_MID_CORE,		/* some only shared its 32-hex or UUID core */
};

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
 * (user/model/hops/view.h).
 */
const char *ttf_msg_stage_hop(const struct ttf_msg_chain *c, enum ttf_msg_stage s,
			      uint32_t *tgid, const char **comm);

/* The default name of the k-th process of a message chain: "frontend", "engine", "output". */
const char *ttf_msg_proc_role(int k);

#endif /* TTFTRACE_HOPS_CHAIN_H */
