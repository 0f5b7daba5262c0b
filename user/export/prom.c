// SPDX-License-Identifier: GPL-2.0-only
#include <arpa/inet.h>
#include <errno.h>
#include <microhttpd.h>
#include <netinet/in.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "user/lib/histo.h"
#include "user/lib/log.h"
#include "user/model/vocab.h"
#include "user/export/prom.h"
#include "user/export/prom_pcie.h"

/*
 * Fine enough for 1 ms TTFT stages and 0.5 ms ITLs at the low end, up to a
 * minute of TTFT at the high end (vLLM's own buckets stop at 10 ms ITL).
 */
static const double bounds_s[] = {
	0.0005, 0.001, 0.0025, 0.005, 0.0075, 0.01, 0.015, 0.02, 0.03, 0.05, 0.075, 0.1,
	0.15, 0.2, 0.3, 0.5, 0.75, 1, 1.5, 2, 3, 5, 10, 20, 30, 60,
};
#define N_BOUNDS ((int)(sizeof(bounds_s) / sizeof(bounds_s[0])))

/* Exclusive outcomes (the first that applies, see outcome_of), in exposition order. */
static const enum ttf_outcome outcome_order[] = {
	TTF_OC_OK, TTF_OC_ABORTED, TTF_OC_ERROR, TTF_OC_INCOMPLETE, TTF_OC_UNKNOWN,
};
#define N_OUTCOMES ((int)(sizeof(outcome_order) / sizeof(outcome_order[0])))

#define MAX_COUNTERS 128

struct prom_counter {
	char name[48];
	uint64_t value;
};

struct prom_metrics {
	struct histo ttft, tpot, itl, e2e;
	struct histo stage[TTF_ST__ALL];
	uint64_t requests[TTF_OC__MAX];	/* by enum ttf_outcome (vocab.h) */
	uint64_t tokens;
	uint64_t uprobe_hits;
	int n_counters;
	struct prom_counter counters[MAX_COUNTERS];
};

struct prom_metrics *prom_metrics__new(void)
{
	struct prom_metrics *pm = calloc(1, sizeof(*pm));

	if (!pm) {
		errno = ENOMEM;
		return NULL;
	}
	histo__init(&pm->ttft, bounds_s, N_BOUNDS);
	histo__init(&pm->tpot, bounds_s, N_BOUNDS);
	histo__init(&pm->itl, bounds_s, N_BOUNDS);
	histo__init(&pm->e2e, bounds_s, N_BOUNDS);
	for (int i = 0; i < TTF_ST__ALL; i++)
		histo__init(&pm->stage[i], bounds_s, N_BOUNDS);
	return pm;
}

void prom_metrics__free(struct prom_metrics *pm)
{
	free(pm);
}

static enum ttf_outcome outcome_of(uint32_t flags)
{
	if (flags & TTF_REQ_UNKNOWN)
		return TTF_OC_UNKNOWN;
	if (flags & TTF_REQ_ABORTED)
		return TTF_OC_ABORTED;
	if (flags & TTF_REQ_INCOMPLETE)
		return TTF_OC_INCOMPLETE;
	if (flags & TTF_REQ_ERROR)
		return TTF_OC_ERROR;
	return TTF_OC_OK;
}

void prom_metrics__observe(struct prom_metrics *pm, const struct ttf_request *r,
			   const struct ttf_req_metrics *m, const struct ttf_attrib *a)
{
	enum ttf_outcome o = outcome_of(r->flags);

	pm->requests[o]++;
	if (o == TTF_OC_UNKNOWN)
		return;
	pm->tokens += m->n_tokens;
	if (m->ttft_ns >= 0)
		histo__add(&pm->ttft, m->ttft_ns / 1e9);
	if (m->tpot_ns >= 0)
		histo__add(&pm->tpot, m->tpot_ns / 1e9);
	if (m->e2e_ns >= 0)
		histo__add(&pm->e2e, m->e2e_ns / 1e9);
	for (uint32_t i = 0; i + 1 < r->n_events; i++) {
		uint64_t itl_ns;

		if (!ttf_metrics__itl_one(r, i, &itl_ns))
			histo__add(&pm->itl, itl_ns / 1e9);
	}
	if (a && a->valid)
		for (int s = 0; s < TTF_ST__ALL; s++)
			if (a->stage_ns[s] >= 0)
				histo__add(&pm->stage[s], a->stage_ns[s] / 1e9);
}

void prom_metrics__set_counters(struct prom_metrics *pm, const struct report_counter *c, int n)
{
	if (n > MAX_COUNTERS)
		n = MAX_COUNTERS;
	for (int i = 0; i < n; i++) {
		snprintf(pm->counters[i].name, sizeof(pm->counters[i].name), "%s", c[i].name);
		pm->counters[i].value = c[i].value;
	}
	pm->n_counters = n;
}

void prom_metrics__add_uprobe_hits(struct prom_metrics *pm, uint64_t n)
{
	pm->uprobe_hits += n;
}

/* Label value escaping of the text format: backslash, double quote, line feed. */
static void put_label(FILE *f, const char *s)
{
	for (; *s; s++) {
		if (*s == '\\')
			fputs("\\\\", f);
		else if (*s == '"')
			fputs("\\\"", f);
		else if (*s == '\n')
			fputs("\\n", f);
		else
			fputc(*s, f);
	}
}

static void put_head(FILE *f, const char *name, const char *type, const char *help)
{
	fprintf(f, "# HELP %s %s\n# TYPE %s %s\n", name, help, name, type);
}

/* One histogram's series; label is "" or `key="value",` (trailing comma). */
static void put_histo(FILE *f, const char *name, const char *label, const struct histo *h)
{
	uint64_t cum = 0;

	for (int i = 0; i < h->n_bounds; i++) {
		cum += h->counts[i];
		fprintf(f, "%s_bucket{%sle=\"%g\"} %llu\n", name, label, h->bounds[i],
			(unsigned long long)cum);
	}
	fprintf(f, "%s_bucket{%sle=\"+Inf\"} %llu\n", name, label, (unsigned long long)h->count);
	if (*label) {
		/* drop the trailing comma for _sum/_count */
		int n = (int)strlen(label) - 1;

		fprintf(f, "%s_sum{%.*s} %.9g\n%s_count{%.*s} %llu\n", name, n, label, h->sum,
			name, n, label, (unsigned long long)h->count);
	} else {
		fprintf(f, "%s_sum %.9g\n%s_count %llu\n", name, h->sum, name,
			(unsigned long long)h->count);
	}
}

static int is_drop(const char *name)
{
	static const char *const words[] = {
		"full", "lost", "dropped", "refused", "discarded", "evicted", "oom",
	};

	for (size_t i = 0; i < sizeof(words) / sizeof(words[0]); i++)
		if (strstr(name, words[i]))
			return 1;
	return 0;
}

static const struct prom_counter *find_counter(const struct prom_metrics *pm, const char *name)
{
	for (int i = 0; i < pm->n_counters; i++)
		if (!strcmp(pm->counters[i].name, name))
			return &pm->counters[i];
	return NULL;
}

static void put_counters(FILE *f, const struct prom_metrics *pm)
{
	const struct prom_counter *rec = find_counter(pm, "gpu_records");

	put_head(f, "ttftrace_dropped_events_total", "counter",
		 "Events the tracer lost, by the counter that saw it (ring buffer full, ...)");
	for (int i = 0; i < pm->n_counters; i++) {
		if (!is_drop(pm->counters[i].name))
			continue;
		fputs("ttftrace_dropped_events_total{reason=\"", f);
		put_label(f, pm->counters[i].name);
		fprintf(f, "\"} %llu\n", (unsigned long long)pm->counters[i].value);
	}
	if (rec) {
		const struct prom_counter *c1 = find_counter(pm, "gpu_cupti_dropped");
		const struct prom_counter *c2 = find_counter(pm, "gpu_send_dropped");

		put_head(f, "ttftrace_cupti_records_total", "counter",
			 "GPU activity records received from the CUPTI collector");
		fprintf(f, "ttftrace_cupti_records_total %llu\n", (unsigned long long)rec->value);
		put_head(f, "ttftrace_cupti_dropped_records_total", "counter",
			 "GPU activity records dropped by CUPTI or by the collector's sender");
		fprintf(f, "ttftrace_cupti_dropped_records_total %llu\n",
			(unsigned long long)((c1 ? c1->value : 0) + (c2 ? c2->value : 0)));
	}
	put_head(f, "ttftrace_counter_total", "counter",
		 "Every drop and health counter of the tracer, named as in the summary");
	for (int i = 0; i < pm->n_counters; i++) {
		fputs("ttftrace_counter_total{name=\"", f);
		put_label(f, pm->counters[i].name);
		fprintf(f, "\"} %llu\n", (unsigned long long)pm->counters[i].value);
	}
}

char *prom_metrics__render(const struct prom_metrics *pm, size_t *len)
{
	char *buf = NULL, label[64];
	size_t sz = 0;
	FILE *f = open_memstream(&buf, &sz);

	if (!f) {
		errno = ENOMEM;
		return NULL;
	}
	put_head(f, "ttftrace_ttft_seconds", "histogram",
		 "Time to first token: first request byte in to first token out of the server");
	put_histo(f, "ttftrace_ttft_seconds", "", &pm->ttft);
	put_head(f, "ttftrace_ttft_stage_seconds", "histogram",
		 "TTFT split into disjoint stages (server = merged frontend..emit)");
	for (int i = 0; i < TTF_STAGE_ORDER_N; i++) {
		enum ttf_stage st = ttf_stage_order[i];

		snprintf(label, sizeof(label), "stage=\"%s\",", ttf_stage_name(st));
		put_histo(f, "ttftrace_ttft_stage_seconds", label, &pm->stage[st]);
	}
	put_head(f, "ttftrace_tpot_seconds", "histogram",
		 "Time per output token: (last token - first token) / (tokens - 1)");
	put_histo(f, "ttftrace_tpot_seconds", "", &pm->tpot);
	put_head(f, "ttftrace_itl_seconds", "histogram",
		 "Inter-token latency: each gap between consecutive token events");
	put_histo(f, "ttftrace_itl_seconds", "", &pm->itl);
	put_head(f, "ttftrace_e2e_seconds", "histogram",
		 "End to end: first request byte arrives to last response byte leaves");
	put_histo(f, "ttftrace_e2e_seconds", "", &pm->e2e);
	put_head(f, "ttftrace_requests_total", "counter",
		 "Finished requests by outcome (unknown, aborted, incomplete, error, ok)");
	for (int i = 0; i < N_OUTCOMES; i++)
		fprintf(f, "ttftrace_requests_total{outcome=\"%s\"} %llu\n",
			ttf_outcome_name(outcome_order[i]),
			(unsigned long long)pm->requests[outcome_order[i]]);
	put_head(f, "ttftrace_tokens_total", "counter",
		 "Output tokens (the server's usage report, else token events)");
	fprintf(f, "ttftrace_tokens_total %llu\n", (unsigned long long)pm->tokens);
	put_head(f, "ttftrace_uprobe_hits_total", "counter",
		 "Engine uprobe hits (entry and return) delivered to the tracer");
	fprintf(f, "ttftrace_uprobe_hits_total %llu\n", (unsigned long long)pm->uprobe_hits);
	put_counters(f, pm);
	if (fclose(f)) {
		free(buf);
		errno = ENOMEM;
		return NULL;
	}
	if (len)
		*len = sz;
	return buf;
}

int prom__parse_listen(const char *spec, struct sockaddr_storage *sa, socklen_t *sa_len)
{
	char host[64] = "127.0.0.1";
	const char *port_s = spec, *colon;
	char *end;
	long port;

	if (!spec || !*spec)
		return -EINVAL;
	if (spec[0] == '[') {
		const char *rb = strchr(spec, ']');

		if (!rb || rb[1] != ':' || (size_t)(rb - spec - 1) >= sizeof(host))
			return -EINVAL;
		memcpy(host, spec + 1, rb - spec - 1);
		host[rb - spec - 1] = '\0';
		port_s = rb + 2;
	} else if ((colon = strrchr(spec, ':'))) {
		if ((size_t)(colon - spec) >= sizeof(host) || colon == spec)
			return -EINVAL;
		memcpy(host, spec, colon - spec);
		host[colon - spec] = '\0';
		port_s = colon + 1;
	}
	errno = 0;
	port = strtol(port_s, &end, 10);
	if (errno || end == port_s || *end || port < 0 || port > 65535)
		return -EINVAL;
	if (!strcmp(host, "localhost"))
		strcpy(host, "127.0.0.1");
	memset(sa, 0, sizeof(*sa));
	if (spec[0] == '[') {
		struct sockaddr_in6 *s6 = (struct sockaddr_in6 *)sa;

		s6->sin6_family = AF_INET6;
		s6->sin6_port = htons(port);
		if (inet_pton(AF_INET6, host, &s6->sin6_addr) != 1)
			return -EINVAL;
		*sa_len = sizeof(*s6);
	} else {
		struct sockaddr_in *s4 = (struct sockaddr_in *)sa;

		s4->sin_family = AF_INET;
		s4->sin_port = htons(port);
		if (inet_pton(AF_INET, host, &s4->sin_addr) != 1)
			return -EINVAL;
		*sa_len = sizeof(*s4);
	}
	return 0;
}

struct prom_sink {
	pthread_mutex_t lock;
	struct prom_metrics *pm;
	struct MHD_Daemon *mhd;
	char *sysfs_root;	/* PCIe gauges (user/export/prom_pcie.h); NULL: /sys */
};

/* The request metrics, then the PCIe gauges read now (outside the lock). */
static char *scrape(struct prom_sink *ps, size_t *len)
{
	char *text, *all = NULL;
	size_t text_len = 0, sz = 0;
	FILE *f;

	pthread_mutex_lock(&ps->lock);
	text = prom_metrics__render(ps->pm, &text_len);
	pthread_mutex_unlock(&ps->lock);
	if (!text)
		return NULL;
	f = open_memstream(&all, &sz);
	if (!f) {
		free(text);
		return NULL;
	}
	fwrite(text, 1, text_len, f);
	free(text);
	prom_pcie__render(f, ps->sysfs_root);
	if (fclose(f)) {
		free(all);
		return NULL;
	}
	*len = sz;
	return all;
}

static enum MHD_Result on_http(void *cls, struct MHD_Connection *conn, const char *url,
			       const char *method, const char *version, const char *upload_data,
			       size_t *upload_data_size, void **con_cls)
{
	struct prom_sink *ps = cls;
	struct MHD_Response *resp;
	unsigned int code = MHD_HTTP_OK;
	enum MHD_Result ret;
	size_t len = 0;
	char *text;

	if (strcmp(method, "GET") && strcmp(method, "HEAD")) {
		static char msg[] = "only GET\n";

		resp = MHD_create_response_from_buffer(strlen(msg), msg, MHD_RESPMEM_PERSISTENT);
		code = MHD_HTTP_METHOD_NOT_ALLOWED;
	} else if (strcmp(url, "/metrics")) {
		static char msg[] = "ttftrace serves /metrics\n";

		resp = MHD_create_response_from_buffer(strlen(msg), msg, MHD_RESPMEM_PERSISTENT);
		code = MHD_HTTP_NOT_FOUND;
	} else {
		text = scrape(ps, &len);
		if (!text)
			return MHD_NO;
		resp = MHD_create_response_from_buffer(len, text, MHD_RESPMEM_MUST_FREE);
		if (!resp)
			free(text);
	}
	if (!resp)
		return MHD_NO;
	MHD_add_response_header(resp, MHD_HTTP_HEADER_CONTENT_TYPE,
				code == MHD_HTTP_OK ? "text/plain; version=0.0.4; charset=utf-8"
						    : "text/plain");
	ret = MHD_queue_response(conn, code, resp);
	MHD_destroy_response(resp);
	return ret;
}

static void sink_request(void *ctx, const struct ttf_request *r, const struct ttf_req_metrics *m,
			 const struct ttf_attrib *a)
{
	struct prom_sink *ps = ctx;

	pthread_mutex_lock(&ps->lock);
	prom_metrics__observe(ps->pm, r, m, a);
	pthread_mutex_unlock(&ps->lock);
}

static void sink_engine_event(void *ctx, const struct ttf_engine_event *e)
{
	struct prom_sink *ps = ctx;

	pthread_mutex_lock(&ps->lock);
	prom_metrics__add_uprobe_hits(ps->pm, 1);
	pthread_mutex_unlock(&ps->lock);
}

static void sink_counters(void *ctx, const struct report_counter *c, int n)
{
	struct prom_sink *ps = ctx;

	pthread_mutex_lock(&ps->lock);
	prom_metrics__set_counters(ps->pm, c, n);
	pthread_mutex_unlock(&ps->lock);
}

static int sink_finish(void *ctx, const struct report_counter *c, int n)
{
	sink_counters(ctx, c, n);
	return 0;
}

static void sink_destroy(void *ctx)
{
	struct prom_sink *ps = ctx;

	if (ps->mhd)
		MHD_stop_daemon(ps->mhd);
	pthread_mutex_destroy(&ps->lock);
	prom_metrics__free(ps->pm);
	free(ps->sysfs_root);
	free(ps);
}

/* Our own listening socket: bind errors keep their errno, and port 0 can be read back. */
static int open_listener(const struct sockaddr_storage *sa, socklen_t sa_len)
{
	int one = 1, fd = socket(sa->ss_family, SOCK_STREAM | SOCK_CLOEXEC, 0), err;

	if (fd < 0)
		return -errno;
	setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
	if (bind(fd, (const struct sockaddr *)sa, sa_len) || listen(fd, 16)) {
		err = -errno;
		close(fd);
		return err;
	}
	return fd;
}

static void print_url(int fd)
{
	struct sockaddr_storage sa;
	socklen_t len = sizeof(sa);
	char host[INET6_ADDRSTRLEN] = "?";
	int port = 0;

	if (getsockname(fd, (struct sockaddr *)&sa, &len))
		return;
	if (sa.ss_family == AF_INET6) {
		struct sockaddr_in6 *s6 = (struct sockaddr_in6 *)&sa;

		inet_ntop(AF_INET6, &s6->sin6_addr, host, sizeof(host));
		port = ntohs(s6->sin6_port);
		fprintf(stderr, "Serving Prometheus metrics on http://[%s]:%d/metrics\n", host,
			port);
	} else {
		struct sockaddr_in *s4 = (struct sockaddr_in *)&sa;

		inet_ntop(AF_INET, &s4->sin_addr, host, sizeof(host));
		port = ntohs(s4->sin_port);
		fprintf(stderr, "Serving Prometheus metrics on http://%s:%d/metrics\n", host, port);
	}
}

int prom_sink__new(const char *spec, const char *sysfs_root, struct ttf_sink *out)
{
	struct sockaddr_storage sa;
	struct prom_sink *ps;
	socklen_t sa_len;
	unsigned int flags = MHD_USE_INTERNAL_POLLING_THREAD;
	int fd, err;

	err = prom__parse_listen(spec, &sa, &sa_len);
	if (err)
		return err;
	ps = calloc(1, sizeof(*ps));
	if (!ps)
		return -ENOMEM;
	pthread_mutex_init(&ps->lock, NULL);
	ps->pm = prom_metrics__new();
	if (sysfs_root)
		ps->sysfs_root = strdup(sysfs_root);
	if (!ps->pm || (sysfs_root && !ps->sysfs_root)) {
		err = -ENOMEM;
		goto cleanup;
	}
	fd = open_listener(&sa, sa_len);
	if (fd < 0) {
		err = fd;
		goto cleanup;
	}
	if (sa.ss_family == AF_INET6)
		flags |= MHD_USE_IPv6;
	ps->mhd = MHD_start_daemon(flags, 0, NULL, NULL, on_http, ps,
				   MHD_OPTION_LISTEN_SOCKET, fd,
				   MHD_OPTION_CONNECTION_LIMIT, (unsigned int)16,
				   MHD_OPTION_CONNECTION_TIMEOUT, (unsigned int)10,
				   MHD_OPTION_END);
	if (!ps->mhd) {
		err = errno ? -errno : -EIO;
		close(fd);
		goto cleanup;
	}
	print_url(fd);
	*out = (struct ttf_sink){
		.name = "prometheus", .ctx = ps, .request = sink_request,
		.engine_event = sink_engine_event, .counters = sink_counters,
		.finish = sink_finish, .destroy = sink_destroy,
	};
	return 0;
cleanup:
	sink_destroy(ps);
	return err;
}
