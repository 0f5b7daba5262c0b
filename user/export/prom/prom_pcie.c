// SPDX-License-Identifier: GPL-2.0-only
/* PCIe link gauges for /metrics: see prom_pcie.h. */
#include <stdlib.h>
#include "user/hw/pcie.h"
#include "user/export/prom/prom_pcie.h"

static void head(FILE *f, const char *name, const char *help)
{
	fprintf(f, "# HELP %s %s\n# TYPE %s gauge\n", name, help, name);
}

/* One gauge line per link of every GPU, value chosen by which. */
enum link_value { LV_SPEED, LV_MAX_SPEED, LV_WIDTH, LV_MAX_WIDTH };

static void put_links(FILE *f, const char *name, const struct pcie_gpu *gpus, int n,
		      enum link_value which)
{
	for (int g = 0; g < n; g++) {
		const struct pcie_gpu *gpu = &gpus[g];

		for (int i = 0; i < gpu->nr_links; i++) {
			const struct pcie_link *l = &gpu->links[i];
			double v = 0;

			switch (which) {
			case LV_SPEED: v = l->cur_speed_mts * 1e6; break;
			case LV_MAX_SPEED: v = l->cap_speed_mts * 1e6; break;
			case LV_WIDTH: v = l->cur_width; break;
			case LV_MAX_WIDTH: v = l->cap_width; break;
			}
			fprintf(f, "%s{gpu=\"%s\",link=\"%d\",port=\"%s\"} %.0f\n", name, gpu->bdf, i,
				l->parent >= 0 ? gpu->path[l->parent].bdf : "", v);
		}
	}
}

static double path_bytes_per_s(const struct pcie_gpu *gpu, int capable)
{
	int i = pcie__bottleneck(gpu, capable);
	const struct pcie_link *l;

	if (i < 0)
		return 0;
	l = &gpu->links[i];
	return 1e9 * (capable ? pcie__link_gbps(l->cap_speed_mts, l->cap_width)
			      : pcie__link_gbps(l->cur_speed_mts, l->cur_width));
}

int prom_pcie__render(FILE *f, const char *sysfs_root)
{
	struct pcie_gpu *gpus = calloc(PCIE_MAX_GPUS, sizeof(*gpus));
	int n = gpus ? pcie__find_gpus(sysfs_root, gpus, PCIE_MAX_GPUS) : 0;

	if (n < 0)
		n = 0;
	head(f, "ttftrace_pcie_gpus", "NVIDIA GPUs found in sysfs");
	fprintf(f, "ttftrace_pcie_gpus %d\n", n);
	if (n > 0) {
		head(f, "ttftrace_pcie_link_speed_transfers_per_second",
		     "Negotiated PCIe rate per lane now, transfers/s (idle GPUs downclock: judge "
		     "under load)");
		put_links(f, "ttftrace_pcie_link_speed_transfers_per_second", gpus, n, LV_SPEED);
		head(f, "ttftrace_pcie_link_max_speed_transfers_per_second",
		     "PCIe rate per lane both ends of the link are capable of, transfers/s");
		put_links(f, "ttftrace_pcie_link_max_speed_transfers_per_second", gpus, n,
			  LV_MAX_SPEED);
		head(f, "ttftrace_pcie_link_width", "Negotiated PCIe lanes now");
		put_links(f, "ttftrace_pcie_link_width", gpus, n, LV_WIDTH);
		head(f, "ttftrace_pcie_link_max_width", "PCIe lanes both ends are capable of");
		put_links(f, "ttftrace_pcie_link_max_width", gpus, n, LV_MAX_WIDTH);
		head(f, "ttftrace_pcie_path_bytes_per_second",
		     "Data rate per direction of the narrowest link between GPU and root port");
		for (int g = 0; g < n; g++) {
			fprintf(f, "ttftrace_pcie_path_bytes_per_second{gpu=\"%s\",state=\"current\"} "
				"%.0f\n", gpus[g].bdf, path_bytes_per_s(&gpus[g], 0));
			fprintf(f, "ttftrace_pcie_path_bytes_per_second{gpu=\"%s\",state=\"capable\"} "
				"%.0f\n", gpus[g].bdf, path_bytes_per_s(&gpus[g], 1));
		}
	}
	free(gpus);
	return n;
}
