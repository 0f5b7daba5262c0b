/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * Loading a shared library into a running process and calling its entry
 * point, the way `ttftrace gpu-attach` loads the CUPTI collector
 * (docs/cupti.md A9). In order:
 *   1. refuse what ptrace must not touch: Yama's ptrace_scope, another
 *      user's process without CAP_SYS_PTRACE, another PID or mount
 *      namespace (a container), a process traced already, a library of the
 *      same name mapped already, a libc without dlopen(), a process stopped
 *      by a signal, another attach to it in progress;
 *   2. hold one thread that is blocked in a system call (inject_ptrace.h),
 *      trying the sleeping threads main thread first;
 *   3. in it, call dlopen(lib, RTLD_NOW), then entry(entry_arg) (found in the
 *      library's ELF file, at its load address in the process), and on a
 *      failed dlopen, dlerror() for the reason;
 *   4. restore the thread and detach, on every path.
 * SIGINT, SIGTERM, SIGHUP and SIGQUIT are blocked while a thread is held.
 */
#ifndef TTFTRACE_INJECT_LIB_H
#define TTFTRACE_INJECT_LIB_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#define INJECT_DEFAULT_TIMEOUT_MS 3000
#define INJECT_MAX_THREADS_TRIED 32	/* sleeping threads tried, main thread first */
#define INJECT_MAX_THREADS_SEEN 4096	/* threads looked at in /proc/PID/task */

struct inject_lib_opts {
	size_t sz;		/* sizeof(struct inject_lib_opts) */
	const char *lib_path;	/* absolute path: the process resolves it in its (our) mount namespace */
	const char *entry;	/* int entry(const char *arg), exported by the library; NULL: none */
	const char *entry_arg;	/* its argument (NULL: "") */
	int timeout_ms;		/* each stop and each call; 0: INJECT_DEFAULT_TIMEOUT_MS */
	const char *yama_path;	/* NULL: INJECT_YAMA_PATH */
};

struct inject_lib_result {
	pid_t tid;		/* the thread that made the calls; 0 when none was held */
	long syscall_nr;	/* the system call it was blocked in */
	int threads_tried;	/* threads stopped before one was blocked in a system call */
	uint64_t held_ns;	/* how long that thread was held stopped */
	int entry_ret;		/* what entry returned */
	char why[512];		/* on failure: one line, no "Error: " */
	char hint[256];		/* on failure, when one helps: "" otherwise */
};

/*
 * Load o->lib_path into process pid (see above). Returns 0, or:
 *   refused, the process untouched (inject_lib__refused() is true):
 *     -EPERM ptrace not allowed, -EXDEV another namespace, -EEXIST loaded
 *     already, -EBUSY traced or being attached already, -ENOSYS no dlopen,
 *     -EAGAIN no thread blocked in a system call (or the process is
 *     stopped), -EOPNOTSUPP not x86-64;
 *   -ESRCH no such process;
 *   -ECHILD the process exited during the attach;
 *   -ETIMEDOUT a call did not return in time, -EFAULT it faulted, -EIO
 *     dlopen failed (why has dlerror()) or ptrace did: the thread restored;
 *   -ENOMEM.
 * r->why (and r->hint) say what happened in words.
 */
int inject_lib__load(pid_t pid, const struct inject_lib_opts *o, struct inject_lib_result *r);

/* Whether inject_lib__load's error is a refusal (nothing was done to the process). */
bool inject_lib__refused(int err);

/* A short name of an x86-64 system call number ("clock_nanosleep"), or NULL. */
const char *inject_lib__syscall_name(long nr);

#endif /* TTFTRACE_INJECT_LIB_H */
