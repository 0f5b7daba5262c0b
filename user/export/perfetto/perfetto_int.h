/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * State shared by the parts of the Perfetto sink (user/export/perfetto/perfetto.h):
 * perfetto.c (requests, lanes, flows, hops, finish), perfetto_thr.c
 * (threads, ALL scheduler slices), perfetto_served.c (SERVED scheduler
 * slices), perfetto_net.c (connections),
 * perfetto_gpu.c (GPU tracks and the flows to them), perfetto_out.c
 * (file and JSON). Internal to user/export/perfetto*.c.
 */
#ifndef TTFTRACE_PERFETTO_INT_H
#define TTFTRACE_PERFETTO_INT_H

#include <stdint.h>
#include "user/model/attrib.h"
#include "user/export/perfetto/perfetto.h"
#include "user/export/perfetto/perfetto_out.h"

#define PF_THR_WINDOWS 8	/* served windows remembered per thread */
#define PF_MARKS_SEEN 256	/* recent marks, so a shared engine step or GPU span is drawn once */
#define PF_GPU_PENDING 1024	/* flows waiting for their GPU spans to be written */

enum thr_state { THR_UNKNOWN = 0, THR_RUNNING, THR_RUNNABLE, THR_BLOCKED };

/* A request's windows: reader, writer, engine steps, ITL outlier gaps (perfetto.c). */
#define PF_REQ_WINDOWS (2 + TTF_MAX_STEP_SPANS + TTF_MAX_CAUSES)

/* SERVED: thread tid of process tgid served the request over [a, b). */
struct pf_served_win {
	uint32_t tid, tgid;
	uint64_t a, b;
};

struct pf_window {
	uint64_t a, b;
};

struct thr {
	uint32_t tid;		/* 0: free slot */
	uint32_t tgid;
	uint64_t since_ns;	/* ALL: the current state's start */
	uint8_t state;		/* ALL: enum thr_state */
	uint8_t n_win;
	/* SERVED: windows drawn already (sorted, disjoint), and all before floor_ns */
	struct pf_window win[PF_THR_WINDOWS];
	uint64_t floor_ns;
};

struct conn {
	uint64_t cookie;	/* 0: free slot */
	uint32_t seq;		/* tid on the Connections track */
	uint64_t in_bytes, out_bytes;
	uint64_t drawn_ns;	/* end of the last slice drawn: later ones start here or after */
	/* the open run of writes, drawn when a read, the close or the end comes */
	uint64_t w_start_ns, w_end_ns, w_bytes;
	uint32_t w_n, w_tid;
};

struct pf_mark_key {
	uint64_t ts_ns;
	uint32_t pid, tid;
};

struct pf_gpu_flow {
	uint64_t flow_id;
	uint64_t req_start_ns;	/* the source: the request slice at its start on its lane */
	uint32_t lane;
	uint32_t pid;		/* the GPU's process */
	uint64_t a, b;		/* the step window */
};

#define PF_HOP_PROCS 16	/* processes with hop lanes (perfetto_hops.c) */
#define PF_HOP_LANES 16	/* lanes per process: requests in it at once */

struct pf_hop_lanes {
	uint32_t tgid;
	uint64_t end[PF_HOP_LANES];	/* 0: never used */
};

struct perfetto {
	struct pf_out out;
	int finished;
	enum perfetto_sched sched_mode;
	const struct sched_view *sched;
	struct gpu_store *gpu;
	uint64_t gpu_cursor_ns;	/* GPU spans starting before this were written */
	uint64_t gpu_next_ns;	/* next tick that reads the store */
	struct pf_gpu_flow *gpu_pending;
	uint32_t n_gpu_pending;
	struct thr *thr;	/* open addressing on tid */
	struct conn *conns;	/* open addressing on cookie */
	uint32_t n_conns;
	uint64_t lane_end[PERFETTO_MAX_LANES];	/* 0: never used */
	struct pf_mark_key seen[PF_MARKS_SEEN];	/* ring */
	uint32_t seen_next;
	uint32_t tgids[64];	/* processes already named */
	int n_tgids;
	uint64_t streams[64];	/* GPU device << 32 | stream already named */
	int n_streams;
	uint64_t threads_refused, conns_refused, sched_reordered, gpu_unread;
	uint64_t lanes_full, flows, gpu_flows_dropped, sched_merged, served_clipped_ns;
	/* SERVED: slices drawn, requests drawn coarser to fit the cap, slices past it */
	uint64_t sched_slices, sched_summarised, sched_over_cap;
	struct pf_hop_lanes hop_lanes[PF_HOP_PROCS];
	int n_hop_lanes;
	uint64_t hop_slices_over;	/* hop slices with no free hop lane: not drawn */
};

/* perfetto.c */
/* A zero-length mark (cat "request") at ts on (pid, tid), once per place; then the flow's end. */
void pf_mark_flow(struct perfetto *pf, uint32_t pid, uint32_t tid, uint64_t ts_ns,
		  const char *name, uint64_t flow_id);
/* One flow event (ph 's', 't' or 'f'; 'f' binds to the enclosing slice, "bp":"e"). */
void pf_flow(struct perfetto *pf, char ph, uint64_t ts_ns, uint32_t pid, uint32_t tid,
	     const char *name, const char *cat, uint64_t flow_id);
/* The flow's start: at the request slice (its lane, its start). */
void pf_flow_start(struct perfetto *pf, uint32_t lane, uint64_t req_start_ns, uint64_t flow_id);
/* Names the process of tgid ("comm tgid (threads)") once. Returns its table index or -1. */
int pf_name_process(struct perfetto *pf, uint32_t tgid);

/* perfetto_hops.c */
/* A request's slices per process hop and its flow across them (nothing without hops). */
void pf_hops(struct perfetto *pf, const struct ttf_request *r, const struct ttf_req_metrics *m,
	     const struct ttf_attrib *a);

/* perfetto_thr.c */
struct thr *pf_thr_get(struct perfetto *pf, uint32_t tid, uint32_t tgid);
void pf_on_sched(void *ctx, const struct ttf_sched_event *e);
/* One scheduler slice (its closing brace left to the caller, for args). */
void pf_sched_slice(struct perfetto *pf, uint32_t tgid, uint32_t tid, enum thr_state st,
		    uint64_t start_ns, uint64_t end_ns);

/* perfetto_served.c */
/*
 * SERVED: the scheduler slices of a request's windows, the parts no earlier
 * request drew, at most PERFETTO_SCHED_SLICES_PER_REQ of them.
 */
void pf_served_request(struct perfetto *pf, const struct pf_served_win *w, int n);

/* perfetto_net.c */
void pf_on_net(void *ctx, const struct ttf_net_event *e, size_t len);
/* The connection of cookie, NULL when not in the table. */
struct conn *pf_conn_find(struct perfetto *pf, uint64_t cookie);
/* Draws every open run of writes (at the end). */
void pf_conns_flush(struct perfetto *pf);

/* perfetto_gpu.c */
void pf_gpu_flush(struct perfetto *pf, uint64_t to_ns);
/* A flow from a request to the first GPU span of @pid in [a, b): now, or once it is written. */
void pf_gpu_flow(struct perfetto *pf, const struct pf_gpu_flow *fl);

#endif /* TTFTRACE_PERFETTO_INT_H */
