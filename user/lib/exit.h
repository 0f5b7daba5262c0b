/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * Exit codes of ttftrace: one table for the tracer and every subcommand
 * (pcie, copybw, replay, report, gpu-attach). Each number means one thing for every
 * command; a command returns only the codes that can happen to it and lists
 * them under EXIT STATUS in its --help. README.md "Exit codes" documents the
 * same table.
 *
 * The tracer's codes (2..10) are documented and tested as they are: never
 * renumber one, only add new ones at the end.
 */
#ifndef TTFTRACE_EXIT_H
#define TTFTRACE_EXIT_H

enum ttf_exit {
	TTF_EXIT_OK = 0,	   /* ok (tracer: also -c CMD ended, -d ended, Ctrl-C) */
	TTF_EXIT_FAULT = 1,	   /* a check found a fault (pcie: a link downtrained under load) */
	TTF_EXIT_USAGE = 2,	   /* bad command line */
	TTF_EXIT_PRIV = 3,	   /* missing privileges: CAP_BPF, CAP_PERFMON */
	TTF_EXIT_KERNEL = 4,	   /* the kernel lacks what is needed: BTF, a tracepoint,
				    * bpf_get_attach_cookie for --profile/--probe;
				    * pcie: the sysfs PCI tree is unreadable */
	TTF_EXIT_NO_TARGET = 5,	   /* nothing to work on: no such process, nothing matches
				    * --comm/--port; pcie, copybw: no (such) NVIDIA GPU */
	TTF_EXIT_NOT_ATTACHED = 6, /* BPF programs failed to load or attach */
	TTF_EXIT_TARGET_GONE = 7,  /* every traced process exited (-p; --port waits for the next) */
	TTF_EXIT_OUTPUT = 8,	   /* output cannot be written */
	TTF_EXIT_INTERNAL = 9,	   /* internal error (out of memory, ...) */
	TTF_EXIT_SLO = 10,	   /* an SLO not met (user/model/slo.h); the run itself succeeded */
	TTF_EXIT_BAD_INPUT = 11,   /* input not valid: replay: not a recording or corrupt;
				    * report: input missing, unreadable, not ttftrace NDJSON */
	TTF_EXIT_NO_CUDA = 12,	   /* the CUDA runtime or driver cannot be loaded */
	TTF_EXIT_CUDA_FAILED = 13, /* a CUDA call failed during a test (copybw) */
	TTF_EXIT_ATTACH_REFUSED = 14, /* gpu-attach, --gpu-attach: refused, the process untouched:
				       * ptrace not allowed (Yama, another user, no CAP_SYS_PTRACE,
				       * a container), the collector loaded already, no dlopen in
				       * its libc, traced already, stopped, no thread in a system call */
};

#endif /* TTFTRACE_EXIT_H */
