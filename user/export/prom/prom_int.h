/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * Inside the Prometheus output (prom.h): the metrics object that
 * prom_series.c fills and prom_text.c renders, and the sink that prom.c
 * builds around it and prom_http.c serves.
 */
#ifndef TTFTRACE_PROM_INT_H
#define TTFTRACE_PROM_INT_H

#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>
#include <sys/socket.h>
#include "user/lib/histo.h"
#include "user/model/vocab.h"
#include "user/export/prom/prom.h"

/* status_class: [0] unknown, [1..5] 1xx..5xx */
#define N_CLASSES 6
#define MAX_COUNTERS 128
/* route + comm + model (63) label text, escaped: room for every byte doubled */
#define PROM_LABEL_BYTES 384
#define N_API 4			/* enum ttf_api: unknown, chat, completion, llamacpp */
#define COMM_OTHER PROM_MAX_COMMS	/* comm index of "other" */
#define MODEL_OTHER PROM_MAX_MODELS	/* model index of "other" */
#define MODEL_UNKNOWN (PROM_MAX_MODELS + 1)	/* no model in the request body */

struct prom_counter {
	char name[48];
	uint64_t value;
};

/* The metrics of one (route, comm). */
struct prom_series {
	enum ttf_api api;
	int comm;		/* index into prom_metrics.comms; COMM_OTHER */
	int model;		/* index into prom_metrics.models; MODEL_OTHER, MODEL_UNKNOWN */
	struct histo ttft, tokenize, tpot, itl, e2e;
	struct histo stage[TTF_ST__ALL];
	struct histo hop_stage[PROM_MAX_HOP_STAGES];	/* by prom_metrics.hop_stages */
	uint64_t requests[N_CLASSES][TTF_OC__MAX];	/* by enum ttf_outcome (vocab.h) */
	uint64_t out_tokens, prompt_tokens;
	uint64_t in_flight;	/* read completely, not finished */
};

struct prom_metrics {
	struct prom_buckets b;	/* the bounds every histogram points into */
	char comms[PROM_MAX_COMMS][16];
	int n_comms;
	char models[PROM_MAX_MODELS][64];
	/* t_start_ns of the last successful request of each model (slot reuse) */
	uint64_t model_seen_ns[PROM_MAX_MODELS];
	int n_models;
	uint64_t models_reused;	/* slots a quiet value gave to a new name */
	/*
	 * In flight under model "other" by (api, comm): requests read before a
	 * successful request made their model's value, kept off the series so
	 * that reading a request makes no histogram series.
	 */
	uint64_t pending[N_API][PROM_MAX_COMMS + 1];
	bool pending_seen[N_API][PROM_MAX_COMMS + 1];
	/* the stages (enum ttf_stage) some request had: only these are exported */
	uint32_t stages_seen;
	struct prom_series *series[N_API * (PROM_MAX_COMMS + 1) * (PROM_MAX_MODELS + 2)];
	int n_series;
	/*
	 * The (hop, stage) pairs requests had (user/model/hops/view.h), in the
	 * order first seen: both are names from fixed tables, so the labels are
	 * bounded; a stage appears once a request had it (a prefill call's
	 * only with a disaggregated chain). More are counted, not exported.
	 */
	struct { const char *hop, *stage; } hop_stages[PROM_MAX_HOP_STAGES];
	int n_hop_stages;
	uint64_t hop_stages_over;
	uint64_t uprobe_hits;
	int n_counters;
	struct prom_counter counters[MAX_COUNTERS];
};

static inline const char *prom_comm_name(const struct prom_metrics *pm, int i)
{
	return i == COMM_OTHER ? "other" : pm->comms[i];
}

static inline const char *prom_model_name(const struct prom_metrics *pm, int i)
{
	return i == MODEL_UNKNOWN ? "unknown" : i == MODEL_OTHER ? "other" : pm->models[i];
}

struct prom_sink {
	pthread_mutex_t lock;	/* the hooks against the server thread */
	struct prom_metrics *pm;
	struct MHD_Daemon *mhd;
	char *sysfs_root;	/* PCIe gauges (user/export/prom/prom_pcie.h); NULL: /sys */
	char *out_path;		/* prom_file_sink__new: written at finish; NULL: served */
};

/*
 * Serve ps on sa (prom_http.c): listen, start libmicrohttpd's thread and
 * print the URL. 0, or a negative errno (-EIO when libmicrohttpd does not
 * say why).
 */
int prom_http__start(struct prom_sink *ps, const struct sockaddr_storage *sa, socklen_t sa_len);
/* Stop serving (no-op when ps was never served). */
void prom_http__stop(struct prom_sink *ps);

#endif /* TTFTRACE_PROM_INT_H */
