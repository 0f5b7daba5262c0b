// SPDX-License-Identifier: GPL-2.0-only
/*
 * bench/sys_enter_cost.py's syscall microbenchmark: the CPU time per call,
 * in ns (CLOCK_THREAD_CPUTIME_ID, kernel time included), of getppid() (a
 * syscall ttftrace does not want: what every other syscall of the machine
 * pays) and of a 1-byte write() to /dev/null (a payload syscall, not on a
 * socket: its arguments are remembered when the process is traced; a read's
 * are not, docs/kernel.md B1.5). Once at
 * start and once after each line on stdin (the driver attaches or detaches
 * a tracer in between).
 *
 *   syscall_hit N   -> "getppid NS write NS\n" at start and per input line
 */
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>
#include <unistd.h>
#include <sys/syscall.h>

static double now_ns(void)
{
	struct timespec t;

	clock_gettime(CLOCK_THREAD_CPUTIME_ID, &t);
	return t.tv_sec * 1e9 + t.tv_nsec;
}

static void measure(long n, int fd)
{
	char c = 0;
	double a, b, r;

	a = now_ns();
	for (long i = 0; i < n; i++)
		syscall(SYS_getppid);	/* not glibc's getppid(): no caching, always a syscall */
	b = now_ns();
	for (long i = 0; i < n; i++)
		if (write(fd, &c, 1) != 1)
			exit(1);
	r = now_ns();
	printf("getppid %.1f write %.1f\n", (b - a) / n, (r - b) / n);
	fflush(stdout);
}

int main(int argc, char **argv)
{
	long n = argc > 1 ? atol(argv[1]) : 1000000;
	int fd = open("/dev/null", O_WRONLY);
	char line[16];

	if (n <= 0 || fd < 0)
		return 2;
	measure(n, fd);
	while (fgets(line, sizeof(line), stdin))
		measure(n, fd);
	return 0;
}
