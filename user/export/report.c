// SPDX-License-Identifier: GPL-2.0-only
/*
 * Output of finished requests (text live lines or NDJSON) and the summary at
 * exit. Latency samples are kept in stats.c collectors, in milliseconds.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>
#include <cjson/cJSON.h>
#include "bpf/net.h"
#include "user/model/metrics.h"
#include "user/model/vocab.h"
#include "user/export/report.h"
#include "user/export/report_hops.h"
#include "user/export/report_msg_hops.h"
#include "user/export/report_hop_split.h"
#include "user/export/report_stages.h"
#include "user/export/report_zmtp.h"
#include "user/export/sink.h"
#include "user/lib/json_print.h"
#include "user/lib/stats.h"

enum { ST_TTFT, ST_TTFV, ST_TTFB, ST_TTFE, ST_TPOT, ST_ITL, ST_E2E, ST_TOKENS, ST_NR };

static const struct {
	const char *text; /* summary row title */
	const char *json; /* summary key */
} stat_names[ST_NR] = {
	[ST_TTFT] = { "TTFT(ms)", "ttft_ms" },
	[ST_TTFV] = { "TTFV(ms)", "ttfv_ms" },
	[ST_TTFB] = { "TTFB(ms)", "ttfb_ms" },
	[ST_TTFE] = { "TTFE(ms)", "ttfe_ms" },
	[ST_TPOT] = { "TPOT(ms)", "tpot_ms" },
	[ST_ITL] = { "ITL(ms)", "itl_ms" },
	[ST_E2E] = { "E2E(ms)", "e2e_ms" },
	[ST_TOKENS] = { "tokens/req", "tokens" },
};

struct report {
	struct report_opts opts;
	struct stats *st[ST_NR];
	uint64_t n_requests;
	uint64_t outcomes[TTF_OC__MAX]; /* by enum ttf_outcome (vocab.h) */
	uint64_t grades[4];      /* A, B, C, '-' */
	uint64_t n_ttft_xmit;    /* TTFT ended at device transmit */
	uint64_t n_ttft_write;   /* ... at the write */
	uint64_t samples_lost;   /* stats__add failed (ENOMEM) */
	uint64_t lines_lost;     /* NDJSON objects not built (ENOMEM) */
	uint64_t invalid;        /* requests ttf_metrics__compute refused */
	int summary_err;         /* what report__summary returned from the sink's finish */
	uint64_t left_out;       /* requests kept out of the percentiles: not successful */
	/* the run as vllm bench reports it: over every request, from the first arrival */
	uint64_t t_first_ns, t_last_ns; /* first request byte in, last response byte out */
	uint64_t out_tokens;     /* output tokens of the successful requests */
	uint64_t in_tokens;      /* prompt tokens of the successful requests (usage reports) */
	uint64_t n_in_tokens;    /* ... of that many requests */
	struct stage_stats *stages; /* TTFT stage split, when attribution runs */
	struct hop_stats *hops;     /* through a gateway (report_hops.h) */
	struct msg_hop_stats *msg_hops; /* across a ZMQ hop to an engine (report_msg_hops.h) */
	struct hop_split *hop_split;	/* per hop, either chain (report_hop_split.h) */
	struct json_buf line;       /* NDJSON line being printed, kept between lines */
	int header_done;
};

struct report *report__new(const struct report_opts *opts)
{
	struct report *rp;
	int i;

	if (!opts || opts->sz < offsetof(struct report_opts, out) + sizeof(opts->out) ||
	    !opts->out) {
		errno = EINVAL;
		return NULL;
	}
	rp = calloc(1, sizeof(*rp));
	if (!rp)
		goto err_nomem;
	/* Accept older (shorter) and newer (longer) opts, libbpf style. */
	memcpy(&rp->opts, opts, opts->sz < sizeof(*opts) ? opts->sz : sizeof(*opts));
	rp->opts.sz = sizeof(rp->opts);
	for (i = 0; i < ST_NR; i++) {
		rp->st[i] = stats__new();
		if (!rp->st[i])
			goto err_nomem;
	}
	return rp;

err_nomem:
	report__free(rp);
	errno = ENOMEM;
	return NULL;
}

void report__free(struct report *rp)
{
	int i;

	if (!rp)
		return;
	for (i = 0; i < ST_NR; i++)
		stats__free(rp->st[i]);
	stage_stats__free(rp->stages);
	hop_stats__free(rp->hops);
	msg_hop_stats__free(rp->msg_hops);
	hop_split__free(rp->hop_split);
	json_buf__free(&rp->line);
	free(rp);
}

/* Copy at most max bytes of a fixed-size, maybe unterminated field; non-printable -> '?'. */
static void sanitize(char *dst, const char *src, size_t max)
{
	size_t i, n = strnlen(src, max);

	for (i = 0; i < n; i++) {
		unsigned char c = src[i];

		dst[i] = c < 0x20 || c >= 0x7f ? '?' : c;
	}
	dst[n] = '\0';
}

/*
 * "laddr:lport<-raddr:rport", IPv6 in brackets; a unix stream socket
 * "unix:INODE<-unix:PEERINODE" (bpf/net.h); empty when the family is unknown.
 */
static void format_conn(const struct ttf_conn_addr *a, char *buf, size_t len)
{
	char l[INET6_ADDRSTRLEN], r[INET6_ADDRSTRLEN];
	int af = a->family == 2 ? AF_INET : a->family == 10 ? AF_INET6 : 0;

	buf[0] = '\0';
	if (a->family == TTF_AF_UNIX) {
		snprintf(buf, len, "unix:%llu<-unix:%llu", (unsigned long long)ttf_unix_ino(a->laddr),
			 (unsigned long long)ttf_unix_ino(a->raddr));
		return;
	}
	if (!af || !inet_ntop(af, a->laddr, l, sizeof(l)) || !inet_ntop(af, a->raddr, r, sizeof(r)))
		return;
	if (af == AF_INET6)
		snprintf(buf, len, "[%s]:%u<-[%s]:%u", l, a->lport, r, a->rport);
	else
		snprintf(buf, len, "%s:%u<-%s:%u", l, a->lport, r, a->rport);
}

#define MAX_FLAGS TTF_VF__MAX

static int is_buffered(const struct ttf_request *r, const struct ttf_req_metrics *m)
{
	return m->buffered || (r->flags & TTF_REQ_BUFFERED);
}

/* Flag names in the vocabulary's order (vocab.h); the same names in text and JSON. */
static int flag_names(const struct ttf_request *r, const struct ttf_req_metrics *m,
		      const char **names)
{
	return ttf_vocab__flag_names(ttf_vocab__flags(r, m), names, MAX_FLAGS);
}

static double ns_to_ms(double ns)
{
	/* microsecond precision: enough for network and token timing, shorter JSON */
	return round(ns / 1e3) / 1e3;
}

static void record(struct report *rp, const struct ttf_request *r, const struct ttf_req_metrics *m)
{
	uint64_t *itl = NULL;
	int i, n, err = 0;

	rp->n_requests++;
	if (r->flags & TTF_REQ_ABORTED)
		rp->outcomes[TTF_OC_ABORTED]++;
	if (r->flags & TTF_REQ_INCOMPLETE)
		rp->outcomes[TTF_OC_INCOMPLETE]++;
	if (r->flags & TTF_REQ_ERROR)
		rp->outcomes[TTF_OC_ERROR]++;
	if (r->flags & TTF_REQ_UNKNOWN)
		rp->outcomes[TTF_OC_UNKNOWN]++;
	if (!(r->flags & (TTF_REQ_ABORTED | TTF_REQ_INCOMPLETE | TTF_REQ_ERROR | TTF_REQ_UNKNOWN)))
		rp->outcomes[TTF_OC_OK]++;
	if (r->flags & TTF_REQ_NONSTREAM)
		rp->outcomes[TTF_OC_NONSTREAM]++;
	if (is_buffered(r, m))
		rp->outcomes[TTF_OC_BUFFERED]++;
	if (r->flags & TTF_REQ_TRUNCATED)
		rp->outcomes[TTF_OC_TRUNCATED]++;

	{
		uint64_t t0 = r->arrival_first_ns ? r->arrival_first_ns : r->read_first_ns;
		uint64_t t1 = r->end_xmit_ns > r->end_write_ns ? r->end_xmit_ns : r->end_write_ns;

		if (t0 && (!rp->t_first_ns || t0 < rp->t_first_ns))
			rp->t_first_ns = t0;
		if (t1 > rp->t_last_ns)
			rp->t_last_ns = t1;
	}
	/* Only successful responses feed the percentiles; the others are counted. */
	if (!ttf_vocab__success(r)) {
		rp->left_out++;
		return;
	}
	rp->out_tokens += m->n_tokens;
	if (r->flags & TTF_REQ_USAGE) {
		rp->in_tokens += r->usage_prompt_tokens;
		rp->n_in_tokens++;
	}

	rp->grades[m->grade == 'A' ? 0 : m->grade == 'B' ? 1 : m->grade == 'C' ? 2 : 3]++;
	if (m->ttft_ns >= 0) {
		err |= stats__add(rp->st[ST_TTFT], m->ttft_ns / 1e6);
		if (m->ttft_end_is_xmit)
			rp->n_ttft_xmit++;
		else
			rp->n_ttft_write++;
	}
	if (m->ttfv_ns >= 0)
		err |= stats__add(rp->st[ST_TTFV], m->ttfv_ns / 1e6);
	if (m->ttfb_ns >= 0)
		err |= stats__add(rp->st[ST_TTFB], m->ttfb_ns / 1e6);
	if (m->ttfe_ns >= 0)
		err |= stats__add(rp->st[ST_TTFE], m->ttfe_ns / 1e6);
	if (m->tpot_ns >= 0)
		err |= stats__add(rp->st[ST_TPOT], m->tpot_ns / 1e6);
	if (m->e2e_ns >= 0)
		err |= stats__add(rp->st[ST_E2E], m->e2e_ns / 1e6);
	if ((m->n_tokens || m->n_events) && !(r->flags & TTF_REQ_OPAQUE))
		err |= stats__add(rp->st[ST_TOKENS], m->n_tokens);
	if (err)
		rp->samples_lost++;

	n = ttf_metrics__itl_alloc(r, &itl);
	if (n < 0) {
		rp->samples_lost += r->n_events - 1;
		return;
	}
	for (i = 0; i < n; i++)
		if (stats__add(rp->st[ST_ITL], itl[i] / 1e6))
			rp->samples_lost++;
	free(itl);
}

void report__header(struct report *rp)
{
	if (rp->opts.json || rp->header_done)
		return;
	rp->header_done = 1;
	fprintf(rp->opts.out, "%-8s %-7s %5s %-20s %3s %8s %8s %5s %5s %9s %8s %8s %2s %s\n",
		"TIME(s)", "PID", "REQ", "PATH", "ST", "TTFT(ms)", "TPOT(ms)", "TOK", "EV",
		"E2E(ms)", "TTFB(ms)", "TTFE(ms)", "GR", "FLAGS");
}

static void fmt_ms(char *buf, size_t len, double ns, int prec)
{
	if (ns < 0)
		snprintf(buf, len, "-");
	else
		snprintf(buf, len, "%.*f", prec, ns / 1e6);
}

static void print_text(struct report *rp, const struct ttf_request *r,
		       const struct ttf_req_metrics *m)
{
	FILE *out = rp->opts.out;
	const char *flags[MAX_FLAGS];
	char path[sizeof(r->path) + 1], ttft[24], tpot[24], e2e[24], ttfb[24], ttfe[24], st[12];
	double t_s = m->t_start_ns ? ((double)m->t_start_ns - (double)rp->opts.t0_ns) / 1e9 : 0;
	int i, nf = flag_names(r, m, flags);

	sanitize(path, r->path, sizeof(r->path));
	fmt_ms(ttft, sizeof(ttft), m->ttft_ns, 1);
	fmt_ms(tpot, sizeof(tpot), m->tpot_ns, 2);
	fmt_ms(e2e, sizeof(e2e), m->e2e_ns, 1);
	fmt_ms(ttfb, sizeof(ttfb), m->ttfb_ns, 1);
	fmt_ms(ttfe, sizeof(ttfe), m->ttfe_ns, 1);
	if (r->status > 0)
		snprintf(st, sizeof(st), "%d", r->status);
	else
		snprintf(st, sizeof(st), "-");
	fprintf(out, "%-8.3f %-7u %5" PRIu64 " %-20.20s %3s %8s %8s %5u %5u %9s %8s %8s %2c ",
		t_s, r->tgid, r->id, path, st, ttft, tpot, m->n_tokens, m->n_events, e2e, ttfb, ttfe,
		m->grade);
	for (i = 0; i < nf; i++)
		fprintf(out, "%s%s", i ? "," : "", flags[i]);
	fputc('\n', out);

	if (rp->opts.verbose > 0 && m->n_outliers) {
		uint32_t j, n = ttf_metrics__itl(r, NULL, 0);

		fprintf(out, "    ITL outliers (> %.0fx mean %.3f ms):", TTF_OUTLIER_FACTOR,
			m->itl_mean_ns / 1e6);
		for (j = 0; j < n; j++) {
			uint64_t itl_ns;

			ttf_metrics__itl_one(r, j, &itl_ns);
			if (ttf_metrics__is_outlier(m, itl_ns))
				fprintf(out, " #%u %.3f ms", j, itl_ns / 1e6);
		}
		fputc('\n', out);
	}
}

/* cJSON adders that remember an allocation failure instead of returning it. */
static void j_ms(cJSON *o, const char *k, double ns, int *err)
{
	cJSON *it = ns < 0 ? json_add__null(o, k) : json_add__num(o, k, ns_to_ms(ns));

	*err |= !it;
}

static void j_num(cJSON *o, const char *k, double v, int *err)
{
	*err |= !json_add__num(o, k, v);
}

/* Exact 64-bit integers (cookies, ns timestamps exceed a double's 53 bits); 0 -> null. */
static void j_u64(cJSON *o, const char *k, uint64_t v, int null_if_zero, int *err)
{
	char buf[24];

	if (null_if_zero && !v) {
		*err |= !json_add__null(o, k);
		return;
	}
	snprintf(buf, sizeof(buf), "%" PRIu64, v);
	*err |= !json_add__raw(o, k, buf);
}

static void j_str(cJSON *o, const char *k, const char *s, int *err)
{
	*err |= !(s ? json_add__str(o, k, s) : json_add__null(o, k));
}

static void j_itls(cJSON *o, const struct ttf_request *r, const struct ttf_req_metrics *m,
		   int *err)
{
	cJSON *itls = json_add__arr(o, "itl_ms");
	cJSON *outl = json_add__arr(o, "outliers");
	uint32_t i, n = ttf_metrics__itl(r, NULL, 0);

	if (!itls || !outl) {
		*err = 1;
		return;
	}
	for (i = 0; i < n; i++) {
		uint64_t itl_ns;
		cJSON *num, *ol;

		ttf_metrics__itl_one(r, i, &itl_ns);
		num = cJSON_CreateNumber(ns_to_ms(itl_ns));
		*err |= !num || !cJSON_AddItemToArray(itls, num);
		if (!ttf_metrics__is_outlier(m, itl_ns))
			continue;
		ol = cJSON_CreateObject();
		*err |= !ol || !cJSON_AddItemToArray(outl, ol);
		if (!ol)
			continue;
		j_num(ol, "index", i, err);
		j_num(ol, "itl_ms", ns_to_ms(itl_ns), err);
	}
}

static cJSON *request_json(const struct ttf_request *r, const struct ttf_req_metrics *m)
{
	const char *flags[MAX_FLAGS];
	char buf[sizeof(r->path) + 1], conn[128];
	cJSON *o = cJSON_CreateObject(), *fa;
	int i, nf, err = !o;

	if (!o)
		return NULL;
	j_str(o, "type", "request", &err);
	j_u64(o, "id", r->id, 0, &err);
	j_num(o, "pid", r->tgid, &err);
	j_num(o, "tid_rx", r->rx_tid, &err);
	j_num(o, "tid_tx", r->tx_tid, &err);
	sanitize(buf, r->comm, sizeof(r->comm));
	j_str(o, "comm", buf[0] ? buf : NULL, &err);
	format_conn(&r->addr, conn, sizeof(conn));
	j_str(o, "conn", conn[0] ? conn : NULL, &err);
	j_u64(o, "sock_cookie", r->sock_cookie, 0, &err);
	j_num(o, "conn_seq", r->conn_seq, &err);
	sanitize(buf, r->method, sizeof(r->method));
	j_str(o, "method", buf[0] ? buf : NULL, &err);
	sanitize(buf, r->path, sizeof(r->path));
	j_str(o, "path", buf[0] ? buf : NULL, &err);
	if (r->status > 0)
		j_num(o, "status", r->status, &err);
	else
		err |= !json_add__null(o, "status");
	j_str(o, "api", ttf_api_name(r->api), &err);
	j_str(o, "model", r->model[0] ? r->model : NULL, &err);

	j_ms(o, "ttft_ms", m->ttft_ns, &err);
	j_str(o, "ttft_end", m->ttft_ns < 0 ? NULL : ttf_ttft_end_name(m->ttft_end_is_xmit), &err);
	j_ms(o, "ttfv_ms", m->ttfv_ns, &err);
	j_ms(o, "ttfb_ms", m->ttfb_ns, &err);
	j_ms(o, "ttfe_ms", m->ttfe_ns, &err);
	j_ms(o, "e2e_ms", m->e2e_ns, &err);
	j_ms(o, "tpot_ms", m->tpot_ns, &err);
	j_itls(o, r, m, &err);
	j_ms(o, "itl_mean_ms", m->itl_mean_ns, &err);
	if (m->itl_cv >= 0)
		j_num(o, "itl_cv", round(m->itl_cv * 1e4) / 1e4, &err);
	else
		err |= !json_add__null(o, "itl_cv");
	buf[0] = m->grade;
	buf[1] = '\0';
	j_str(o, "grade", buf, &err);
	if (r->flags & TTF_REQ_OPAQUE) {
		/* an unreadable body: no counts rather than wrong ones */
		err |= !json_add__null(o, "tokens");
		err |= !json_add__null(o, "token_events");
	} else {
		j_num(o, "tokens", m->n_tokens, &err);
		j_num(o, "token_events", m->n_events, &err);
	}
	if (r->flags & TTF_REQ_OPAQUE)
		err |= !json_add__null(o, "stream_events");
	else
		j_num(o, "stream_events", r->n_sse_events, &err);
	if (r->interim_write_ns && m->t_start_ns && r->interim_write_ns >= m->t_start_ns)
		j_ms(o, "interim_ms", (double)(r->interim_write_ns - m->t_start_ns), &err);
	else
		err |= !json_add__null(o, "interim_ms");
	j_ms(o, "expect_wait_ms", r->expect_wait_known ? (double)r->expect_wait_ns : -1, &err);
	if (m->tokens_per_event >= 0)
		j_num(o, "tokens_per_event", round(m->tokens_per_event * 1e3) / 1e3, &err);
	else
		err |= !json_add__null(o, "tokens_per_event");
	j_str(o, "token_source", ttf_token_source_name(m->tokens_from_usage), &err);
	if (r->flags & TTF_REQ_USAGE)
		j_num(o, "prompt_tokens", r->usage_prompt_tokens, &err);
	else
		err |= !json_add__null(o, "prompt_tokens");

	fa = json_add__arr(o, "flags");
	err |= !fa;
	nf = flag_names(r, m, flags);
	for (i = 0; fa && i < nf; i++) {
		cJSON *s = cJSON_CreateString(flags[i]);

		err |= !s || !cJSON_AddItemToArray(fa, s);
	}
	j_u64(o, "t_arrival_ns", r->arrival_first_ns, 1, &err);
	j_u64(o, "t_first_token_ns", m->t_first_token_ns, 1, &err);
	j_u64(o, "t_end_ns", m->t_end_ns, 1, &err);
	if (m->ttft_ns >= 0)
		err |= !json_add__bool(o, "tcp_nodelay", !!(r->flags & TTF_REQ_NODELAY));
	else
		err |= !json_add__null(o, "tcp_nodelay");
	j_u64(o, "req_bytes", r->req_bytes, 0, &err);
	j_u64(o, "resp_bytes", r->resp_bytes, 0, &err);
	if (err) {
		cJSON_Delete(o);
		return NULL;
	}
	return o;
}

/* Returns 0 or -ENOMEM (the line is counted as lost). */
static int print_json_line(struct report *rp, cJSON *o)
{
	rp->line.len = 0;
	if (!o || json_print__append(&rp->line, o) || !rp->line.len) {
		rp->lines_lost++;
		return -ENOMEM;
	}
	rp->line.p[rp->line.len++] = '\n'; /* json_buf keeps a byte for the NUL */
	fwrite(rp->line.p, 1, rp->line.len, rp->opts.out);
	return 0;
}

void report__request(struct report *rp, const struct ttf_request *r,
		     const struct ttf_req_metrics *m, const struct ttf_attrib *a)
{
	record(rp, r, m);
	if (a && a->valid && ttf_vocab__success(r)) {
		if (!rp->stages)
			rp->stages = stage_stats__new();
		if (!rp->stages || stage_stats__add(rp->stages, a, m->ttft_ns))
			rp->samples_lost++;
		if (a->hops && !rp->hops)
			rp->hops = hop_stats__new();
		if (a->hops && (!rp->hops || hop_stats__add(rp->hops, a)))
			rp->samples_lost++;
		if (a->msg && !a->hops && !rp->msg_hops)
			rp->msg_hops = msg_hop_stats__new();
		if (a->msg && !a->hops && (!rp->msg_hops || msg_hop_stats__add(rp->msg_hops, a)))
			rp->samples_lost++;
		if ((a->hops || a->msg) && !rp->hop_split)
			rp->hop_split = hop_split__new();
		if ((a->hops || a->msg) &&
		    (!rp->hop_split || hop_split__add(rp->hop_split, a, m->t_start_ns, m->ttft_ns)))
			rp->samples_lost++;
	}
	if (rp->opts.json) {
		cJSON *o = request_json(r, m);
		int err = 0;

		if (o && a) {
			report_stages__json(o, a, &err);
			report_stages__json_causes(o, a, &err);
			report_hops__json(o, a, &err);
			report_msg_hops__json(o, a, &err);
		}
		if (err) {
			cJSON_Delete(o);
			o = NULL;
		}
		print_json_line(rp, o);
		cJSON_Delete(o);
	} else {
		print_text(rp, r, m);
		report_stages__text_line(rp->opts.out, a, rp->opts.verbose);
		report_hops__text_line(rp->opts.out, a);
		report_msg_hops__text_line(rp->opts.out, a);
	}
}

void report__rejected(struct report *rp, const struct ttf_request *r)
{
	rp->invalid++;
}

static const char *const pct_keys[] = { "p50", "p90", "p95", "p99" };
static const double pct_vals[] = { 50, 90, 95, 99 };

static void print_text_stat(FILE *out, const char *title, struct stats *s, int prec)
{
	size_t i;

	fprintf(out, "%-12s %8zu", title, stats__count(s));
	if (!stats__count(s)) {
		for (i = 0; i < 8; i++)
			fprintf(out, " %10s", "-");
		fputc('\n', out);
		return;
	}
	for (i = 0; i < 4; i++)
		fprintf(out, " %10.*f", prec, stats__percentile(s, pct_vals[i]));
	fprintf(out, " %10.*f %10.*f %10.*f %10.*f\n", prec, stats__mean(s), prec, stats__max(s),
		prec, stats__min(s), prec, stats__stddev(s));
}

/* From the first request byte in to the last response byte out, over all requests. */
static double duration_s(const struct report *rp)
{
	return rp->t_last_ns > rp->t_first_ns && rp->t_first_ns ?
	       (rp->t_last_ns - rp->t_first_ns) / 1e9 : 0;
}

static void summary_text(struct report *rp, const struct report_counter *counters, int n_counters)
{
	FILE *out = rp->opts.out;
	int i, any = 0;

	fprintf(out, "\nSummary: %" PRIu64 " requests\n", rp->n_requests);
	fprintf(out, "%-12s %8s %10s %10s %10s %10s %10s %10s %10s %10s\n", "", "n", "P50", "P90",
		"P95", "P99", "mean", "max", "min", "std");
	for (i = 0; i < ST_NR; i++)
		print_text_stat(out, stat_names[i].text, rp->st[i], i == ST_TOKENS ? 1 : 3);
	fprintf(out, "Percentiles over the %" PRIu64 " successful requests (2xx, not aborted, "
		"incomplete, error or unknown): %" PRIu64 " left out.\n",
		rp->n_requests - rp->left_out, rp->left_out);
	if (duration_s(rp) > 0)
		fprintf(out, "Duration %.3f s (first request in to last response out): %.3f "
			"successful requests/s, %.1f output tokens/s; output tokens %" PRIu64
			", input tokens %" PRIu64 " (usage reports of %" PRIu64 " requests).\n",
			duration_s(rp), (rp->n_requests - rp->left_out) / duration_s(rp),
			rp->out_tokens / duration_s(rp), rp->out_tokens, rp->in_tokens,
			rp->n_in_tokens);
	fprintf(out, "TTFT n=%zu of %" PRIu64 " requests (requests without a token have no TTFT).\n",
		stats__count(rp->st[ST_TTFT]), rp->n_requests);
	fprintf(out, "TTFT ends at device transmit (xmit) for %" PRIu64 " requests, at write for %"
		PRIu64 ".\n", rp->n_ttft_xmit, rp->n_ttft_write);
	fprintf(out, "ITL: every gap between token events, over all requests (%zu samples); "
		"TPOT counts tokens from usage when reported.\n", stats__count(rp->st[ST_ITL]));
	fprintf(out, "Outcomes:");
	for (i = 0; i < TTF_OC__MAX; i++)
		fprintf(out, " %s=%" PRIu64, ttf_outcome_name(i), rp->outcomes[i]);
	fprintf(out, "\nGrades (ITL CV: A < %.2f <= B < %.2f <= C): A=%" PRIu64 " B=%" PRIu64
		" C=%" PRIu64 " -=%" PRIu64 "\n", TTF_CV_GRADE_A, TTF_CV_GRADE_B, rp->grades[0],
		rp->grades[1], rp->grades[2], rp->grades[3]);

	report_stages__summary_text(out, rp->stages);
	report_hops__summary_text(out, rp->hops);
	report_msg_hops__summary_text(out, rp->msg_hops);
	hop_split__summary_text(out, rp->hop_split);
	fprintf(out, "Drops and health:\n");
	for (i = 0; i < n_counters; i++) {
		if (!counters[i].value)
			continue;
		fprintf(out, "  %s = %" PRIu64 "\n", counters[i].name, counters[i].value);
		any = 1;
	}
	if (rp->samples_lost)
		fprintf(out, "  report_samples_lost = %" PRIu64 "\n", rp->samples_lost);
	if (rp->lines_lost)
		fprintf(out, "  report_lines_lost = %" PRIu64 "\n", rp->lines_lost);
	if (rp->invalid)
		fprintf(out, "  report_requests_invalid = %" PRIu64 "\n", rp->invalid);
	if (!any && !rp->samples_lost && !rp->lines_lost && !rp->invalid)
		fprintf(out, "  none\n");
}

static void j_stat(cJSON *o, const char *k, struct stats *s, int *err)
{
	cJSON *so = json_add__obj(o, k);
	size_t i, n = stats__count(s);

	if (!so) {
		*err = 1;
		return;
	}
	j_num(so, "n", n, err);
	for (i = 0; i < 4; i++) {
		if (n)
			j_num(so, pct_keys[i], round(stats__percentile(s, pct_vals[i]) * 1e3) / 1e3,
			      err);
		else
			*err |= !json_add__null(so, pct_keys[i]);
	}
	if (n) {
		j_num(so, "mean", round(stats__mean(s) * 1e3) / 1e3, err);
		j_num(so, "min", round(stats__min(s) * 1e3) / 1e3, err);
		j_num(so, "max", round(stats__max(s) * 1e3) / 1e3, err);
		j_num(so, "std", round(stats__stddev(s) * 1e3) / 1e3, err);
	} else {
		*err |= !json_add__null(so, "mean");
		*err |= !json_add__null(so, "min");
		*err |= !json_add__null(so, "max");
		*err |= !json_add__null(so, "std");
	}
}

static cJSON *summary_json(struct report *rp, const struct report_counter *counters,
			   int n_counters)
{
	static const char *const grade_keys[4] = { "A", "B", "C", "-" };
	cJSON *o = cJSON_CreateObject(), *sub;
	int i, err = 0;

	if (!o)
		return NULL;
	j_str(o, "type", "summary", &err);
	j_u64(o, "requests", rp->n_requests, 0, &err);
	/* the percentiles below are over the successful requests only */
	j_u64(o, "left_out_of_percentiles", rp->left_out, 0, &err);
	/* the run, as vllm bench reports it (null when no request ended) */
	{
		double d = duration_s(rp);

		if (d > 0) {
			j_num(o, "duration_s", round(d * 1e6) / 1e6, &err);
			j_num(o, "request_throughput", round((rp->n_requests - rp->left_out) / d *
							     1e3) / 1e3, &err);
			j_num(o, "output_token_throughput", round(rp->out_tokens / d * 1e3) / 1e3,
			      &err);
		} else {
			err |= !json_add__null(o, "duration_s");
			err |= !json_add__null(o, "request_throughput");
			err |= !json_add__null(o, "output_token_throughput");
		}
		j_u64(o, "total_output_tokens", rp->out_tokens, 0, &err);
		j_u64(o, "total_input_tokens", rp->in_tokens, 0, &err);
	}
	sub = json_add__obj(o, "outcomes");
	for (i = 0; sub && i < TTF_OC__MAX; i++)
		j_u64(sub, ttf_outcome_name(i), rp->outcomes[i], 0, &err);
	err |= !sub;
	for (i = 0; i < ST_NR; i++)
		j_stat(o, stat_names[i].json, rp->st[i], &err);
	sub = json_add__obj(o, "ttft_end");
	err |= !sub;
	if (sub) {
		j_u64(sub, ttf_ttft_end_name(1), rp->n_ttft_xmit, 0, &err);
		j_u64(sub, ttf_ttft_end_name(0), rp->n_ttft_write, 0, &err);
	}
	sub = json_add__obj(o, "grades");
	for (i = 0; sub && i < 4; i++)
		j_u64(sub, grade_keys[i], rp->grades[i], 0, &err);
	err |= !sub;
	report_stages__summary_json(o, rp->stages, &err);
	report_hops__summary_json(o, rp->hops, &err);
	report_msg_hops__summary_json(o, rp->msg_hops, &err);
	hop_split__summary_json(o, rp->hop_split, &err);
	sub = json_add__obj(o, "counters");
	err |= !sub;
	for (i = 0; sub && i < n_counters; i++)
		j_u64(sub, counters[i].name, counters[i].value, 0, &err);
	if (sub) {
		j_u64(sub, "report_samples_lost", rp->samples_lost, 0, &err);
		j_u64(sub, "report_lines_lost", rp->lines_lost, 0, &err);
		j_u64(sub, "report_requests_invalid", rp->invalid, 0, &err);
	}
	if (err) {
		cJSON_Delete(o);
		return NULL;
	}
	return o;
}

int report__summary(struct report *rp, const struct report_counter *counters, int n_counters)
{
	FILE *out = rp->opts.out;

	if (n_counters < 0 || (n_counters && !counters))
		return -EINVAL;
	if (rp->opts.json) {
		cJSON *o = summary_json(rp, counters, n_counters);
		int err = print_json_line(rp, o);

		cJSON_Delete(o);
		if (err)
			return err;
	} else {
		summary_text(rp, counters, n_counters);
	}
	/* Any failed write since the start shows in the stream's error flag. */
	if (fflush(out))
		return errno ? -errno : -EIO;
	if (ferror(out))
		return -EIO;
	return 0;
}

/* ---- the sink ---- */

static void sink_request(void *ctx, const struct ttf_request *r, const struct ttf_req_metrics *m,
			 const struct ttf_attrib *a)
{
	report__request(ctx, r, m, a);
}

static void sink_rejected(void *ctx, const struct ttf_request *r)
{
	report__rejected(ctx, r);
}

static void sink_zmtp_conn(void *ctx, const struct ttf_zmtp_conn *z)
{
	struct report *rp = ctx;

	if (rp->opts.json) {
		cJSON *o = report_zmtp__json(z);

		print_json_line(rp, o);
		cJSON_Delete(o);
	} else {
		report_zmtp__text(rp->opts.out, z);
	}
}

static int sink_finish(void *ctx, const struct report_counter *c, int n)
{
	struct report *rp = ctx;

	rp->summary_err = report__summary(rp, c, n);
	return rp->summary_err;
}

void report__sink(struct report *rp, struct ttf_sink *out)
{
	*out = (struct ttf_sink){ .name = "report", .ctx = rp, .request = sink_request,
				  .rejected = sink_rejected, .zmtp_conn = sink_zmtp_conn,
				  .finish = sink_finish };
}

int report__summary_error(const struct report *rp)
{
	return rp->summary_err;
}
