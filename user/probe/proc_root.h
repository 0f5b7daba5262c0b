/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * Opening a file as another process sees it, without leaving that process's
 * root: the files ttftrace (root) parses and uprobes belong to a container,
 * which controls every symlink on their paths. A plain
 * open("/proc/PID/root/usr/lib/libssl.so.3") resolves an absolute symlink
 * on that path (say usr -> /etc) against the tracer's own root, the host's.
 *
 * Here the path is resolved with /proc/PID/root as the root:
 *  - openat2(2) with RESOLVE_IN_ROOT | RESOLVE_NO_MAGICLINKS (Linux 5.6):
 *    absolute symlinks and ".." stay inside, /proc magic links are refused
 *    (docs/kernel.md "Opening a container's files");
 *  - where openat2 is missing (ENOSYS, or EPERM from a seccomp filter), the
 *    same rule by hand: one component at a time with O_PATH | O_NOFOLLOW,
 *    a symlink's text read with readlinkat(2) and resolved again from the
 *    root (absolute) or its directory (relative), ".." never above the root,
 *    at most 40 symlinks (ELOOP, as path_resolution(7)).
 * Files are opened O_NONBLOCK | O_NOCTTY too: a FIFO or a terminal planted
 * where a library was expected neither blocks nor becomes a controlling tty.
 */
#ifndef TTFTRACE_PROC_ROOT_H
#define TTFTRACE_PROC_ROOT_H

#include <stdbool.h>
#include <sys/types.h>

/*
 * Open path (absolute, as process pid sees it) read-only inside
 * /proc/<pid>/root. A path that already starts with "/proc/<N>/root/" is
 * resolved inside N's root; pid <= 0 means this process's root. Returns an
 * fd (O_CLOEXEC) or negative errno: -EINVAL (path not absolute), -ELOOP
 * (too many symlinks, or a magic link), -ENOENT etc.
 */
int proc_root__open(pid_t pid, const char *path);
/* The same below an open directory fd taken as the root. */
int proc_root__openat(int root_fd, const char *path);
/* The fallback without openat2 (proc_root__openat uses it on ENOSYS/EPERM); for tests. */
int proc_root__walk(int root_fd, const char *path);
/* Whether proc_root__openat has fallen back to the walk (openat2 missing). */
bool proc_root__walking(void);

#endif /* TTFTRACE_PROC_ROOT_H */
