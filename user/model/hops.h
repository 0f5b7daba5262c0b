/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * Hops on one host (docs/design.md D11): a gateway (nginx, HAProxy, any
 * traced process that calls an upstream over HTTP/1.1) in front of an
 * upstream server that is traced too.
 *
 * Three requests make one client request's chain:
 *   r  the client's request, as the gateway served it (server side);
 *   U  the gateway's upstream call (TTF_REQ_UPSTREAM: written by the gateway,
 *      its response read by it);
 *   E  the upstream server's request (server side), on the same TCP
 *      connection as U: E's 4-tuple is U's reversed. That join is exact.
 *      Over a unix stream socket the same holds for the inode pair
 *      (bpf/net.h): E's (own, peer) inodes are U's swapped.
 * r and U are joined inside the gateway process: U is written after r was
 * read, before r's first token, and carries as many token events. That join
 * is exact when only one upstream call of that process fits, else inferred
 * (the first that fits).
 *
 * U and E are held here until r is output, and output on their own when no
 * r claims them within HOPS_HOLD_NS (nothing is dropped).
 */
#ifndef TTFTRACE_HOPS_H
#define TTFTRACE_HOPS_H

#include <stdint.h>
#include "user/model/attrib.h"
#include "user/model/metrics.h"
#include "user/proto/request.h"

/* An unclaimed upstream call or upstream request is output alone after this. */
#define HOPS_HOLD_NS (10ull * 1000000000ull)
/* A client request waits at most this long (past its own end) for its upstream call. */
#define HOPS_WAIT_NS (2ull * 1000000000ull)

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

struct hops;

struct hops_stats {
	uint64_t upstream_conns;	/* upstream connections seen */
	uint64_t joined_exact, joined_inferred;
	uint64_t joined_pd;		/* chains with a disaggregated prefill call */
	uint64_t upstream_untraced;	/* joins whose upstream server request was not seen */
	uint64_t expired;		/* held requests no client request claimed: output alone */
	uint64_t dropped_oom;		/* could not hold: output alone at once */
};

/* Returns NULL on ENOMEM. */
struct hops *hops__new(void);
void hops__free(struct hops *h);

/* U was written (read done on its request side): remember its connection. 0 or -ENOMEM. */
int hops__on_upstream_conn(struct hops *h, const struct ttf_request *u);
/* A stage a chain has: the prefill stages only with a prefill call. */
int ttf_hop_stage_present(const struct ttf_hop_chain *c, enum ttf_hop_stage s);
/* Would hops__hold keep r (an upstream call, or a request over a remembered upstream connection)? */
int hops__holds(const struct hops *h, const struct ttf_request *r);
/*
 * Should client request r wait before its output? 1 while an upstream call of
 * its process that began inside r's window is still open (written, its
 * response not ended): r's chain needs it.
 */
int hops__wait(const struct hops *h, const struct ttf_request *r);
/*
 * Keep r (an upstream call, or a request that came in over a remembered
 * upstream connection) for a later join. Returns 1 held (copied), 0 not for
 * hops, -ENOMEM (not held: output it now).
 */
int hops__hold(struct hops *h, const struct ttf_request *r, const struct ttf_req_metrics *m,
	       const struct ttf_attrib *a);
/*
 * r is a client request of a gateway: build its chain from the held calls
 * (claimed ones are freed). Returns 1 with *out filled, 0 none.
 */
int hops__join(struct hops *h, const struct ttf_request *r, const struct ttf_req_metrics *m,
	       const struct ttf_attrib *a, struct ttf_hop_chain *out);

/* Output of a held request that no join claimed. */
typedef void (*hops_out_fn)(void *ctx, const struct ttf_request *r,
			    const struct ttf_req_metrics *m, const struct ttf_attrib *a);
/* Give fn every held request ready before watermark_ns - HOPS_HOLD_NS (all at UINT64_MAX). */
void hops__expire(struct hops *h, uint64_t watermark_ns, hops_out_fn fn, void *ctx);
const struct hops_stats *hops__stats(const struct hops *h);

/*
 * "net_in", "read_wait", "gateway_in", "prefill_call", "handoff", "upstream",
 * "upstream_out", "gateway_out", "net_out"
 */
const char *ttf_hop_stage_name(enum ttf_hop_stage s);

#endif /* TTFTRACE_HOPS_H */
