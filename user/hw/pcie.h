/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * PCIe link audit for NVIDIA GPUs, read from sysfs.
 *
 * Sources:
 * - sysfs attributes /sys/bus/pci/devices/<BDF>/{vendor,class,current_link_speed,
 *   current_link_width,max_link_speed,max_link_width,numa_node,local_cpulist}
 *   (Documentation/ABI/testing/sysfs-bus-pci). Speed strings come from the kernel's
 *   pci_speed_string(): "2.5 GT/s PCIe" ... "64.0 GT/s PCIe", "Unknown"; kernels up to
 *   5.6 printed "2.5 GT/s", "8 GT/s" (no ".0", no "PCIe"). Width is a decimal lane count.
 * - Per-lane rates and line encodings: PCI Express Base Specification (PCI-SIG),
 *   rev 1.0a/2.0 (2.5 and 5.0 GT/s, 8b/10b), rev 3.0/4.0/5.0 (8, 16, 32 GT/s,
 *   128b/130b) and rev 6.0 (64 GT/s, PAM4 with 256-byte FLITs of which 242 bytes carry
 *   TLP payload, i.e. efficiency 242/256). The figures are raw line rate after encoding;
 *   TLP/DLLP header overhead is not subtracted, so pinned copies reach roughly 80-90 %.
 *
 * A PCIe link joins a downstream port (the parent) and an upstream port or endpoint (the
 * child). Both ends expose the link in sysfs: current_* is the negotiated state (LNKSTA),
 * max_* the end's own capability (LNKCAP). The realpath of a device directory lists the
 * bridges from the root port down, e.g.
 *   /sys/devices/pci0000:00/0000:00:01.0/0000:01:00.0/0000:02:00.0/0000:03:00.0
 * Inside a PCIe switch the upstream port and its downstream ports sit on an internal
 * virtual bus, so real links are the (parent, child) pairs counted upwards from the GPU:
 * (02:00.0, 03:00.0) and (00:01.0, 01:00.0) above; (01:00.0, 02:00.0) is switch-internal.
 *
 * Idle GPUs downclock their link (Gen1 on a Gen4 slot is normal). A reading is judged only
 * when it was taken while the GPU was busy (see struct pcie_sample_opts).
 */
#ifndef TTF_PCIE_H
#define TTF_PCIE_H

#include <stdbool.h>
#include <stddef.h>

#define PCIE_VENDOR_NVIDIA	0x10de
#define PCIE_BDF_LEN		32	/* "dddd:bb:dd.f" plus room for odd domains */
#define PCIE_MAX_PATH		16	/* devices from root port to GPU */
#define PCIE_MAX_GPUS		64
#define PCIE_CPULIST_LEN	1024

/* One device on the path: its own view of the link it terminates. 0 = unknown/absent. */
struct pcie_port {
	char bdf[PCIE_BDF_LEN];
	unsigned int cur_speed_mts;	/* negotiated rate per lane, MT/s (2500 = 2.5 GT/s) */
	unsigned int max_speed_mts;	/* this end's capability, MT/s */
	unsigned int cur_width;		/* negotiated lanes */
	unsigned int max_width;		/* this end's capable lanes */
};

/* One real link: parent downstream port -> child (upstream port or the GPU itself). */
struct pcie_link {
	int parent;			/* index into pcie_gpu.path, -1 if the parent is unknown */
	int child;			/* index into pcie_gpu.path */
	unsigned int cur_speed_mts;	/* lower of the two ends' readings (0 = unknown) */
	unsigned int cur_width;
	unsigned int cap_speed_mts;	/* min of both ends' max: what this link can train to */
	unsigned int cap_width;
};

struct pcie_gpu {
	char bdf[PCIE_BDF_LEN];
	unsigned int device_id;		/* PCI device id (vendor is always NVIDIA) */
	unsigned int class_code;	/* 24-bit class, e.g. 0x030200 */
	int numa_node;			/* -1 when the platform has none */
	char local_cpulist[PCIE_CPULIST_LEN];	/* as in sysfs, e.g. "0-15,32-47"; "" unknown */
	int nr_path;
	struct pcie_port path[PCIE_MAX_PATH];	/* path[0] nearest the root, path[nr_path-1] GPU */
	int nr_links;
	struct pcie_link links[PCIE_MAX_PATH];	/* links[0] nearest the GPU */
};

/*
 * Parse a sysfs link speed string ("8.0 GT/s PCIe", "8 GT/s", "2.5 GT/s", "Unknown").
 * Returns MT/s (8000), 0 for "Unknown", or -EINVAL for text that is not a speed.
 */
int pcie__parse_speed_mts(const char *s);

/* PCIe generation (1..6) for a per-lane rate in MT/s; 0 if the rate is not a PCIe rate. */
int pcie__gen_from_mts(unsigned int speed_mts);

/*
 * Theoretical data bandwidth per direction in GB/s (10^9 bytes/s) of a link at speed_mts
 * and width lanes: rate x width x encoding efficiency / 8 (see the sources at the top).
 * Gen4 x16 = 16 GT/s x 16 x 128/130 / 8 = 31.51 GB/s. Returns 0.0 for unknown rates.
 */
double pcie__link_gbps(unsigned int speed_mts, unsigned int width);

/*
 * Find NVIDIA GPUs (vendor 0x10de, class 0x0300xx VGA or 0x0302xx 3D) under
 * <sysfs_root>/bus/pci/devices and read their paths once. Fills up to max gpus.
 * Returns the number found (0 if none), or -errno when the directory cannot be read.
 */
int pcie__find_gpus(const char *sysfs_root, struct pcie_gpu *gpus, int max);

/* Read one device by BDF (any vendor). Returns 0, -ENOENT, or -errno. */
int pcie__read_gpu(const char *sysfs_root, const char *bdf, struct pcie_gpu *gpu);

/*
 * Re-read the current_* attributes of every device on gpu's path and keep the best
 * (highest) speed and width seen so far per device. Idle downclocking flips the link
 * between readings (docs/cases.md #24), so several samples are merged with this. Returns 0 or -errno.
 */
int pcie__sample_best(const char *sysfs_root, struct pcie_gpu *gpu);

/* Derive gpu->links from gpu->path (pairs counted upwards from the GPU). */
void pcie__build_links(struct pcie_gpu *gpu);

/*
 * Index in gpu->links of the narrowest link by theoretical bandwidth, using capability
 * (capable=true) or the current reading; -1 when no link has the values.
 */
int pcie__bottleneck(const struct pcie_gpu *gpu, bool capable);

/*
 * Theoretical bandwidth per direction in GB/s of the GPU's path: the narrowest link's
 * capability. This is the figure copy bandwidth is compared against. Reads sysfs under
 * sysfs_root (NULL = "/sys") for the GPU at bdf ("0000:3b:00.0"; case-insensitive,
 * the "0000:" domain may be omitted, CUDA's 8-digit domain form is accepted).
 * Returns GB/s > 0, or a negative errno (-ENOENT: no such device, -ENODATA: no link info).
 */
double pcie__path_gbps(const char *sysfs_root, const char *bdf);

/* Normalise a BDF to "dddd:bb:dd.f" lower case. Returns 0 or -EINVAL. */
int pcie__normalize_bdf(const char *in, char *out, size_t out_len);

/* Verdict of one GPU. */
enum pcie_verdict {
	PCIE_OK = 0,		/* busy reading at capability on every link */
	PCIE_IDLE_NOT_JUDGED,	/* reading below capability but not taken while busy */
	PCIE_DOWNTRAINED,	/* busy reading below capability on some link */
	PCIE_NO_LINK_INFO,	/* no current_/max_ attributes (VM, no PCIe capability) */
};

/*
 * Judge gpu's links. busy says the readings were taken under load. On PCIE_DOWNTRAINED,
 * *worst_link is the index of the downtrained link nearest the root (the bottleneck a
 * switch port may hide from the GPU endpoint); otherwise -1.
 */
enum pcie_verdict pcie__judge(const struct pcie_gpu *gpu, bool busy, int *worst_link);

/*
 * CPU list helpers for NUMA locality. A set is a bitmap of PCIE_MAX_CPUS bits.
 * pcie__parse_cpulist parses "0-3,8,10-11" (also "" = empty). Returns 0 or -EINVAL.
 */
#define PCIE_MAX_CPUS 8192
struct pcie_cpuset {
	unsigned long long bits[PCIE_MAX_CPUS / 64];
};
int pcie__parse_cpulist(const char *s, struct pcie_cpuset *set);
bool pcie__cpuset_has(const struct pcie_cpuset *set, int cpu);
/* True when every CPU in a is also in b (a empty -> true). */
bool pcie__cpuset_subset(const struct pcie_cpuset *a, const struct pcie_cpuset *b);

/* Where a process's threads may run and last ran, relative to a GPU's local CPUs. */
struct pcie_locality {
	int nr_threads;		/* threads read from <proc_root>/<pid>/task */
	int allowed_local;	/* threads whose Cpus_allowed_list is within the local CPUs */
	int last_local;		/* threads whose last CPU (stat field 39) is a local CPU */
};

/*
 * Read <proc_root>/<pid>/task/<tid>/{status,stat} (proc_root NULL = "/proc") and count
 * threads against local. Returns 0, -ESRCH when the process is gone, or -errno.
 */
int pcie__thread_locality(const char *proc_root, int pid, const struct pcie_cpuset *local,
			  struct pcie_locality *out);

/* Parse the last-CPU field (39, "processor") from one /proc/<pid>/stat line; -EINVAL. */
int pcie__stat_last_cpu(const char *stat_line);

#endif /* TTF_PCIE_H */
