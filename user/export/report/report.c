// SPDX-License-Identifier: GPL-2.0-only
/*
 * Output of finished requests (text live lines or NDJSON) and the summary at
 * exit. Latency samples are kept in stats.c collectors, in milliseconds.
 * This file: the report object, what each finished request adds to the
 * summary, and the sink. The live line is report_text.c, the NDJSON object
 * report_json.c, the summary report_summary.c.
 */
#include <errno.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>
#include "user/model/metrics.h"
#include "user/export/report/report_int.h"
#include "user/export/report/report_hops.h"
#include "user/export/report/report_msg_hops.h"
#include "user/export/report/report_hop_split.h"
#include "user/export/report/report_stages.h"
#include "user/export/report/report_zmtp.h"
#include "user/export/sink.h"

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

void report_sanitize(char *dst, const char *src, size_t max)
{
	size_t i, n = strnlen(src, max);

	for (i = 0; i < n; i++) {
		unsigned char c = src[i];

		dst[i] = c < 0x20 || c >= 0x7f ? '?' : c;
	}
	dst[n] = '\0';
}

static int is_buffered(const struct ttf_request *r, const struct ttf_req_metrics *m)
{
	return m->buffered || (r->flags & TTF_REQ_BUFFERED);
}

int report_flag_names(const struct ttf_request *r, const struct ttf_req_metrics *m,
		      const char **names)
{
	return ttf_vocab__flag_names(ttf_vocab__flags(r, m), names, MAX_FLAGS);
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
		cJSON *o = report_json__request(r, m);
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
		report_json__print_line(rp, o);
		cJSON_Delete(o);
	} else {
		report_text__request(rp, r, m);
		report_stages__text_line(rp->opts.out, a, rp->opts.verbose);
		report_hops__text_line(rp->opts.out, a);
		report_msg_hops__text_line(rp->opts.out, a);
	}
}

void report__rejected(struct report *rp, const struct ttf_request *r)
{
	rp->invalid++;
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

		report_json__print_line(rp, o);
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
