/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * A request's hops, held, joined and split: the one door the pipeline calls
 * (user/core/pipeline.c). Behind it:
 *
 *   gateway.h  a gateway's upstream calls and its upstream's requests,
 *              held until their client request joins them (D11, D13)
 *   msg.h      ZMQ messages by request id, and by order and timing (D15-D17)
 *   proc_names the names of a message chain's processes
 *
 * A finished request goes through hop_joins__output(): held (a gateway's
 * upstream call, or the request its upstream served: it goes out later,
 * with its client request or alone on expiry), or given the chains it
 * joined. The pipeline's deferred queue asks hop_joins__keep() which
 * requests must wait, in hop_joins__passes() passes.
 */
#ifndef TTFTRACE_HOPS_JOINS_H
#define TTFTRACE_HOPS_JOINS_H

#include <stdint.h>
#include "user/lib/records.h"
#include "user/model/hops/chain.h"
#include "user/model/metrics.h"
#include "user/proto/request.h"
#include "user/proto/zmtp/zmtp.h"

struct hop_joins;
struct sched_view;

/* Where a request's chains live while the sinks read them (a->hops, a->msg point here). */
struct hop_chains {
	struct ttf_hop_chain gw;
	struct ttf_msg_chain msg;
};

/*
 * sched: the scheduler view that overlays a message chain's take windows
 * (NULL: none; not owned). Loads the stack profiles that name a message
 * chain's processes (a bad file: a warning). NULL on ENOMEM.
 */
struct hop_joins *hop_joins__new(struct sched_view *sched);
void hop_joins__free(struct hop_joins *s);

/* A process's name (a main thread's record, or a FORK's child), for message chains. */
void hop_joins__proc_name(struct hop_joins *s, uint32_t tgid, const char *comm);
/* A traced process wrote upstream call u (TTF_REQ_UPSTREAM): remember its connection. */
void hop_joins__on_upstream(struct hop_joins *s, const struct ttf_request *u);
/* Client request r (a POST) was read: the next message its process writes may be its. */
void hop_joins__on_request_read(struct hop_joins *s, const struct ttf_request *r);
/* One ZMTP message (a drop is counted inside). */
void hop_joins__on_msg(struct hop_joins *s, const struct ttf_zmtp_msg *m);

/*
 * Finished request r with its metrics m (NULL: none) and attribution a
 * (NULL: none). Returns 1 when r is held (do not output it now), else 0
 * with a->hops and a->msg set to the chains in *c that r joined (NULL for
 * none). Either way r's message-hop read is forgotten.
 */
int hop_joins__output(struct hop_joins *s, const struct ttf_request *r,
		      const struct ttf_req_metrics *m, struct ttf_attrib *a,
		      struct hop_chains *c);

/* How many passes the deferred queue makes per advance: 2 with s, 1 without. */
int hop_joins__passes(const struct hop_joins *s);
/*
 * In pass `pass`, must deferred request r (its latest timestamp ready_ns,
 * already before watermark_ns) wait? Pass 0 outputs only what s holds
 * (upstream calls and their upstream's requests); pass 1 the rest, except
 * a client request whose upstream call is still open (bounded by
 * HOPS_WAIT_NS). 0 without s.
 */
int hop_joins__keep(const struct hop_joins *s, int pass, const struct ttf_request *r,
		    uint64_t ready_ns, uint64_t watermark_ns);

/* Output of a held request that no join claimed. */
typedef void (*hop_joins_out_fn)(void *ctx, const struct ttf_request *r,
				 const struct ttf_req_metrics *m, const struct ttf_attrib *a);
/* Give fn every held request no client request claimed in time (all at UINT64_MAX). */
void hop_joins__expire(struct hop_joins *s, uint64_t watermark_ns, hop_joins_out_fn fn,
		       void *ctx);

/*
 * The hop counters into c[0..cap): hop_*, then msg_hop_* (those once
 * message hops were seen, or once they counted). Returns how many.
 */
int hop_joins__counters(const struct hop_joins *s, struct report_counter *c, int cap);

#endif /* TTFTRACE_HOPS_JOINS_H */
