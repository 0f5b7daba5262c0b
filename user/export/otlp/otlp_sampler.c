// SPDX-License-Identifier: GPL-2.0-only
/* OTEL_TRACES_SAMPLER / _ARG and the sampling decision (otlp_sampler.h). */
#include <ctype.h>
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include "user/lib/log.h"
#include "user/export/otlp/otlp_sampler.h"

#define RANDOMNESS_BITS 56
#define THRESHOLD_MAX (1ull << RANDOMNESS_BITS)	/* T for ratio 0: nothing passes */
#define DEFAULT_SAMPLER "parentbased_always_on"

static const struct {
	const char *name;
	bool parent_based;
	enum otlp_sampler_root root;
} samplers[] = {
	{ "always_on", false, OTLP_SAMPLE_ALWAYS_ON },
	{ "always_off", false, OTLP_SAMPLE_ALWAYS_OFF },
	{ "traceidratio", false, OTLP_SAMPLE_RATIO },
	{ "parentbased_always_on", true, OTLP_SAMPLE_ALWAYS_ON },
	{ "parentbased_always_off", true, OTLP_SAMPLE_ALWAYS_OFF },
	{ "parentbased_traceidratio", true, OTLP_SAMPLE_RATIO },
};

/* The rejection threshold of a ratio in [0, 1]: (1 - ratio) * 2^56, rounded. */
static uint64_t threshold_of(double ratio)
{
	uint64_t keep = (uint64_t)llround(ldexp(ratio, RANDOMNESS_BITS));

	return keep >= THRESHOLD_MAX ? 0 : THRESHOLD_MAX - keep;
}

static void set(struct otlp_sampler *s, int i)
{
	s->parent_based = samplers[i].parent_based;
	s->root = samplers[i].root;
	snprintf(s->name, sizeof(s->name), "%s", samplers[i].name);
}

/* OTEL_TRACES_SAMPLER_ARG as a ratio; 1.0 (the spec's default) when unset or bad. */
static double ratio_arg(const char *v)
{
	char *end;
	double r;

	if (!v || !*v)
		return 1.0;
	errno = 0;
	r = strtod(v, &end);
	while (isspace((unsigned char)*end))
		end++;
	if (errno || end == v || *end || !(r >= 0.0 && r <= 1.0)) {
		ttf_warn("OTEL_TRACES_SAMPLER_ARG '%s' is not a ratio in [0, 1]: using 1.0", v);
		return 1.0;
	}
	return r;
}

void otlp_sampler__load(struct otlp_sampler *s, char *(*get)(const char *name))
{
	const char *v = get("OTEL_TRACES_SAMPLER");
	int pick = 3;	/* parentbased_always_on */

	memset(s, 0, sizeof(*s));
	if (v && *v) {
		int i, n = (int)(sizeof(samplers) / sizeof(samplers[0]));

		/* enum values are case-insensitive (SDK environment variable spec) */
		for (i = 0; i < n && strcasecmp(v, samplers[i].name); i++)
			;
		if (i < n)
			pick = i;
		else
			ttf_warn("OTEL_TRACES_SAMPLER '%s' is not a sampler ttftrace knows: using "
				 DEFAULT_SAMPLER, v);
	}
	set(s, pick);
	s->ratio = 1.0;
	if (s->root == OTLP_SAMPLE_RATIO)
		s->ratio = ratio_arg(get("OTEL_TRACES_SAMPLER_ARG"));
	s->threshold = threshold_of(s->ratio);
}

static int hexval(char c)
{
	if (c >= '0' && c <= '9')
		return c - '0';
	if (c >= 'a' && c <= 'f')
		return c - 'a' + 10;
	return -1;
}

/*
 * The explicit randomness value of a tracestate: the `rv` sub-key (14 hex
 * digits) of its `ot` entry. false when there is none.
 */
static bool explicit_rv(const char *ts, uint64_t *rv)
{
	for (const char *p = ts; p && *p; p = strchr(p, ',') ? strchr(p, ',') + 1 : NULL) {
		const char *end;

		while (*p == ' ' || *p == '\t')
			p++;
		if (strncmp(p, "ot=", 3))
			continue;
		end = strchr(p, ',');
		if (!end)
			end = p + strlen(p);
		for (const char *q = p + 3; q && q < end; q = strchr(q, ';') ? strchr(q, ';') + 1 : NULL) {
			uint64_t v = 0;
			int k;

			if (strncmp(q, "rv:", 3))
				continue;
			for (k = 0; k < 14 && hexval(q[3 + k]) >= 0; k++)
				v = v << 4 | (uint64_t)hexval(q[3 + k]);
			if (k == 14 && (q + 17 == end || q[17] == ';')) {
				*rv = v;
				return true;
			}
			return false;
		}
		return false;
	}
	return false;
}

static bool ratio_sample(const struct otlp_sampler *s, const uint8_t trace_id[16],
			 const struct ttf_trace_parent *parent)
{
	uint64_t r = 0;

	/* R: the explicit randomness value, else the 7 rightmost bytes of the trace id */
	if (!parent || !parent->valid || !explicit_rv(parent->state, &r))
		for (int i = 9; i < 16; i++)
			r = r << 8 | trace_id[i];
	return r >= s->threshold;
}

bool otlp_sampler__sample(const struct otlp_sampler *s, const uint8_t trace_id[16],
			  const struct ttf_trace_parent *parent)
{
	if (s->parent_based && parent && parent->valid)
		return parent->flags & 1;	/* the caller's sampled flag decides */
	switch (s->root) {
	case OTLP_SAMPLE_ALWAYS_ON:
		return true;
	case OTLP_SAMPLE_ALWAYS_OFF:
		return false;
	case OTLP_SAMPLE_RATIO:
	default:
		return ratio_sample(s, trace_id, parent);
	}
}

void otlp_sampler__describe(const struct otlp_sampler *s, char *buf, size_t len)
{
	if (s->root == OTLP_SAMPLE_RATIO)
		snprintf(buf, len, "%s %g", s->name, s->ratio);
	else
		snprintf(buf, len, "%s", s->name);
}
