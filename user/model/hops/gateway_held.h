/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * Inside the gateway joins (gateway.h): what is held, and the look-ups the
 * join shares with holding and waiting (gateway.c). Not for other files.
 */
#ifndef TTFTRACE_HOPS_GATEWAY_HELD_H
#define TTFTRACE_HOPS_GATEWAY_HELD_H

#include <stddef.h>
#include <stdint.h>
#include "user/model/hops/gateway.h"

/* Upstream connections remembered, newest kept (a 4-tuple is reused only after TIME_WAIT). */
#define MAX_UP_CONNS 1024
/* A held request waits for its claim at most this many at once; the oldest go out first. */
#define MAX_HELD 4096

struct held {
	struct ttf_request r;		/* deep copy: owns r.events */
	struct ttf_req_metrics m;
	struct ttf_attrib a;
	uint64_t ready_ns;		/* its latest timestamp */
	int upstream;			/* 1: U (a gateway's call), 0: E (an upstream's request) */
	int have_a;			/* a was given */
};

/* An upstream call written whose response has not ended (not yet held). */
struct open_call {
	uint64_t id;
	uint32_t tgid;
	uint64_t read_first_ns;
};

#define MAX_OPEN 1024

struct hops {
	struct ttf_conn_addr up[MAX_UP_CONNS];	/* U connections, ring */
	size_t n_up, up_head;
	struct open_call open[MAX_OPEN];
	size_t n_open;
	uint16_t traced_ports[64];	/* upstream ports whose server's requests were seen */
	int n_traced_ports;
	struct held *held;
	size_t n_held, cap_held;
	struct hops_stats stats;
};

/* Where r's first token began to be written: the gateway's first client write. */
uint64_t gw_first_write_ns(const struct ttf_request *r);
/* Forget held request i (its events freed). */
void gw_drop_held(struct hops *h, size_t i);
/*
 * The upstream call of r: of those that fit (its process, its window, its
 * body), the one written closest to the end of r's read. *n_fit: how many
 * fit; *n_same: of them, with as many token events as r.
 */
struct held *gw_find_upstream(struct hops *h, const struct ttf_request *r, int *n_fit,
			      int *n_same);
/*
 * A disaggregated chain's decode call (returned) and prefill call (*p_out),
 * on r's own thread first (*same_thread). *n_d: decode calls that fit.
 */
struct held *gw_find_pd(struct hops *h, const struct ttf_request *r, struct held **p_out,
			int *n_d, int *same_thread);
/*
 * A gateway that rewrites the body (Ollama turns /api/generate into
 * llama-server's /completion) and relays the tokens: of the calls in r's
 * window (not side calls) whose first token was read at most RELAY_NS
 * before r's first write, the one read last. *n_fit: how many there were.
 */
struct held *gw_find_rewritten(struct hops *h, const struct ttf_request *r, int *n_fit);
/*
 * A side call: a GET or HEAD (a health or status check before the call
 * proper, as Ollama's GET /health before each /completion); it never
 * carries a client request, and goes out folded into the chain whose
 * window it falls in.
 */
int gw_side_call(const struct ttf_request *u);
/* U was written by r's process while r was read or answered, up to its first token. */
int gw_in_window(const struct ttf_request *r, const struct held *d);
/* The upstream server's request on U's connection, read closest to U's write; NULL none. */
struct held *gw_find_engine(const struct hops *h, const struct held *u);

#endif /* TTFTRACE_HOPS_GATEWAY_HELD_H */
