// SPDX-License-Identifier: GPL-2.0-only
/* `ttftrace copybw`: H2D/D2H copy bandwidth, pinned and pageable, against the PCIe link. */
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

static const char copybw_doc[] =
"Measure host-to-device and device-to-host copy bandwidth from pinned and pageable "
"memory, each as a share of the GPU's theoretical PCIe bandwidth per direction."
"\v"
"Pageable copies are staged through a driver bounce buffer: they show what a server "
"copying from pageable memory gets, never how fast the link is. Judge the link by pinned "
"copies of a few MiB or more.\n"
"\n"
"EXAMPLES:\n"
SUBCMD_EXAMPLE("ttftrace copybw",
	       "All sizes, directions and memories")
SUBCMD_EXAMPLE("ttftrace copybw -d 1 -m pinned",
	       "Pinned memory only, CUDA device 1")
SUBCMD_EXAMPLE("ttftrace copybw -s 16M,256M -n 20 -j",
	       "Two sizes, 20 copies each, JSON")
"\n"
"EXIT STATUS:\n"
"  0   ok\n"
"  2   bad command line\n"
"  5   no NVIDIA GPU, or no CUDA device -d N\n"
"  9   internal error (out of host memory)\n"
"  12  the CUDA runtime or driver cannot be loaded\n"
"  13  a CUDA call failed during the test";

enum { OPT_RAMP = 0x100, OPT_DIR, OPT_CUDART };

static const struct argp_option copybw_options[] = {
	{ "device", 'd', "N", 0, "CUDA device index (default 0)", 0 },
	{ "sizes", 's', "LIST", 0, "Comma-separated sizes, suffix K/M/G = KiB/MiB/GiB "
	  "(default 64K,256K,1M,4M,16M,64M,256M)", 0 },
	{ "iters", 'n', "N", 0, "Timed copies per size, direction and memory (default 10)", 0 },
	{ "warmup", 'w', "N", 0, "Untimed copies before each timing (default 3)", 0 },
	{ "ramp-ms", OPT_RAMP, "MS", 0, "Pinned H2D load before the first measurement, so that "
	  "an idle link has ramped up (default 300)", 0 },
	{ "memory", 'm', "KIND", 0, "pinned, pageable or both (default both)", 0 },
	{ "dir", OPT_DIR, "DIR", 0, "h2d, d2h or both (default both)", 0 },
	{ "sysfs-root", 'r', "DIR", 0, "sysfs to read the link from (default /sys)", 0 },
	{ "cudart", OPT_CUDART, "PATH", 0, "CUDA runtime library to dlopen (default: search; "
	  "env TTF_CUDART)", 0 },
	{ "json", 'j', NULL, 0, "JSON output", 0 },
	{},
};

struct copybw_args {
	int device;
	size_t sizes[COPYBW_MAX_SIZES];
	int nr_sizes;
	int iters;
	int warmup;
	int ramp_ms;
	bool pinned, pageable, h2d, d2h;
	const char *sysfs_root;
	const char *cudart;
	bool json;
};

static error_t copybw_parse_opt(int key, char *arg, struct argp_state *state)
{
	struct copybw_args *a = state->input;

	switch (key) {
	case 'd':
		if (subcmd__parse_int(arg, 0, 1023, &a->device))
			return subcmd__bad("bad --device '%s' (a CUDA index)", arg);
		break;
	case 's':
		a->nr_sizes = copybw__parse_sizes(arg, a->sizes, COPYBW_MAX_SIZES);
		if (a->nr_sizes < 0)
			return subcmd__bad("bad --sizes '%s' (e.g. 64K,1M,256M; 1 B .. 4 GiB, "
					   "at most 32)", arg);
		break;
	case 'n':
		if (subcmd__parse_int(arg, 1, 100000, &a->iters))
			return subcmd__bad("bad --iters '%s' (1..100000)", arg);
		break;
	case 'w':
		if (subcmd__parse_int(arg, 0, 100000, &a->warmup))
			return subcmd__bad("bad --warmup '%s' (0..100000)", arg);
		break;
	case OPT_RAMP:
		if (subcmd__parse_int(arg, 0, 60000, &a->ramp_ms))
			return subcmd__bad("bad --ramp-ms '%s' (0..60000)", arg);
		break;
	case 'm':
		if (!strcmp(arg, "both"))
			a->pinned = a->pageable = true;
		else if (!strcmp(arg, "pinned") || !strcmp(arg, "pageable"))
			a->pinned = !(a->pageable = !strcmp(arg, "pageable"));
		else
			return subcmd__bad("bad --memory '%s' (pinned, pageable, both)", arg);
		break;
	case OPT_DIR:
		if (!strcmp(arg, "both"))
			a->h2d = a->d2h = true;
		else if (!strcmp(arg, "h2d") || !strcmp(arg, "d2h"))
			a->h2d = !(a->d2h = !strcmp(arg, "d2h"));
		else
			return subcmd__bad("bad --dir '%s' (h2d, d2h, both)", arg);
		break;
	case 'r':
		a->sysfs_root = arg;
		break;
	case OPT_CUDART:
		a->cudart = arg;
		break;
	case 'j':
		a->json = true;
		break;
	case ARGP_KEY_ARG:
		return subcmd__bad("unexpected argument '%s'", arg);
	default:
		return ARGP_ERR_UNKNOWN;
	}
	return 0;
}

/* Returns -1 to continue, or an exit code (help, usage error). */
static int copybw_parse_args(int argc, char **argv, struct copybw_args *a)
{
	static const struct argp argp = { copybw_options, copybw_parse_opt, NULL, copybw_doc,
					  NULL, NULL, NULL };
	int rc;

	*a = (struct copybw_args){ .iters = 10, .warmup = 3, .ramp_ms = 300, .pinned = true,
				   .pageable = true, .h2d = true, .d2h = true };
	a->nr_sizes = copybw__parse_sizes("64K,256K,1M,4M,16M,64M,256M", a->sizes,
					  COPYBW_MAX_SIZES);
	rc = subcmd__parse(&argp, "ttftrace copybw", argc, argv, a);
	return rc < 0 ? TTF_EXIT_OK : rc ? rc : -1;
}

static void copybw_sleep_ms(int ms)
{
	struct timespec ts = { .tv_sec = ms / 1000, .tv_nsec = (ms % 1000) * 1000000L };

	while (nanosleep(&ts, &ts) && errno == EINTR)
		;
}

/* A run: the options, the CUDA runtime and the link of the device measured. */
struct copybw_run {
	struct copybw_args a;
	struct copybw_cuda *cu;
	char bdf[PCIE_BDF_LEN];
	double link_gbps;	/* theoretical, per direction; <= 0: unknown */
	cJSON *root, *results;	/* --json: the document, and its results array */
};

/* The CUDA runtime and the device. Returns -1 to go on, else an exit code (said on stderr). */
static int copybw_open(struct copybw_run *r)
{
	const char *why = "";
	int err = copybw__open(r->a.cudart, &r->cu, &why);

	if (err == -ENOMEM) {
		fprintf(stderr, "Error: out of memory\n");
		return TTF_EXIT_INTERNAL;
	}
	if (err) {
		if (err == -ENODEV)
			fprintf(stderr, "Error: no CUDA device: %s\n", why);
		else
			fprintf(stderr, "Error: cannot use the CUDA runtime%s%s: %s\n",
				r->a.cudart ? " " : "", r->a.cudart ? r->a.cudart : "", why);
		fprintf(stderr, "HINT: copybw needs an NVIDIA GPU, its driver and libcudart "
				"(set TTF_CUDART=/path/libcudart.so.N or use --cudart)\n");
		/* runtime found, no device: nothing to measure; else runtime or driver */
		return err == -ENODEV ? TTF_EXIT_NO_TARGET : TTF_EXIT_NO_CUDA;
	}
	if (r->a.device >= copybw__device_count(r->cu)) {
		fprintf(stderr, "Error: no CUDA device %d (%d present)\n", r->a.device,
			copybw__device_count(r->cu));
		return TTF_EXIT_NO_TARGET;
	}
	if (!copybw__device_bdf(r->cu, r->a.device, r->bdf, sizeof(r->bdf)))
		r->link_gbps = pcie__path_gbps(r->a.sysfs_root, r->bdf);
	return -1;
}

/* The device and its link: the JSON document's head, or the table's. */
static void copybw_print_head(struct copybw_run *r)
{
	if (r->a.json) {
		r->root = cJSON_CreateObject();
		cJSON_AddNumberToObject(r->root, "device", r->a.device);
		cJSON_AddStringToObject(r->root, "bdf", r->bdf);
		if (r->link_gbps > 0)
			cJSON_AddNumberToObject(r->root, "link_gbps", r->link_gbps);
		else
			cJSON_AddNullToObject(r->root, "link_gbps");
		cJSON_AddNumberToObject(r->root, "iters", r->a.iters);
		cJSON_AddNumberToObject(r->root, "warmup", r->a.warmup);
		r->results = cJSON_AddArrayToObject(r->root, "results");
		return;
	}
	printf("CUDA device %d  %s  ", r->a.device, r->bdf[0] ? r->bdf : "(bus id unknown)");
	if (r->link_gbps > 0)
		printf("link %.2f GB/s per direction (theoretical, path capability)\n",
		       r->link_gbps);
	else
		printf("link bandwidth unknown (no PCIe link attributes in sysfs)\n");
	printf("%-4s %-9s %8s %9s %7s\n", "DIR", "MEMORY", "SIZE", "GB/s", "%LINK");
}

/* One measurement: a JSON result or a table row. */
static void copybw_print_row(struct copybw_run *r, const char *dn, bool pinned, size_t bytes,
			     double gbps)
{
	char sz[32];

	if (r->results) {
		cJSON *o = cJSON_CreateObject();

		cJSON_AddStringToObject(o, "dir", dn);
		cJSON_AddStringToObject(o, "memory", pinned ? "pinned" : "pageable");
		cJSON_AddNumberToObject(o, "bytes", (double)bytes);
		cJSON_AddNumberToObject(o, "gbps", gbps);
		if (r->link_gbps > 0)
			cJSON_AddNumberToObject(o, "link_share", gbps / r->link_gbps);
		cJSON_AddBoolToObject(o, "link_evidence", pinned);
		cJSON_AddItemToArray(r->results, o);
	} else {
		printf("%-4s %-9s %8s %9.2f ", dn, pinned ? "pinned" : "pageable",
		       copybw__fmt_size(bytes, sz, sizeof(sz)), gbps);
		if (r->link_gbps > 0)
			printf("%6.1f%%%s\n", 100.0 * gbps / r->link_gbps,
			       pinned ? "" : "  (not link evidence)");
		else
			printf("%7s\n", "-");
	}
	fflush(stdout);
}

/* Every size of one direction and memory. Returns TTF_EXIT_OK or the failed copy's code. */
static int copybw_measure_sizes(struct copybw_run *r, enum copybw_dir dir, bool pinned)
{
	const char *dn = dir == COPYBW_H2D ? "h2d" : "d2h";
	char sz[32];

	for (int i = 0; i < r->a.nr_sizes; i++) {
		double gbps = 0.0;
		int err = copybw__measure(r->cu, r->a.device, dir, pinned, r->a.sizes[i],
					  r->a.warmup, r->a.iters, &gbps);

		if (err) {
			fprintf(stderr, "Error: %s %s copy of %s failed: %s\n", dn,
				pinned ? "pinned" : "pageable",
				copybw__fmt_size(r->a.sizes[i], sz, sizeof(sz)),
				err == -ENOMEM ? "out of host memory" : copybw__last_error(r->cu));
			return err == -ENOMEM ? TTF_EXIT_INTERNAL : TTF_EXIT_CUDA_FAILED;
		}
		copybw_print_row(r, dn, pinned, r->a.sizes[i], gbps);
	}
	return TTF_EXIT_OK;
}

/* H2D then D2H, pinned then pageable, as asked. */
static int copybw_measure_all(struct copybw_run *r)
{
	static const enum copybw_dir dirs[] = { COPYBW_H2D, COPYBW_D2H };
	int rc = TTF_EXIT_OK;

	for (int d = 0; d < 2 && rc == TTF_EXIT_OK; d++) {
		if ((dirs[d] == COPYBW_H2D && !r->a.h2d) || (dirs[d] == COPYBW_D2H && !r->a.d2h))
			continue;
		for (int m = 0; m < 2 && rc == TTF_EXIT_OK; m++) {
			bool pinned = m == 0;

			if ((pinned && !r->a.pinned) || (!pinned && !r->a.pageable))
				continue;
			rc = copybw_measure_sizes(r, dirs[d], pinned);
		}
	}
	return rc;
}

/* The JSON document with the exit code, or the table's closing note. */
static void copybw_print_tail(struct copybw_run *r, int rc)
{
	if (r->root) {
		char *s;

		cJSON_AddNumberToObject(r->root, "exit_code", rc);
		s = cJSON_Print(r->root);
		if (s)
			puts(s);
		free(s);
		cJSON_Delete(r->root);
	} else if (r->a.pageable && rc == TTF_EXIT_OK) {
		printf("note: pageable copies are staged by the driver; they are never evidence "
		       "of a slow link (judge the link by pinned copies >= 4 MiB)\n");
	}
}

int copybw_main(int argc, char **argv)
{
	struct copybw_run r = { .link_gbps = -1.0 };
	struct copybw_load *ramp;
	int rc;

	rc = copybw_parse_args(argc, argv, &r.a);
	if (rc >= 0)
		return rc;
	rc = copybw_open(&r);
	if (rc >= 0) {
		copybw__close(r.cu);
		return rc;
	}
	if (r.a.ramp_ms > 0 && !copybw__load_start(r.cu, r.a.device, &ramp)) {
		copybw_sleep_ms(r.a.ramp_ms);
		copybw__load_stop(ramp, NULL);
	}
	copybw_print_head(&r);
	rc = copybw_measure_all(&r);
	copybw_print_tail(&r, rc);
	copybw__close(r.cu);
	return rc;
}
