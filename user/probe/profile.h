/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * Engine profiles: which functions of an inference engine to uprobe, as data
 * files (profiles/<engine>.ini, parsed with inih), and the generic
 * `--probe PATH:SYMBOL=ROLE[:ARGSPEC]` spec. Both produce struct probe_spec.
 *
 * Profile format:
 *   [engine]
 *   name  = llama.cpp
 *   match = libllama.so*        ; fnmatch glob on the basename of a mapped file
 *   match = llama-server        ; (or on the whole path when it contains '/')
 *   [probe llama_decode]        ; probe name
 *   symbol      = llama_decode
 *   role        = step          ; step | tokenize | sample | sync | detokenize
 *   want_return = yes           ; yes | no
 *   arg         = llama_batch:8 ; none | reg:N | stack:OFF | llama_batch:OFF
 *   batch       = n_tokens:0,pos:24,n_seq_id:32,seq_id:40,logits:48
 *                               ; optional: where a llama_batch-like struct keeps
 *                               ; its fields (byte offsets; these are llama.cpp's,
 *                               ; the default; bpf/engine.h struct ttf_batch_layout)
 *   only_with   = libggml-cuda*  ; optional, repeatable: attach only in a process
 *                               ; that maps a file matching one of these globs
 *                               ; (a probe that tells something only there, such
 *                               ; as a GPU backend's sync, costs a trap per call
 *                               ; everywhere else)
 *
 * ARGSPEC reads the step size at entry (bpf/engine.h enum ttf_arg_kind):
 * reg:N the Nth integer argument register (1-5), stack:OFF an int32 at
 * sp + OFF, llama_batch:OFF a struct llama_batch passed in memory at sp + OFF.
 */
#ifndef TTFTRACE_PROFILE_H
#define TTFTRACE_PROFILE_H

#include <limits.h>
#include <stdbool.h>
#include <stddef.h>
#include "bpf/engine.h"

#define PROFILE_MAX_MATCH 8
#define PROFILE_MAX_ONLY_WITH 16
#define PROFILE_MAX_PROBES 16
#define PROBE_NAME_LEN 128
#define PROBE_SYMBOL_LEN 128

struct probe_spec {
	char name[PROBE_NAME_LEN];	/* probe name; the symbol for --probe specs */
	char symbol[PROBE_SYMBOL_LEN];
	/* --probe: an absolute path (in the target's mount namespace) or a match glob. */
	char path[PATH_MAX];
	int role;			/* enum ttf_engine_role (bpf/engine.h) */
	bool want_return;
	bool has_batch;			/* a `batch =` line set arg.batch */
	struct ttf_engine_probe_cfg arg;
	/* only_with globs: attached only where one matches a mapped file (none: always) */
	char only_with[PROFILE_MAX_ONLY_WITH][64];
	int n_only_with;
};

struct engine_profile {
	char name[64];
	char match[PROFILE_MAX_MATCH][128];
	int n_match;
	struct probe_spec probes[PROFILE_MAX_PROBES];
	int n_probes;
};

/*
 * Parse profile text / a file. On error returns -EINVAL (-ENOENT: no such
 * file) and writes "FILE:LINE: what" into err.
 */
int profile__parse_string(const char *text, const char *file_name, struct engine_profile *p,
			  char *err, size_t err_sz);
int profile__load_file(const char *path, struct engine_profile *p, char *err, size_t err_sz);
/*
 * Load a profile by name ("llamacpp") or path (contains '/' or ends in
 * ".ini"). Names are looked up as NAME.ini in $TTFTRACE_PROFILE_DIR, then
 * profiles/ next to the executable and two levels up from it (the source
 * tree, for .output/bin tools), ../share/ttftrace/profiles from it (an
 * installed tree), then TTF_PROFILE_DIR, $(PREFIX)/share/ttftrace/profiles
 * (user/lib/install_paths.h).
 */
int profile__load(const char *name_or_path, struct engine_profile *p, char *err, size_t err_sz);

/*
 * Parse "PATH:SYMBOL=ROLE[:ARGSPEC]"; PATH may be absolute or a match glob
 * for a mapped file (e.g. "libfoo.so*"). want_return is set for every role.
 * 0 or -EINVAL with a message in err.
 */
int probe_spec__parse(const char *s, struct probe_spec *out, char *err, size_t err_sz);
/*
 * Parse a batch layout "FIELD:OFFSET,..." (fields n_tokens, pos, n_seq_id,
 * seq_id, logits; unnamed ones keep llama.cpp's) into *l. 0 or -EINVAL.
 */
int probe_batch__parse(const char *s, struct ttf_batch_layout *l);
/* Parse ARGSPEC into *cfg. 0 or -EINVAL. */
int probe_arg__parse(const char *s, struct ttf_engine_probe_cfg *cfg);
/* "step", ... ; -EINVAL for an unknown name. */
int ttf_role__parse(const char *s);
const char *ttf_role__name(int role);

#endif /* TTFTRACE_PROFILE_H */
