// SPDX-License-Identifier: GPL-2.0-only
/* `ttftrace copybw`: H2D/D2H copy bandwidth, pinned and pageable, against the PCIe link. */
#include <errno.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <cjson/cJSON.h>

#include "user/cmd/subcmd.h"
#include "user/hw/copybw.h"
#include "user/hw/pcie.h"

#define usage_error(fmt, arg) subcmd__usage_error("copybw", COPYBW_EXIT_USAGE, fmt, arg)

static const char copybw_usage[] =
"Usage: ttftrace copybw [OPTIONS]\n"
"Measure host-to-device and device-to-host copy bandwidth from pinned and pageable\n"
"memory, each as a share of the GPU's theoretical PCIe bandwidth per direction.\n"
"\n"
"  -d, --device N        CUDA device index (default 0)\n"
"  -s, --sizes LIST      comma-separated sizes, suffix K/M/G = KiB/MiB/GiB\n"
"                        (default 64K,256K,1M,4M,16M,64M,256M)\n"
"  -n, --iters N         timed copies per size, direction and memory (default 10)\n"
"  -w, --warmup N        untimed copies before each measurement (default 3)\n"
"      --ramp-ms MS      pinned H2D load before the first measurement, so that an idle\n"
"                        link has ramped up (default 300)\n"
"  -m, --memory KIND     pinned, pageable or both (default both)\n"
"      --dir DIR         h2d, d2h or both (default both)\n"
"  -r, --sysfs-root DIR  sysfs to read the link from (default /sys)\n"
"      --cudart PATH     CUDA runtime library to dlopen (default: search; env TTF_CUDART)\n"
"  -j, --json            JSON output\n"
"  -h, --help            this help\n"
"\n"
"Pageable copies are staged through a driver bounce buffer: they show what a server\n"
"copying from pageable memory gets, never how fast the link is. Judge the link by pinned\n"
"copies of a few MiB or more.\n"
"\n"
"EXIT STATUS: 0 ok, 1 a CUDA call failed, 2 usage, 5 no CUDA runtime, driver or device.\n"
"\n"
"EXAMPLES:\n"
"  ttftrace copybw                      # all sizes, both directions, pinned and pageable\n"
"  ttftrace copybw -d 1 -m pinned       # pinned only, CUDA device 1\n"
"  ttftrace copybw -s 16M,256M -n 20 -j # two sizes, 20 copies each, JSON\n";

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

/* Returns -1 to continue, or an exit code (help, usage error). */
static int copybw_parse_args(int argc, char **argv, struct copybw_args *a)
{
	enum { OPT_RAMP = 256, OPT_DIR, OPT_CUDART };
	static const struct option opts[] = {
		{ "device", required_argument, NULL, 'd' },
		{ "sizes", required_argument, NULL, 's' },
		{ "iters", required_argument, NULL, 'n' },
		{ "warmup", required_argument, NULL, 'w' },
		{ "ramp-ms", required_argument, NULL, OPT_RAMP },
		{ "memory", required_argument, NULL, 'm' },
		{ "dir", required_argument, NULL, OPT_DIR },
		{ "sysfs-root", required_argument, NULL, 'r' },
		{ "cudart", required_argument, NULL, OPT_CUDART },
		{ "json", no_argument, NULL, 'j' },
		{ "help", no_argument, NULL, 'h' },
		{}
	};
	int c;

	*a = (struct copybw_args){ .iters = 10, .warmup = 3, .ramp_ms = 300, .pinned = true,
				   .pageable = true, .h2d = true, .d2h = true };
	a->nr_sizes = copybw__parse_sizes("64K,256K,1M,4M,16M,64M,256M", a->sizes,
					  COPYBW_MAX_SIZES);
	optind = 0;	/* 0 re-initialises glibc getopt; main() may have parsed before us */
	opterr = 0;
	while ((c = getopt_long(argc, argv, "+d:s:n:w:m:r:jh", opts, NULL)) != -1) {
		switch (c) {
		case 'd':
			if (subcmd__parse_int(optarg, 0, 1023, &a->device))
				return usage_error("bad --device '%s' (a CUDA index)",
							  optarg);
			break;
		case 's':
			a->nr_sizes = copybw__parse_sizes(optarg, a->sizes, COPYBW_MAX_SIZES);
			if (a->nr_sizes < 0)
				return usage_error("bad --sizes '%s' (e.g. 64K,1M,256M; "
							  "1 B .. 4 GiB, at most 32)", optarg);
			break;
		case 'n':
			if (subcmd__parse_int(optarg, 1, 100000, &a->iters))
				return usage_error("bad --iters '%s' (1..100000)", optarg);
			break;
		case 'w':
			if (subcmd__parse_int(optarg, 0, 100000, &a->warmup))
				return usage_error("bad --warmup '%s' (0..100000)", optarg);
			break;
		case OPT_RAMP:
			if (subcmd__parse_int(optarg, 0, 60000, &a->ramp_ms))
				return usage_error("bad --ramp-ms '%s' (0..60000)", optarg);
			break;
		case 'm':
			if (!strcmp(optarg, "both"))
				a->pinned = a->pageable = true;
			else if (!strcmp(optarg, "pinned") || !strcmp(optarg, "pageable"))
				a->pinned = !(a->pageable = !strcmp(optarg, "pageable"));
			else
				return usage_error("bad --memory '%s' "
							  "(pinned, pageable, both)", optarg);
			break;
		case OPT_DIR:
			if (!strcmp(optarg, "both"))
				a->h2d = a->d2h = true;
			else if (!strcmp(optarg, "h2d") || !strcmp(optarg, "d2h"))
				a->h2d = !(a->d2h = !strcmp(optarg, "d2h"));
			else
				return usage_error("bad --dir '%s' (h2d, d2h, both)",
							  optarg);
			break;
		case 'r':
			a->sysfs_root = optarg;
			break;
		case OPT_CUDART:
			a->cudart = optarg;
			break;
		case 'j':
			a->json = true;
			break;
		case 'h':
			fputs(copybw_usage, stdout);
			return COPYBW_EXIT_OK;
		default:
			return usage_error("unknown or incomplete option '%s'",
						  argv[optind - 1]);
		}
	}
	if (optind < argc)
		return usage_error("unexpected argument '%s'", argv[optind]);
	return -1;
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
	if (err) {
		fprintf(stderr, "Error: no CUDA device: %s\n", why);
		fprintf(stderr, "HINT: copybw needs an NVIDIA GPU, its driver and libcudart "
				"(set TTF_CUDART=/path/libcudart.so.N or use --cudart)\n");
		return COPYBW_EXIT_NO_DEVICE;
	}
	if (a.device >= copybw__device_count(cu)) {
		fprintf(stderr, "Error: no CUDA device %d (%d present)\n", a.device,
			copybw__device_count(cu));
		rc = COPYBW_EXIT_NO_DEVICE;
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

	rc = COPYBW_EXIT_OK;
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
					rc = COPYBW_EXIT_CUDA;
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
	} else if (a.pageable && rc == COPYBW_EXIT_OK) {
		printf("note: pageable copies are staged by the driver; they are never evidence "
		       "of a slow link (judge the link by pinned copies >= 4 MiB)\n");
	}
cleanup:
	copybw__close(cu);
	return rc;
}
