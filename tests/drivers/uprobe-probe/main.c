// SPDX-License-Identifier: GPL-2.0-only
/*
 * uprobe-probe: attach engine probe specs to one process and print, as one
 * JSON object on stdout when the process exits (or on SIGINT/SIGTERM, or
 * after --duration-s), per attachment the hits, returns and the durations
 * of entry/return pairs (paired per thread with a stack, so recursion
 * pairs correctly). A test driver for user/probe/engine_probe.c (tests/root/uprobe/).
 *
 *   uprobe-probe --pid PID [--pid PID]... [--profile NAME|PATH]
 *                [--probe PATH:SYMBOL=ROLE[:ARGSPEC]]...
 *                [--duration-s N]
 *
 * Prints "ready" on stderr once attached. Runs until every PID has ended.
 */
#include <errno.h>
#include <getopt.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <cjson/cJSON.h>
#include "user/probe/engine_probe.h"
#include "user/lib/log.h"
#include "user/probe/profile.h"

#define MAX_STACKS 256
#define MAX_DEPTH 128
#define MAX_DURS 100000

struct stack {
	uint32_t tid;
	uint32_t id;
	int depth;
	uint64_t ts[MAX_DEPTH];
};

struct state {
	struct stack stacks[MAX_STACKS];
	int n_stacks;
	uint64_t *durs[TTF_ENGINE_MAX_PROBES];
	int n_durs[TTF_ENGINE_MAX_PROBES];
	int64_t last_value[TTF_ENGINE_MAX_PROBES];	/* last entry value (step size) */
	uint64_t unpaired_returns;
};

static volatile sig_atomic_t stop;

static void on_signal(int sig)
{
	stop = 1;
}

static struct stack *stack_for(struct state *s, uint32_t tid, uint32_t id)
{
	for (int i = 0; i < s->n_stacks; i++)
		if (s->stacks[i].tid == tid && s->stacks[i].id == id)
			return &s->stacks[i];
	if (s->n_stacks == MAX_STACKS)
		return NULL;
	s->stacks[s->n_stacks] = (struct stack){ .tid = tid, .id = id };
	return &s->stacks[s->n_stacks++];
}

static int on_event(void *ctx, const struct ttf_engine_event *e)
{
	struct state *s = ctx;
	struct stack *st = stack_for(s, e->tid, e->probe_id);

	if (!st || e->probe_id >= TTF_ENGINE_MAX_PROBES)
		return 0;
	if (e->type != TTF_ENG_RETURN) {
		s->last_value[e->probe_id] = e->value;
		if (st->depth < MAX_DEPTH)
			st->ts[st->depth] = e->ts_ns;
		st->depth++;
		return 0;
	}
	if (st->depth == 0) {
		s->unpaired_returns++;
		return 0;
	}
	st->depth--;
	if (st->depth < MAX_DEPTH && s->n_durs[e->probe_id] < MAX_DURS) {
		if (!s->durs[e->probe_id])
			s->durs[e->probe_id] = calloc(MAX_DURS, sizeof(uint64_t));
		if (s->durs[e->probe_id])
			s->durs[e->probe_id][s->n_durs[e->probe_id]++] =
				e->ts_ns - st->ts[st->depth];
	}
	return 0;
}

static void print_json(struct engine_probe *ep, struct state *s)
{
	struct engine_probe_stat st[TTF_ENGINE_MAX_PROBES];
	int n = engine_probe__stats(ep, st, TTF_ENGINE_MAX_PROBES);
	cJSON *root = cJSON_CreateObject(), *arr = cJSON_AddArrayToObject(root, "attachments");
	cJSON *miss = cJSON_AddArrayToObject(root, "missing");
	const char *m;
	char *txt, held[256];

	for (int i = 0; i < n; i++) {
		cJSON *o = cJSON_CreateObject(), *d;

		cJSON_AddStringToObject(o, "probe", st[i].probe);
		cJSON_AddStringToObject(o, "symbol", st[i].symbol);
		cJSON_AddStringToObject(o, "path", st[i].path);
		cJSON_AddStringToObject(o, "role", ttf_role__name(st[i].role));
		cJSON_AddBoolToObject(o, "go", st[i].go);
		cJSON_AddNumberToObject(o, "n_ret_sites", st[i].n_ret_sites);
		cJSON_AddNumberToObject(o, "entry_offset", st[i].entry_offset);
		cJSON_AddStringToObject(o, "insn", st[i].insn);
		cJSON_AddNumberToObject(o, "insn_class", st[i].insn_class);
		cJSON_AddNumberToObject(o, "hits", (double)st[i].hits);
		cJSON_AddNumberToObject(o, "returns", (double)st[i].returns);
		cJSON_AddNumberToObject(o, "cost_us_per_hit", st[i].cost_us_per_hit);
		cJSON_AddNumberToObject(o, "last_value", (double)s->last_value[i]);
		d = cJSON_AddArrayToObject(o, "durations_ns");
		for (int k = 0; k < s->n_durs[i]; k++)
			cJSON_AddItemToArray(d, cJSON_CreateNumber((double)s->durs[i][k]));
		cJSON_AddItemToArray(arr, o);
	}
	for (int i = 0; (m = engine_probe__missing(ep, i)); i++)
		cJSON_AddItemToArray(miss, cJSON_CreateString(m));
	engine_probe__held_back(ep, held, sizeof(held));
	cJSON_AddStringToObject(root, "held_back", held);
	cJSON_AddNumberToObject(root, "drops", (double)engine_probe__drops(ep));
	cJSON_AddNumberToObject(root, "foreign", (double)engine_probe__foreign(ep));
	cJSON_AddNumberToObject(root, "unpaired_returns", (double)s->unpaired_returns);
	txt = cJSON_PrintUnformatted(root);
	if (txt)
		printf("%s\n", txt);
	free(txt);
	cJSON_Delete(root);
}

/* Gone, or a zombie nobody has reaped yet (kill(pid, 0) still succeeds then). */
static bool process_ended(int pid)
{
	char path[64], buf[256], *p;
	FILE *f;
	size_t n;

	snprintf(path, sizeof(path), "/proc/%d/stat", pid);
	f = fopen(path, "re");
	if (!f)
		return true;
	n = fread(buf, 1, sizeof(buf) - 1, f);
	fclose(f);
	buf[n] = '\0';
	p = strrchr(buf, ')');
	return !p || p[1] != ' ' || p[2] == 'Z' || p[2] == 'X';
}

static bool all_ended(const int *pids, int n)
{
	for (int i = 0; i < n; i++)
		if (!process_ended(pids[i]))
			return false;
	return true;
}

static int usage(void)
{
	fprintf(stderr, "usage: uprobe-probe --pid PID [--pid PID]... [--profile NAME|PATH] "
		"[--probe PATH:SYMBOL=ROLE[:ARGSPEC]]... [--duration-s N] [-v]\n");
	return 2;
}

int main(int argc, char **argv)
{
	static const struct option lopts[] = {
		{ "pid", required_argument, NULL, 'p' },
		{ "profile", required_argument, NULL, 'P' },
		{ "probe", required_argument, NULL, 'u' },
		{ "duration-s", required_argument, NULL, 'd' },
		{ "verbose", no_argument, NULL, 'v' },
		{},
	};
	struct engine_probe_opts opts = { .sz = sizeof(opts), .on_event = on_event };
	static struct engine_profile prof;
	struct engine_probe *ep = NULL;
	static struct state state;
	char err_msg[PATH_MAX + 256];
	double duration_s = 0;
	int pids[16], n_pids = 0, c, err, rc = 1;
	struct timespec t0, t;
	long last_rescan_s = 0;

	opts.ctx = &state;
	libbpf_set_print(ttf_libbpf_print);
	/* First pass: options that do not need the loaded object. */
	while ((c = getopt_long(argc, argv, "v", lopts, NULL)) != -1) {
		if (c == 'p' && n_pids < 16)
			pids[n_pids++] = atoi(optarg);
		else if (c == 'd')
			duration_s = atof(optarg);
		else if (c == 'v')
			ttf_verbosity++;
		else if (c != 'P' && c != 'u')
			return usage();
	}
	if (!n_pids)
		return usage();
	ep = engine_probe__new(&opts, &err);
	if (!ep) {
		ttf_error("run as root", "cannot load the engine probes: %s", strerror(-err));
		return 1;
	}
	optind = 1;
	while ((c = getopt_long(argc, argv, "v", lopts, NULL)) != -1) {
		struct probe_spec spec;

		if (c == 'P') {
			err = profile__load(optarg, &prof, err_msg, sizeof(err_msg));
			if (!err)
				err = engine_probe__add_profile(ep, &prof);
		} else if (c == 'u') {
			err = probe_spec__parse(optarg, &spec, err_msg, sizeof(err_msg));
			if (!err)
				err = engine_probe__add_spec(ep, &spec, NULL, 0);
		} else {
			continue;
		}
		if (err) {
			ttf_error(NULL, "%s", err_msg);
			goto cleanup;
		}
	}
	for (int i = 0; i < n_pids; i++) {
		err = engine_probe__attach_pid(ep, pids[i]);
		if (err < 0) {
			ttf_error(NULL, "attach to pid %d: %s", pids[i], strerror(-err));
			goto cleanup;
		}
	}
	signal(SIGINT, on_signal);
	signal(SIGTERM, on_signal);
	fprintf(stderr, "ready\n");
	clock_gettime(CLOCK_MONOTONIC, &t0);
	while (!stop) {
		engine_probe__poll(ep, 50);
		clock_gettime(CLOCK_MONOTONIC, &t);
		if (duration_s > 0 &&
		    t.tv_sec - t0.tv_sec + (t.tv_nsec - t0.tv_nsec) / 1e9 >= duration_s)
			break;
		if (all_ended(pids, n_pids))
			break;
		if (t.tv_sec != last_rescan_s) {
			last_rescan_s = t.tv_sec;
			engine_probe__rescan(ep, 0);
		}
	}
	engine_probe__poll(ep, 0);
	print_json(ep, &state);
	if (ttf_verbosity)
		engine_probe__print_summary(ep, stderr);
	rc = 0;
cleanup:
	engine_probe__destroy(ep);
	for (int i = 0; i < TTF_ENGINE_MAX_PROBES; i++)
		free(state.durs[i]);
	return rc;
}
