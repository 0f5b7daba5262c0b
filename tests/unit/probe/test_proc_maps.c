// SPDX-License-Identifier: GPL-2.0-only
/* proc_maps.c: maps lines (spaces, deleted), library globs, /proc/PID/root prefixing. */
#include <errno.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>
#include <cmocka.h>
#include "user/probe/proc_maps.h"

static const char maps_text[] =
	"55d0c0a00000-55d0c0a02000 r--p 00000000 08:01 1234                       /usr/bin/llama-server\n"
	"7f0000001000-7f0000203000 r-xp 00021000 fd:02 987654 /opt/my models/lib llama/libllama.so.1\n"
	"7f0000300000-7f0000400000 r-xp 00001000 00:2a 42   /tmp/gone lib.so (deleted)\n"
	"7f0000500000-7f0000501000 rw-p 00000000 00:00 0 \n"
	"7f0000600000-7f0000700000 rw-p 00000000 00:00 0                          [heap]\n"
	"7f0000800000-7f0000900000 r-xp 00002000 08:01 77   /usr/lib/libllama.v0.4.0.so\n";

static void test_parse_fields(void **state)
{
	struct proc_maps pm = { 0 };
	const struct proc_map *m;

	assert_int_equal(proc_maps__parse_str(maps_text, &pm), 0);
	assert_int_equal(pm.n, 6);
	m = &pm.v[1];
	assert_true(m->start == 0x7f0000001000ull && m->end == 0x7f0000203000ull);
	assert_true(m->pgoff == 0x21000);
	assert_int_equal(m->dev_major, 0xfd);
	assert_int_equal(m->dev_minor, 2);
	assert_true(m->inode == 987654);
	assert_string_equal(m->perms, "r-xp");
	/* the whole rest of the line, spaces included */
	assert_string_equal(m->path, "/opt/my models/lib llama/libllama.so.1");
	assert_false(m->deleted);
	m = &pm.v[2];
	assert_string_equal(m->path, "/tmp/gone lib.so");
	assert_true(m->deleted);
	assert_string_equal(pm.v[3].path, "");
	assert_string_equal(pm.v[4].path, "[heap]");
	assert_false(proc_map__is_exec_file(&pm.v[0]));	/* r--p */
	assert_true(proc_map__is_exec_file(&pm.v[1]));
	assert_false(proc_map__is_exec_file(&pm.v[3]));	/* anonymous */
	proc_maps__free(&pm);
}

static void test_parse_malformed(void **state)
{
	struct proc_maps pm = { 0 };

	assert_int_equal(proc_maps__parse_str("7f00-7f01 r-xp zz 08:01 1 /x\n", &pm), -EINVAL);
	proc_maps__free(&pm);
}

/* A path longer than PATH_MAX: that mapping loses its path, the others are kept. */
static void test_path_too_long_kept_without_path(void **state)
{
	static char text[3 * PATH_MAX];
	struct proc_maps pm = { 0 };
	int n = snprintf(text, sizeof(text), "7f0000001000-7f0000002000 r-xp 00000000 08:01 5 /");

	memset(text + n, 'd', PATH_MAX + 100);
	strcpy(text + n + PATH_MAX + 100, "\n7f0000800000-7f0000900000 r-xp 00002000 08:01 77 /x.so\n");
	assert_int_equal(proc_maps__parse_str(text, &pm), 0);
	assert_int_equal(pm.n, 2);
	assert_true(pm.v[0].path_too_long && pm.v[0].inode == 5);
	assert_string_equal(pm.v[0].path, "");
	assert_false(proc_map__is_exec_file(&pm.v[0]));
	assert_string_equal(pm.v[1].path, "/x.so");
	assert_false(pm.v[1].path_too_long);
	proc_maps__free(&pm);
}

static void test_find_exec_globs(void **state)
{
	struct proc_maps pm = { 0 };

	assert_int_equal(proc_maps__parse_str(maps_text, &pm), 0);
	assert_int_equal(proc_maps__find_exec(&pm, "libllama.so*", 0), 1);
	assert_int_equal(proc_maps__find_exec(&pm, "libllama.v*.so", 0), 5);
	assert_int_equal(proc_maps__find_exec(&pm, "libllama.so*", 2), -1);
	/* the binary's only mapping here is r--p: not executable */
	assert_int_equal(proc_maps__find_exec(&pm, "llama-server", 0), -1);
	/* a pattern with '/' matches the whole path */
	assert_int_equal(proc_maps__find_exec(&pm, "/opt/my models/*", 0), 1);
	assert_int_equal(proc_maps__find_exec(&pm, "libllama", 0), -1);
	proc_maps__free(&pm);
}

static void test_root_prefix_once(void **state)
{
	char out[256];

	assert_int_equal(proc_path__in_root(42, "/usr/lib/libllama.so", out, sizeof(out)), 0);
	assert_string_equal(out, "/proc/42/root/usr/lib/libllama.so");
	assert_int_equal(proc_path__in_root(42, "/proc/42/root/usr/lib/x.so", out, sizeof(out)), 0);
	assert_string_equal(out, "/proc/42/root/usr/lib/x.so");
	assert_int_equal(proc_path__in_root(42, "/proc/7/map_files/1000-2000", out, sizeof(out)),
			 0);
	assert_string_equal(out, "/proc/7/map_files/1000-2000");
	/* "/proc/self/..." and "/proc/42/rootfs/..." are ordinary paths inside the root */
	assert_int_equal(proc_path__in_root(42, "/proc/42/rootfs/a", out, sizeof(out)), 0);
	assert_string_equal(out, "/proc/42/root/proc/42/rootfs/a");
	assert_int_equal(proc_path__in_root(0, "/usr/lib/a.so", out, sizeof(out)), 0);
	assert_string_equal(out, "/usr/lib/a.so");
	assert_int_equal(proc_path__in_root(42, "lib/a.so", out, sizeof(out)), -EINVAL);
	assert_int_equal(proc_path__in_root(42, "/usr/lib/a.so", out, 10), -ENAMETOOLONG);
}

static void test_open_own_mapping(void **state)
{
	struct proc_maps pm = { 0 };
	char exe[PATH_MAX], path[PATH_MAX];
	struct stat st_exe, st;
	ssize_t n = readlink("/proc/self/exe", exe, sizeof(exe) - 1);
	int i, fd;

	assert_true(n > 0);
	exe[n] = '\0';
	assert_int_equal(stat(exe, &st_exe), 0);
	assert_int_equal(proc_maps__read(getpid(), &pm), 0);
	i = proc_maps__find_exec(&pm, exe, 0);
	assert_true(i >= 0);
	assert_true(pm.v[i].inode == st_exe.st_ino);
	fd = proc_map__open(getpid(), &pm.v[i], path, sizeof(path), &st);
	assert_true(fd >= 0);
	assert_true(st.st_ino == st_exe.st_ino && st.st_dev == st_exe.st_dev);
	assert_true(strncmp(path, "/proc/", 6) == 0 && strstr(path, "/root/"));
	close(fd);
	proc_maps__free(&pm);
}

/* The hand parser refuses what sscanf refused, and takes a line with no path at all. */
static void test_parse_edges(void **state)
{
	struct proc_maps pm = { 0 };

	assert_int_equal(proc_maps__parse_str("7f00-7f01 r-xp 00000000 08:01 12\n", &pm), 0);
	assert_int_equal(pm.n, 1);
	assert_true(pm.v[0].inode == 12 && pm.v[0].dev_major == 8 && pm.v[0].dev_minor == 1);
	assert_string_equal(pm.v[0].path, "");
	assert_string_equal(pm.v[0].perms, "r-xp");
	proc_maps__free(&pm);
	assert_int_equal(proc_maps__parse_str("7F00-7F01 r-xp 0000ABCD FE:0a 3 /x\n", &pm), 0);
	assert_true(pm.v[0].start == 0x7f00 && pm.v[0].pgoff == 0xabcd && pm.v[0].dev_major == 0xfe &&
		    pm.v[0].dev_minor == 10);
	proc_maps__free(&pm);
	/* 17 hex digits, a missing inode, a short perms field, an inode glued to the path */
	assert_int_equal(proc_maps__parse_str("10000000000000000-1 r-xp 0 08:01 1 /x\n", &pm), -EINVAL);
	assert_int_equal(proc_maps__parse_str("7f00-7f01 r-xp 00000000 08:01\n", &pm), -EINVAL);
	assert_int_equal(proc_maps__parse_str("7f00-7f01 r-x 00000000 08:01 1 /x\n", &pm), -EINVAL);
	assert_int_equal(proc_maps__parse_str("7f00-7f01 r-xp 00000000 08:01 1/x\n", &pm), -EINVAL);
	assert_int_equal(pm.n, 0);
	proc_maps__free(&pm);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_parse_fields),
		cmocka_unit_test(test_parse_malformed),
		cmocka_unit_test(test_parse_edges),
		cmocka_unit_test(test_path_too_long_kept_without_path),
		cmocka_unit_test(test_find_exec_globs),
		cmocka_unit_test(test_root_prefix_once),
		cmocka_unit_test(test_open_own_mapping),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
