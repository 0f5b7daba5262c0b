/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * What tracing costs, measured by the tracer itself: its own process's CPU
 * time and the run time of its BPF programs, from the moment it is
 * attached to the end. Given as counters (cost_*), so that they reach the
 * summary, Prometheus and recordings like every other counter, and a
 * replay gives the live run's figures (docs/usage.md, "What tracing
 * costs").
 *
 * The BPF programs' run time exists only while the kernel keeps run-time
 * statistics: kernel.bpf_stats_enabled=1, or a BPF_ENABLE_STATS fd (Linux
 * 5.8, CAP_SYS_ADMIN), which --cost holds for the run. They add two clock
 * reads to every program run of the machine (docs/kernel.md B13).
 */
#ifndef TTFTRACE_SELF_COST_H
#define TTFTRACE_SELF_COST_H

#include <stdint.h>
#include "user/lib/records.h"

struct self_cost;
struct target_set;

/*
 * want_stats (--cost): turn the kernel's BPF run-time statistics on for the
 * run. Call before the programs load. NULL: out of memory. A failure to
 * turn them on is said on stderr and the run goes on without them.
 */
struct self_cost *self_cost__new(int want_stats);
/* The traced processes (the tracer's set, read at each count): their CPU is counted too. */
void self_cost__set_targets(struct self_cost *c, const struct target_set *targets);
/* The tracer is attached: its CPU and the clock count from here. */
void self_cost__start(struct self_cost *c, uint64_t now_ns);
/* Read the traced processes' CPU again if a second has passed (the loop calls it). */
void self_cost__poll(struct self_cost *c, uint64_t now_ns);
/* Traced process tgid ended, having used cpu_ns in all (its EXIT record). */
void self_cost__exited(struct self_cost *c, uint32_t tgid, uint64_t cpu_ns);
/* The run ends: the counters keep these values from now on. */
void self_cost__freeze(struct self_cost *c, uint64_t now_ns);
/*
 * ttf_counters_fn: cost_wall_ns, cost_tracer_cpu_ns, cost_targets_cpu_ns,
 * and with statistics cost_bpf_*.
 */
int self_cost__counters(void *ctx, struct report_counter *out, int cap);
/* Turns the statistics off again (if --cost turned them on) and frees c. */
void self_cost__free(struct self_cost *c);

#endif /* TTFTRACE_SELF_COST_H */
