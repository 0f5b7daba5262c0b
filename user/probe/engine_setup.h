/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * The tracer's use of engine uprobes (user/probe/engine_probe.h): which profiles
 * and --probe specs apply, attaching to targets and their children, picking
 * up libraries loaded later, and handing decoded hits to the pipeline.
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
#include "user/core/pipeline.h"
#include "user/export/report.h"

#define TTF_MAX_PROFILE_ARGS 4
#define TTF_MAX_PROBE_ARGS 16

struct engine_setup;

struct engine_setup_opts {
	const char *profiles[TTF_MAX_PROFILE_ARGS];	/* --profile NAME|PATH */
	int n_profiles;
	const char *probes[TTF_MAX_PROBE_ARGS];		/* --probe PATH:SYMBOL=ROLE[:ARGSPEC] */
	int n_probes;
	int auto_profiles;				/* 1: try built-in profiles */
	struct pipeline *pipe;				/* where hits go */
};

/*
 * Parse profiles and specs. Returns 0 (with *out NULL when there is nothing
 * to probe), -EINVAL for a bad profile or spec (message printed), -EPERM or
 * another negative errno when the BPF object does not load.
 */
int engine_setup__new(const struct engine_setup_opts *opts, struct engine_setup **out);
void engine_setup__free(struct engine_setup *es);
/* Trace this process too (a target, or a traced child). */
void engine_setup__attach(struct engine_setup *es, uint32_t tgid);
/* Every ~second: rescan maps for libraries loaded since (dlopen), drain hits. */
void engine_setup__tick(struct engine_setup *es, uint64_t now_ns);
/* Drain hits into the pipeline. Returns records drained (0 without probes) or -errno. */
int engine_setup__poll(struct engine_setup *es);
/* Append drop counters to c[*n] (c has room for 4 more). */
void engine_setup__counters(struct engine_setup *es, struct report_counter *c, int *n);
/* Per-probe hits, rates and estimated cost. */
void engine_setup__summary(struct engine_setup *es, FILE *f);

#endif /* TTFTRACE_ENGINE_SETUP_H */
