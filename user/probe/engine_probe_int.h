/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * Inside the engine uprobes (engine_probe.h): the object, and what its files
 * share. engine_probe.c holds the object, its specs, the ring buffer and the
 * entry points; engine_probe_scan.c finds candidate files in a process's
 * mappings; engine_probe_attach.c resolves a spec in a file and attaches
 * its uprobes; engine_probe_warn.c says what is not probed and what that
 * loses; engine_probe_stats.c reports hits and estimated costs.
 */
#ifndef TTFTRACE_ENGINE_PROBE_INT_H
#define TTFTRACE_ENGINE_PROBE_INT_H

#include <limits.h>
#include <stdbool.h>
#include <stdint.h>
#include <time.h>
#include <sys/stat.h>
#include "user/probe/elf_sym.h"
#include "user/probe/engine_probe.h"
#include "user/probe/maps_watch.h"
#include "user/probe/proc_maps.h"

#define MAX_SPECS 32
#define MAX_TARGETS 64
#define MAX_TGIDS 256
#define MAX_SEEN 4096
#define MAX_RET_SITES 64
#define MAX_MISSING 32

struct ep_spec {
	struct probe_spec spec;
	char match[PROFILE_MAX_MATCH][128];
	int n_match;
	int n_searched;		/* candidate files whose symbols were searched */
	int n_attached;
	int refused;		/* -errno when found but the kernel refused its uprobe */
	bool warned;
	int last_target;	/* last file searched, for the warning */
};

/* One ELF file, by inode. */
struct ep_target {
	dev_t dev;
	ino_t ino;
	char path[PATH_MAX];	/* as opened: /proc/PID/root/... or /proc/PID/map_files/... */
	bool go;
	uint64_t tried;		/* bit per spec: searched in this file */
};

struct ep_attach {
	int spec;
	int target;
	struct elf_sym_info sym;
	uint32_t entry_offset;
	int entry_class;
	int n_ret_sites;
	struct bpf_link **links;
	int n_links;
	uint64_t hits;
	uint64_t returns;
};

/* A file mapping of a traced process already looked at: (tgid, maps dev, inode). */
struct ep_seen {
	uint32_t tgid;
	uint32_t dev_major, dev_minor;
	uint64_t inode;
};

struct engine_probe {
	struct engine_bpf *skel;
	struct ring_buffer *rb;
	engine_event_cb on_event;
	void *ctx;
	struct ep_spec specs[MAX_SPECS];
	int n_specs;
	struct ep_target targets[MAX_TARGETS];
	int n_targets;
	struct ep_attach attaches[TTF_ENGINE_MAX_PROBES];
	int n_attaches;
	uint32_t tgids[MAX_TGIDS];
	int n_tgids;
	struct ep_seen *seen;
	int n_seen;
	char *missing[MAX_MISSING];
	int n_missing;
	struct { dev_t dev; ino_t ino; } bad[MAX_TARGETS];	/* files skipped as bad ELF */
	int n_bad;
	char bad_why[256];	/* what was wrong with the last file find_target refused */
	uint64_t foreign;
	uint64_t t_start_ns;
	struct maps_watch watch;	/* rescans skip a process whose mappings did not change */
};

inline uint64_t ep_now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + ts.tv_nsec;
}

/* engine_probe_scan.c: the files of a process that specs want */
int ep_scan_pid(struct engine_probe *ep, uint32_t tgid);
int ep_scan_explicit(struct engine_probe *ep, uint32_t tgid);

/* engine_probe_attach.c */
int ep_find_target(struct engine_probe *ep, const struct stat *st, const char *path, int fd);
int ep_try_attach(struct engine_probe *ep, int si, int ti, int fd);

/* engine_probe_warn.c */
/* What the attribution loses without a probe of this role. */
const char *ep_role_loss(int role);
void ep_check_missing(struct engine_probe *ep);
void ep_warn_bad_elf(struct engine_probe *ep, const struct stat *st, const char *name,
		     const char *path, int err, const bool *wants);

#endif /* TTFTRACE_ENGINE_PROBE_INT_H */
