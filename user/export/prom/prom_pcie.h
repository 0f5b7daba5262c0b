/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * PCIe link gauges for the Prometheus endpoint, read from sysfs at each
 * scrape (user/hw/pcie.h: the same walk as `ttftrace pcie`). Idle GPUs
 * downclock their link, so one reading below capability is not a fault:
 * alert on the link staying below it while the GPU is busy (for example
 * max_over_time of the speed over a window with traffic).
 *
 *   ttftrace_pcie_gpus                          gauge, NVIDIA GPUs found
 *   ttftrace_pcie_link_speed_transfers_per_second{gpu,link,port}  gauge,
 *                                               negotiated rate per lane now
 *                                               (lower end), transfers/s
 *   ttftrace_pcie_link_max_speed_transfers_per_second{...}  gauge, what the
 *                                               link can train to (both ends)
 *   ttftrace_pcie_link_width{...}               gauge, negotiated lanes now
 *   ttftrace_pcie_link_max_width{...}           gauge, capable lanes
 *   ttftrace_pcie_path_bytes_per_second{gpu,state="current"|"capable"}
 *                                               gauge, per direction, of the
 *                                               narrowest link on the path
 * Labels: gpu is the GPU's BDF; link counts links upwards from the GPU (0 =
 * the GPU's own link); port is the BDF of the downstream port above it ("" if
 * unknown).
 */
#ifndef TTFTRACE_PROM_PCIE_H
#define TTFTRACE_PROM_PCIE_H

#include <stdio.h>

/*
 * Write the gauges above to f in the text exposition format, reading
 * <sysfs_root>/bus/pci/devices (sysfs_root NULL: /sys). A root that cannot
 * be read writes ttftrace_pcie_gpus 0. Returns the number of GPUs written.
 */
int prom_pcie__render(FILE *f, const char *sysfs_root);

#endif /* TTFTRACE_PROM_PCIE_H */
