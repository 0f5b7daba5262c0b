/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * Checks made before ptrace touches another process (docs/cupti.md A9):
 * Yama's ptrace_scope, the kernel's same-user rule for ptrace without
 * CAP_SYS_PTRACE, namespace boundaries, thread states. Pure functions take
 * the text of /proc files, so that tests need no second user.
 */
#ifndef TTFTRACE_INJECT_CHECK_H
#define TTFTRACE_INJECT_CHECK_H

#include <stdbool.h>
#include <stddef.h>
#include <sys/types.h>

#define INJECT_YAMA_PATH "/proc/sys/kernel/yama/ptrace_scope"

/* Real, effective, saved and filesystem ids: the Uid:/Gid: lines of /proc/PID/status. */
struct inject_ids {
	unsigned int uid[4];
	unsigned int gid[4];
};

/*
 * Yama's ptrace_scope from path (NULL: INJECT_YAMA_PATH): 0 classic, 1
 * restricted (only descendants, or a process that named us with
 * PR_SET_PTRACER), 2 admin only (CAP_SYS_PTRACE), 3 no attach at all.
 * Returns the scope, -ENOENT when Yama is not there, -EINVAL on bad content.
 */
int inject_check__yama_scope(const char *path);

/*
 * Whether Yama allows the attach: 0, or -EPERM with the reason in why.
 * Scope 1 is not refused here (PR_SET_PTRACER cannot be seen from outside):
 * the kernel decides, and a refusal names the scope.
 */
int inject_check__yama(int scope, bool cap_sys_ptrace, char *why, size_t len);

/* Parse the Uid: and Gid: lines of a /proc/PID/status text. 0 or -EINVAL. */
int inject_check__parse_ids(const char *status_text, struct inject_ids *out);
/* The same for process pid (0: this process). 0, -ENOENT (gone), -errno. */
int inject_check__read_ids(pid_t pid, struct inject_ids *out);

/*
 * The kernel's rule for ptrace without CAP_SYS_PTRACE (ptrace(2), "Ptrace
 * access mode checking", REALCREDS): the tracer's real uid equals the
 * target's real, effective and saved uid, and the same for gids. True when
 * it holds.
 */
bool inject_check__same_user(const struct inject_ids *tracer, const struct inject_ids *target);

/*
 * Whether process pid is in this process's namespace ns ("pid", "mnt",
 * "net"): compares /proc/self/ns/NS with /proc/PID/ns/NS (device and
 * inode, namespaces(7)). 1 same, 0 different, -errno (-EACCES: not allowed
 * to look, -ENOENT: gone).
 */
int inject_check__same_ns(pid_t pid, const char *ns);

/*
 * State letter of thread tid of process pid from /proc/PID/task/TID/stat
 * (proc(5): R running, S sleeping, D disk sleep, T stopped, t tracing stop,
 * Z zombie, ...), or -errno.
 */
int inject_check__thread_state(pid_t pid, pid_t tid);

/* The third field of a /proc/.../stat text (after "pid (comm)"), or -EINVAL. */
int inject_check__parse_state(const char *stat_text);

/* TracerPid: of a /proc/PID/status text (0: not traced), or -EINVAL. */
int inject_check__parse_tracer(const char *status_text);

#endif /* TTFTRACE_INJECT_CHECK_H */
