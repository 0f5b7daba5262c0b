// SPDX-License-Identifier: GPL-2.0-only
/* The text output's live line per request, and its column header. */
#include <stdio.h>
#include "user/model/metrics.h"
#include "user/export/report/report_int.h"

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

void report_text__request(struct report *rp, const struct ttf_request *r,
			  const struct ttf_req_metrics *m)
{
	FILE *out = rp->opts.out;
	const char *flags[MAX_FLAGS];
	char path[sizeof(r->path) + 1], ttft[24], tpot[24], e2e[24], ttfb[24], ttfe[24], st[12];
	double t_s = m->t_start_ns ? ((double)m->t_start_ns - (double)rp->opts.t0_ns) / 1e9 : 0;
	int i, nf = report_flag_names(r, m, flags);

	report_sanitize(path, r->path, sizeof(r->path));
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

