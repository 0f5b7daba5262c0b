/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * /proc/PID/maps parsing and opening the mapped files of another process,
 * also across mount namespaces (containers): through /proc/PID/root/<path>,
 * with the prefix added exactly once, falling back to
 * /proc/PID/map_files/<start>-<end> (docs/cases.md #2).
 *
 * maps line format (proc(5)): "start-end perms offset major:minor inode path",
 * where the pathname is the rest of the line after the inode and its padding:
 * it may contain spaces, and a file unlinked since it was mapped carries a
 * " (deleted)" suffix.
 */
#ifndef TTFTRACE_PROC_MAPS_H
#define TTFTRACE_PROC_MAPS_H

#include <limits.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/stat.h>
#include <sys/types.h>

struct proc_map {
	uint64_t start;		/* virtual address range [start, end) */
	uint64_t end;
	uint64_t pgoff;		/* file offset of start, bytes */
	uint32_t dev_major;	/* device and inode as the kernel shows them */
	uint32_t dev_minor;
	uint64_t inode;
	char perms[5];		/* "r-xp" */
	bool deleted;		/* path had the " (deleted)" suffix (stripped from path) */
	bool path_too_long;	/* the path was PATH_MAX bytes or longer: left "" */
	/*
	 * "" for anonymous mappings; "[heap]" etc. kept. Owned by the struct
	 * proc_maps (proc_maps__free): a mapping is ~60 bytes, not PATH_MAX, so
	 * a rescan of a server's hundreds of lines allocates and faults in
	 * kilobytes, not megabytes.
	 */
	char *path;
};

struct proc_maps {
	struct proc_map *v;
	int n;
	int cap;
};

/* Parse maps text (NUL-terminated). Appends to *pm. 0, -EINVAL on a malformed line, -ENOMEM. */
int proc_maps__parse_str(const char *text, struct proc_maps *pm);
/* Read /proc/<pid>/maps. 0 or negative errno (-ENOENT: the process is gone). */
int proc_maps__read(pid_t pid, struct proc_maps *pm);
void proc_maps__free(struct proc_maps *pm);

/* A mapping of a regular file (inode != 0, path absolute) with execute permission. */
bool proc_map__is_exec_file(const struct proc_map *m);
/*
 * Whether the mapping's file matches pattern: an fnmatch(3) glob against the
 * basename, or against the whole path when the pattern contains '/'.
 */
bool proc_map__matches(const struct proc_map *m, const char *pattern);
/*
 * Index of the first executable file mapping at or after index from that
 * matches pattern, or -1.
 */
int proc_maps__find_exec(const struct proc_maps *pm, const char *pattern, int from);

/*
 * Write "/proc/<pid>/root" + path to out, unless path already starts with
 * "/proc/<digits>/root/" or "/proc/<digits>/map_files/" (then copy it as is):
 * the prefix is added exactly once. pid <= 0 copies path unchanged.
 * Returns 0, -EINVAL (path not absolute), -ENAMETOOLONG.
 */
int proc_path__in_root(pid_t pid, const char *path, char *out, size_t out_sz);

/*
 * Open the file behind mapping m of process pid, read-only, for ELF reading.
 * Tries <path> resolved inside /proc/PID/root first (proc_root__open: no
 * symlink leads out of the process's root) and keeps it when it is a regular
 * file with the inode maps shows; otherwise (deleted, replaced, or a name
 * that does not resolve in this namespace) /proc/PID/map_files/<start>-<end>.
 * out_path receives the name of what was opened, for messages
 * ("/proc/PID/root<path>" or the map_files link); attach through the fd
 * (/proc/self/fd/N), not by that name, which the container may re-point.
 * *st gets its fstat. Returns an fd, or negative errno.
 */
int proc_map__open(pid_t pid, const struct proc_map *m, char *out_path, size_t out_sz,
		   struct stat *st);

#endif /* TTFTRACE_PROC_MAPS_H */
