// SPDX-License-Identifier: GPL-2.0-only
/*
 * The checks before a ptrace attach (user/probe/inject_check.h) and the
 * ptrace call on a child of this test (user/probe/inject_ptrace.h).
 */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <fcntl.h>
#include <string.h>
#include <unistd.h>
#include <sys/wait.h>
#include <cmocka.h>
#include "user/probe/inject_check.h"
#include "user/probe/inject_ptrace.h"

/* /proc/PID/status of a setuid-style process: real 1000, effective 0, saved 0. */
static const char status_mixed[] =
	"Name:\tx\nState:\tS (sleeping)\nTgid:\t42\nPid:\t42\nPPid:\t1\nTracerPid:\t0\n"
	"Uid:\t1000\t0\t0\t0\nGid:\t1000\t1000\t1000\t1000\nFDSize:\t64\n";
static const char status_plain[] =
	"Name:\ty\nTracerPid:\t977\nUid:\t1000\t1000\t1000\t1000\nGid:\t100\t100\t100\t100\n";

static void test_parse_ids(void **state)
{
	struct inject_ids a, b;

	assert_int_equal(inject_check__parse_ids(status_mixed, &a), 0);
	assert_int_equal(a.uid[0], 1000);
	assert_int_equal(a.uid[1], 0);
	assert_int_equal(a.uid[2], 0);
	assert_int_equal(a.gid[3], 1000);
	assert_int_equal(inject_check__parse_ids(status_plain, &b), 0);
	assert_int_equal(b.gid[0], 100);
	assert_int_equal(inject_check__parse_ids("Name:\tz\nUid:\t1\t2\n", &a), -EINVAL);
	assert_int_equal(inject_check__parse_ids("Name:\tz\n", &a), -EINVAL);
}

static void test_same_user_rule(void **state)
{
	struct inject_ids me, mixed, plain, other_gid;

	assert_int_equal(inject_check__parse_ids(status_plain, &me), 0);
	assert_int_equal(inject_check__parse_ids(status_plain, &plain), 0);
	assert_int_equal(inject_check__parse_ids(status_mixed, &mixed), 0);
	other_gid = plain;
	other_gid.gid[2] = 5; /* saved gid differs */
	assert_true(inject_check__same_user(&me, &plain));
	/* euid 0 of a process started by uid 1000: the kernel wants CAP_SYS_PTRACE */
	assert_false(inject_check__same_user(&me, &mixed));
	assert_false(inject_check__same_user(&me, &other_gid));
}

static void test_yama(void **state)
{
	char why[200] = "";

	assert_int_equal(inject_check__yama(0, false, why, sizeof(why)), 0);
	assert_int_equal(inject_check__yama(1, false, why, sizeof(why)), 0);
	assert_int_equal(inject_check__yama(2, true, why, sizeof(why)), 0);
	assert_int_equal(inject_check__yama(2, false, why, sizeof(why)), -EPERM);
	assert_non_null(strstr(why, "ptrace_scope is 2"));
	assert_int_equal(inject_check__yama(3, true, why, sizeof(why)), -EPERM);
	assert_non_null(strstr(why, "ptrace_scope is 3"));
}

static void test_yama_scope_file(void **state)
{
	char path[] = "/tmp/ttf-yama-XXXXXX";
	int fd = mkstemp(path);

	assert_true(fd >= 0);
	assert_int_equal(write(fd, "2\n", 2), 2);
	close(fd);
	assert_int_equal(inject_check__yama_scope(path), 2);
	fd = open(path, O_WRONLY | O_TRUNC);
	assert_int_equal(write(fd, "7\n", 2), 2);
	close(fd);
	assert_int_equal(inject_check__yama_scope(path), -EINVAL);
	unlink(path);
	assert_int_equal(inject_check__yama_scope(path), -ENOENT);
}

static void test_parse_state_and_tracer(void **state)
{
	assert_int_equal(inject_check__parse_state("42 (a) b) c) S 1 42 42 0"), 'S');
	assert_int_equal(inject_check__parse_state("7 (x) t 1"), 't');
	assert_int_equal(inject_check__parse_state("7 (x)"), -EINVAL);
	assert_int_equal(inject_check__parse_tracer(status_mixed), 0);
	assert_int_equal(inject_check__parse_tracer(status_plain), 977);
	assert_int_equal(inject_check__parse_tracer("Name:\tq\n"), -EINVAL);
	assert_int_equal(inject_check__same_ns(getpid(), "mnt"), 1);
	assert_int_equal(inject_check__thread_state(getpid(), getpid()), 'R');
}

#if defined(__x86_64__)
static long callee(long a, long b)
{
	return a * 1000 + b;
}

/*
 * A child blocked in pause(): seized, found in a blocking system call, made
 * to call callee(6, 7) (our own address: the child is a fork of us), then
 * restored; it must still be in pause(), and die of the SIGTERM we send after.
 */
static void test_call_in_child(void **state)
{
	struct inject_thread *t = calloc(1, sizeof(*t));
	struct inject_call c = { .fn = (uint64_t)(uintptr_t)callee, .args = { 6, 7 },
				 .timeout_ms = 2000 };
	uint64_t ret = 0;
	long nr = -1;
	int st;
	pid_t child = fork();

	if (!child) {
		for (;;)
			pause();
	}
	usleep(100000);
	assert_int_equal(inject_ptrace__seize(child, 2000, t), 0);
	assert_true(inject_ptrace__in_blocking_syscall(t, &nr));
	assert_int_equal(nr, 34); /* pause */
	assert_int_equal(inject_ptrace__call(t, &c, &ret), 0);
	assert_int_equal(ret, 6007);
	assert_int_equal(inject_ptrace__release(t), 0);
	assert_false(t->seized);
	usleep(50000);
	assert_int_equal(inject_check__thread_state(child, child), 'S');
	kill(child, SIGTERM);
	assert_int_equal(waitpid(child, &st, 0), child);
	assert_true(WIFSIGNALED(st) && WTERMSIG(st) == SIGTERM);
	free(t);
}
#endif

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_parse_ids),
		cmocka_unit_test(test_same_user_rule),
		cmocka_unit_test(test_yama),
		cmocka_unit_test(test_yama_scope_file),
		cmocka_unit_test(test_parse_state_and_tracer),
#if defined(__x86_64__)
		cmocka_unit_test(test_call_in_child),
#endif
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
