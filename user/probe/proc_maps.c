// SPDX-License-Identifier: GPL-2.0-only
#include <ctype.h>
#include <errno.h>
#include <fcntl.h>
#include <fnmatch.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "user/probe/proc_maps.h"
#include "user/probe/proc_root.h"

#define DELETED_SUFFIX " (deleted)"

static int push(struct proc_maps *pm, const struct proc_map *m)
{
	if (pm->n == pm->cap) {
		int cap = pm->cap ? pm->cap * 2 : 64;
		struct proc_map *v = realloc(pm->v, cap * sizeof(*v));

		if (!v)
			return -ENOMEM;
		pm->v = v;
		pm->cap = cap;
	}
	pm->v[pm->n++] = *m;
	return 0;
}

/* One line without its newline; len bytes at line. */
static int parse_line(const char *line, size_t len, struct proc_map *m)
{
	char buf[PATH_MAX + 128];
	int pos = 0;
	size_t plen;
	const char *p;

	/*
	 * A path longer than PATH_MAX (the kernel prints any length; a
	 * container can nest directories that deep) must not make the whole
	 * maps unreadable: the mapping is kept without its path (no file to open).
	 */
	bool cut = len >= sizeof(buf);

	if (cut)
		len = sizeof(buf) - 1;
	memcpy(buf, line, len);
	buf[len] = '\0';
	memset(m, 0, sizeof(*m));
	if (sscanf(buf, "%" SCNx64 "-%" SCNx64 " %4s %" SCNx64 " %x:%x %" SCNu64 "%n", &m->start,
		   &m->end, m->perms, &m->pgoff, &m->dev_major, &m->dev_minor, &m->inode,
		   &pos) != 7 || pos == 0)
		return -EINVAL;
	/* The pathname is everything after the padding that follows the inode. */
	p = buf + pos;
	while (*p == ' ' || *p == '\t')
		p++;
	plen = strlen(p);
	if (cut || plen >= sizeof(m->path)) {
		m->path[0] = '\0';
		m->path_too_long = true;
		return 0;
	}
	memcpy(m->path, p, plen + 1);
	if (plen > strlen(DELETED_SUFFIX) &&
	    !strcmp(m->path + plen - strlen(DELETED_SUFFIX), DELETED_SUFFIX)) {
		m->deleted = true;
		m->path[plen - strlen(DELETED_SUFFIX)] = '\0';
	}
	return 0;
}

int proc_maps__parse_str(const char *text, struct proc_maps *pm)
{
	const char *p = text;

	while (*p) {
		const char *nl = strchr(p, '\n');
		size_t len = nl ? (size_t)(nl - p) : strlen(p);
		struct proc_map m;
		int err;

		if (len) {
			err = parse_line(p, len, &m);
			if (err)
				return err;
			err = push(pm, &m);
			if (err)
				return err;
		}
		p += len + (nl ? 1 : 0);
	}
	return 0;
}

int proc_maps__read(pid_t pid, struct proc_maps *pm)
{
	char path[64], *text = NULL;
	size_t cap = 0;
	ssize_t n;
	FILE *f;
	int err;

	snprintf(path, sizeof(path), "/proc/%d/maps", (int)pid);
	f = fopen(path, "re");
	if (!f)
		return -errno;
	/* Read it whole: the file changes between reads, a line at a time keeps less skew. */
	n = getdelim(&text, &cap, '\0', f);
	err = n < 0 ? (ferror(f) ? -EIO : 0) : proc_maps__parse_str(text, pm);
	free(text);
	fclose(f);
	return err;
}

void proc_maps__free(struct proc_maps *pm)
{
	free(pm->v);
	memset(pm, 0, sizeof(*pm));
}

bool proc_map__is_exec_file(const struct proc_map *m)
{
	return m->inode != 0 && m->path[0] == '/' && m->perms[2] == 'x';
}

bool proc_map__matches(const struct proc_map *m, const char *pattern)
{
	const char *base = strrchr(m->path, '/');

	if (strchr(pattern, '/'))
		return fnmatch(pattern, m->path, 0) == 0;
	return fnmatch(pattern, base ? base + 1 : m->path, 0) == 0;
}

int proc_maps__find_exec(const struct proc_maps *pm, const char *pattern, int from)
{
	for (int i = from < 0 ? 0 : from; i < pm->n; i++)
		if (proc_map__is_exec_file(&pm->v[i]) && proc_map__matches(&pm->v[i], pattern))
			return i;
	return -1;
}

/* Length of a "/proc/<digits>/<what>/" prefix of path, or 0. */
static size_t proc_prefix_len(const char *path, const char *what)
{
	const char *p = path;
	size_t wl = strlen(what);

	if (strncmp(p, "/proc/", 6))
		return 0;
	p += 6;
	if (!isdigit((unsigned char)*p))
		return 0;
	while (isdigit((unsigned char)*p))
		p++;
	if (*p != '/' || strncmp(p + 1, what, wl) || (p[1 + wl] != '/' && p[1 + wl] != '\0'))
		return 0;
	return p + 1 + wl - path;
}

int proc_path__in_root(pid_t pid, const char *path, char *out, size_t out_sz)
{
	int n;

	if (path[0] != '/')
		return -EINVAL;
	if (pid <= 0 || proc_prefix_len(path, "root") || proc_prefix_len(path, "map_files"))
		n = snprintf(out, out_sz, "%s", path);
	else
		n = snprintf(out, out_sz, "/proc/%d/root%s", (int)pid, path);
	return n < 0 || (size_t)n >= out_sz ? -ENAMETOOLONG : 0;
}

/* Keep fd when it is a regular file with the inode maps shows; -ESTALE otherwise. */
static int checked(int fd, const struct proc_map *m, struct stat *st)
{
	if (fd < 0)
		return fd;
	if (fstat(fd, st) || !S_ISREG(st->st_mode) || (m->inode && st->st_ino != m->inode)) {
		close(fd);
		return -ESTALE;
	}
	return fd;
}

int proc_map__open(pid_t pid, const struct proc_map *m, char *out_path, size_t out_sz,
		   struct stat *st)
{
	int fd = -ENOENT, n;

	if (!m->deleted && m->path[0] == '/') {
		/* resolved inside the process's root: its symlinks cannot lead out (proc_root.h) */
		fd = proc_path__in_root(pid, m->path, out_path, out_sz);
		if (fd == 0)
			fd = checked(proc_root__open(pid, m->path), m, st);
		if (fd >= 0)
			return fd;
	}
	/*
	 * map_files links resolve to the mapped inode itself (needs
	 * CAP_SYS_ADMIN): a magic link, followed on purpose; no name inside
	 * the container is looked up.
	 */
	n = snprintf(out_path, out_sz, "/proc/%d/map_files/%" PRIx64 "-%" PRIx64, (int)pid,
		     m->start, m->end);
	if (n < 0 || (size_t)n >= out_sz)
		return -ENAMETOOLONG;
	fd = open(out_path, O_RDONLY | O_CLOEXEC | O_NOCTTY | O_NONBLOCK);
	return checked(fd < 0 ? -errno : fd, m, st);
}
