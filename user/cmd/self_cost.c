// SPDX-License-Identifier: GPL-2.0-only
/* What tracing costs, measured by the tracer itself; see self_cost.h. */
#include <dirent.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <bpf/bpf.h>
#include "user/cmd/self_cost.h"
#include "user/lib/log.h"
#include "user/probe/target.h"

#define MAX_PROGS 512	/* programs the tracer loads over a run: about 60 with every probe */
#define MAX_TARGETS 1024	/* traced processes over a run */
#define POLL_NS 1000000000ull	/* the traced processes' CPU is read this often */
#define STATS_SYSCTL "/proc/sys/kernel/bpf_stats_enabled"

struct prog_seen {
	uint32_t id;
	uint64_t base_cnt, base_ns;	/* at self_cost__start, or 0 for a later program */
	uint64_t cnt, ns;		/* the last values read */
};

struct target_seen {
	uint32_t tgid;
	uint64_t base_ns, ns;	/* CPU when first read (0: started after the attach), and the last */
};

struct self_cost {
	int stats_fd;		/* BPF_ENABLE_STATS, held for the run (--cost); -1 none */
	int stats_errno;	/* --cost: why the kernel refused it; 0 */
	int stats_at_start;	/* statistics were on when the tracer attached */
	int frozen;
	uint64_t start_ns, start_cpu_ns;
	uint64_t start_boot_ticks;	/* the attach, in /proc/PID/stat's starttime units */
	uint64_t next_poll_ns;
	struct prog_seen progs[MAX_PROGS];
	int n_progs, progs_over;	/* progs_over: not in the table at the last read */
	const struct target_set *targets;	/* the tracer's, read at each collect */
	struct target_seen seen[MAX_TARGETS];
	int n_seen, targets_over;	/* targets_over: not in the table at the last read */
	struct report_counter out[9];	/* frozen counters */
	int n_out;
};

static uint64_t process_cpu_ns(void)
{
	struct timespec ts;

	if (clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts))
		return 0;
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

/*
 * kernel.bpf_stats_enabled reads 1: the sysctl turned the statistics on. It
 * reads the value last written to it, so an fd from BPF_ENABLE_STATS (ours
 * or another process's) does not show there (docs/kernel.md B15).
 */
static int stats_on(void)
{
	FILE *f = fopen(STATS_SYSCTL, "r");
	int v = 0;

	if (!f)
		return 0;
	if (fscanf(f, "%d", &v) != 1)
		v = 0;
	fclose(f);
	return v == 1;
}

struct self_cost *self_cost__new(int want_stats)
{
	struct self_cost *c = calloc(1, sizeof(*c));

	if (!c)
		return NULL;
	c->stats_fd = -1;
	if (want_stats) {
		c->stats_fd = bpf_enable_stats(BPF_STATS_RUN_TIME);
		if (c->stats_fd < 0)
			c->stats_errno = errno;
		if (c->stats_fd < 0)
			ttf_warn("--cost: cannot turn on BPF run-time statistics: %s; the BPF "
				 "programs' time is not counted (it needs Linux 5.8 and "
				 "CAP_SYS_ADMIN)", strerror(errno));
	}
	return c;
}

static struct prog_seen *prog_slot(struct self_cost *c, uint32_t id)
{
	for (int i = 0; i < c->n_progs; i++)
		if (c->progs[i].id == id)
			return &c->progs[i];
	if (c->n_progs == MAX_PROGS)
		return NULL;
	c->progs[c->n_progs].id = id;
	return &c->progs[c->n_progs++];
}

/* Is fd (of this process) a BPF program? */
static int is_prog_fd(int fd)
{
	char path[64], link[64];
	ssize_t n;

	snprintf(path, sizeof(path), "/proc/self/fd/%d", fd);
	n = readlink(path, link, sizeof(link) - 1);
	if (n <= 0)
		return 0;
	link[n] = '\0';
	return !strcmp(link, "anon_inode:bpf-prog");
}

/*
 * Read every BPF program this process holds; a program read for the first
 * time at the start gets its values then as its base. Programs closed
 * since (an engine's uprobes after its process ended) keep their last values.
 */
static void read_progs(struct self_cost *c, int at_start)
{
	DIR *d = opendir("/proc/self/fd");
	struct dirent *de;

	if (!d)
		return;
	c->progs_over = 0;
	while ((de = readdir(d))) {
		struct bpf_prog_info info = {};
		uint32_t len = sizeof(info);
		struct prog_seen *p;
		int fd = atoi(de->d_name);

		if (de->d_name[0] == '.' || fd == dirfd(d) || !is_prog_fd(fd))
			continue;
		if (bpf_obj_get_info_by_fd(fd, &info, &len))
			continue;
		p = prog_slot(c, info.id);
		if (!p) {
			c->progs_over++;
			continue;
		}
		p->cnt = info.run_cnt;
		p->ns = info.run_time_ns;
		if (at_start) {
			p->base_cnt = info.run_cnt;
			p->base_ns = info.run_time_ns;
		}
	}
	closedir(d);
}

/*
 * Process tgid's user + system CPU, all its threads, ended ones too (ns),
 * and when it started (clock ticks after boot), from /proc/PID/stat
 * (proc(5): fields 14, 15 and 22). -ENOENT when it is gone.
 */
static int proc_cpu(uint32_t tgid, uint64_t *cpu_ns, uint64_t *start_ticks)
{
	unsigned long long utime, stime, start;
	char path[64], buf[1024], *p;
	long hz = sysconf(_SC_CLK_TCK);
	FILE *f;
	size_t n;

	snprintf(path, sizeof(path), "/proc/%u/stat", tgid);
	f = fopen(path, "r");
	if (!f)
		return -ENOENT;
	n = fread(buf, 1, sizeof(buf) - 1, f);
	fclose(f);
	buf[n] = '\0';
	p = strrchr(buf, ')');	/* the name may hold spaces and parentheses */
	/* after the name: fields 3 to 13 skipped, 14 and 15, 16 to 21 skipped, 22 */
	if (!p || hz <= 0 ||
	    sscanf(p + 1, " %*s %*s %*s %*s %*s %*s %*s %*s %*s %*s %*s %llu %llu "
		   "%*s %*s %*s %*s %*s %*s %llu", &utime, &stime, &start) != 3)
		return -ENOENT;
	*cpu_ns = (uint64_t)(utime + stime) * (1000000000ull / (uint64_t)hz);
	*start_ticks = start;
	return 0;
}

/* The table's entry of tgid, a new one (base 0) when it has none; NULL: full. */
static struct target_seen *target_slot(struct self_cost *c, uint32_t tgid, int *fresh)
{
	*fresh = 0;
	for (int k = 0; k < c->n_seen; k++)
		if (c->seen[k].tgid == tgid)
			return &c->seen[k];
	if (c->n_seen == MAX_TARGETS) {
		c->targets_over++;
		return NULL;
	}
	*fresh = 1;
	c->seen[c->n_seen] = (struct target_seen){ .tgid = tgid };
	return &c->seen[c->n_seen++];
}

/*
 * Read the CPU of every traced process. One read for the first time counts
 * from then on, or from its start when it started after the attach. A
 * process gone keeps its last reading, or the CPU its EXIT record carried.
 */
static void read_targets(struct self_cost *c)
{
	c->targets_over = 0;
	for (size_t i = 0; c->targets && i < c->targets->n; i++) {
		uint64_t ns, start_ticks;
		struct target_seen *t;
		int fresh;

		if (proc_cpu(c->targets->tgids[i], &ns, &start_ticks))
			continue;
		t = target_slot(c, c->targets->tgids[i], &fresh);
		if (!t)
			continue;
		if (fresh && start_ticks <= c->start_boot_ticks)
			t->base_ns = ns;	/* it ran before: only what it uses from now */
		if (ns > t->ns)
			t->ns = ns;
	}
}

void self_cost__poll(struct self_cost *c, uint64_t now_ns)
{
	if (!c || !c->start_ns || c->frozen || now_ns < c->next_poll_ns)
		return;
	c->next_poll_ns = now_ns + POLL_NS;
	read_targets(c);
}

void self_cost__exited(struct self_cost *c, uint32_t tgid, uint64_t cpu_ns)
{
	struct target_seen *t;
	int fresh;

	if (!c || !c->start_ns || c->frozen || !cpu_ns)
		return;
	/* one never read lived between two readings: all of it after the attach */
	t = target_slot(c, tgid, &fresh);
	if (t && cpu_ns > t->ns)
		t->ns = cpu_ns;
}

void self_cost__set_targets(struct self_cost *c, const struct target_set *targets)
{
	if (c)
		c->targets = targets;
}

void self_cost__start(struct self_cost *c, uint64_t now_ns)
{
	struct timespec boot;

	if (!c)
		return;
	c->start_ns = now_ns;
	c->start_cpu_ns = process_cpu_ns();
	if (!clock_gettime(CLOCK_BOOTTIME, &boot) && sysconf(_SC_CLK_TCK) > 0)
		c->start_boot_ticks = ((uint64_t)boot.tv_sec * 1000000000ull + boot.tv_nsec) /
				      (1000000000ull / (uint64_t)sysconf(_SC_CLK_TCK));
	c->stats_at_start = c->stats_fd >= 0 || stats_on();
	read_progs(c, 1);
	read_targets(c);
}

/* The counters as of now (wall and cpu given); returns how many. */
static int collect(struct self_cost *c, uint64_t wall_ns, uint64_t cpu_ns,
		   struct report_counter *out, int cap)
{
	uint64_t runs = 0, ns = 0, targets_ns = 0;
	int n = 0;

	if (cap < 3)
		return 0;	/* never: the registry has room for every source */
	read_targets(c);
	for (int i = 0; i < c->n_seen; i++)
		targets_ns += c->seen[i].ns - c->seen[i].base_ns;
	out[n++] = (struct report_counter){ "cost_wall_ns", wall_ns };
	out[n++] = (struct report_counter){ "cost_tracer_cpu_ns", cpu_ns };
	out[n++] = (struct report_counter){ "cost_targets_cpu_ns", targets_ns };
	if (n < cap)	/* loading and verifying the programs, before the attach */
		out[n++] = (struct report_counter){ "cost_setup_cpu_ns", c->start_cpu_ns };
	if (n < cap && c->stats_errno)
		out[n++] = (struct report_counter){ "cost_bpf_stats_errno",
						    (uint64_t)c->stats_errno };
	if (n < cap && c->targets_over)
		out[n++] = (struct report_counter){ "cost_targets_unread", c->targets_over };
	/* statistics off at the start or now: the programs' time is not known */
	if (!c->stats_at_start || (c->stats_fd < 0 && !stats_on()))
		return n;
	read_progs(c, 0);
	for (int i = 0; i < c->n_progs; i++) {
		runs += c->progs[i].cnt - c->progs[i].base_cnt;
		ns += c->progs[i].ns - c->progs[i].base_ns;
	}
	if (n < cap)
		out[n++] = (struct report_counter){ "cost_bpf_run_ns", ns };
	if (n < cap)
		out[n++] = (struct report_counter){ "cost_bpf_runs", runs };
	if (n < cap && c->progs_over)
		out[n++] = (struct report_counter){ "cost_bpf_progs_unread", c->progs_over };
	return n;
}

void self_cost__freeze(struct self_cost *c, uint64_t now_ns)
{
	if (!c || c->frozen || !c->start_ns)
		return;
	c->n_out = collect(c, now_ns - c->start_ns, process_cpu_ns() - c->start_cpu_ns, c->out,
			   (int)(sizeof(c->out) / sizeof(c->out[0])));
	c->frozen = 1;
}

int self_cost__counters(void *ctx, struct report_counter *out, int cap)
{
	struct self_cost *c = ctx;
	struct timespec ts;
	int n;

	if (!c || !c->start_ns)
		return 0;	/* not attached yet */
	if (c->frozen) {
		n = c->n_out < cap ? c->n_out : cap;
		memcpy(out, c->out, (size_t)n * sizeof(*out));
		return n;
	}
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return collect(c, (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec - c->start_ns,
		       process_cpu_ns() - c->start_cpu_ns, out, cap);
}

void self_cost__free(struct self_cost *c)
{
	if (!c)
		return;
	if (c->stats_fd >= 0)
		close(c->stats_fd);
	free(c);
}
