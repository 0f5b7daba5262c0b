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

int copybw_main(int argc, char **argv)
{
	static const enum copybw_dir dirs[] = { COPYBW_H2D, COPYBW_D2H };
	struct copybw_cuda *cu = NULL;
	struct copybw_load *ramp;
	struct copybw_args a;
	char bdf[PCIE_BDF_LEN] = "", sz[32];
	cJSON *root = NULL, *results = NULL;
	double link_gbps = -1.0;
	const char *why = "";
	int rc, err, i, d, m;

	rc = copybw_parse_args(argc, argv, &a);
	if (rc >= 0)
		return rc;

	err = copybw__open(a.cudart, &cu, &why);
	if (err == -ENOMEM) {
		fprintf(stderr, "Error: out of memory\n");
		return TTF_EXIT_INTERNAL;
	}
	if (err) {
		if (err == -ENODEV)
			fprintf(stderr, "Error: no CUDA device: %s\n", why);
		else
			fprintf(stderr, "Error: cannot use the CUDA runtime%s%s: %s\n",
				a.cudart ? " " : "", a.cudart ? a.cudart : "", why);
		fprintf(stderr, "HINT: copybw needs an NVIDIA GPU, its driver and libcudart "
				"(set TTF_CUDART=/path/libcudart.so.N or use --cudart)\n");
		/* runtime found, no device: nothing to measure; else runtime or driver */
		return err == -ENODEV ? TTF_EXIT_NO_TARGET : TTF_EXIT_NO_CUDA;
	}
	if (a.device >= copybw__device_count(cu)) {
		fprintf(stderr, "Error: no CUDA device %d (%d present)\n", a.device,
			copybw__device_count(cu));
		rc = TTF_EXIT_NO_TARGET;
		goto cleanup;
	}
	if (!copybw__device_bdf(cu, a.device, bdf, sizeof(bdf)))
		link_gbps = pcie__path_gbps(a.sysfs_root, bdf);

	if (a.ramp_ms > 0 && !copybw__load_start(cu, a.device, &ramp)) {
		copybw_sleep_ms(a.ramp_ms);
		copybw__load_stop(ramp, NULL);
	}

	if (a.json) {
		root = cJSON_CreateObject();
		cJSON_AddNumberToObject(root, "device", a.device);
		cJSON_AddStringToObject(root, "bdf", bdf);
		if (link_gbps > 0)
			cJSON_AddNumberToObject(root, "link_gbps", link_gbps);
		else
			cJSON_AddNullToObject(root, "link_gbps");
		cJSON_AddNumberToObject(root, "iters", a.iters);
		cJSON_AddNumberToObject(root, "warmup", a.warmup);
		results = cJSON_AddArrayToObject(root, "results");
	} else {
		printf("CUDA device %d  %s  ", a.device, bdf[0] ? bdf : "(bus id unknown)");
		if (link_gbps > 0)
			printf("link %.2f GB/s per direction (theoretical, path capability)\n",
			       link_gbps);
		else
			printf("link bandwidth unknown (no PCIe link attributes in sysfs)\n");
		printf("%-4s %-9s %8s %9s %7s\n", "DIR", "MEMORY", "SIZE", "GB/s", "%LINK");
	}

	rc = TTF_EXIT_OK;
	for (d = 0; d < 2; d++) {
		if ((dirs[d] == COPYBW_H2D && !a.h2d) || (dirs[d] == COPYBW_D2H && !a.d2h))
			continue;
		for (m = 0; m < 2; m++) {
			bool pinned = m == 0;

			if ((pinned && !a.pinned) || (!pinned && !a.pageable))
				continue;
			for (i = 0; i < a.nr_sizes; i++) {
				const char *dn = dirs[d] == COPYBW_H2D ? "h2d" : "d2h";
				double gbps = 0.0;

				err = copybw__measure(cu, a.device, dirs[d], pinned, a.sizes[i],
						      a.warmup, a.iters, &gbps);
				if (err) {
					fprintf(stderr, "Error: %s %s copy of %s failed: %s\n", dn,
						pinned ? "pinned" : "pageable",
						copybw__fmt_size(a.sizes[i], sz, sizeof(sz)),
						err == -ENOMEM ? "out of host memory"
							       : copybw__last_error(cu));
					rc = err == -ENOMEM ? TTF_EXIT_INTERNAL
							    : TTF_EXIT_CUDA_FAILED;
					goto out;
				}
				if (results) {
					cJSON *r = cJSON_CreateObject();

					cJSON_AddStringToObject(r, "dir", dn);
					cJSON_AddStringToObject(r, "memory",
								pinned ? "pinned" : "pageable");
					cJSON_AddNumberToObject(r, "bytes", (double)a.sizes[i]);
					cJSON_AddNumberToObject(r, "gbps", gbps);
					if (link_gbps > 0)
						cJSON_AddNumberToObject(r, "link_share",
									gbps / link_gbps);
					cJSON_AddBoolToObject(r, "link_evidence", pinned);
					cJSON_AddItemToArray(results, r);
				} else {
					printf("%-4s %-9s %8s %9.2f ", dn,
					       pinned ? "pinned" : "pageable",
					       copybw__fmt_size(a.sizes[i], sz, sizeof(sz)), gbps);
					if (link_gbps > 0)
						printf("%6.1f%%%s\n", 100.0 * gbps / link_gbps,
						       pinned ? "" : "  (not link evidence)");
					else
						printf("%7s\n", "-");
				}
				fflush(stdout);
			}
		}
	}
out:
	if (root) {
		char *s;

		cJSON_AddNumberToObject(root, "exit_code", rc);
		s = cJSON_Print(root);
		if (s)
			puts(s);
		free(s);
		cJSON_Delete(root);
	} else if (a.pageable && rc == TTF_EXIT_OK) {
		printf("note: pageable copies are staged by the driver; they are never evidence "
		       "of a slow link (judge the link by pinned copies >= 4 MiB)\n");
	}
cleanup:
	copybw__close(cu);
	return rc;
}
