// SPDX-License-Identifier: GPL-2.0-only
/*
 * sched-probe: trace one process's threads with the scheduler probes until
 * it exits (or SIGINT), then answer overlay queries read from stdin, one per
 * line: "TID START_NS END_NS" (CLOCK_MONOTONIC) -> one JSON object per line.
 * At EOF, one summary JSON object: counters, view stats, the threads with the
 * most runqueue wait, the runqueue-latency histogram and BPF run-time stats.
 * A test and benchmark driver (tests/root/sched, bench/sched_cost.sh).
 *
 * Usage: sched-probe -p PID [--seed] [-v]
 * "attached" on stderr means the probes are live.
 */
#include <errno.h>
#include <getopt.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <bpf/btf.h>
#include <bpf/libbpf.h>
#include "user/lib/log.h"
#include "user/model/sched.h"
#include "user/probe/proc_task.h"
#include "user/probe/sched_probe.h"

#define DRAIN_PERIOD_MS 10
#define TOP_THREADS 8

static volatile sig_atomic_t stop;

static void on_sigint(int sig)
{
	stop = 1;
}

/* Gone or a zombie (its parent has not reaped it yet). */
static int process_gone(int pid)
{
	char path[64], buf[512], *p;
	FILE *f;

	snprintf(path, sizeof(path), "/proc/%d/stat", pid);
	f = fopen(path, "re");
	if (!f)
		return 1;
	p = fgets(buf, sizeof(buf), f) ? strrchr(buf, ')') : NULL;
	fclose(f);
	return p && p[1] == ' ' && (p[2] == 'Z' || p[2] == 'X');
}

static void print_summary(struct sched_probe *sp, struct sched_view *v)
{
	uint64_t cnt[TTF_SCHED_CNT__MAX], hist[SCHED_HIST_BUCKETS], run_cnt[8], run_ns[8];
	struct sched_thread_summary top[TOP_THREADS];
	const char *names[8];
	struct sched_stats st;
	size_t n;
	int np;

	sched_probe__counters(sp, cnt);
	sched__stats(v, &st);
	printf("{\"type\":\"summary\"");
	for (int i = 0; i < TTF_SCHED_CNT__MAX; i++)
		printf(",\"%s\":%llu", sched_probe__counter_name(i), (unsigned long long)cnt[i]);
	printf(",\"view\":{\"events\":%llu,\"threads\":%llu,\"threads_freed\":%llu,"
	       "\"threads_refused\":%llu,\"marks_horizon\":%llu,\"marks_cap\":%llu,"
	       "\"reordered\":%llu,\"inconsistent\":%llu,\"alloc_failed\":%llu}",
	       (unsigned long long)st.events, (unsigned long long)st.threads,
	       (unsigned long long)st.threads_freed, (unsigned long long)st.threads_refused,
	       (unsigned long long)st.marks_horizon, (unsigned long long)st.marks_cap,
	       (unsigned long long)st.reordered, (unsigned long long)st.inconsistent,
	       (unsigned long long)st.alloc_failed);
	n = sched__top_runq(v, top, TOP_THREADS);
	printf(",\"threads\":[");
	for (size_t i = 0; i < n; i++)
		printf("%s{\"tid\":%u,\"comm\":\"%s\",\"on_cpu_ms\":%.3f,\"runnable_ms\":%.3f,"
		       "\"blocked_ms\":%.3f,\"max_runq_ms\":%.3f,\"n_runq\":%llu,\"exited\":%s}",
		       i ? "," : "", top[i].tid, top[i].comm, top[i].on_cpu_ns / 1e6,
		       top[i].runnable_ns / 1e6, top[i].blocked_ns / 1e6,
		       top[i].max_runq_ns / 1e6, (unsigned long long)top[i].n_runq,
		       top[i].exited ? "true" : "false");
	sched__runq_hist(v, hist);
	printf("],\"runq_hist_us\":[");
	for (int i = 0; i < SCHED_HIST_BUCKETS; i++)
		printf("%s[%llu,%llu]", i ? "," : "", (unsigned long long)sched__hist_lo_us(i),
		       (unsigned long long)hist[i]);
	np = sched_probe__prog_stats(sp, names, run_cnt, run_ns, 8);
	printf("],\"progs\":{");
	for (int i = 0; i < np; i++)
		printf("%s\"%s\":{\"run_cnt\":%llu,\"run_time_ns\":%llu}", i ? "," : "", names[i],
		       (unsigned long long)run_cnt[i], (unsigned long long)run_ns[i]);
	printf("}}\n");
}

static void answer_queries(struct sched_view *v)
{
	unsigned long long a, b;
	struct sched_overlay o;
	char line[256];
	unsigned int tid;
	int rc;

	while (fgets(line, sizeof(line), stdin)) {
		if (sscanf(line, "%u %llu %llu", &tid, &a, &b) != 3)
			continue;
		rc = sched__overlay(v, tid, a, b, &o);
		printf("{\"type\":\"overlay\",\"tid\":%u,\"start_ns\":%llu,\"end_ns\":%llu,"
		       "\"rc\":%d,\"on_cpu_ns\":%llu,\"runnable_ns\":%llu,\"blocked_ns\":%llu,"
		       "\"unknown_ns\":%llu}\n", tid, a, b, rc,
		       (unsigned long long)o.on_cpu_ns, (unsigned long long)o.runnable_ns,
		       (unsigned long long)o.blocked_ns, (unsigned long long)o.unknown_ns);
		fflush(stdout);
	}
}

/* A record for the view; a thread new to it gets its name while it still exists. */
static int on_record(void *ctx, const struct ttf_sched_event *e)
{
	char comm[SCHED_COMM_LEN];

	if (sched__add(ctx, e) == 1) {
		proc_task__comm(e->tgid, e->tid, comm, sizeof(comm));
		if (comm[0])
			sched__set_comm(ctx, e->tid, comm);
	}
	return 0;
}

/* --seed: threads asleep now are BLOCKED from now, so their first wakeup is a known wait. */
static void seed_sleepers(struct sched_view *v, uint32_t tgid)
{
	uint32_t tids[1024];
	char comm[SCHED_COMM_LEN];
	uint64_t now_ns;
	int n = proc_task__sleeping(tgid, tids, 1024, &now_ns);

	for (int i = 0; i < n; i++) {
		if (sched__seed(v, tids[i], tgid, now_ns, SCHED_BLOCKED))
			continue;
		proc_task__comm(tgid, tids[i], comm, sizeof(comm));
		if (comm[0])
			sched__set_comm(v, tids[i], comm);
	}
}

int main(int argc, char **argv)
{
	static const struct option longopts[] = {
		{ "pid", required_argument, NULL, 'p' },
		{ "seed", no_argument, NULL, 's' },
		{ "verbose", no_argument, NULL, 'v' },
		{},
	};
	struct timespec period = { 0, DRAIN_PERIOD_MS * 1000000L };
	struct sched_probe_opts po = { .sz = sizeof(po) };
	struct sched_probe *sp = NULL;
	struct sched_view *v = NULL;
	struct btf *btf = NULL;
	int pid = 0, seed = 0, c, err = 0;

	while ((c = getopt_long(argc, argv, "p:sv", longopts, NULL)) != -1) {
		switch (c) {
		case 'p':
			pid = atoi(optarg);
			break;
		case 's':
			seed = 1;
			break;
		case 'v':
			ttf_verbosity++;
			break;
		default:
			fprintf(stderr, "usage: %s -p PID [--seed] [-v]\n", argv[0]);
			return 2;
		}
	}
	if (pid <= 0) {
		fprintf(stderr, "usage: %s -p PID [--seed] [-v]\n", argv[0]);
		return 2;
	}
	libbpf_set_print(ttf_libbpf_print);
	signal(SIGINT, on_sigint);
	v = sched__new(NULL);
	if (!v) {
		err = -ENOMEM;
		goto cleanup;
	}
	po.on_event = on_record;
	po.ctx = v;
	/* as the tracer: the kernel's BTF picks the probes (TTFTRACE_SCHED_WAKEUPS=1: sched_wakeup) */
	po.vmlinux_btf = btf = btf__load_vmlinux_btf();
	sp = sched_probe__open_load(&po, &err, NULL, 0);
	if (!sp) {
		ttf_error("run as root on a kernel with BTF", "could not load the sched probes: %s",
			  strerror(-err));
		goto cleanup;
	}
	err = sched_probe__trace_tgid(sp, pid);
	if (!err)
		err = sched_probe__attach(sp);
	if (err) {
		ttf_error(NULL, "could not attach the sched probes: %s", strerror(-err));
		goto cleanup;
	}
	sched_probe__poll(sp, 0);
	if (seed)
		seed_sleepers(v, pid);
	fprintf(stderr, "attached\n");
	while (!stop && !process_gone(pid)) {
		sched_probe__poll(sp, 0);
		nanosleep(&period, NULL);
	}
	sched_probe__poll(sp, 0);
	answer_queries(v);
	print_summary(sp, v);
cleanup:
	sched_probe__destroy(sp);
	btf__free(btf);
	sched__free(v);
	return err ? 1 : 0;
}
