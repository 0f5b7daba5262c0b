// SPDX-License-Identifier: GPL-2.0-only
/*
 * Scheduler ground truth, compiled by tests/root/sched at test time.
 *
 *   contend SPIN_MS SLEEP_MS   the main thread ("frontend") and two "busy"
 *                              threads spin on CPU 0 for SPIN_MS, so the
 *                              frontend runs about 1/3 of the time and waits
 *                              on the runqueue about 2/3; then the busy
 *                              threads stop and the frontend sleeps SLEEP_MS
 *   pingpong N                 two threads pass a byte N times over pipes
 *                              (context switches for bench/sched_cost.sh)
 *
 * Prints "ready TID" and waits for a line on stdin; at the end prints
 * "times T0 T1 T2 T3" (CLOCK_MONOTONIC ns: spin start/end, sleep start/end).
 * contend then prints "schedstat RUN0 WAIT0 RUN1 WAIT1": the frontend's
 * on-CPU and runqueue-wait ns at T0 and T1, the kernel's own accounting,
 * the truth the scheduler overlay is held to. The wait is schedstat's
 * (/proc/thread-self/schedstat, Documentation/scheduler/sched-stats.rst),
 * complete at each read since the reader is on a CPU; the on-CPU time is
 * CLOCK_THREAD_CPUTIME_ID's, which includes the slice in progress (the
 * schedstat run time lags it by up to a tick: fs/proc/base.c reads
 * se.sum_exec_runtime as last updated).
 */
#include <fcntl.h>
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/prctl.h>
#include <time.h>
#include <unistd.h>

static atomic_int stop_busy;
static int ping[2], pong[2];

static unsigned long long now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1000000000ULL + ts.tv_nsec;
}

/* The calling thread's on-CPU and runqueue-wait ns so far. */
static void schedstat_read(int fd, unsigned long long *run_ns, unsigned long long *wait_ns)
{
	char b[128];
	ssize_t n = pread(fd, b, sizeof(b) - 1, 0);
	unsigned long long lagging_run_ns;
	struct timespec ts;

	*wait_ns = 0;
	if (n > 0) {
		b[n] = 0;
		sscanf(b, "%llu %llu", &lagging_run_ns, wait_ns);
	}
	clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
	*run_ns = ts.tv_sec * 1000000000ULL + ts.tv_nsec;
}

/*
 * CLOCK_MONOTONIC now, with the thread's on-CPU and runqueue-wait ns at it.
 * The readings must not straddle a wait on the runqueue (a preemption in
 * a read is a whole slice here): read on both sides of the stamp until the
 * wait is the same.
 */
static unsigned long long stamp(int fd, unsigned long long *run_ns, unsigned long long *wait_ns)
{
	unsigned long long t, run, wait;

	do {
		schedstat_read(fd, run_ns, wait_ns);
		t = now_ns();
		schedstat_read(fd, &run, &wait);
	} while (wait != *wait_ns);
	return t;
}

static void pin_cpu0(void)
{
	cpu_set_t set;

	CPU_ZERO(&set);
	CPU_SET(0, &set);
	if (sched_setaffinity(0, sizeof(set), &set))
		perror("sched_setaffinity");
}

static void *busy(void *arg)
{
	volatile unsigned long x = 0;

	prctl(PR_SET_NAME, "busy");
	pin_cpu0();
	while (!atomic_load_explicit(&stop_busy, memory_order_relaxed))
		x++;
	return NULL;
}

static void *ponger(void *arg)
{
	long n = (long)arg;
	char c;

	for (long i = 0; i < n; i++) {
		if (read(ping[0], &c, 1) != 1 || write(pong[1], &c, 1) != 1)
			break;
	}
	return NULL;
}

static void wait_go(void)
{
	char line[16];

	printf("ready %d\n", gettid());
	fflush(stdout);
	if (!fgets(line, sizeof(line), stdin))
		exit(1);
}

int main(int argc, char **argv)
{
	unsigned long long t0, t1, t2, t3;
	pthread_t th[2];
	char c = 'x';

	if (argc == 3) {
		long spin_ms = atol(argv[1]), sleep_ms = atol(argv[2]);
		struct timespec sl = { sleep_ms / 1000, (sleep_ms % 1000) * 1000000L };
		int fd = open("/proc/thread-self/schedstat", O_RDONLY);
		unsigned long long run0, wait0, run1, wait1;

		prctl(PR_SET_NAME, "frontend");
		pin_cpu0();
		for (int i = 0; i < 2; i++)
			pthread_create(&th[i], NULL, busy, NULL);
		wait_go();
		t0 = stamp(fd, &run0, &wait0);
		while (now_ns() - t0 < spin_ms * 1000000ULL)
			;
		t1 = stamp(fd, &run1, &wait1);
		atomic_store(&stop_busy, 1);
		for (int i = 0; i < 2; i++)
			pthread_join(th[i], NULL);
		t2 = now_ns();
		nanosleep(&sl, NULL);
		t3 = now_ns();
		printf("times %llu %llu %llu %llu\n", t0, t1, t2, t3);
		printf("schedstat %llu %llu %llu %llu\n", run0, wait0, run1, wait1);
		return 0;
	}
	if (argc == 2) {
		long n = atol(argv[1]);

		if (pipe(ping) || pipe(pong))
			return 1;
		pthread_create(&th[0], NULL, ponger, (void *)n);
		wait_go();
		t0 = now_ns();
		for (long i = 0; i < n; i++) {
			if (write(ping[1], &c, 1) != 1 || read(pong[0], &c, 1) != 1)
				break;
		}
		t1 = now_ns();
		pthread_join(th[0], NULL);
		printf("times %llu %llu %llu %llu\n", t0, t1, t1, t1);
		return 0;
	}
	fprintf(stderr, "usage: %s SPIN_MS SLEEP_MS | %s N\n", argv[0], argv[0]);
	return 2;
}
