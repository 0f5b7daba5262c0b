// SPDX-License-Identifier: GPL-2.0-only
/*
 * proc_root.c: a container-like tree whose symlinks point out of it
 * (absolute links to a host file and to /etc, ".." chains), resolved with
 * openat2(RESOLVE_IN_ROOT) and with the component walk (the fallback): both
 * open the file inside the tree or fail, never the host's, where a plain
 * open() of root + path does reach the host file. As root, also through
 * the real /proc/PID/root of a chroot()ed child.
 */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>
#include <cmocka.h>
#include "user/probe/proc_root.h"

static char top[PATH_MAX];	/* mkdtemp: top/root is the "container", top/host the host */
static char root[PATH_MAX + 8];

static void put(const char *rel, const char *text)
{
	char p[PATH_MAX * 2];
	FILE *f;

	snprintf(p, sizeof(p), "%s/%s", top, rel);
	f = fopen(p, "w");
	assert_non_null(f);
	fputs(text, f);
	fclose(f);
}

static void link_in(const char *target, const char *rel)
{
	char p[PATH_MAX * 2];

	snprintf(p, sizeof(p), "%s/%s", top, rel);
	assert_int_equal(symlink(target, p), 0);
}

static void dir(const char *rel)
{
	char p[PATH_MAX * 2];

	snprintf(p, sizeof(p), "%s/%s", top, rel);
	assert_int_equal(mkdir(p, 0755), 0);
}

static int setup(void **state)
{
	char t[PATH_MAX * 2], p[PATH_MAX * 2];

	snprintf(top, sizeof(top), "/tmp/ttf_proc_root_XXXXXX");
	if (!mkdtemp(top))
		return -1;
	snprintf(root, sizeof(root), "%s/root", top);
	dir("root");
	dir("root/usr");
	dir("root/usr/lib");
	dir("root/etc");
	dir("host");
	put("root/usr/lib/libreal.so", "INSIDE-LIB");
	put("root/etc/hostname", "CONTAINER");
	put("host/secret", "HOST-SECRET");
	link_in("usr/lib", "root/lib");			/* relative, inside */
	link_in("/usr/lib", "root/abs");		/* absolute: inside when resolved in root */
	link_in("/etc", "root/evil");			/* the host's /etc to a plain open */
	snprintf(t, sizeof(t), "%s/host/secret", top);
	link_in(t, "root/hostlink");			/* an absolute path to a host file */
	snprintf(t, sizeof(t), "%s/host", top);
	link_in(t, "root/hostdir");
	link_in("../../../../../../..", "root/up");	/* ".." past the root */
	link_in("loop", "root/loop");
	link_in("chain2", "root/chain1");
	link_in("/abs/libreal.so", "root/chain2");
	snprintf(p, sizeof(p), "%s/fifo", root);
	assert_int_equal(mkfifo(p, 0600), 0);
	return 0;
}

static int teardown(void **state)
{
	char cmd[PATH_MAX + 16];

	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", top);
	return system(cmd) == 0 ? 0 : -1;
}

/* What fd holds (its first bytes), closing it; "" when it is no regular file. */
static const char *content(int fd)
{
	static char buf[64];
	struct stat st;
	ssize_t n;

	assert_true(fd >= 0);
	assert_int_equal(fstat(fd, &st), 0);
	buf[0] = '\0';
	if (S_ISREG(st.st_mode)) {
		n = read(fd, buf, sizeof(buf) - 1);
		buf[n > 0 ? n : 0] = '\0';
	}
	close(fd);
	return buf;
}

typedef int (*open_fn)(int root_fd, const char *path);

static void check_tree(open_fn open_in)
{
	int rfd = open(root, O_PATH | O_DIRECTORY | O_CLOEXEC);

	assert_true(rfd >= 0);
	assert_string_equal(content(open_in(rfd, "/usr/lib/libreal.so")), "INSIDE-LIB");
	assert_string_equal(content(open_in(rfd, "/lib/libreal.so")), "INSIDE-LIB");
	assert_string_equal(content(open_in(rfd, "/abs/libreal.so")), "INSIDE-LIB");
	assert_string_equal(content(open_in(rfd, "//usr/./lib//libreal.so")), "INSIDE-LIB");
	assert_string_equal(content(open_in(rfd, "/chain1")), "INSIDE-LIB");
	/* absolute symlinks and ".." stay in the root */
	assert_string_equal(content(open_in(rfd, "/evil/hostname")), "CONTAINER");
	assert_string_equal(content(open_in(rfd, "/up/etc/hostname")), "CONTAINER");
	assert_string_equal(content(open_in(rfd, "/../../../etc/hostname")), "CONTAINER");
	/* a path to a host file, through a symlink: not found inside the root */
	assert_int_equal(open_in(rfd, "/hostlink"), -ENOENT);
	assert_int_equal(open_in(rfd, "/hostdir/secret"), -ENOENT);
	assert_int_equal(open_in(rfd, "/loop"), -ELOOP);
	assert_int_equal(open_in(rfd, "/usr/lib/libreal.so/x"), -ENOTDIR);
	assert_int_equal(open_in(rfd, "/nope"), -ENOENT);
	assert_int_equal(open_in(rfd, "usr/lib/libreal.so"), -EINVAL);
	/* a FIFO where a library was expected: opened without blocking */
	assert_string_equal(content(open_in(rfd, "/fifo")), "");
	close(rfd);
}

static void test_plain_open_escapes(void **state)
{
	char p[PATH_MAX * 2];

	/* why this matters: root + path through the kernel's own resolution leaves the tree */
	snprintf(p, sizeof(p), "%s/hostlink", root);
	assert_string_equal(content(open(p, O_RDONLY)), "HOST-SECRET");
}

static void test_openat2_stays_in_root(void **state)
{
	check_tree(proc_root__openat);
	assert_false(proc_root__walking());	/* openat2 exists on this kernel (5.6+) */
}

static void test_walk_stays_in_root(void **state)
{
	check_tree(proc_root__walk);
}

static void test_proc_prefix(void **state)
{
	char p[PATH_MAX * 3];

	/* "/proc/<pid>/root/..." resolves inside that pid's root (here "/") */
	snprintf(p, sizeof(p), "/proc/%d/root%s/usr/lib/libreal.so", (int)getpid(), root);
	assert_string_equal(content(proc_root__open(0, p)), "INSIDE-LIB");
	snprintf(p, sizeof(p), "%s/lib/libreal.so", root);
	assert_string_equal(content(proc_root__open(getpid(), p)), "INSIDE-LIB");
	assert_int_equal(proc_root__open(0, "relative"), -EINVAL);
}

/* As root: a chroot()ed child gives a real /proc/PID/root to resolve in. */
static void test_real_proc_pid_root(void **state)
{
	int pipefd[2], status;
	char c;
	pid_t pid;

	if (geteuid() != 0)
		skip();
	assert_int_equal(pipe(pipefd), 0);
	pid = fork();
	assert_true(pid >= 0);
	if (pid == 0) {
		char x = chroot(root) == 0 && chdir("/") == 0 ? 'y' : 'n';

		if (write(pipefd[1], &x, 1) != 1)
			_exit(1);
		pause();
		_exit(0);
	}
	assert_int_equal(read(pipefd[0], &c, 1), 1);
	assert_int_equal(c, 'y');
	assert_string_equal(content(proc_root__open(pid, "/evil/hostname")), "CONTAINER");
	assert_string_equal(content(proc_root__open(pid, "/lib/libreal.so")), "INSIDE-LIB");
	assert_int_equal(proc_root__open(pid, "/hostlink"), -ENOENT);
	kill(pid, SIGKILL);
	waitpid(pid, &status, 0);
	close(pipefd[0]);
	close(pipefd[1]);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_plain_open_escapes),
		cmocka_unit_test(test_openat2_stays_in_root),
		cmocka_unit_test(test_walk_stays_in_root),
		cmocka_unit_test(test_proc_prefix),
		cmocka_unit_test(test_real_proc_pid_root),
	};

	return cmocka_run_group_tests(tests, setup, teardown);
}
