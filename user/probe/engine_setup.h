/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * The tracer's use of engine uprobes (user/probe/engine_probe.h): which profiles
 * and --probe specs apply, attaching to targets and their children, picking
 * up libraries loaded later, and handing each hit to the records' engine
 * hook (user/lib/records.h).
 *
 * Profiles given with --profile and --probe specs attach to every target.
 * Without them, the built-in profiles (llamacpp) are tried automatically and
 * attach only to processes that map one of the profile's files, so a server
 * that is not llama.cpp gets no probe and no warning.
 */
#ifndef TTFTRACE_ENGINE_SETUP_H
#define TTFTRACE_ENGINE_SETUP_H

#include <stdint.h>
#include <stdio.h>
#include "user/lib/records.h"
#include "user/probe/source.h"

#define TTF_MAX_PROFILE_ARGS 4
#define TTF_MAX_PROBE_ARGS 16

struct engine_setup;

struct engine_setup_opts {
	const char *profiles[TTF_MAX_PROFILE_ARGS];	/* --profile NAME|PATH */
	int n_profiles;
	const char *probes[TTF_MAX_PROBE_ARGS];		/* --probe PATH:SYMBOL=ROLE[:ARGSPEC] */
	int n_probes;
	int auto_profiles;				/* 1: try built-in profiles */
	struct ttf_records out;				/* where hits go (engine hook) */
};

/*
 * Parse profiles and specs. Returns 0 (with *out NULL when there is nothing
 * to probe), -EINVAL for a bad profile or spec (message printed), -EPERM or
 * another negative errno when the BPF object does not load.
 */
int engine_setup__new(const struct engine_setup_opts *opts, struct engine_setup **out);
/*
 * Only parse the --profile and --probe arguments, before any privilege or
 * BPF work: 0, or -EINVAL (or -errno reading a profile) with the error printed.
 */
int engine_setup__check_args(const struct engine_setup_opts *opts);
void engine_setup__free(struct engine_setup *es);
/* Trace this process too (a target, or a traced child). */
void engine_setup__attach(struct engine_setup *es, uint32_t tgid);
/*
 * Look at tgid's mappings again now (a traced process that exec'd since
 * engine_setup__attach): profiles and probes for what it maps now.
 */
void engine_setup__look(struct engine_setup *es, uint32_t tgid);
/* Every ~second: rescan maps for libraries loaded since (dlopen), drain hits. */
void engine_setup__tick(struct engine_setup *es, uint64_t now_ns);
/* Drain hits to opts.out. Returns records drained (0 without probes) or -errno. */
int engine_setup__poll(struct engine_setup *es);
/* Drop counters into c[0..cap) (a ttf_counters_fn; ctx is es). Returns how many. */
int engine_setup__counters(void *es, struct report_counter *c, int cap);
/* As a source (user/probe/source.h): poll drains, tick rescans (es may be NULL: no-ops). */
void engine_setup__source(struct engine_setup *es, struct ttf_probe_source *out);
/* Per-probe hits, rates and estimated cost. */
void engine_setup__summary(struct engine_setup *es, FILE *f);

#endif /* TTFTRACE_ENGINE_SETUP_H */
