/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * Engine step view, attach side: loads bpf/engine.bpf.c, resolves probe specs
 * (engine profiles and --probe) against the files a traced process maps,
 * attaches entry and return uprobes, and decodes the ring buffer.
 *
 * - Files are opened through /proc/PID/root or /proc/PID/map_files (works
 *   across mount namespaces) and attached once per (st_dev, st_ino), with
 *   pid -1: a uprobe binds to the inode, so every process mapping that file
 *   traps. Events from processes that were never passed to
 *   engine_probe__attach_pid are counted as foreign and not delivered.
 * - Go binaries never get uretprobes (docs/cases.md #4): each RET
 *   instruction gets a uprobe reported as a return, without a return value.
 * - A symbol found in no candidate file is a warning naming it and what the
 *   attribution loses, never a failure.
 * - Costs: each hit is estimated from the probed instruction's class
 *   (elf_sym.h; docs/kernel.md B3), plus the return probe.
 */
#ifndef TTFTRACE_ENGINE_PROBE_H
#define TTFTRACE_ENGINE_PROBE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include "bpf/engine.h"
#include "user/probe/profile.h"

struct engine_probe;

/*
 * Every hit of a traced process, as the BPF program wrote it (role from the
 * probe's spec, probe_id = the attachment id, as engine_probe__stats lists
 * them). Return non-zero to stop the current poll (returned from
 * engine_probe__poll).
 */
typedef int (*engine_event_cb)(void *ctx, const struct ttf_engine_event *e);

struct engine_probe_opts {
	size_t sz;		/* sizeof(struct engine_probe_opts) */
	uint32_t ringbuf_bytes;	/* power of two >= page size; 0 = the BPF default (1 MiB) */
	engine_event_cb on_event;
	void *ctx;
};

/* Per attachment (one spec in one file), for the summary. */
struct engine_probe_stat {
	const char *probe;
	const char *symbol;
	const char *path;
	int role;
	bool go;			/* RET-site uprobes instead of a uretprobe */
	int n_ret_sites;
	uint32_t entry_offset;		/* past the symbol, bytes (endbr64, Go stack check) */
	char insn[32];			/* the symbol's first instruction */
	int insn_class;			/* enum elf_insn_class at the entry site */
	uint64_t hits;			/* entries delivered */
	uint64_t returns;		/* returns delivered */
	double hits_per_s;		/* entries per second of run time */
	double cost_us_per_hit;		/* entry + return probe, estimated */
	double total_cost_ms;		/* estimated over the run */
	double cpu_pct;			/* total cost / run time, % of one CPU */
};

/*
 * Open and load the BPF object. NULL with *err: -EPERM (privileges),
 * -EINVAL (bad opts), another negative errno.
 */
struct engine_probe *engine_probe__new(const struct engine_probe_opts *opts, int *err);
void engine_probe__destroy(struct engine_probe *ep);

/*
 * Add one probe spec. match/n_match: globs of the files to search when the
 * spec has no path (a profile's [engine] match list). Specs are resolved at
 * the next attach_pid/rescan. Returns 0, -E2BIG (too many specs), -EINVAL.
 */
int engine_probe__add_spec(struct engine_probe *ep, const struct probe_spec *spec,
			   const char (*match)[128], int n_match);
/* Every probe of a profile. 0 or negative errno. */
int engine_probe__add_profile(struct engine_probe *ep, const struct engine_profile *p);

/*
 * Trace process tgid: resolve every spec against its executable mappings
 * (and explicit spec paths, inside its root) and attach what is new.
 * Returns the number of attachments made (>= 0), -ESRCH when the process
 * is gone, -E2BIG when TTF_ENGINE_MAX_PROBES attachments are used up.
 * Missing symbols are warned about once (ttf_warn) and listed by
 * engine_probe__missing.
 */
int engine_probe__attach_pid(struct engine_probe *ep, uint32_t tgid);
/*
 * Re-read the maps of every traced process and attach to files mapped
 * since (dlopen). Call about once a second. A process whose executable
 * mappings did not change is skipped (user/probe/maps_watch.h; a new spec
 * lets every process through once). now_ns: the caller's tick time
 * (CLOCK_MONOTONIC ns; 0: read the clock). Returns attachments made.
 */
int engine_probe__rescan(struct engine_probe *ep, uint64_t now_ns);

/* Wait up to timeout_ms, then drain the ring buffer. Records consumed, or negative errno. */
int engine_probe__poll(struct engine_probe *ep, int timeout_ms);

/* Summed per-CPU BPF counters, out[TTF_ENG_CNT__MAX]. */
void engine_probe__counters(struct engine_probe *ep, uint64_t *out);
/* Records lost because the ring buffer was full. */
uint64_t engine_probe__drops(struct engine_probe *ep);
/* Records from processes not passed to attach_pid (dropped in user space). */
uint64_t engine_probe__foreign(struct engine_probe *ep);

/* Attachment stats into out[0..max). Returns the number of attachments. */
int engine_probe__stats(struct engine_probe *ep, struct engine_probe_stat *out, int max);
/*
 * The probes held back by their profile's only_with (no traced process maps
 * a file it names), as "name, name" into buf. Returns how many.
 */
int engine_probe__held_back(const struct engine_probe *ep, char *buf, size_t len);
/* The i-th missing-symbol warning, or NULL past the end. */
const char *engine_probe__missing(struct engine_probe *ep, int i);
/* Summary table: per attachment hits, rate, estimated cost; drops and missing symbols. */
void engine_probe__print_summary(struct engine_probe *ep, FILE *f);

#endif /* TTFTRACE_ENGINE_PROBE_H */
