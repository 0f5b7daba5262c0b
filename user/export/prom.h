/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * Prometheus endpoint (`--metrics ADDR:PORT`): per-request latency
 * histograms and drop/health counters, served at /metrics in the text
 * exposition format 0.0.4
 * (https://prometheus.io/docs/instrumenting/exposition_formats/) by
 * libmicrohttpd from its own thread. Times are seconds.
 *
 *   ttftrace_ttft_seconds               histogram, requests with a first token
 *   ttftrace_ttft_stage_seconds{stage}  histogram per TTFT stage (user/model/attrib.h names)
 *   ttftrace_tpot_seconds               histogram, requests with >= 2 tokens
 *   ttftrace_itl_seconds                histogram, one sample per gap between token events
 *   ttftrace_e2e_seconds                histogram, requests whose response end was seen
 *   ttftrace_requests_total{outcome}    counter; one outcome per request, the first
 *                                       that applies of unknown, aborted, incomplete,
 *                                       error, ok
 *   ttftrace_tokens_total               counter, output tokens (usage or token events)
 *   ttftrace_uprobe_hits_total          counter, engine uprobe hits (entry and return)
 *   ttftrace_dropped_events_total{reason}  counter, every tracer counter whose name says
 *                                       full/lost/dropped/refused/discarded/evicted/oom
 *   ttftrace_cupti_records_total, ttftrace_cupti_dropped_records_total
 *                                       counters, when the CUPTI collector reports
 *   ttftrace_counter_total{name}        counter, every tracer counter as it is named in
 *                                       the summary's "counters"
 *   ttftrace_pcie_*                     gauges of the GPUs' PCIe links, read at each
 *                                       scrape (user/export/prom_pcie.h)
 * Requests that lost sync with the byte stream (outcome "unknown") feed no
 * histogram and no token count, as in the summary (user/export/report.h).
 */
#ifndef TTFTRACE_PROM_H
#define TTFTRACE_PROM_H

#include <stddef.h>
#include <stdint.h>
#include <sys/socket.h>
#include "user/export/sink.h"

struct prom_metrics;

/* NULL with errno = ENOMEM. */
struct prom_metrics *prom_metrics__new(void);
void prom_metrics__free(struct prom_metrics *pm);
/* Account one finished request (a may be NULL). */
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
 * A sink that feeds a struct prom_metrics and serves it on spec (see
 * prom__parse_listen), with PCIe gauges read under sysfs_root (NULL: /sys);
 * prints the URL it serves on stderr. The data sit
 * under a mutex that the tracer's hooks hold only to update a few counters.
 * Returns 0, -EINVAL (bad spec), -ENOMEM, or -EADDRINUSE/-EACCES/... when the
 * server cannot listen (-EIO when libmicrohttpd does not say why).
 */
int prom_sink__new(const char *spec, const char *sysfs_root, struct ttf_sink *out);

#endif /* TTFTRACE_PROM_H */
