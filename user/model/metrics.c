// SPDX-License-Identifier: GPL-2.0-only
/* Per-request token metrics; definitions in metrics.h. */
#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include "user/model/metrics.h"

uint64_t ttf_metrics__event_time(const struct ttf_token_event *ev)
{
	return ev->xmit_ns ? ev->xmit_ns : ev->write_ns;
}

static uint64_t itl_at(const struct ttf_request *r, uint32_t i)
{
	uint64_t a = ttf_metrics__event_time(&r->events[i]);
	uint64_t b = ttf_metrics__event_time(&r->events[i + 1]);

	return b > a ? b - a : 0;
}

uint32_t ttf_metrics__itl(const struct ttf_request *r, uint64_t *itl_ns, uint32_t cap)
{
	uint32_t i, n;

	if (!r->events || r->n_events < 2)
		return 0;
	n = r->n_events - 1;
	for (i = 0; i < n && i < cap; i++)
		itl_ns[i] = itl_at(r, i);
	return n;
}

int ttf_metrics__itl_one(const struct ttf_request *r, uint32_t i, uint64_t *itl_ns)
{
	if (!r->events || r->n_events < 2 || i >= r->n_events - 1)
		return -ERANGE;
	*itl_ns = itl_at(r, i);
	return 0;
}

int ttf_metrics__itl_alloc(const struct ttf_request *r, uint64_t **itl_ns)
{
	uint32_t n = ttf_metrics__itl(r, NULL, 0);

	*itl_ns = NULL;
	if (!n)
		return 0;
	*itl_ns = malloc((size_t)n * sizeof(**itl_ns));
	if (!*itl_ns)
		return -ENOMEM;
	ttf_metrics__itl(r, *itl_ns, n);
	return (int)n;
}

int ttf_metrics__is_outlier(const struct ttf_req_metrics *m, uint64_t itl_ns)
{
	return m->itl_mean_ns > 0 && (double)itl_ns > TTF_OUTLIER_FACTOR * m->itl_mean_ns;
}

static int64_t since(uint64_t start_ns, uint64_t t_ns)
{
	if (!start_ns || !t_ns || t_ns < start_ns)
		return -1;
	return (int64_t)(t_ns - start_ns);
}

/* ITL mean, CV, grade and outliers; needs r->n_events >= 2. */
static void itl_metrics(const struct ttf_request *r, struct ttf_req_metrics *m)
{
	uint32_t i, n = r->n_events - 1;
	double sum = 0, acc = 0, mean;

	for (i = 0; i < n; i++)
		sum += (double)itl_at(r, i);
	mean = sum / n;
	m->itl_mean_ns = mean;
	for (i = 0; i < n; i++) {
		double d = (double)itl_at(r, i) - mean;

		acc += d * d;
		if (ttf_metrics__is_outlier(m, itl_at(r, i)))
			m->n_outliers++;
	}
	if (n < 2 || mean <= 0)
		return;
	m->itl_cv = sqrt(acc / n) / mean;
	if (m->itl_cv < TTF_CV_GRADE_A)
		m->grade = 'A';
	else if (m->itl_cv < TTF_CV_GRADE_B)
		m->grade = 'B';
	else
		m->grade = 'C';
}

int ttf_metrics__compute(const struct ttf_request *r, struct ttf_req_metrics *m)
{
	uint64_t counted = 0;
	uint32_t i;

	if (!r || !m || (r->n_events && !r->events))
		return -EINVAL;

	*m = (struct ttf_req_metrics){
		.ttft_ns = -1, .ttfv_ns = -1, .ttfb_ns = -1, .ttfe_ns = -1, .e2e_ns = -1, .tpot_ns = -1,
		.itl_mean_ns = -1, .itl_cv = -1, .tokens_per_event = -1, .grade = '-',
	};
	m->n_events = r->n_events;
	m->t_start_ns = r->arrival_first_ns ? r->arrival_first_ns : r->read_first_ns;

	if (!(r->flags & (TTF_REQ_ABORTED | TTF_REQ_INCOMPLETE))) {
		uint64_t end = r->end_xmit_ns ? r->end_xmit_ns : r->end_write_ns;

		m->e2e_ns = since(m->t_start_ns, end);
		if (m->e2e_ns >= 0)
			m->t_end_ns = end;
	}

	if (r->resp_first_write_ns)
		m->ttfb_ns = since(m->t_start_ns, r->resp_first_xmit_ns ? r->resp_first_xmit_ns :
							      r->resp_first_write_ns);
	if (r->first_event_write_ns)
		m->ttfe_ns = since(m->t_start_ns, r->first_event_xmit_ns ? r->first_event_xmit_ns :
							      r->first_event_write_ns);

	for (i = 0; i < r->n_events; i++) {
		const struct ttf_token_event *ev = &r->events[i];

		counted += ev->n_tokens;
		if (m->ttfv_ns < 0 && (ev->flags & TTF_TOK_CONTENT))
			m->ttfv_ns = since(m->t_start_ns, ttf_metrics__event_time(ev));
	}
	if (r->flags & TTF_REQ_OPAQUE) {
		/* the body could not be read: its one event only marks where TTFT ends */
		m->n_tokens = 0;
	} else if ((r->flags & TTF_REQ_USAGE) && r->usage_completion_tokens > 0) {
		m->n_tokens = r->usage_completion_tokens;
		m->tokens_from_usage = 1;
	} else {
		m->n_tokens = counted > UINT32_MAX ? UINT32_MAX : (uint32_t)counted;
	}

	if (r->flags & TTF_REQ_NONSTREAM) {
		/* The whole answer arrives at the end: first token = last byte. */
		m->ttft_ns = m->e2e_ns;
		m->ttfv_ns = m->e2e_ns;
		m->ttfe_ns = m->e2e_ns;
		m->ttft_end_is_xmit = m->e2e_ns >= 0 && r->end_xmit_ns != 0;
		if (m->e2e_ns >= 0)
			m->t_first_token_ns = m->t_last_token_ns = m->t_end_ns;
		return 0;
	}

	if (r->n_events) {
		m->t_first_token_ns = ttf_metrics__event_time(&r->events[0]);
		m->t_last_token_ns = ttf_metrics__event_time(&r->events[r->n_events - 1]);
		m->ttft_ns = since(m->t_start_ns, m->t_first_token_ns);
		m->ttft_end_is_xmit = m->ttft_ns >= 0 && r->events[0].xmit_ns != 0;
		if (!(r->flags & TTF_REQ_OPAQUE))
			m->tokens_per_event = (double)m->n_tokens / r->n_events;
	}
	if (r->n_events >= 2) {
		uint64_t span = m->t_last_token_ns > m->t_first_token_ns ?
				m->t_last_token_ns - m->t_first_token_ns : 0;

		if (m->n_tokens >= 2)
			m->tpot_ns = (double)span / (m->n_tokens - 1);
		itl_metrics(r, m);
		m->buffered = r->n_events >= 3 && span <= TTF_BUFFERED_SPAN_NS &&
			      m->ttft_ns >= (int64_t)TTF_BUFFERED_SILENCE_NS;
	}
	return 0;
}
