/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * Latency SLOs: the --slo SPEC of ttftrace, loadgen and `ttftrace report`.
 *
 * SPEC is a comma-separated list of METRIC_PCT=LIMIT, e.g.
 *   ttft_p95=2s,tpot_p95=100ms,itl_p99=50ms,e2e_p50=30s
 * METRIC: ttft, tpot, itl, e2e, ttfv (definitions: README.md "Definitions");
 * PCT: p50, p90, p95, p99 (percentile definition: user/lib/stats.h);
 * LIMIT: a positive number with a unit ns, us, ms or s (the unit is required).
 * Spaces around items are allowed; a metric/percentile pair may appear once.
 *
 * An SLO is met when the measured value <= LIMIT. A value that was not
 * measured (no requests, no request with two tokens for TPOT, ...) does not
 * meet its SLO: a gate must not pass on no data.
 *
 * Exit codes when an SLO is not met (documented in README.md "SLO gates"):
 *   ttftrace: TTF_EXIT_SLO (10, user/cmd/cli.h), after the summary;
 *   loadgen:  4 (LG_EXIT_SLO, tools/loadgen/loadgen.h).
 * A bad SPEC is a usage error (exit 2) in both.
 */
#ifndef TTFTRACE_SLO_H
#define TTFTRACE_SLO_H

#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>

struct stats;

enum slo_metric { SLO_TTFT, SLO_TPOT, SLO_ITL, SLO_E2E, SLO_TTFV, SLO_N_METRICS };
enum slo_pct { SLO_P50, SLO_P90, SLO_P95, SLO_P99, SLO_N_PCTS };

#define SLO_MAX (SLO_N_METRICS * SLO_N_PCTS)

struct slo {
	enum slo_metric metric;
	enum slo_pct pct;
	double limit_ms;
};

/* Items in the order of the SPEC. */
struct slo_set {
	int n;
	struct slo items[SLO_MAX];
};

/* Measured values in ms; NAN = not measured. */
struct slo_values {
	double ms[SLO_N_METRICS][SLO_N_PCTS];
};

/* Per item of the slo_set, same index. */
struct slo_result {
	int n_failed;			/* items not met (missing values included) */
	bool failed[SLO_MAX];
	double value_ms[SLO_MAX];	/* NAN when not measured */
};

/*
 * Parse SPEC into *out. Returns 0, or -EINVAL with a one-line reason (no
 * "Error:" prefix) in err (err may be NULL; err_sz includes the NUL).
 */
int slo__parse(const char *spec, struct slo_set *out, char *err, size_t err_sz);

/* Set every value to NAN. */
void slo_values__init(struct slo_values *v);
/* Fill metric m's four percentiles from s (ms samples; NAN when s is NULL or empty). */
void slo_values__from_stats(struct slo_values *v, enum slo_metric m, struct stats *s);

/*
 * Compare v with s. Returns the number of SLOs not met (0: all met), also in
 * out->n_failed; -EINVAL when s, v or out is NULL.
 */
int slo__check(const struct slo_set *s, const struct slo_values *v, struct slo_result *out);

/*
 * Print one line per SLO to f: "<who>: SLO ttft_p95 <= 2000 ms: FAILED (2513.402 ms)"
 * or "...: met (812.000 ms)" or "...: FAILED (not measured)". prefix e.g. "ttftrace".
 */
void slo__print(FILE *f, const char *prefix, const struct slo_set *s, const struct slo_result *r);

/* "ttft", ... / "p95", ...; NULL when out of range. */
const char *slo__metric_name(enum slo_metric m);
const char *slo__pct_name(enum slo_pct p);

/* The HINT line that goes with a parse error. */
#define SLO_HINT "--slo METRIC_PCT=LIMIT[,...], METRIC ttft|tpot|itl|e2e|ttfv, " \
	"PCT p50|p90|p95|p99, LIMIT with ns|us|ms|s, e.g. --slo ttft_p95=2s,tpot_p95=100ms"

#endif /* TTFTRACE_SLO_H */
