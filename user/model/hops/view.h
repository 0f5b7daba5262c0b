/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * One request's hops, whatever joined them (docs/design.md D11, D13, D15):
 * a gateway chain or a message chain (user/model/hops/chain.h), as the
 * outputs read them (Prometheus, OTLP, Perfetto, the summary). The outputs
 * include this header only: the chains' fields and stage names come with it.
 *
 * Its stages in time order, disjoint, summing to TTFT (`hop_stages_ms`),
 * each in one hop: a process (gateway, prefill, upstream, frontend, engine,
 * ...) or a link between processes ("ipc": ZMQ, loopback TCP or unix) or
 * to the client ("net"). The hop names are a fixed set (they are
 * Prometheus label values): ttf_hop_view_hop_names(). A process hop spans
 * its first stage's start to its last stage's end.
 */
#ifndef TTFTRACE_HOPS_VIEW_H
#define TTFTRACE_HOPS_VIEW_H

#include <stdint.h>
#include "user/model/hops/chain.h"

#define TTF_HOP_VIEW_PROCS 8
#define TTF_HOP_VIEW_STAGES 16

enum ttf_hop_view_kind {
	TTF_HOPV_NONE = 0,
	TTF_HOPV_GATEWAY,	/* through a gateway, over HTTP (gateway.h) */
	TTF_HOPV_MSG,		/* to an engine process over ZMQ (msg.h) */
};

struct ttf_hop_view_proc {
	const char *hop;	/* "gateway", "upstream", "frontend", "engine", ... */
	uint32_t tgid;		/* 0: not traced (an upstream nobody saw) */
	char comm[16];		/* "" unknown */
	uint64_t req_id;	/* its own request of this one (an upstream's), 0 none */
	uint64_t start_ns, end_ns;	/* CLOCK_MONOTONIC: its stages' extent */
	int64_t ns;		/* the sum of its stages (<= end - start: links lie between) */
};

struct ttf_hop_view_stage {
	const char *name;	/* the hop stage ("gateway_in", "queue", ...) */
	const char *hop;	/* its hop: a process's, or "ipc" / "net" */
	int proc;		/* index into procs; -1: a link */
	uint64_t start_ns;	/* CLOCK_MONOTONIC */
	int64_t ns;
};

struct ttf_hop_view {
	enum ttf_hop_view_kind kind;
	int n_procs;
	struct ttf_hop_view_proc procs[TTF_HOP_VIEW_PROCS];
	int n_stages;
	struct ttf_hop_view_stage stages[TTF_HOP_VIEW_STAGES];
};

/*
 * a's hops (a gateway chain first: behind a gateway its chain is the
 * record's), from t_start_ns (the request's first byte). 1 filled, 0 none
 * (a NULL, not valid, or without a chain).
 */
int ttf_hop_view__build(const struct ttf_attrib *a, uint64_t t_start_ns, struct ttf_hop_view *v);
/* The hop names a view can hold, NULL-terminated (a bounded label set). */
const char *const *ttf_hop_view_hop_names(void);
/* Index of hop in ttf_hop_view_hop_names(), -1 none. */
int ttf_hop_view_hop_index(const char *hop);

#endif /* TTFTRACE_HOPS_VIEW_H */
