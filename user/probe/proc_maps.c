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

/* The path of every mapping without one (never written: a path is cut only when allocated). */
static char no_path[1];

/* A free slot at the end of pm->v (not counted until the caller bumps pm->n), or NULL. */
static struct proc_map *reserve(struct proc_maps *pm)
{
	if (pm->n == pm->cap) {
		int cap = pm->cap ? pm->cap * 2 : 64;
		struct proc_map *v = realloc(pm->v, cap * sizeof(*v));

		if (!v)
			return NULL;
		pm->v = v;
		pm->cap = cap;
	}
	return &pm->v[pm->n];
}

/* Hex digits at *p up to a non-hex byte; 0 when there were none or more than 16. */
static int hex_field(const char **p, const char *end, uint64_t *v)
{
	const char *s = *p;
	uint64_t x = 0;

	for (; *p < end; (*p)++) {
		unsigned c = (unsigned char)**p, d;

		if (c >= '0' && c <= '9')
			d = c - '0';
		else if ((c | 0x20) >= 'a' && (c | 0x20) <= 'f')
			d = (c | 0x20) - 'a' + 10;
		else
			break;
		x = x << 4 | d;
	}
	*v = x;
	return *p > s && *p - s <= 16;
}

static int dec_field(const char **p, const char *end, uint64_t *v)
{
	const char *s = *p;
	uint64_t x = 0;

	for (; *p < end && **p >= '0' && **p <= '9' && *p - s < 20; (*p)++)
		x = x * 10 + (uint64_t)(**p - '0');
	*v = x;
	return *p > s;
}

/* One separator byte c at *p. */
static int sep(const char **p, const char *end, char c)
{
	if (*p >= end || **p != c)
		return 0;
	(*p)++;
	return 1;
}

/*
 * One line without its newline; len bytes at line. Parsed in place, by
 * hand: a traced server's maps are read every rescan (hundreds of lines),
 * and sscanf plus copies of PATH_MAX bytes per line were most of the
 * tracer's idle CPU. The path is allocated at its length (struct proc_map).
 */
static int parse_line(const char *line, size_t len, struct proc_map *m)
{
	const char *p = line, *end = line + len;
	uint64_t maj, min;
	size_t plen;

	m->deleted = m->path_too_long = false;
	m->path = no_path;
	if (!hex_field(&p, end, &m->start) || !sep(&p, end, '-') ||
	    !hex_field(&p, end, &m->end) || !sep(&p, end, ' ') || end - p < 5 || p[4] != ' ')
		return -EINVAL;
	memcpy(m->perms, p, 4);
	m->perms[4] = '\0';
	p += 5;
	if (!hex_field(&p, end, &m->pgoff) || !sep(&p, end, ' ') ||
	    !hex_field(&p, end, &maj) || !sep(&p, end, ':') || !hex_field(&p, end, &min) ||
	    maj > UINT32_MAX || min > UINT32_MAX || !sep(&p, end, ' ') ||
	    !dec_field(&p, end, &m->inode))
		return -EINVAL;
	m->dev_major = (uint32_t)maj;
	m->dev_minor = (uint32_t)min;
	if (p < end && *p != ' ' && *p != '\t')
		return -EINVAL;
	/* The pathname is everything after the padding that follows the inode. */
	while (p < end && (*p == ' ' || *p == '\t'))
		p++;
	plen = (size_t)(end - p);
	/*
	 * A path longer than PATH_MAX (the kernel prints any length; a
	 * container can nest directories that deep) must not make the whole
	 * maps unreadable: the mapping is kept without its path (no file to open).
	 */
	if (plen >= PATH_MAX) {
		m->path_too_long = true;
		return 0;
	}
	if (!plen)
		return 0;
	m->path = malloc(plen + 1);
	if (!m->path) {
		m->path = no_path;
		return -ENOMEM;
	}
	memcpy(m->path, p, plen);
	m->path[plen] = '\0';
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

		if (len) {
			struct proc_map *m = reserve(pm);
			int err;

			if (!m)
				return -ENOMEM;
			err = parse_line(p, len, m);
			if (err)
				return err;
			pm->n++;
		}
		p += len + (nl ? 1 : 0);
	}
	return 0;
}

int proc_maps__read(pid_t pid, struct proc_maps *pm)
{
	char path[64], *text = NULL, *t;
	size_t cap = 0, len = 0;
	ssize_t n;
	int fd, err = 0;

	snprintf(path, sizeof(path), "/proc/%d/maps", (int)pid);
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	/*
	 * Read it whole, in large reads (the file changes between reads; fewer
	 * reads keep less skew, and cost fewer syscalls than stdio's 1 KiB).
	 */
	for (;;) {
		if (cap - len < 4096) {
			t = realloc(text, cap ? cap * 2 : 65536);
			if (!t) {
				err = -ENOMEM;
				break;
			}
			text = t;
			cap = cap ? cap * 2 : 65536;
		}
		n = read(fd, text + len, cap - len - 1);
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0) {
			err = -EIO;
			break;
		}
		if (n == 0)
			break;
		len += (size_t)n;
	}
	if (!err && text) {
		text[len] = '\0';
		err = proc_maps__parse_str(text, pm);
	}
	free(text);
	close(fd);
	return err;
}

void proc_maps__free(struct proc_maps *pm)
{
	for (int i = 0; i < pm->n; i++)
		if (pm->v[i].path != no_path)
			free(pm->v[i].path);
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
