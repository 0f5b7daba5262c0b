/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * Message hops' own state (msg.h), shared by msg.c (the join by id and the
 * split) and msg_order.c (the join by order and timing, docs/design.md D17).
 * Not for other modules.
 */
#ifndef TTFTRACE_HOPS_MSG_IMPL_H
#define TTFTRACE_HOPS_MSG_IMPL_H

#include <string.h>
#include <uthash.h>
#include "user/model/hops/msg.h"

/*
 * Crossings kept per id: frontend OUT and IN, IN and OUT of each process
 * after it (MSG_HOPS_PROCS), and two spares (a process more than a chain has).
 */
#define CROSSINGS (2 * MSG_HOPS_PROCS + 2)

struct crossing {
	uint64_t ts_ns;		/* the first message of this process and direction naming the id */
	uint32_t tgid;
	uint8_t dir;		/* enum zmtp_dir */
	uint32_t n;		/* messages of this process and direction naming it */
};

#define SEEN_IDS 4	/* distinct ids kept per entry, to name the join's rule */

/* One request's messages, by the core of the ids they named (zmtp_id_core). */
struct id_entry {
	char id[ZMTP_ID_BYTES];		/* the key: the ids' core */
	char seen[SEEN_IDS][ZMTP_ID_BYTES];	/* the first distinct ids naming it */
	uint64_t last_msg;		/* 1 + the number of the last message counted */
	struct crossing c[CROSSINGS];
	int n_c;
	UT_hash_handle hh;
};

/* One message's crossing, ids or not (ring msgs, slot n % MSG_HOPS_MSGS). */
struct msg_time {
	uint64_t n;		/* its number: messages seen before it */
	uint64_t ts_ns;
	uint64_t bytes;		/* wire bytes: both ends of a message see the same */
	uint64_t req_id;	/* OUT: the client request it carried, by order (D17); 0 none */
	uint64_t read_ns;	/* OUT: when that request was read */
	uint64_t peer;		/* 1 + the number of its other end's message; 0 unpaired */
	struct ttf_conn_addr addr;
	uint32_t tgid;
	uint8_t dir;		/* enum zmtp_dir */
	/*
	 * OUT, bound by order: a message of its process on another connection,
	 * written after that read, could have carried its request instead (D17)
	 */
	uint8_t order_ambiguous;
	uint8_t named;		/* it named a request id (a stats message to a coordinator names none) */
};

struct pending_read {
	uint64_t req_id, read_ns;
	uint32_t tgid;
};

struct msg_hops {
	struct id_entry *ids;		/* uthash, oldest first */
	unsigned int n_ids;
	struct msg_time msgs[MSG_HOPS_MSGS];	/* every message, ring */
	uint64_t n_msgs;			/* messages seen */
	struct pending_read reads[MSG_HOPS_READS];	/* oldest first */
	size_t n_reads;
	struct msg_hops_stats stats;
	struct stack_profiles stacks;
};

/* Message number n, NULL when the ring no longer has it (or never had). */
static inline struct msg_time *msg_at(struct msg_hops *mh, uint64_t n)
{
	struct msg_time *x = &mh->msgs[n % MSG_HOPS_MSGS];

	return n < mh->n_msgs && x->n == n ? x : NULL;
}

/* Are a and b the two ends of one connection (each one's addresses the other's swapped)? */
static inline int same_conn_swapped(const struct ttf_conn_addr *a, const struct ttf_conn_addr *b)
{
	static const uint8_t zero[16];

	return a->family && a->family == b->family && a->lport == b->rport &&
	       a->rport == b->lport && !memcmp(a->laddr, b->raddr, sizeof(a->laddr)) &&
	       !memcmp(a->raddr, b->laddr, sizeof(a->raddr)) &&
	       memcmp(a->raddr, zero, sizeof(zero));	/* a unix peer not yet known: no pair */
}

/* Where a request crossed each process of its chain: the first messages naming it. */
struct hop_times {
	uint64_t fe_out_ns, fe_in_ns;		/* the frontend wrote, then read */
	uint64_t in_ns[MSG_HOPS_PROCS - 1];	/* each process after it read */
	uint64_t out_ns[MSG_HOPS_PROCS - 1];	/* ... then wrote */
	uint32_t tgid[MSG_HOPS_PROCS - 1];
	uint32_t out_msgs;			/* the engine's output messages naming it; 0 unknown */
	int n;					/* processes after the frontend */
	int order_ambiguous;			/* by order: its message's order_ambiguous */
	int by_id;				/* joined by the id: the engine's outputs name ids */
};

/* An OUT message of x->tgid: the request it carried, by order (D17). */
void msg_order__bind(struct msg_hops *mh, struct msg_time *x);
/* By order and timing (D17): where r crossed its chain; 1 found, 0 not. */
int msg_order__times(struct msg_hops *mh, const struct ttf_request *r, struct hop_times *h);

#endif
