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
#ifndef TTFTRACE_HOPS_GATEWAY_H
#define TTFTRACE_HOPS_GATEWAY_H

#include <stdint.h>
#include "user/model/hops/chain.h"
#include "user/model/metrics.h"
#include "user/proto/request.h"

/* An unclaimed upstream call or upstream request is output alone after this. */
#define HOPS_HOLD_NS (10ull * 1000000000ull)
/* A client request waits at most this long (past its own end) for its upstream call. */
#define HOPS_WAIT_NS (2ull * 1000000000ull)

struct hops;

struct hops_stats {
	uint64_t upstream_conns;	/* upstream connections seen */
	uint64_t joined_exact, joined_inferred;
	uint64_t joined_pd;		/* chains with a disaggregated prefill call */
	uint64_t joined_rewritten;	/* chains whose call carried a rewritten body */
	uint64_t side_calls;		/* GET/HEAD calls folded into a chain (health checks) */
	uint64_t upstream_untraced;	/* joins whose upstream server request was not seen */
	uint64_t expired;		/* held requests no client request claimed: output alone */
	uint64_t dropped_oom;		/* could not hold: output alone at once */
};

/* Returns NULL on ENOMEM. */
struct hops *hops__new(void);
void hops__free(struct hops *h);

/* U was written (read done on its request side): remember its connection. 0 or -ENOMEM. */
int hops__on_upstream_conn(struct hops *h, const struct ttf_request *u);
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

#endif /* TTFTRACE_HOPS_GATEWAY_H */
