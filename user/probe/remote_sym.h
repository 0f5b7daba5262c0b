/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * The address of a function in another process: the load bias of the
 * library's mapping (/proc/PID/maps, elf_file__bias_for_mapping) plus the
 * symbol's value in the library's ELF file, read through the process's own
 * view of the file (proc_map__open: also across mount namespaces).
 */
#ifndef TTFTRACE_REMOTE_SYM_H
#define TTFTRACE_REMOTE_SYM_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "user/probe/proc_maps.h"

/*
 * Address in process pid of function sym of the first executable file
 * mapping of pm that matches pattern (proc_map__matches: a glob on the
 * basename, or on the whole path when it contains '/'). path (may be NULL)
 * gets the mapped file's path. Returns 0; -ENOENT (no such mapping),
 * -ENOEXEC (the file has no such function), -ERANGE (no mapping gives the
 * load bias), or the errno of opening or reading the file.
 */
int remote_sym__find(pid_t pid, const struct proc_maps *pm, const char *pattern, const char *sym,
		     uint64_t *addr, char *path, size_t path_sz);

#endif /* TTFTRACE_REMOTE_SYM_H */
