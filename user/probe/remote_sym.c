// SPDX-License-Identifier: GPL-2.0-only
/* Address of a function in another process: see remote_sym.h. */
#include <errno.h>
#include <stdio.h>
#include <unistd.h>

#include "user/probe/elf_sym.h"
#include "user/probe/remote_sym.h"

int remote_sym__find(pid_t pid, const struct proc_maps *pm, const char *pattern, const char *sym,
		     uint64_t *addr, char *path, size_t path_sz)
{
	struct elf_sym_info info;
	struct elf_file *ef;
	char opened[PATH_MAX];
	struct stat st;
	uint64_t bias;
	int i, fd, err;

	i = proc_maps__find_exec(pm, pattern, 0);
	if (i < 0)
		return -ENOENT;
	fd = proc_map__open(pid, &pm->v[i], opened, sizeof(opened), &st);
	if (fd < 0)
		return fd;
	ef = elf_file__open_fd(fd, &err);
	if (!ef) {
		close(fd);
		return err;
	}
	err = elf_file__find_func(ef, sym, &info);
	if (err == -ENOENT)
		err = -ENOEXEC;
	/* The bias from any executable mapping of the same file that starts a PT_LOAD segment. */
	for (int j = i; !err && j >= 0; j = proc_maps__find_exec(pm, pattern, j + 1)) {
		const struct proc_map *m = &pm->v[j];

		if (m->inode != pm->v[i].inode)
			continue;
		if (!elf_file__bias_for_mapping(ef, m->start, m->end, m->pgoff, &bias)) {
			*addr = bias + info.vaddr;
			break;
		}
		if (proc_maps__find_exec(pm, pattern, j + 1) < 0)
			err = -ERANGE;
	}
	elf_file__close(ef);
	close(fd);
	if (!err && path)
		snprintf(path, path_sz, "%s", pm->v[i].path);
	return err;
}
