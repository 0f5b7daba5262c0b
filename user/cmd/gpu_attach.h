/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * Loading the CUPTI collector into a running process, for `ttftrace
 * gpu-attach` and `ttftrace --gpu-attach` (docs/cupti.md A9): finds the
 * library, runs the injection (user/probe/inject_lib.h) in a child process
 * that exits when done (so that nothing stays attached, whatever happens),
 * prints the outcome, and maps it to an exit code.
 */
#ifndef TTFTRACE_GPU_ATTACH_H
#define TTFTRACE_GPU_ATTACH_H

#include <stddef.h>
#include <stdio.h>
#include <sys/types.h>

#define GPU_ATTACH_LIB_NAME "libttftrace-cupti.so"
#define GPU_ATTACH_ENTRY "ttftrace_cupti_attach"

struct gpu_attach_opts {
	const char *lib;	/* absolute path of the collector (gpu_attach__find_lib) */
	const char *sock;	/* where it reports: "@name" or a path (gpu_attach__sock) */
	int timeout_ms;		/* each ptrace stop and call; 0: the default (3000) */
	FILE *out;		/* the success line; errors go to stderr */
	const char *yama_path;	/* NULL: the real one (tests point it at a file) */
};

/*
 * The collector: path when given (must exist), else GPU_ATTACH_LIB_NAME in
 * .output/ next to the ttftrace binary, next to it, in ../lib/ttftrace from
 * it, or in TTF_LIB_DIR (user/lib/install_paths.h). out gets the absolute
 * path. 0, or -ENOENT with "Error:"/"HINT:" printed.
 */
int gpu_attach__find_lib(const char *path, char *out, size_t len);
/* The same search without a path given, and silent: 0 or -ENOENT. */
int gpu_attach__search_lib(char *out, size_t len);

/* Where collectors report: sock if given, else $TTFTRACE_CUPTI_SOCK, else the default. */
const char *gpu_attach__sock(const char *sock);

/*
 * Load the collector into pid and call its entry with o->sock. Prints one
 * line on o->out on success, "Error: ..." and "HINT: ..." on stderr
 * otherwise. Returns TTF_EXIT_OK; TTF_EXIT_ATTACH_REFUSED (nothing done to
 * the process), TTF_EXIT_NO_TARGET, TTF_EXIT_TARGET_GONE (it exited during
 * the attach), TTF_EXIT_NOT_ATTACHED (the library did not load or start;
 * the process was restored), TTF_EXIT_INTERNAL.
 */
int gpu_attach__run(pid_t pid, const struct gpu_attach_opts *o);

/*
 * Whether this build has the collector (the Makefile builds it only where it
 * finds the CUPTI headers, docs/gpu.md "Building the collector"), in
 * user/cmd/cupti_build.c. gpu_attach__build_line prints "cupti ..." for
 * --version; gpu_attach__build_note prints, only when it was not built, one
 * line saying so and how to build it (the tracer's start-up).
 */
int gpu_attach__built(void);
void gpu_attach__build_line(FILE *f);
void gpu_attach__build_note(FILE *f);

#endif /* TTFTRACE_GPU_ATTACH_H */
