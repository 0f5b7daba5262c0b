// SPDX-License-Identifier: GPL-2.0-only
/* The summary's cost of tracing; see report_cost.h. */
#include <string.h>
#include "user/export/report/report_cost.h"
#include "user/export/report/report_int.h"

struct cost {
	int have, have_bpf;
	uint64_t wall_ns, cpu_ns, targets_ns, setup_ns, bpf_ns, bpf_runs, stats_errno;
};

int report_cost__is_cost(const char *name)
{
	return !strncmp(name, "cost_", 5);
}

static struct cost cost_of(const struct report_counter *c, int n)
{
	struct cost k = { 0 };

	for (int i = 0; i < n; i++) {
		if (!strcmp(c[i].name, "cost_wall_ns")) {
			k.wall_ns = c[i].value;
			k.have = 1;
		} else if (!strcmp(c[i].name, "cost_tracer_cpu_ns")) {
			k.cpu_ns = c[i].value;
		} else if (!strcmp(c[i].name, "cost_targets_cpu_ns")) {
			k.targets_ns = c[i].value;
		} else if (!strcmp(c[i].name, "cost_setup_cpu_ns")) {
			k.setup_ns = c[i].value;
		} else if (!strcmp(c[i].name, "cost_bpf_stats_errno")) {
			k.stats_errno = c[i].value;
		} else if (!strcmp(c[i].name, "cost_bpf_run_ns")) {
			k.bpf_ns = c[i].value;
			k.have_bpf = 1;
		} else if (!strcmp(c[i].name, "cost_bpf_runs")) {
			k.bpf_runs = c[i].value;
		}
	}
	return k;
}

/* The BPF programs' line: their time, or why it is not known. */
static void bpf_text(FILE *out, const struct cost *k, uint64_t out_tokens)
{
	if (!k->have_bpf && k->stats_errno) {
		fprintf(out, "  BPF programs: not counted (--cost could not turn the kernel's run-time "
			"statistics on: %s; it needs Linux 5.8 and CAP_SYS_ADMIN)\n",
			strerror((int)k->stats_errno));
		return;
	}
	if (!k->have_bpf) {
		fprintf(out, "  BPF programs: not counted (the kernel's run-time statistics were not on "
			"from attach to the end; --cost turns them on)\n");
		return;
	}
	fprintf(out, "  BPF programs: %.1f ms in %" PRIu64 " runs", k->bpf_ns / 1e6, k->bpf_runs);
	if (k->bpf_runs)
		fprintf(out, " (%.0f ns a run)", (double)k->bpf_ns / k->bpf_runs);
	if (out_tokens)
		fprintf(out, ", %.2f us per output token", k->bpf_ns / 1e3 / out_tokens);
	fputc('\n', out);
}

void report_cost__text(FILE *out, const struct report_counter *c, int n, uint64_t out_tokens)
{
	struct cost k = cost_of(c, n);

	if (!k.have)
		return;
	fprintf(out, "Cost of tracing, from attach to the end (%.1f s, %" PRIu64
		" output tokens):\n", k.wall_ns / 1e9, out_tokens);
	fprintf(out, "  tracer process: %.1f ms CPU (%.2f%% of one core)", k.cpu_ns / 1e6,
		k.wall_ns ? 100.0 * k.cpu_ns / k.wall_ns : 0.0);
	if (out_tokens)
		fprintf(out, ", %.2f us per output token", k.cpu_ns / 1e3 / out_tokens);
	fprintf(out, "; before the attach, %.1f ms to load the programs\n", k.setup_ns / 1e6);
	bpf_text(out, &k, out_tokens);
	/* /proc's clock ticks, 10 ms: whole ms */
	fprintf(out, "  for scale, the traced processes: %.0f ms CPU", k.targets_ns / 1e6);
	if (out_tokens)
		fprintf(out, ", %.1f us per output token", k.targets_ns / 1e3 / out_tokens);
	fprintf(out, " (the BPF runs and uprobe traps in their threads are in this too)\n");
}

/* v / out_tokens in us, rounded to ns; null without tokens. */
static void per_token_us(cJSON *o, const char *key, uint64_t ns, uint64_t out_tokens, int *err)
{
	if (out_tokens)
		j_num(o, key, round((double)ns / out_tokens) / 1e3, err);
	else
		*err |= !json_add__null(o, key);
}

void report_cost__json(cJSON *o, const struct report_counter *c, int n, uint64_t out_tokens,
		       int *err)
{
	struct cost k = cost_of(c, n);
	cJSON *co;

	if (!k.have)
		return;
	co = json_add__obj(o, "cost");
	if (!co) {
		*err = 1;
		return;
	}
	j_num(co, "wall_s", round(k.wall_ns / 1e6) / 1e3, err);
	j_num(co, "tracer_cpu_ms", round(k.cpu_ns / 1e3) / 1e3, err);
	j_num(co, "tracer_core_share", k.wall_ns ? round(1e6 * k.cpu_ns / k.wall_ns) / 1e6 : 0,
	      err);
	per_token_us(co, "tracer_us_per_token", k.cpu_ns, out_tokens, err);
	j_num(co, "setup_cpu_ms", round(k.setup_ns / 1e3) / 1e3, err);
	j_num(co, "targets_cpu_ms", round(k.targets_ns / 1e3) / 1e3, err);
	per_token_us(co, "targets_us_per_token", k.targets_ns, out_tokens, err);
	j_str(co, "bpf_stats", k.have_bpf ? "counted" : k.stats_errno ? "refused" : "off", err);
	if (k.have_bpf) {
		j_num(co, "bpf_run_ms", round(k.bpf_ns / 1e3) / 1e3, err);
		j_u64(co, "bpf_runs", k.bpf_runs, 0, err);
		per_token_us(co, "bpf_us_per_token", k.bpf_ns, out_tokens, err);
	} else {
		*err |= !json_add__null(co, "bpf_run_ms");
		*err |= !json_add__null(co, "bpf_runs");
		*err |= !json_add__null(co, "bpf_us_per_token");
	}
}
