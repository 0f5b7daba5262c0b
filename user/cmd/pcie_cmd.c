// SPDX-License-Identifier: GPL-2.0-only
/*
 * `ttftrace pcie`: audit each NVIDIA GPU's PCIe path; judge it only under
 * load (docs/cases.md #24).
 */
#include <argp.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <cjson/cJSON.h>

#include "user/cmd/subcmd.h"
#include "user/hw/copybw.h"
#include "user/hw/pcie.h"
#include "user/lib/exit.h"

#define PCIE_LOAD_RAMP_MS	300

static const char pcie_doc[] =
"Audit the PCIe path of every NVIDIA GPU: current and maximum speed and width of each "
"link up to the root port, the narrowest link, theoretical bandwidth per direction, NUMA "
"locality. A link is judged only from a reading taken while the GPU is busy: idle GPUs "
"downclock their link (Gen1 on a Gen4 slot is normal power saving)."
"\v"
"EXAMPLES:\n"
SUBCMD_EXAMPLE("ttftrace pcie",
	       "Topology; links are judged only if busy")
SUBCMD_EXAMPLE("ttftrace pcie --load copy",
	       "Load each GPU with copies, judge its links")
SUBCMD_EXAMPLE("ttftrace pcie --busy -p $(pidof llama-server)",
	       "Judge while the server is serving, and its NUMA placement")
SUBCMD_EXAMPLE("ttftrace pcie --busy -j || echo bad",
	       "Gate a deployment on exit status 1")
"\n"
"EXIT STATUS:\n"
"  0   ok, or not judged (idle reading)\n"
"  1   a link is downtrained under load\n"
"  2   bad command line\n"
"  4   the sysfs PCI tree is unreadable\n"
"  5   no NVIDIA GPU (or no --gpu BDF), or no process --pid\n"
"  9   internal error\n"
"  12  --load copy: the CUDA runtime or driver cannot be loaded";

enum { OPT_PROC = 0x100, OPT_BUSY, OPT_PSTATE, OPT_LOAD };

static const struct argp_option pcie_options[] = {
	{ "sysfs-root", 'r', "DIR", 0, "sysfs root (default /sys)", 0 },
	{ "proc-root", OPT_PROC, "DIR", 0, "procfs root for -p (default /proc)", 0 },
	{ "gpu", 'D', "BDF", 0, "Audit only this GPU (e.g. 0000:3b:00.0)", 0 },
	{ "pid", 'p', "PID", 0, "Check whether this server's threads run on the GPU's local CPUs", 0 },
	{ "busy", OPT_BUSY, NULL, 0, "The GPU is busy now (e.g. the traced server is serving)", 0 },
	{ "pstate", OPT_PSTATE, "Pn", 0, "The GPU's performance state now (nvidia-smi); P0-P2 = busy", 0 },
	{ "load", OPT_LOAD, "copy", 0, "Hold the link busy with pinned H2D copies while reading (GPU)", 0 },
	{ "samples", 'n', "N", 0, "Readings merged per link, best of N (default 5)", 0 },
	{ "interval-ms", 'i', "MS", 0, "Time between readings (default 20)", 0 },
	{ "json", 'j', NULL, 0, "JSON output", 0 },
	{},
};

struct pcie_args {
	const char *sysfs_root;
	const char *proc_root;
	char gpu[PCIE_BDF_LEN];
	int pid;
	bool busy;
	bool pstate_idle;	/* --pstate P3..P15 */
	const char *busy_source;
	bool load_copy;
	int samples;
	int interval_ms;
	bool json;
};

static error_t pcie_parse_opt(int key, char *arg, struct argp_state *state)
{
	struct pcie_args *a = state->input;
	int pst;

	switch (key) {
	case 'r':
		a->sysfs_root = arg;
		break;
	case OPT_PROC:
		a->proc_root = arg;
		break;
	case 'D':
		if (pcie__normalize_bdf(arg, a->gpu, sizeof(a->gpu)))
			return subcmd__bad("bad --gpu '%s' (e.g. 0000:3b:00.0)", arg);
		break;
	case 'p':
		if (subcmd__parse_int(arg, 1, 1 << 30, &a->pid))
			return subcmd__bad("bad --pid '%s'", arg);
		break;
	case OPT_BUSY:
		a->busy = true;
		a->busy_source = "--busy";
		break;
	case OPT_PSTATE:
		if ((arg[0] != 'P' && arg[0] != 'p') || subcmd__parse_int(arg + 1, 0, 15, &pst))
			return subcmd__bad("bad --pstate '%s' (P0 .. P15)", arg);
		/* P0/P2 while working, P5/P8 idle: docs/cases.md #24 (nvtop#6 mapping) */
		if (pst <= 2) {
			a->busy = true;
			a->busy_source = "--pstate";
		} else {
			a->pstate_idle = true;
		}
		break;
	case OPT_LOAD:
		if (strcmp(arg, "copy"))
			return subcmd__bad("bad --load '%s' (only 'copy')", arg);
		a->load_copy = true;
		break;
	case 'n':
		if (subcmd__parse_int(arg, 1, 1000, &a->samples))
			return subcmd__bad("bad --samples '%s' (1..1000)", arg);
		break;
	case 'i':
		if (subcmd__parse_int(arg, 0, 10000, &a->interval_ms))
			return subcmd__bad("bad --interval-ms '%s' (0..10000)", arg);
		break;
	case 'j':
		a->json = true;
		break;
	case ARGP_KEY_ARG:
		return subcmd__bad("unexpected argument '%s'", arg);
	case ARGP_KEY_END:
		if (a->pstate_idle && (a->busy || a->load_copy))
			return subcmd__bad("%s contradicts an idle --pstate (P3..P15)",
					   a->load_copy ? "--load copy" : "--busy/--pstate P0-P2");
		break;
	default:
		return ARGP_ERR_UNKNOWN;
	}
	return 0;
}

/* Returns -1 to continue, or an exit code (help, usage error). */
static int pcie_parse_args(int argc, char **argv, struct pcie_args *a)
{
	static const struct argp argp = { pcie_options, pcie_parse_opt, NULL, pcie_doc,
					  NULL, NULL, NULL };
	int rc;

	*a = (struct pcie_args){ .sysfs_root = "/sys", .proc_root = "/proc", .samples = 5,
				 .interval_ms = 20, .busy_source = "none" };
	rc = subcmd__parse(&argp, "ttftrace pcie", argc, argv, a);
	return rc < 0 ? TTF_EXIT_OK : rc ? rc : -1;
}

static void pcie_sleep_ms(int ms)
{
	struct timespec ts = { .tv_sec = ms / 1000, .tv_nsec = (ms % 1000) * 1000000L };

	while (nanosleep(&ts, &ts) && errno == EINTR)
		;
}

/* "Gen4 x16"; "?" parts for unknown values. */
static const char *pcie_fmt_link(unsigned int mts, unsigned int width, char *buf, size_t len)
{
	int gen = pcie__gen_from_mts(mts);
	char w[16] = "x?";

	if (width)
		snprintf(w, sizeof(w), "x%u", width);
	if (gen)
		snprintf(buf, len, "Gen%d %s", gen, w);
	else if (mts)
		snprintf(buf, len, "%.1fGT/s %s", mts / 1000.0, w);
	else
		snprintf(buf, len, "Gen? %s", w);
	return buf;
}

struct pcie_result {
	enum pcie_verdict verdict;
	int worst;
	double load_gbps;	/* < 0 when no load ran */
	bool loaded;
	struct pcie_locality loc;
	int loc_err;		/* 0, or negative errno; 1 = not asked */
};

static cJSON *pcie_json_link(unsigned int mts, unsigned int width)
{
	cJSON *o = cJSON_CreateObject();

	cJSON_AddNumberToObject(o, "gen", pcie__gen_from_mts(mts));
	cJSON_AddNumberToObject(o, "speed_mts", mts);
	cJSON_AddNumberToObject(o, "width", width);
	cJSON_AddNumberToObject(o, "gbps", pcie__link_gbps(mts, width));
	return o;
}

static const char *const pcie_verdict_names[] = {
	[PCIE_OK] = "ok",
	[PCIE_IDLE_NOT_JUDGED] = "idle_not_judged",
	[PCIE_DOWNTRAINED] = "downtrained",
	[PCIE_NO_LINK_INFO] = "no_link_info",
};

/* The one-line verdict, shared by text and JSON output. */
static void pcie_message(const struct pcie_gpu *g, const struct pcie_result *r, bool busy,
			 char *buf, size_t len)
{
	int cap = pcie__bottleneck(g, true), cur = pcie__bottleneck(g, false);
	char a[32], b[32];

	switch (r->verdict) {
	case PCIE_DOWNTRAINED: {
		const struct pcie_link *l = &g->links[r->worst];

		snprintf(buf, len, "downtrained: %s of %s at %s (link %s -> %s)",
			 pcie_fmt_link(l->cur_speed_mts, l->cur_width, a, sizeof(a)),
			 pcie_fmt_link(l->cap_speed_mts, l->cap_width, b, sizeof(b)),
			 g->path[l->child].bdf, l->parent >= 0 ? g->path[l->parent].bdf : "?",
			 g->path[l->child].bdf);
		break;
	}
	case PCIE_IDLE_NOT_JUDGED:
		snprintf(buf, len, "idle reading: link state not judged (now %s of %s; idle GPUs "
			 "downclock by design)",
			 pcie_fmt_link(g->links[cur].cur_speed_mts, g->links[cur].cur_width, a,
				       sizeof(a)),
			 pcie_fmt_link(g->links[cap].cap_speed_mts, g->links[cap].cap_width, b,
				       sizeof(b)));
		break;
	case PCIE_OK:
		snprintf(buf, len, "ok: path at capability, %s, %.2f GB/s per direction%s",
			 pcie_fmt_link(g->links[cap].cap_speed_mts, g->links[cap].cap_width, a,
				       sizeof(a)),
			 pcie__link_gbps(g->links[cap].cap_speed_mts, g->links[cap].cap_width),
			 busy ? "" : " (idle reading, already at capability)");
		break;
	case PCIE_NO_LINK_INFO:
		snprintf(buf, len, "no PCIe link attributes in sysfs (e.g. a VM): not judged");
		break;
	}
}

static cJSON *pcie_json_gpu(const struct pcie_gpu *g, const struct pcie_result *r,
			    const char *msg)
{
	cJSON *o = cJSON_CreateObject(), *arr, *e;
	int cap = pcie__bottleneck(g, true), cur = pcie__bottleneck(g, false), i;
	char cls[16];

	snprintf(cls, sizeof(cls), "0x%06x", g->class_code);
	cJSON_AddStringToObject(o, "bdf", g->bdf);
	cJSON_AddNumberToObject(o, "device_id", g->device_id);
	cJSON_AddStringToObject(o, "class", cls);
	cJSON_AddNumberToObject(o, "numa_node", g->numa_node);
	cJSON_AddStringToObject(o, "local_cpus", g->local_cpulist);
	arr = cJSON_AddArrayToObject(o, "path");
	for (i = 0; i < g->nr_path; i++) {
		const struct pcie_port *p = &g->path[i];

		e = cJSON_CreateObject();
		cJSON_AddStringToObject(e, "bdf", p->bdf);
		cJSON_AddItemToObject(e, "current", pcie_json_link(p->cur_speed_mts, p->cur_width));
		cJSON_AddItemToObject(e, "max", pcie_json_link(p->max_speed_mts, p->max_width));
		cJSON_AddItemToArray(arr, e);
	}
	arr = cJSON_AddArrayToObject(o, "links");
	for (i = g->nr_links - 1; i >= 0; i--) {
		const struct pcie_link *l = &g->links[i];

		e = cJSON_CreateObject();
		if (l->parent >= 0)
			cJSON_AddStringToObject(e, "parent", g->path[l->parent].bdf);
		else
			cJSON_AddNullToObject(e, "parent");
		cJSON_AddStringToObject(e, "child", g->path[l->child].bdf);
		cJSON_AddItemToObject(e, "current", pcie_json_link(l->cur_speed_mts, l->cur_width));
		cJSON_AddItemToObject(e, "capable", pcie_json_link(l->cap_speed_mts, l->cap_width));
		cJSON_AddBoolToObject(e, "below_capability", l->cur_speed_mts && l->cur_width &&
				      (l->cur_speed_mts < l->cap_speed_mts ||
				       l->cur_width < l->cap_width));
		cJSON_AddItemToArray(arr, e);
	}
	cJSON_AddNumberToObject(o, "capable_gbps", cap < 0 ? 0.0 :
				pcie__link_gbps(g->links[cap].cap_speed_mts,
						g->links[cap].cap_width));
	cJSON_AddNumberToObject(o, "current_gbps", cur < 0 ? 0.0 :
				pcie__link_gbps(g->links[cur].cur_speed_mts,
						g->links[cur].cur_width));
	cJSON_AddStringToObject(o, "verdict", pcie_verdict_names[r->verdict]);
	if (r->verdict == PCIE_DOWNTRAINED)
		cJSON_AddStringToObject(o, "hop", g->path[g->links[r->worst].child].bdf);
	cJSON_AddStringToObject(o, "message", msg);
	if (r->loaded)
		cJSON_AddNumberToObject(o, "load_h2d_gbps", r->load_gbps);
	if (!r->loc_err) {
		e = cJSON_AddObjectToObject(o, "threads");
		cJSON_AddNumberToObject(e, "total", r->loc.nr_threads);
		cJSON_AddNumberToObject(e, "allowed_local_only", r->loc.allowed_local);
		cJSON_AddNumberToObject(e, "last_ran_local", r->loc.last_local);
	}
	return o;
}

static void pcie_print_gpu(const struct pcie_gpu *g, const struct pcie_result *r,
			   const struct pcie_args *a, bool busy, const char *msg, int pid)
{
	char c[32], mp[32], mc[32];
	int i;

	printf("GPU %s (10de:%04x, %s)  NUMA node %d, local CPUs %s\n", g->bdf, g->device_id,
	       (g->class_code >> 8) == 0x0302 ? "3D controller" : "VGA controller",
	       g->numa_node, g->local_cpulist[0] ? g->local_cpulist : "unknown");
	printf("  reading: %s (%s), best of %d sample(s) %d ms apart\n", busy ? "busy" : "idle",
	       busy ? (r->loaded ? "--load copy" : a->busy_source) : "no load known",
	       a->samples, a->interval_ms);
	printf("  %-12s  %-12s  %-8s  %-8s  %-8s  %8s  %8s\n", "PARENT", "CHILD", "CURRENT",
	       "MAX(P)", "MAX(C)", "GB/s NOW", "GB/s CAP");
	for (i = g->nr_links - 1; i >= 0; i--) {
		const struct pcie_link *l = &g->links[i];
		const struct pcie_port *pa = l->parent >= 0 ? &g->path[l->parent] : NULL;
		const struct pcie_port *ch = &g->path[l->child];
		bool below = l->cur_speed_mts && l->cur_width &&
			     (l->cur_speed_mts < l->cap_speed_mts || l->cur_width < l->cap_width);

		printf("  %-12s  %-12s  %-8s  %-8s  %-8s  %8.2f  %8.2f%s\n", pa ? pa->bdf : "-",
		       ch->bdf, pcie_fmt_link(l->cur_speed_mts, l->cur_width, c, sizeof(c)),
		       pa ? pcie_fmt_link(pa->max_speed_mts, pa->max_width, mp, sizeof(mp)) : "-",
		       pcie_fmt_link(ch->max_speed_mts, ch->max_width, mc, sizeof(mc)),
		       pcie__link_gbps(l->cur_speed_mts, l->cur_width),
		       pcie__link_gbps(l->cap_speed_mts, l->cap_width),
		       below ? (busy ? "  DOWN" : "  (idle)") : "");
	}
	if (r->loaded)
		printf("  pinned H2D load achieved %.2f GB/s while reading\n", r->load_gbps);
	if (!r->loc_err)
		printf("  PID %d: %d threads, %d allowed only on local CPUs, %d last ran on one\n",
		       pid, r->loc.nr_threads, r->loc.allowed_local, r->loc.last_local);
	printf("  %s\n", msg);
}

/* Find the CUDA device whose PCI address is bdf; -1 if none. */
static int pcie_cuda_dev(struct copybw_cuda *cu, const char *bdf)
{
	char id[PCIE_BDF_LEN], norm[PCIE_BDF_LEN];
	int i;

	for (i = 0; i < copybw__device_count(cu); i++)
		if (!copybw__device_bdf(cu, i, id, sizeof(id)) &&
		    !pcie__normalize_bdf(id, norm, sizeof(norm)) && !strcmp(norm, bdf))
			return i;
	return -1;
}

static void pcie_sample(const struct pcie_args *a, struct pcie_gpu *g)
{
	int s;

	for (s = 1; s < a->samples; s++) {
		pcie_sleep_ms(a->interval_ms);
		pcie__sample_best(a->sysfs_root, g);
	}
}

/*
 * The GPUs to audit into gpus[] (--gpu: that one), *n of them. Returns -1 to
 * go on, else an exit code (said on stderr).
 */
static int pcie_find(const struct pcie_args *a, struct pcie_gpu *gpus, int *n)
{
	if (a->gpu[0]) {
		*n = pcie__read_gpu(a->sysfs_root, a->gpu, &gpus[0]);
		if (*n == -ENOENT) {
			fprintf(stderr, "Error: no PCI device %s under %s/bus/pci/devices\n"
				"HINT: list the GPUs' addresses with `lspci -D -d 10de:` or "
				"`nvidia-smi --query-gpu=pci.bus_id --format=csv`\n", a->gpu,
				a->sysfs_root);
			return TTF_EXIT_NO_TARGET;
		}
		*n = *n ? *n : 1;
	} else {
		*n = pcie__find_gpus(a->sysfs_root, gpus, PCIE_MAX_GPUS);
	}
	if (*n < 0) {
		fprintf(stderr, "Error: cannot read %s/bus/pci/devices: %s\n", a->sysfs_root,
			strerror(-*n));
		fprintf(stderr, "HINT: --sysfs-root must name a sysfs tree (default /sys)\n");
		return TTF_EXIT_KERNEL;
	}
	if (!*n) {
		fprintf(stderr, "Error: no NVIDIA GPU (vendor 0x10de, class 0x0300/0x0302) under "
			"%s/bus/pci/devices\n", a->sysfs_root);
		fprintf(stderr, "HINT: pcie audits NVIDIA GPUs' links; `lspci -d 10de:` lists what this "
			"host has\n");
		return TTF_EXIT_NO_TARGET;
	}
	return -1;
}

/* --load copy: the CUDA runtime into *cu. Returns -1 to go on, else an exit code. */
static int pcie_open_load(struct copybw_cuda **cu)
{
	const char *why = "";
	int err = copybw__open(NULL, cu, &why);

	if (!err)
		return -1;
	if (err == -ENOMEM) {
		fprintf(stderr, "Error: out of memory\n");
		return TTF_EXIT_INTERNAL;
	}
	/* sysfs shows the GPU: a CUDA runtime that sees none cannot use its driver */
	fprintf(stderr, "Error: no CUDA device for --load copy: %s\n", why);
	fprintf(stderr, "HINT: without a GPU runtime, read the link with --busy while "
			"the server is serving\n");
	return TTF_EXIT_NO_CUDA;
}

/*
 * Read g's links (under the copy load when cu can load it), judge them and
 * look at --pid's threads. Returns TTF_EXIT_OK, TTF_EXIT_FAULT (downtrained)
 * or TTF_EXIT_NO_TARGET (no such process; said on stderr).
 */
static int pcie_audit_gpu(const struct pcie_args *a, struct copybw_cuda *cu, struct pcie_gpu *g,
			  struct pcie_result *r)
{
	struct copybw_load *load = NULL;
	struct pcie_cpuset local;
	int dev;

	r->load_gbps = -1.0;
	r->loc_err = 1;
	if (cu && (dev = pcie_cuda_dev(cu, g->bdf)) >= 0 && !copybw__load_start(cu, dev, &load)) {
		pcie_sleep_ms(PCIE_LOAD_RAMP_MS);
		pcie__read_gpu(a->sysfs_root, g->bdf, g);	/* drop idle readings */
		pcie_sample(a, g);
		r->loaded = !copybw__load_stop(load, &r->load_gbps);
	} else {
		pcie_sample(a, g);
	}
	r->verdict = pcie__judge(g, a->busy || r->loaded, &r->worst);
	if (a->pid && !pcie__parse_cpulist(g->local_cpulist, &local) && g->local_cpulist[0])
		r->loc_err = pcie__thread_locality(a->proc_root, a->pid, &local, &r->loc);
	if (r->loc_err == -ESRCH) {
		fprintf(stderr, "Error: no process %d under %s\nHINT: check the PID with "
			"`ps -p PID`\n", a->pid, a->proc_root);
		return TTF_EXIT_NO_TARGET;
	}
	return r->verdict == PCIE_DOWNTRAINED ? TTF_EXIT_FAULT : TTF_EXIT_OK;
}

/* Every GPU's audit, as text or (-j) one JSON document that holds rc. */
static void pcie_print(const struct pcie_args *a, const struct pcie_gpu *gpus,
		       const struct pcie_result *res, int n, int rc)
{
	cJSON *root = NULL, *arr = NULL;
	char msg[256];

	if (a->json) {
		root = cJSON_CreateObject();
		cJSON_AddStringToObject(root, "busy_source", a->busy_source);
		cJSON_AddNumberToObject(root, "samples", a->samples);
		arr = cJSON_AddArrayToObject(root, "gpus");
	}
	for (int i = 0; i < n; i++) {
		bool busy = a->busy || res[i].loaded;

		pcie_message(&gpus[i], &res[i], busy, msg, sizeof(msg));
		if (arr)
			cJSON_AddItemToArray(arr, pcie_json_gpu(&gpus[i], &res[i], msg));
		else
			pcie_print_gpu(&gpus[i], &res[i], a, busy, msg, a->pid);
		if (!arr && res[i].verdict == PCIE_IDLE_NOT_JUDGED)
			printf("  HINT: rerun with --load copy, or with --busy while the server is "
			       "serving\n");
	}
	if (root) {
		char *s;

		cJSON_AddNumberToObject(root, "exit_code", rc);
		s = cJSON_Print(root);
		if (s)
			puts(s);
		free(s);
	}
	cJSON_Delete(root);
}

int pcie_main(int argc, char **argv)
{
	struct pcie_gpu *gpus = NULL;
	struct pcie_result *res = NULL;
	struct copybw_cuda *cu = NULL;
	struct pcie_args a;
	int rc, n, i, gpu_rc = TTF_EXIT_OK;

	rc = pcie_parse_args(argc, argv, &a);
	if (rc >= 0)
		return rc;
	gpus = calloc(PCIE_MAX_GPUS, sizeof(*gpus));
	res = calloc(PCIE_MAX_GPUS, sizeof(*res));
	if (!gpus || !res) {
		fprintf(stderr, "Error: out of memory\n");
		rc = TTF_EXIT_INTERNAL;
		goto cleanup;
	}
	rc = pcie_find(&a, gpus, &n);
	if (rc < 0 && a.load_copy)
		rc = pcie_open_load(&cu);
	if (rc >= 0)
		goto cleanup;
	rc = TTF_EXIT_OK;
	for (i = 0; i < n && gpu_rc != TTF_EXIT_NO_TARGET; i++) {
		gpu_rc = pcie_audit_gpu(&a, cu, &gpus[i], &res[i]);
		if (gpu_rc != TTF_EXIT_OK)
			rc = gpu_rc;
	}
	if (rc != TTF_EXIT_NO_TARGET)
		pcie_print(&a, gpus, res, n, rc);
cleanup:
	if (cu)
		copybw__close(cu);
	free(gpus);
	free(res);
	return rc;
}
