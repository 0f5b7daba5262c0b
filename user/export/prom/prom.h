/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * Prometheus endpoint (`--metrics ADDR:PORT`): per-request latency
 * histograms and drop/health counters, served at /metrics in the text
 * exposition format 0.0.4
 * (https://prometheus.io/docs/instrumenting/exposition_formats/) by
 * libmicrohttpd from its own thread. Base units only: seconds, bytes.
 * `promtool check metrics` passes on a scrape (tests/root/export).
 *
 * Labels, all bounded: route = the request's API kind (ttf_api_name(), vocab.h:
 * chat, completion, llamacpp, unknown; never the path), comm = the server's
 * comm (the first PROM_MAX_COMMS distinct ones, then "other"), model = the
 * request body's (values made by successful requests only, PROM_MAX_MODELS of
 * them, then "other"; none named: "unknown"), status_class = 1xx..5xx or
 * "unknown" (no status seen). Series appear with the first request that has
 * their labels; stage series once a request had the stage.
 *
 *   ttftrace_ttft_seconds{route,comm}          histogram \  successful requests
 *   ttftrace_ttft_stage_seconds{route,comm,stage}  histogram |  only: outcome ok
 *        of the disjoint stages (all but tokenize: they   |  and status 2xx
 *        sum to TTFT)                                      |
 *   ttftrace_tokenize_seconds{route,comm}      histogram  |  (the part of
 *        frontend inside the tokenize call)                |  frontend)
 *   ttftrace_tpot_seconds{route,comm}          histogram  |  >= 2 tokens
 *   ttftrace_itl_seconds{route,comm}           histogram  |  one per token gap
 *   ttftrace_e2e_seconds{route,comm}           histogram /   response end seen
 *   ttftrace_requests_total{route,comm,status_class,outcome}  counter; one outcome
 *                                       per request, the first that applies of
 *                                       unknown, aborted, incomplete, error, ok
 *   ttftrace_output_tokens_total{route,comm}  counter (usage or token events;
 *                                       every request but outcome unknown)
 *   ttftrace_prompt_tokens_total{route,comm}  counter, usage.prompt_tokens of the
 *                                       requests whose stream reported usage
 *   ttftrace_uprobe_hits_total          counter, engine uprobe hits (entry and return)
 *   ttftrace_dropped_events_total{reason}  counter, data lost before it was used: every
 *                                       tracer counter whose name says full/lost/dropped/
 *                                       refused/discarded/evicted/oom, sched_overlays_cut
 *                                       (trimming old history is not a drop)
 *   ttftrace_<name>_seconds_total       counter, a tracer counter NAME_us (/1e6),
 *                                       NAME_ms (/1e3) or NAME_ns (/1e9)
 *   ttftrace_cupti_records_total        counter, gpu_records when the collector reports
 *   ttftrace_tracer_events_total{name}  counter, every other tracer counter, named as in
 *                                       the summary's "counters"
 *   ttftrace_build_info{version}        gauge, 1
 *   ttftrace_pcie_*                     gauges of the GPUs' PCIe links, read at each
 *                                       scrape (user/export/prom/prom_pcie.h)
 * Every tracer counter is exported once, in the first family that applies.
 * Requests that lost sync with the byte stream (outcome "unknown") feed no
 * histogram and no token count, as in the summary (user/export/report/report.h).
 */
#ifndef TTFTRACE_PROM_H
#define TTFTRACE_PROM_H

#include <stddef.h>
#include <stdint.h>
#include <sys/socket.h>
#include "user/lib/histo.h"
#include "user/export/sink.h"

/* The histograms whose buckets --buckets sets, by the name it takes. */
enum prom_hist {
	PROM_H_TTFT = 0,	/* ttft */
	PROM_H_STAGE,		/* stage: every ttftrace_ttft_stage_seconds series */
	PROM_H_TOKENIZE,	/* tokenize */
	PROM_H_TPOT,		/* tpot */
	PROM_H_ITL,		/* itl */
	PROM_H_E2E,		/* e2e */
	PROM_H__N,
};

/* Upper bounds in seconds per histogram; n[h] == 0: the default buckets. */
struct prom_buckets {
	int n[PROM_H__N];
	double bounds[PROM_H__N][HISTO_MAX_BOUNDS];
};

#define PROM_MAX_COMMS 16
/*
 * Distinct model label values, then "other". Only a successful (2xx, ok)
 * request makes a value, so a client sending made-up names on failing
 * requests cannot use the slots up; a value whose last successful request
 * started PROM_MODEL_QUIET_NS before a new name's, with none in flight, gives
 * its slot (and its series) to the new name.
 */
#define PROM_MAX_MODELS 16
#define PROM_MODEL_QUIET_NS (600ull * 1000000000ull)	/* 10 minutes */
/* (hop, stage) pairs of ttftrace_hop_stage_seconds (user/model/hops/view.h: 16 today) */
#define PROM_MAX_HOP_STAGES 32

#define PROM_BUCKETS_HINT \
	"--buckets NAME=B1,B2,... with NAME one of ttft, stage, tokenize, tpot, itl, e2e " \
	"and 1..32 strictly ascending upper bounds in seconds (> 0), e.g. " \
	"--buckets ttft=0.001,0.01,0.1,1,10; repeat the option for another histogram"

/*
 * Parse one --buckets value into b (the histogram it names is replaced;
 * the others are left alone). 0, or -EINVAL with a one-line reason in err.
 */
int prom_buckets__parse(struct prom_buckets *b, const char *arg, char *err, size_t err_len);
/* The bounds histogram h uses under b (b NULL or b->n[h] == 0: the default); *n their count. */
const double *prom_buckets__get(const struct prom_buckets *b, enum prom_hist h, int *n);

struct prom_metrics;

/* b: the buckets (NULL: defaults). NULL with errno = ENOMEM. */
struct prom_metrics *prom_metrics__new(const struct prom_buckets *b);
void prom_metrics__free(struct prom_metrics *pm);
/* Account one finished request (a may be NULL). */
/* A request read completely (in flight until observed or rejected). */
void prom_metrics__read(struct prom_metrics *pm, const struct ttf_request *r);
/* A finished request whose metrics were refused: it leaves the in-flight gauge. */
void prom_metrics__rejected(struct prom_metrics *pm, const struct ttf_request *r);
void prom_metrics__observe(struct prom_metrics *pm, const struct ttf_request *r,
			   const struct ttf_req_metrics *m, const struct ttf_attrib *a);
/* Replace the tracer counters by this cumulative snapshot (names copied, the first 47 bytes). */
void prom_metrics__set_counters(struct prom_metrics *pm, const struct report_counter *c, int n);
void prom_metrics__add_uprobe_hits(struct prom_metrics *pm, uint64_t n);
/*
 * The exposition text (NUL-terminated, malloc'ed; *len = its length without
 * the NUL). NULL with errno = ENOMEM.
 */
char *prom_metrics__render(const struct prom_metrics *pm, size_t *len);

/*
 * Parse a listen address: "PORT" (loopback), "ADDR:PORT" with a numeric IPv4
 * address or "localhost", or "[IPv6]:PORT". PORT 0..65535 (0: any free port).
 * Fills *sa (an IPv4 or IPv6 sockaddr) and *sa_len. 0 or -EINVAL.
 */
int prom__parse_listen(const char *spec, struct sockaddr_storage *sa, socklen_t *sa_len);

/*
 * A sink that feeds a struct prom_metrics (buckets b, NULL: defaults) and
 * serves it on spec (see prom__parse_listen), with PCIe gauges read under
 * sysfs_root (NULL: /sys);
 * prints the URL it serves on stderr. The data sit
 * under a mutex that the tracer's hooks hold only to update a few counters.
 * Returns 0, -EINVAL (bad spec), -ENOMEM, or -EADDRINUSE/-EACCES/... when the
 * server cannot listen (-EIO when libmicrohttpd does not say why).
 */
int prom_sink__new(const char *spec, const char *sysfs_root, const struct prom_buckets *b,
		   struct ttf_sink *out);

/*
 * The same metrics, written once to path at the end of the run (`ttftrace
 * replay --metrics-out`): the exposition text of a scrape then, without the
 * PCIe gauges. 0 or -ENOMEM; finish returns a write error (said on stderr).
 */
int prom_file_sink__new(const char *path, const struct prom_buckets *b, struct ttf_sink *out);

#endif /* TTFTRACE_PROM_H */
