// SPDX-License-Identifier: GPL-2.0-only
#include <errno.h>
#include <fcntl.h>
#include <unistd.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <bpf/bpf.h>
#include "user/probe/bpf_util.h"

void bpf_util__sum_percpu(const struct bpf_map *map, uint32_t n, uint64_t *out)
{
	int ncpus = libbpf_num_possible_cpus();
	uint64_t *vals;

	memset(out, 0, n * sizeof(*out));
	if (ncpus <= 0)
		return;
	vals = calloc(ncpus, sizeof(*vals));
	if (!vals)
		return;
	for (uint32_t i = 0; i < n; i++) {
		if (bpf_map__lookup_elem(map, &i, sizeof(i), vals, ncpus * sizeof(*vals), 0))
			continue;
		for (int c = 0; c < ncpus; c++)
			out[i] += vals[c];
	}
	free(vals);
}

int bpf_util__prog_stats(const struct bpf_object *obj, const char **names, uint64_t *run_cnt,
			 uint64_t *run_time_ns, int max)
{
	struct bpf_program *prog;
	int n = 0;

	bpf_object__for_each_program(prog, obj) {
		struct bpf_prog_info info = {};
		__u32 len = sizeof(info);
		int fd = bpf_program__fd(prog);

		if (n >= max || fd < 0 || bpf_obj_get_info_by_fd(fd, &info, &len))
			continue;
		names[n] = bpf_program__name(prog);
		run_cnt[n] = info.run_cnt;
		run_time_ns[n] = info.run_time_ns;
		n++;
	}
	return n;
}

int bpf_util__push_link(struct bpf_link ***v, int *n, struct bpf_link *l)
{
	struct bpf_link **nv = realloc(*v, (*n + 1) * sizeof(*nv));

	if (!nv) {
		bpf_link__destroy(l);
		return -ENOMEM;
	}
	*v = nv;
	nv[(*n)++] = l;
	return 0;
}

/* Is fd (of this process) a perf event? readlink gives "anon_inode:[perf_event]". */
static bool fd_is_perf_event(int dirfd, const char *name)
{
	static const char want[] = "anon_inode:[perf_event]";
	char target[64];
	ssize_t n = readlinkat(dirfd, name, target, sizeof(target) - 1);

	return n == (ssize_t)sizeof(want) - 1 && !memcmp(target, want, n);
}

/*
 * In the grandchild after fork (one thread, no locks: raw syscalls only):
 * close every descriptor but the perf events, the links' own descriptors
 * keep[0..n_keep) and hold_fd; wait until hold_fd reads EOF (the tracer
 * closed its end: its own closes are done), then exit, which releases the
 * perf events here, the last holder (docs/kernel.md B13).
 */
_Noreturn static void release_perf_events(int hold_fd, const int *keep, int n_keep)
{
	char buf[4096];
	int dirfd = open("/proc/self/fd", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	long n;

	while (dirfd >= 0 && (n = syscall(SYS_getdents64, dirfd, buf, sizeof(buf))) > 0) {
		for (long off = 0; off < n;) {
			struct linux_dirent64 {
				uint64_t d_ino;
				int64_t d_off;
				unsigned short d_reclen;
				unsigned char d_type;
				char d_name[];
			} *d = (void *)(buf + off);
			int fd = 0;

			off += d->d_reclen;
			if (d->d_name[0] < '0' || d->d_name[0] > '9')
				continue;
			for (const char *c = d->d_name; *c; c++)
				fd = fd * 10 + (*c - '0');
			bool kept = fd == dirfd || fd == hold_fd;

			for (int i = 0; i < n_keep && !kept; i++)
				kept = keep[i] == fd;
			if (!kept && !fd_is_perf_event(dirfd, d->d_name))
				close(fd);
		}
	}
	if (dirfd >= 0)
		close(dirfd);
	for (;;) {
		long r = read(hold_fd, buf, sizeof(buf));

		if (r == 0 || (r < 0 && errno != EINTR))
			break;
	}
	_exit(0);
}

/*
 * Fork a grandchild that holds the perf events and keep[] until *hold_w is
 * closed; the child between exits at once and is reaped here, so no zombie
 * of ours is left.
 * Returns 0 with *hold_w set, or -errno (then nothing is held).
 */
static int hold_perf_events(int *hold_w, const int *keep, int n_keep)
{
	int p[2], status;
	pid_t pid;

	if (pipe2(p, O_CLOEXEC))
		return -errno;
	pid = fork();
	if (pid == 0) {
		if (fork() == 0)
			release_perf_events(p[0], keep, n_keep);
		_exit(0);
	}
	close(p[0]);
	if (pid < 0) {
		int err = -errno;

		close(p[1]);
		return err;
	}
	while (waitpid(pid, &status, 0) < 0 && errno == EINTR)
		;
	*hold_w = p[1];
	return 0;
}

void bpf_util__destroy_links(struct bpf_link **v, int n)
{
	int hold_w = -1, *keep = n ? calloc(n, sizeof(*keep)) : NULL;

	/* the link's descriptor (a bpf_link over the perf event, from BPF_LINK_CREATE) */
	for (int i = 0; keep && i < n; i++)
		keep[i] = bpf_link__fd(v[i]);
	if (keep)
		hold_perf_events(&hold_w, keep, n);
	free(keep);
	/* with the grandchild holding the perf events, these closes do not wait */
	for (int i = 0; i < n; i++)
		bpf_link__destroy(v[i]);
	if (hold_w >= 0)
		close(hold_w);
}
