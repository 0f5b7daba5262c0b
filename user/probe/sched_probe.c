// SPDX-License-Identifier: GPL-2.0-only
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/utsname.h>
#include <unistd.h>
#include <bpf/bpf.h>
#include <bpf/btf.h>
#include <bpf/libbpf.h>
#include "user/probe/bpf_util.h"
#include "sched.skel.h"
#include "user/lib/log.h"
#include "user/probe/sched_flight.h"
#include "user/probe/sched_probe.h"
#include "user/probe/tp_check.h"

#define MAX_LINKS 3
#define DEF_FLIGHT_SPANS 8192

struct sched_probe {
	struct sched_bpf *skel;
	struct sched_flight *flight;
	struct ring_buffer *wake;	/* flight_wake: a CPU's recorder half unread */
	int ncpus;
	struct bpf_link *links[MAX_LINKS];
	int n_links;
	sched_event_cb on_event;
	void *ctx;
};

static const char *const counter_names[TTF_SCHED_CNT__MAX] = {
	[TTF_SCHED_CNT_OVERWRITTEN] = "sched_flight_overwritten",
	[TTF_SCHED_CNT_EVENTS] = "sched_events",
	[TTF_SCHED_CNT_SWITCH_GAPS] = "sched_switch_gaps",
	[TTF_SCHED_CNT_WAKE_MAP_FULL] = "sched_wake_map_full",
	[TTF_SCHED_CNT_SWITCHES] = "sched_switches",
};

const char *sched_probe__counter_name(int idx)
{
	return idx >= 0 && idx < TTF_SCHED_CNT__MAX ? counter_names[idx] : "?";
}

int sched_probe__counter_list(void *ctx, struct report_counter *c, int cap)
{
	uint64_t v[TTF_SCHED_CNT__MAX];
	int n = 0;

	sched_probe__counters(ctx, v);
	for (int i = 0; i < TTF_SCHED_CNT__MAX && n < cap; i++)
		c[n++] = (struct report_counter){ counter_names[i], v[i] };
	return n;
}

/*
 * One span as the events it stands for, oldest first: its wakeup and
 * switch-in when known (a wakeup while the thread ran may follow the
 * switch-in), then the switch-out. Returns the number written to ev[3].
 */
int sched_probe__expand(const struct ttf_sched_span *s, struct ttf_sched_event ev[3])
{
	struct ttf_sched_event wake = { s->wake_ns, s->tid, s->tgid, 0, s->cpu, TTF_SCHED_WAKEUP };
	struct ttf_sched_event in = { s->in_ns, s->tid, s->tgid, 0, s->cpu, TTF_SCHED_IN };
	int n = 0;

	if (s->type == TTF_SCHED_WAKEUP || s->type == TTF_SCHED_WAKEUP_NEW) {
		ev[0] = (struct ttf_sched_event){ s->ts_ns, s->tid, s->tgid, 0, s->cpu, s->type };
		return 1;
	}
	if (s->wake_ns && s->in_ns && s->wake_ns > s->in_ns) {
		ev[n++] = in;
		ev[n++] = wake;
	} else {
		if (s->wake_ns)
			ev[n++] = wake;
		if (s->in_ns)
			ev[n++] = in;
	}
	ev[n++] = (struct ttf_sched_event){ s->ts_ns, s->tid, s->tgid, s->state, s->cpu,
					    s->type };
	return n;
}

static int span_cb(void *ctx, const struct ttf_sched_span *s)
{
	struct sched_probe *sp = ctx;
	struct ttf_sched_event ev[3];
	int n, err;

	n = sched_probe__expand(s, ev);
	for (int i = 0; i < n; i++) {
		err = sp->on_event(sp->ctx, &ev[i]);
		if (err)
			return err;
	}
	return 0;
}

/* Has struct `type` in btf a member `name`? */
static bool has_member(const struct btf *btf, const char *type, const char *name)
{
	int id = btf__find_by_name_kind(btf, type, BTF_KIND_STRUCT);
	const struct btf_type *t = id > 0 ? btf__type_by_id(btf, id) : NULL;
	const struct btf_member *m = t ? btf_members(t) : NULL;

	for (int i = 0; t && i < btf_vlen(t); i++, m++)
		if (!strcmp(btf__name_by_offset(btf, m->name_off), name))
			return true;
	return false;
}

static bool kernel_at_least(int major, int minor)
{
	struct utsname u;
	int ma = 0, mi = 0;

	if (uname(&u) || sscanf(u.release, "%d.%d", &ma, &mi) != 2)
		return false;
	return ma > major || (ma == major && mi >= minor);
}

bool sched_probe__run_delay_usable(const struct btf *btf)
{
	const char *env = getenv("TTFTRACE_SCHED_WAKEUPS");

	if (env && *env && strcmp(env, "0"))
		return false;
	if (!btf || !has_member(btf, "task_struct", "sched_info") ||
	    !has_member(btf, "sched_info", "run_delay"))
		return false;
	/* before 5.14 run_delay moved only with schedstats or delay accounting on */
	return kernel_at_least(5, 14) || access("/proc/sys/kernel/sched_schedstats", F_OK) == 0;
}

/*
 * Where the kernel keeps each task's run-queue wait, sched_switch reads it
 * and sched_wakeup is not traced: 3 to 10 fewer program runs per streamed
 * token (bench/README.md).
 */
static int use_run_delay(struct sched_probe *sp, const struct btf *btf)
{
	if (!sched_probe__run_delay_usable(btf))
		return 0;
	sp->skel->rodata->targ_run_delay = true;
	bpf_program__set_autoload(sp->skel->progs.handle_wakeup, false);
	/* the map of wakeup times is not used: one entry */
	return bpf_map__set_max_entries(sp->skel->maps.wakes, 1);
}

/* bpf_jiffies64() in tracing programs: commit 72e2b2b66f9c, 5.9 (docs/kernel.md B1.17) */
static void use_jiffies(struct sched_probe *sp)
{
	sp->skel->rodata->targ_jiffies = kernel_at_least(5, 9);
}

/* The flight recorder's size: spans_per_cpu for each possible CPU, within its cap. */
static int size_flight(struct sched_probe *sp, uint32_t spans_per_cpu)
{
	uint32_t log2;
	int err;

	sp->ncpus = libbpf_num_possible_cpus();
	if (sp->ncpus <= 0)
		return sp->ncpus ? sp->ncpus : -EINVAL;
	log2 = sched_flight__log2(spans_per_cpu, sp->ncpus);
	sp->skel->rodata->targ_flight_log2 = log2;
	err = bpf_map__set_max_entries(sp->skel->maps.flight, (uint32_t)sp->ncpus << log2);
	return err ? err : bpf_map__set_max_entries(sp->skel->maps.flight_head,
						    sp->ncpus * TTF_SCHED_FLIGHT_HEAD_STRIDE);
}

/* A wakeup's word says nothing the recorder's heads do not: drained and dropped. */
static int on_wake(void *ctx, void *data, size_t len)
{
	return 0;
}

struct sched_probe *sched_probe__open_load(const struct sched_probe_opts *opts, int *err,
					   char *missing_tp, size_t missing_len)
{
	struct sched_probe *sp;

	if (missing_len)
		missing_tp[0] = '\0';
	if (!opts->on_event) {
		*err = -EINVAL;
		return NULL;
	}
	sp = calloc(1, sizeof(*sp));
	if (!sp) {
		*err = -ENOMEM;
		return NULL;
	}
	sp->on_event = opts->on_event;
	sp->ctx = opts->ctx;
	sp->skel = sched_bpf__open();
	if (!sp->skel) {
		*err = -errno;
		goto fail;
	}
	if (opts->vmlinux_btf) {
		/* sched_switch without prev_state (before 5.18, docs/kernel.md B1.6) */
		bool three = tp_check__nargs(opts->vmlinux_btf, "sched_switch") == 3;

		bpf_program__set_autoload(three ? sp->skel->progs.handle_switch :
					  sp->skel->progs.handle_switch_3, false);
		*err = tp_check__prune(sp->skel->obj, opts->vmlinux_btf, NULL, missing_tp,
				       missing_len);
		if (*err < 0)
			goto fail;
	} else {
		bpf_program__set_autoload(sp->skel->progs.handle_switch_3, false);
	}
	if (opts->tgid_map_fd > 0) {
		*err = bpf_map__reuse_fd(sp->skel->maps.traced_tgids, opts->tgid_map_fd);
		if (*err)
			goto fail;
	}
	*err = size_flight(sp, opts->flight_spans ? opts->flight_spans : DEF_FLIGHT_SPANS);
	if (*err)
		goto fail;
	*err = use_run_delay(sp, opts->vmlinux_btf);
	if (*err)
		goto fail;
	use_jiffies(sp);
	*err = sched_bpf__load(sp->skel);
	if (*err)
		goto fail;
	sp->flight = sched_flight__map(bpf_map__fd(sp->skel->maps.flight),
				       bpf_map__fd(sp->skel->maps.flight_head), sp->ncpus,
				       sp->skel->rodata->targ_flight_log2, err);
	if (!sp->flight)
		goto fail;
	sp->wake = ring_buffer__new(bpf_map__fd(sp->skel->maps.flight_wake), on_wake, NULL, NULL);
	if (!sp->wake) {
		*err = -errno;
		goto fail;
	}
	return sp;
fail:
	sched_probe__destroy(sp);
	return NULL;
}

int sched_probe__attach(struct sched_probe *sp)
{
	struct bpf_program *prog;
	int err;

	bpf_object__for_each_program(prog, sp->skel->obj) {
		struct bpf_link *link;

		if (!bpf_program__autoload(prog))
			continue;	/* not loaded: the other sched_switch, a missing tracepoint */
		link = bpf_program__attach(prog);
		if (!link) {
			err = -errno;
			ttf_warn("could not attach %s (%s)", bpf_program__name(prog),
				 strerror(-err));
			return err;
		}
		ttf_debug("attached %s", bpf_program__name(prog));
		if (sp->n_links < MAX_LINKS)
			sp->links[sp->n_links++] = link;
		else
			bpf_link__destroy(link);
	}
	return 0;
}

int sched_probe__trace_tgid(struct sched_probe *sp, uint32_t tgid)
{
	uint8_t one = 1;

	return bpf_map__update_elem(sp->skel->maps.traced_tgids, &tgid, sizeof(tgid), &one,
				    sizeof(one), BPF_ANY);
}

int sched_probe__poll(struct sched_probe *sp, int timeout_ms)
{
	int n;

	ring_buffer__consume(sp->wake);	/* re-arms the wakeup: read what asked for it */
	n = sched_flight__read(sp->flight, span_cb, sp);

	if (n == 0 && timeout_ms > 0) {	/* nothing wakes a reader: wait, then look again */
		usleep((useconds_t)timeout_ms * 1000);
		n = sched_flight__read(sp->flight, span_cb, sp);
	}
	return n;
}

void sched_probe__counters(struct sched_probe *sp, uint64_t *out)
{
	int ncpus = libbpf_num_possible_cpus();
	struct ttf_sched_chain *ch;
	uint32_t zero = 0;

	/* The counters map has no TTF_SCHED_CNT_SWITCHES slot in use: 0 there. */
	bpf_util__sum_percpu(sp->skel->maps.counters, TTF_SCHED_CNT__MAX, out);
	out[TTF_SCHED_CNT_EVENTS] = sched_flight__written(sp->flight);
	out[TTF_SCHED_CNT_OVERWRITTEN] = sched_flight__overwritten(sp->flight);
	if (ncpus <= 0 || !(ch = calloc(ncpus, sizeof(*ch))))
		return;
	if (!bpf_map__lookup_elem(sp->skel->maps.chain, &zero, sizeof(zero), ch,
				  ncpus * sizeof(*ch), 0))
		for (int c = 0; c < ncpus; c++)
			out[TTF_SCHED_CNT_SWITCHES] += ch[c].switches;
	free(ch);
}

int sched_probe__prog_stats(struct sched_probe *sp, const char **names, uint64_t *run_cnt,
			    uint64_t *run_time_ns, int max)
{
	return bpf_util__prog_stats(sp->skel->obj, names, run_cnt, run_time_ns, max);
}

void sched_probe__destroy(struct sched_probe *sp)
{
	if (!sp)
		return;
	bpf_util__destroy_links(sp->links, sp->n_links);
	ring_buffer__free(sp->wake);
	sched_flight__free(sp->flight);
	sched_bpf__destroy(sp->skel);
	free(sp);
}

/* ---- as a probe source (user/probe/source.h) ---- */

static int src_poll(void *ctx, int timeout_ms)
{
	return sched_probe__poll(ctx, timeout_ms);
}

static int src_wait_fd(void *ctx)
{
	struct sched_probe *sp = ctx;

	return ring_buffer__epoll_fd(sp->wake);
}

void sched_probe__source(struct sched_probe *sp, struct ttf_probe_source *out)
{
	*out = (struct ttf_probe_source){ .name = "sched", .ctx = sp, .poll = src_poll,
					  .wait_fd = src_wait_fd,
					  .counters = sched_probe__counter_list };
}
