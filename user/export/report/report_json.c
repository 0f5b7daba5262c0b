// SPDX-License-Identifier: GPL-2.0-only
/* The NDJSON object of one request ({"type":"request",...}) and how a line is printed. */
#include <arpa/inet.h>
#include <errno.h>
#include <stdio.h>
#include "bpf/net.h"
#include "user/model/metrics.h"
#include "user/export/report/report_int.h"

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

/* Who: ids, process, connection, the request line, status, API and model. */
static void j_identity(cJSON *o, const struct ttf_request *r, int *err)
{
	char buf[sizeof(r->path) + 1], conn[128];

	j_u64(o, "id", r->id, 0, err);
	j_num(o, "pid", r->tgid, err);
	j_num(o, "tid_rx", r->rx_tid, err);
	j_num(o, "tid_tx", r->tx_tid, err);
	report_sanitize(buf, r->comm, sizeof(r->comm));
	j_str(o, "comm", buf[0] ? buf : NULL, err);
	format_conn(&r->addr, conn, sizeof(conn));
	j_str(o, "conn", conn[0] ? conn : NULL, err);
	j_u64(o, "sock_cookie", r->sock_cookie, 0, err);
	j_num(o, "conn_seq", r->conn_seq, err);
	report_sanitize(buf, r->method, sizeof(r->method));
	j_str(o, "method", buf[0] ? buf : NULL, err);
	report_sanitize(buf, r->path, sizeof(r->path));
	j_str(o, "path", buf[0] ? buf : NULL, err);
	if (r->status > 0)
		j_num(o, "status", r->status, err);
	else
		*err |= !json_add__null(o, "status");
	j_str(o, "api", ttf_api_name(r->api), err);
	j_str(o, "model", r->model[0] ? r->model : NULL, err);
}

cJSON *report_json__request(const struct ttf_request *r, const struct ttf_req_metrics *m)
{
	const char *flags[MAX_FLAGS];
	char grade[2];
	cJSON *o = cJSON_CreateObject(), *fa;
	int i, nf, err = !o;

	if (!o)
		return NULL;
	j_str(o, "type", "request", &err);
	j_identity(o, r, &err);

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
	grade[0] = m->grade;
	grade[1] = '\0';
	j_str(o, "grade", grade, &err);
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
	nf = report_flag_names(r, m, flags);
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

int report_json__print_line(struct report *rp, cJSON *o)
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

