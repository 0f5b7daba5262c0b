// SPDX-License-Identifier: GPL-2.0-only
/* target__alive: a live process, a zombie (exited, not reaped), a reaped one. */
#include <errno.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <stdlib.h>
#include <time.h>
#include <unistd.h>
#include <sys/wait.h>
#include <cmocka.h>
#include "user/probe/target.h"

static void test_alive_zombie_gone(void **state)
{
	int fds[2], st;
	char c;
	pid_t pid;

	assert_int_equal(target__alive((uint32_t)getpid()), 1);
	assert_int_equal(pipe(fds), 0);
	pid = fork();
	assert_true(pid >= 0);
	if (pid == 0) {
		close(fds[0]);
		_exit(0);	/* closes the write end as it exits */
	}
	close(fds[1]);
	assert_int_equal(read(fds[0], &c, 1), 0);	/* EOF: the child is exiting */
	close(fds[0]);
	/* a zombie until waited for: not alive (poll until its exit is complete) */
	for (int i = 0; i < 200 && target__alive((uint32_t)pid); i++)
		nanosleep(&(struct timespec){ .tv_nsec = 5000000 }, NULL);
	assert_int_equal(target__alive((uint32_t)pid), 0);
	assert_int_equal(kill(pid, 0), 0);	/* it still exists: a zombie */
	assert_int_equal(waitpid(pid, &st, 0), pid);
	assert_int_equal(target__alive((uint32_t)pid), 0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_alive_zombie_gone),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
