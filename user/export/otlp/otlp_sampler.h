/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * Which requests' traces the OTLP export sends: the SDK's built-in samplers,
 * chosen as an SDK chooses them (docs/otel.md O9 has the rules and sources):
 *   OTEL_TRACES_SAMPLER      always_on | always_off | traceidratio |
 *                            parentbased_always_on (default) |
 *                            parentbased_always_off | parentbased_traceidratio
 *   OTEL_TRACES_SAMPLER_ARG  the ratio of the *traceidratio samplers, 0..1
 *                            (default 1.0)
 * An unknown sampler or a bad ratio is warned about and the default used,
 * as the SDK environment spec asks, so that one environment shared with
 * SDK-instrumented services does not stop the tracer.
 *
 * parentbased_*: a request whose valid traceparent says sampled is exported,
 * one that says not sampled (flags bit 0 clear) is not; a request without a
 * traceparent (a root) is decided by the delegate. traceidratio decides from
 * the trace id's randomness value R (its 7 rightmost bytes, or the explicit
 * `ot=rv:` value of the request's tracestate) against the rejection
 * threshold T = (1 - ratio) * 2^56: sampled when R >= T.
 */
#ifndef TTFTRACE_OTLP_SAMPLER_H
#define TTFTRACE_OTLP_SAMPLER_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include "user/proto/traceparent.h"

enum otlp_sampler_root {
	OTLP_SAMPLE_ALWAYS_ON,
	OTLP_SAMPLE_ALWAYS_OFF,
	OTLP_SAMPLE_RATIO,
};

struct otlp_sampler {
	bool parent_based;
	enum otlp_sampler_root root;
	double ratio;			/* RATIO only */
	uint64_t threshold;		/* RATIO: rejection threshold T, 0 .. 2^56 */
	char name[32];			/* the OTEL_TRACES_SAMPLER value in use */
};

/*
 * Read the two variables (get: getenv or a fake; NULL is unset). Warnings
 * (unknown sampler, bad ratio) are printed with ttf_warn and the default
 * used. Never fails.
 */
void otlp_sampler__load(struct otlp_sampler *s, char *(*get)(const char *name));
/* Export the trace trace_id of a request whose traceparent is parent (valid or not)? */
bool otlp_sampler__sample(const struct otlp_sampler *s, const uint8_t trace_id[16],
			  const struct ttf_trace_parent *parent);
/* "parentbased_traceidratio 0.25", "always_on": for the start-up line. */
void otlp_sampler__describe(const struct otlp_sampler *s, char *buf, size_t len);

#endif /* TTFTRACE_OTLP_SAMPLER_H */
