/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * Hop discovery (docs/design.md D11): a traced process wrote a request to
 * an upstream on this host; whoever listens there is to be traced too, so
 * the pipeline can join the two (user/model/hops/). Requests already in
 * flight when it is added merge at that hop.
 *
 * This file looks up who that is (/proc, sock_diag) and says what to do;
 * the event loop (user/cmd/trace.c) does it: trace a TCP port in a network
 * namespace, trace the processes found (with their descendants), and print
 * one line for each process it adds (follow_req__say).
 *
 * An upstream is looked up at most once a second (in record time), and
 * again only when the process found there is gone (a restart): one cache
 * for TCP ports and unix paths or peers.
 */
#ifndef TTFTRACE_FOLLOW_H
#define TTFTRACE_FOLLOW_H

#include <stdint.h>
#include <stdio.h>
#include "user/probe/target.h"

/* An upstream call a traced process wrote. */
struct follow_upstream {
	uint8_t family;		/* TTF_AF_INET, TTF_AF_INET6 or TTF_AF_UNIX (bpf/net.h) */
	uint16_t rport;		/* host order; 0 for unix */
	uint8_t laddr[16];	/* the caller's end, as bpf/net.h encodes it (unix: inodes) */
	uint8_t raddr[16];	/* the upstream's end */
	uint32_t tgid;		/* the caller */
	char comm[16];
	uint64_t read_first_ns;	/* its request written (record time) */
};

/* What the event loop does for one upstream, in this order. */
struct follow_req {
	int trace_port;		/* 1: first trace TCP port `port` in network namespace `netns` */
	uint32_t netns;
	uint16_t port;
	struct target_set found;	/* then these processes, with their descendants */
	char where[160];	/* "port P", "unix:PATH", "unix:socket:[INO]" */
	const char *what;	/* "listens there", "holds its peer socket" */
	uint32_t caller_tgid;	/* the process that called them; 0: --port's own listener */
	char caller_comm[16];
};

struct follow;

/* NULL on ENOMEM. */
struct follow *follow__new(void);
void follow__free(struct follow *f);

/*
 * Upstream call u: 1 with *req filled (follow_req__free it), 0 nothing to
 * do (not on this host, looked up within the last second, or the process
 * found there still runs).
 */
int follow__upstream(struct follow *f, const struct follow_upstream *u, struct follow_req *req);
/*
 * --port names a service: who listens on TCP port in this network
 * namespace now (with descendants). 1 with *req filled, 0 nobody.
 */
int follow__listeners(uint16_t port, struct follow_req *req);
/* The line the loop prints for each process of req it adds (tgid). */
void follow_req__say(const struct follow_req *req, uint32_t tgid, FILE *out);
void follow_req__free(struct follow_req *req);

#endif /* TTFTRACE_FOLLOW_H */
