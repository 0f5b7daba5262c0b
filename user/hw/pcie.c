// SPDX-License-Identifier: GPL-2.0-only
/* PCIe link audit from sysfs: path walk, link parsing, bandwidth table. See pcie.h. */
#include <ctype.h>
#include <dirent.h>
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "user/hw/pcie.h"

int pcie__parse_speed_mts(const char *s)
{
	char *end;
	double gts;

	if (!s)
		return -EINVAL;
	while (isspace((unsigned char)*s))
		s++;
	if (!strncmp(s, "Unknown", 7))
		return 0;
	errno = 0;
	gts = strtod(s, &end);
	if (errno || end == s || gts <= 0.0 || gts > 1000.0)
		return -EINVAL;
	while (*end == ' ')
		end++;
	if (strncmp(end, "GT/s", 4))
		return -EINVAL;
	return (int)(gts * 1000.0 + 0.5);
}

int pcie__gen_from_mts(unsigned int speed_mts)
{
	switch (speed_mts) {
	case 2500: return 1;
	case 5000: return 2;
	case 8000: return 3;
	case 16000: return 4;
	case 32000: return 5;
	case 64000: return 6;
	default: return 0;
	}
}

/* Line-encoding efficiency per generation, PCI Express Base Specification (see pcie.h). */
static double pcie_encoding(int gen)
{
	if (gen == 1 || gen == 2)
		return 8.0 / 10.0;		/* 8b/10b */
	if (gen >= 3 && gen <= 5)
		return 128.0 / 130.0;		/* 128b/130b */
	if (gen == 6)
		return 242.0 / 256.0;		/* PAM4 FLIT mode: 242 of 256 bytes carry TLPs */
	return 0.0;
}

double pcie__link_gbps(unsigned int speed_mts, unsigned int width)
{
	/* MT/s x lanes = Mbit/s of line rate; x encoding, / 8 bits, / 1000 -> GB/s */
	return (double)speed_mts * width * pcie_encoding(pcie__gen_from_mts(speed_mts)) / 8000.0;
}

int pcie__normalize_bdf(const char *in, char *out, size_t out_len)
{
	unsigned int dom = 0, bus, dev, fn;
	char tail;
	int n;

	/* only hex digits and separators: scanf's %x would also take a "0x" prefix */
	if (!in || in[strspn(in, "0123456789abcdefABCDEF:.")])
		return -EINVAL;
	n = sscanf(in, "%x:%x:%x.%x%c", &dom, &bus, &dev, &fn, &tail);
	if (n != 4) {
		dom = 0;
		n = sscanf(in, "%x:%x.%x%c", &bus, &dev, &fn, &tail);
		if (n != 3)
			return -EINVAL;
	}
	if (bus > 0xff || dev > 0x1f || fn > 7)
		return -EINVAL;
	if (snprintf(out, out_len, "%04x:%02x:%02x.%x", dom, bus, dev, fn) >= (int)out_len)
		return -EINVAL;
	return 0;
}

/* "dddd:bb:dd.f" with hex digits, as the kernel names PCI devices (domain may be longer). */
static bool pcie_is_bdf(const char *s)
{
	size_t i = 0, n = 0;

	while (isxdigit((unsigned char)s[i]))
		i++;
	if (i < 4 || s[i] != ':')
		return false;
	n = i + 1;
	if (!isxdigit((unsigned char)s[n]) || !isxdigit((unsigned char)s[n + 1]) || s[n + 2] != ':')
		return false;
	n += 3;
	if (!isxdigit((unsigned char)s[n]) || !isxdigit((unsigned char)s[n + 1]) || s[n + 2] != '.')
		return false;
	n += 3;
	return isdigit((unsigned char)s[n]) && s[n + 1] == '\0';
}

/* Read <root>/bus/pci/devices/<bdf>/<attr> into buf without the trailing newline. */
static int pcie_read_attr(const char *root, const char *bdf, const char *attr, char *buf,
			  size_t len)
{
	char path[PATH_MAX];
	size_t n;
	FILE *f;
	int err = 0;

	snprintf(path, sizeof(path), "%s/bus/pci/devices/%s/%s", root, bdf, attr);
	f = fopen(path, "re");
	if (!f)
		return -errno;
	n = fread(buf, 1, len - 1, f);
	if (ferror(f))
		err = -EIO;	/* e.g. EINVAL when config space cannot be read */
	fclose(f);
	buf[n] = '\0';
	while (n && (buf[n - 1] == '\n' || buf[n - 1] == ' '))
		buf[--n] = '\0';
	return err;
}

static unsigned int pcie_read_uint(const char *root, const char *bdf, const char *attr, int base)
{
	char buf[64], *end;
	unsigned long v;

	if (pcie_read_attr(root, bdf, attr, buf, sizeof(buf)) || !buf[0])
		return 0;
	v = strtoul(buf, &end, base);
	return *end ? 0 : (unsigned int)v;
}

static unsigned int pcie_read_speed(const char *root, const char *bdf, const char *attr)
{
	char buf[64];
	int mts;

	if (pcie_read_attr(root, bdf, attr, buf, sizeof(buf)))
		return 0;
	mts = pcie__parse_speed_mts(buf);
	return mts > 0 ? (unsigned int)mts : 0;
}

static void pcie_read_port(const char *root, struct pcie_port *p)
{
	p->cur_speed_mts = pcie_read_speed(root, p->bdf, "current_link_speed");
	p->max_speed_mts = pcie_read_speed(root, p->bdf, "max_link_speed");
	p->cur_width = pcie_read_uint(root, p->bdf, "current_link_width", 10);
	p->max_width = pcie_read_uint(root, p->bdf, "max_link_width", 10);
}

int pcie__read_gpu(const char *sysfs_root, const char *bdf, struct pcie_gpu *gpu)
{
	char path[PATH_MAX], real[PATH_MAX], buf[32], *tok, *save;
	char comps[64][PCIE_BDF_LEN];
	int n = 0, first, i;

	if (!sysfs_root)
		sysfs_root = "/sys";
	memset(gpu, 0, sizeof(*gpu));
	snprintf(gpu->bdf, sizeof(gpu->bdf), "%s", bdf);
	snprintf(path, sizeof(path), "%s/bus/pci/devices/%s", sysfs_root, bdf);
	if (!realpath(path, real))
		return errno == ENOENT ? -ENOENT : -errno;

	/* The BDF components of the realpath are the bridges from the root port down. */
	for (tok = strtok_r(real, "/", &save); tok; tok = strtok_r(NULL, "/", &save)) {
		if (!pcie_is_bdf(tok) || strlen(tok) >= PCIE_BDF_LEN)
			continue;
		if (n == (int)(sizeof(comps) / sizeof(comps[0])))
			return -E2BIG;
		strcpy(comps[n++], tok);
	}
	if (!n || strcmp(comps[n - 1], bdf))
		return -ENOENT;
	first = n > PCIE_MAX_PATH ? n - PCIE_MAX_PATH : 0;
	for (i = first; i < n; i++) {
		struct pcie_port *p = &gpu->path[gpu->nr_path++];

		strcpy(p->bdf, comps[i]);
		pcie_read_port(sysfs_root, p);
	}

	gpu->device_id = pcie_read_uint(sysfs_root, bdf, "device", 16);
	gpu->class_code = pcie_read_uint(sysfs_root, bdf, "class", 16);
	gpu->numa_node = -1;
	if (!pcie_read_attr(sysfs_root, bdf, "numa_node", buf, sizeof(buf)) && buf[0])
		gpu->numa_node = atoi(buf);
	if (pcie_read_attr(sysfs_root, bdf, "local_cpulist", gpu->local_cpulist,
			   sizeof(gpu->local_cpulist)))
		gpu->local_cpulist[0] = '\0';
	pcie__build_links(gpu);
	return 0;
}

static int pcie_cmp_gpu(const void *a, const void *b)
{
	return strcmp(((const struct pcie_gpu *)a)->bdf, ((const struct pcie_gpu *)b)->bdf);
}

int pcie__find_gpus(const char *sysfs_root, struct pcie_gpu *gpus, int max)
{
	char path[PATH_MAX];
	struct dirent *de;
	int n = 0, err = 0;
	DIR *d;

	if (!sysfs_root)
		sysfs_root = "/sys";
	snprintf(path, sizeof(path), "%s/bus/pci/devices", sysfs_root);
	d = opendir(path);
	if (!d)
		return -errno;
	while ((de = readdir(d)) && n < max) {
		unsigned int vendor, cls;

		if (de->d_name[0] == '.' || !pcie_is_bdf(de->d_name))
			continue;
		vendor = pcie_read_uint(sysfs_root, de->d_name, "vendor", 16);
		cls = pcie_read_uint(sysfs_root, de->d_name, "class", 16);
		if (vendor != PCIE_VENDOR_NVIDIA)
			continue;
		/* 0x0300xx VGA-compatible, 0x0302xx 3D controller (PCI Code and ID Assignment) */
		if ((cls >> 8) != 0x0300 && (cls >> 8) != 0x0302)
			continue;
		err = pcie__read_gpu(sysfs_root, de->d_name, &gpus[n]);
		if (err)
			goto cleanup;
		n++;
	}
	qsort(gpus, n, sizeof(*gpus), pcie_cmp_gpu);
cleanup:
	closedir(d);
	return err ? err : n;
}

int pcie__sample_best(const char *sysfs_root, struct pcie_gpu *gpu)
{
	int i;

	if (!sysfs_root)
		sysfs_root = "/sys";
	for (i = 0; i < gpu->nr_path; i++) {
		struct pcie_port *p = &gpu->path[i];
		unsigned int s = pcie_read_speed(sysfs_root, p->bdf, "current_link_speed");
		unsigned int w = pcie_read_uint(sysfs_root, p->bdf, "current_link_width", 10);

		if (s > p->cur_speed_mts)
			p->cur_speed_mts = s;
		if (w > p->cur_width)
			p->cur_width = w;
	}
	pcie__build_links(gpu);
	return 0;
}

/* Lower of two values where 0 means unknown. */
static unsigned int pcie_min_known(unsigned int a, unsigned int b)
{
	if (!a)
		return b;
	if (!b)
		return a;
	return a < b ? a : b;
}

void pcie__build_links(struct pcie_gpu *gpu)
{
	int c;

	gpu->nr_links = 0;
	for (c = gpu->nr_path - 1; c >= 0; c -= 2) {
		struct pcie_link *l = &gpu->links[gpu->nr_links++];
		const struct pcie_port *ch = &gpu->path[c];
		const struct pcie_port *pa = c > 0 ? &gpu->path[c - 1] : NULL;

		l->child = c;
		l->parent = pa ? c - 1 : -1;
		l->cur_speed_mts = pcie_min_known(ch->cur_speed_mts, pa ? pa->cur_speed_mts : 0);
		l->cur_width = pcie_min_known(ch->cur_width, pa ? pa->cur_width : 0);
		l->cap_speed_mts = pcie_min_known(ch->max_speed_mts, pa ? pa->max_speed_mts : 0);
		l->cap_width = pcie_min_known(ch->max_width, pa ? pa->max_width : 0);
	}
}

int pcie__bottleneck(const struct pcie_gpu *gpu, bool capable)
{
	double best = 0.0;
	int i, idx = -1;

	/* From the root side down, so that a tie names the hop nearest the root. */
	for (i = gpu->nr_links - 1; i >= 0; i--) {
		const struct pcie_link *l = &gpu->links[i];
		double g = capable ? pcie__link_gbps(l->cap_speed_mts, l->cap_width)
				   : pcie__link_gbps(l->cur_speed_mts, l->cur_width);

		if (g <= 0.0)
			continue;
		if (idx < 0 || g < best) {
			best = g;
			idx = i;
		}
	}
	return idx;
}

double pcie__path_gbps(const char *sysfs_root, const char *bdf)
{
	struct pcie_gpu *gpu;
	char norm[PCIE_BDF_LEN];
	double gbps;
	int err, idx;

	err = pcie__normalize_bdf(bdf, norm, sizeof(norm));
	if (err)
		return err;
	gpu = malloc(sizeof(*gpu));
	if (!gpu)
		return -ENOMEM;
	err = pcie__read_gpu(sysfs_root, norm, gpu);
	if (err) {
		gbps = err;
		goto cleanup;
	}
	idx = pcie__bottleneck(gpu, true);
	gbps = idx < 0 ? -ENODATA
		       : pcie__link_gbps(gpu->links[idx].cap_speed_mts, gpu->links[idx].cap_width);
cleanup:
	free(gpu);
	return gbps;
}

enum pcie_verdict pcie__judge(const struct pcie_gpu *gpu, bool busy, int *worst_link)
{
	bool any = false, down = false;
	double worst_gbps = 0.0;
	int i;

	*worst_link = -1;
	for (i = gpu->nr_links - 1; i >= 0; i--) {
		const struct pcie_link *l = &gpu->links[i];
		double g;

		if (!l->cur_speed_mts || !l->cur_width || !l->cap_speed_mts || !l->cap_width)
			continue;
		any = true;
		if (l->cur_speed_mts >= l->cap_speed_mts && l->cur_width >= l->cap_width)
			continue;
		down = true;
		g = pcie__link_gbps(l->cur_speed_mts, l->cur_width);
		if (busy && (*worst_link < 0 || g < worst_gbps)) {
			worst_gbps = g;
			*worst_link = i;
		}
	}
	if (!any)
		return PCIE_NO_LINK_INFO;
	if (!down)
		return PCIE_OK;
	return busy ? PCIE_DOWNTRAINED : PCIE_IDLE_NOT_JUDGED;
}

int pcie__parse_cpulist(const char *s, struct pcie_cpuset *set)
{
	const char *p = s;

	memset(set, 0, sizeof(*set));
	while (*p && *p != '\n') {
		char *end;
		long a, b;

		errno = 0;
		a = strtol(p, &end, 10);
		if (errno || end == p || a < 0)
			return -EINVAL;
		b = a;
		p = end;
		if (*p == '-') {
			p++;
			b = strtol(p, &end, 10);
			if (errno || end == p || b < a)
				return -EINVAL;
			p = end;
		}
		if (b >= PCIE_MAX_CPUS)
			return -EINVAL;
		for (; a <= b; a++)
			set->bits[a / 64] |= 1ULL << (a % 64);
		if (*p == ',')
			p++;
		else if (*p && *p != '\n')
			return -EINVAL;
	}
	return 0;
}

bool pcie__cpuset_has(const struct pcie_cpuset *set, int cpu)
{
	if (cpu < 0 || cpu >= PCIE_MAX_CPUS)
		return false;
	return set->bits[cpu / 64] & (1ULL << (cpu % 64));
}

bool pcie__cpuset_subset(const struct pcie_cpuset *a, const struct pcie_cpuset *b)
{
	size_t i;

	for (i = 0; i < PCIE_MAX_CPUS / 64; i++)
		if (a->bits[i] & ~b->bits[i])
			return false;
	return true;
}

int pcie__stat_last_cpu(const char *stat_line)
{
	const char *p = strrchr(stat_line, ')');
	int field = 2;	/* the ")" closes field 2, comm, which may contain spaces */

	if (!p)
		return -EINVAL;
	p++;
	while (*p) {
		while (*p == ' ')
			p++;
		if (!*p)
			break;
		if (++field == 39) {
			char *end;
			long cpu = strtol(p, &end, 10);

			return (end == p || cpu < 0) ? -EINVAL : (int)cpu;
		}
		while (*p && *p != ' ')
			p++;
	}
	return -EINVAL;
}

static int pcie_read_file(const char *path, char *buf, size_t len)
{
	FILE *f = fopen(path, "re");
	size_t n;

	if (!f)
		return -errno;
	n = fread(buf, 1, len - 1, f);
	buf[n] = '\0';
	fclose(f);
	return 0;
}

int pcie__thread_locality(const char *proc_root, int pid, const struct pcie_cpuset *local,
			  struct pcie_locality *out)
{
	char path[PATH_MAX], buf[4096];
	struct pcie_cpuset allowed;
	struct dirent *de;
	DIR *d;

	if (!proc_root)
		proc_root = "/proc";
	memset(out, 0, sizeof(*out));
	snprintf(path, sizeof(path), "%s/%d/task", proc_root, pid);
	d = opendir(path);
	if (!d)
		return errno == ENOENT ? -ESRCH : -errno;
	while ((de = readdir(d))) {
		char *line;
		int cpu;

		if (!isdigit((unsigned char)de->d_name[0]))
			continue;
		/* A thread may exit between readdir and open: skip it, do not count it. */
		snprintf(path, sizeof(path), "%s/%d/task/%s/status", proc_root, pid, de->d_name);
		if (pcie_read_file(path, buf, sizeof(buf)))
			continue;
		out->nr_threads++;
		line = strstr(buf, "Cpus_allowed_list:");
		if (line) {
			line += strlen("Cpus_allowed_list:");
			line += strspn(line, " \t");
			if (!pcie__parse_cpulist(line, &allowed) &&
			    pcie__cpuset_subset(&allowed, local))
				out->allowed_local++;
		}
		snprintf(path, sizeof(path), "%s/%d/task/%s/stat", proc_root, pid, de->d_name);
		if (pcie_read_file(path, buf, sizeof(buf)))
			continue;
		cpu = pcie__stat_last_cpu(buf);
		if (cpu >= 0 && pcie__cpuset_has(local, cpu))
			out->last_local++;
	}
	closedir(d);
	return 0;
}
