/* SPDX-License-Identifier: GPL-2.0-only */
/* Small libbpf helpers shared by the probe loaders (net, sched, engine). */
#ifndef TTFTRACE_BPF_UTIL_H
#define TTFTRACE_BPF_UTIL_H

#include <stdint.h>
#include <bpf/libbpf.h>

/*
 * Sum slots 0..n-1 of a BPF_MAP_TYPE_PERCPU_ARRAY of __u64 over all possible
 * CPUs into out[0..n-1] (zeros when a lookup fails).
 */
void bpf_util__sum_percpu(const struct bpf_map *map, uint32_t n, uint64_t *out);

/*
 * Run-time stats of every loaded program of obj (kernel.bpf_stats_enabled=1
 * must be set for run_cnt/run_time_ns to count). Returns the number filled.
 */
int bpf_util__prog_stats(const struct bpf_object *obj, const char **names, uint64_t *run_cnt,
			 uint64_t *run_time_ns, int max);

/*
 * Append link l to the growing array *v of *n links. On -ENOMEM l is
 * destroyed (the probe it placed goes away), so the caller owns nothing new.
 */
int bpf_util__push_link(struct bpf_link ***v, int *n, struct bpf_link *l);

/*
 * Destroy links v[0..n) (uprobes; frees nothing else). Closing a uprobe's
 * perf event waits in the kernel, about 60 to 120 ms each on 6.18 and
 * serialized (measured with strace on a TLS library's 10 probes, also from
 * parallel threads; docs/kernel.md B13) -- but only the last close of a
 * perf event waits. A forked grandchild keeps only the perf event
 * descriptors until these closes are done, then exits, so the kernel
 * removes the probes there, within about n * 0.1 s, while this process goes
 * on (or exits) at once. Without a grandchild (fork failed), here.
 */
void bpf_util__destroy_links(struct bpf_link **v, int n);

#endif /* TTFTRACE_BPF_UTIL_H */
