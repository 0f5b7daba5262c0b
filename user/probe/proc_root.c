// SPDX-License-Identifier: GPL-2.0-only
/* Opening a file inside another process's root: see proc_root.h. */
#include <ctype.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <linux/openat2.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "user/lib/log.h"
#include "user/probe/proc_root.h"

#define OPEN_FLAGS (O_RDONLY | O_CLOEXEC | O_NOCTTY | O_NONBLOCK)
#define MAX_LINKS 40	/* path_resolution(7): Linux's limit on symlinks in one lookup */
#define MAX_DEPTH 256	/* directories held open by the walk */
/* openat2(2): EAGAIN when a concurrent rename could have let ".." escape; retry. */
#define OPENAT2_TRIES 8

static bool walking;

bool proc_root__walking(void)
{
	return walking;
}

/* Whether rest holds no further component (only slashes). */
static bool last_component(const char *rest)
{
	return rest[strspn(rest, "/")] == '\0';
}

int proc_root__walk(int root_fd, const char *path)
{
	char rest[2 * PATH_MAX], tmp[2 * PATH_MAX], link[PATH_MAX], name[NAME_MAX + 1];
	int dirs[MAX_DEPTH], d = 0, links = 0, fd;
	size_t pos = 0;

	if (path[0] != '/')
		return -EINVAL;
	if (strlen(path) >= sizeof(rest))
		return -ENAMETOOLONG;
	strcpy(rest, path);
	dirs[0] = root_fd;	/* the caller's */
	for (;;) {
		const char *p = rest + pos + strspn(rest + pos, "/");
		size_t len = strcspn(p, "/");
		ssize_t n;

		if (!len) {	/* the path names a directory */
			fd = openat(dirs[d], ".", OPEN_FLAGS);
			fd = fd < 0 ? -errno : fd;
			break;
		}
		if (len > NAME_MAX) {
			fd = -ENAMETOOLONG;
			break;
		}
		memcpy(name, p, len);
		name[len] = '\0';
		pos = p + len - rest;
		if (!strcmp(name, "."))
			continue;
		if (!strcmp(name, "..")) {
			if (d > 0)	/* never above the root */
				close(dirs[d--]);
			continue;
		}
		if (last_component(rest + pos)) {
			fd = openat(dirs[d], name, OPEN_FLAGS | O_NOFOLLOW);
			if (fd >= 0 || errno != ELOOP) {
				fd = fd < 0 ? -errno : fd;
				break;
			}
			/* ELOOP with O_NOFOLLOW: the last component is a symlink */
			n = readlinkat(dirs[d], name, link, sizeof(link) - 1);
		} else {
			int nfd = openat(dirs[d], name, O_PATH | O_NOFOLLOW | O_CLOEXEC);
			struct stat st;

			if (nfd < 0 || fstat(nfd, &st)) {
				fd = -errno;
				if (nfd >= 0)
					close(nfd);
				break;
			}
			if (S_ISDIR(st.st_mode)) {
				if (d + 1 == MAX_DEPTH) {
					close(nfd);
					fd = -ENAMETOOLONG;
					break;
				}
				dirs[++d] = nfd;
				continue;
			}
			if (!S_ISLNK(st.st_mode)) {
				close(nfd);
				fd = -ENOTDIR;
				break;
			}
			n = readlinkat(nfd, "", link, sizeof(link) - 1);
			close(nfd);
		}
		/* A symlink: its text replaces it, from the root when absolute. */
		if (n < 0 || ++links > MAX_LINKS) {
			fd = n < 0 ? -errno : -ELOOP;
			break;
		}
		if (n == 0) {
			fd = -ENOENT;
			break;
		}
		link[n] = '\0';
		if ((size_t)snprintf(tmp, sizeof(tmp), "%s/%s", link, rest + pos) >= sizeof(tmp)) {
			fd = -ENAMETOOLONG;
			break;
		}
		strcpy(rest, tmp);
		pos = 0;
		if (link[0] == '/')
			while (d > 0)
				close(dirs[d--]);
	}
	while (d > 0)
		close(dirs[d--]);
	return fd;
}

static int openat2_in_root(int root_fd, const char *path)
{
	struct open_how how = {
		.flags = OPEN_FLAGS,
		.resolve = RESOLVE_IN_ROOT | RESOLVE_NO_MAGICLINKS,
	};

	for (int i = 0; i < OPENAT2_TRIES; i++) {
		long fd = syscall(SYS_openat2, root_fd, path, &how, sizeof(how));

		if (fd >= 0)
			return (int)fd;
		if (errno != EAGAIN)
			return -errno;
	}
	return -EAGAIN;
}

int proc_root__openat(int root_fd, const char *path)
{
	int fd;

	if (path[0] != '/')
		return -EINVAL;
	if (!walking) {
		fd = openat2_in_root(root_fd, path);
		if (fd != -ENOSYS && fd != -EPERM)
			return fd;
		walking = true;
		ttf_info("openat2() unavailable (%s): container paths are resolved one component "
			 "at a time", strerror(-fd));
	}
	return proc_root__walk(root_fd, path);
}

/* Length of a "/proc/<digits>/root" prefix of path followed by '/' or the end, or 0. */
static size_t root_prefix(const char *path, pid_t *pid)
{
	const char *p = path + 6;
	long v = 0;

	if (strncmp(path, "/proc/", 6) || !isdigit((unsigned char)*p))
		return 0;
	for (; isdigit((unsigned char)*p); p++)
		if ((v = v * 10 + (*p - '0')) > INT_MAX)
			return 0;
	if (strncmp(p, "/root", 5) || (p[5] != '/' && p[5] != '\0'))
		return 0;
	*pid = (pid_t)v;
	return p + 5 - path;
}

int proc_root__open(pid_t pid, const char *path)
{
	char root[64];
	size_t skip;
	int rfd, fd;

	if (path[0] != '/')
		return -EINVAL;
	skip = root_prefix(path, &pid);
	path += skip;
	if (!*path)
		path = "/";
	if (pid > 0)
		snprintf(root, sizeof(root), "/proc/%d/root", (int)pid);
	else
		snprintf(root, sizeof(root), "/");
	/* /proc/PID/root is itself a magic link: followed on purpose, here only. */
	rfd = open(root, O_PATH | O_DIRECTORY | O_CLOEXEC);
	if (rfd < 0)
		return -errno;
	fd = proc_root__openat(rfd, path);
	close(rfd);
	return fd;
}
