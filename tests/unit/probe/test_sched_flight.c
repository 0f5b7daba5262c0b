// SPDX-License-Identifier: GPL-2.0-only
/*
 * sched_flight.c: the reader of the scheduler's per-CPU flight recorder,
 * over two memfds standing in for the BPF maps (written here as the
 * programs would: the span, then the head).
 */
#include <errno.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <stdlib.h>
#include <unistd.h>
#include <sys/mman.h>
#include <cmocka.h>
#include "user/probe/sched_flight.h"

#define NCPUS 5
#define LOG2 SCHED_FLIGHT_MIN_LOG2
#define SLOTS (1u << LOG2)

struct fake {
	int slots_fd, heads_fd;
	struct ttf_sched_span *slots;
	uint64_t *heads;
};

static void fake_open(struct fake *f)
{
	size_t sl = (size_t)NCPUS * SLOTS * sizeof(struct ttf_sched_span);
	size_t hl = (size_t)NCPUS * TTF_SCHED_FLIGHT_HEAD_STRIDE * sizeof(uint64_t);

	f->slots_fd = memfd_create("flight", MFD_CLOEXEC);
	f->heads_fd = memfd_create("flight_head", MFD_CLOEXEC);
	assert_true(f->slots_fd >= 0 && f->heads_fd >= 0);
	assert_int_equal(ftruncate(f->slots_fd, (off_t)sl), 0);
	assert_int_equal(ftruncate(f->heads_fd, 4096), 0);
	f->slots = mmap(NULL, sl, PROT_READ | PROT_WRITE, MAP_SHARED, f->slots_fd, 0);
	f->heads = mmap(NULL, hl, PROT_READ | PROT_WRITE, MAP_SHARED, f->heads_fd, 0);
	assert_true(f->slots != MAP_FAILED && f->heads != MAP_FAILED);
}

/* A fake recorder and its reader, mapped before anything is written. */
static struct sched_flight *reader(struct fake *fk)
{
	struct sched_flight *f;
	int err = 0;

	fake_open(fk);
	f = sched_flight__map(fk->slots_fd, fk->heads_fd, NCPUS, LOG2, &err);
	assert_non_null(f);
	return f;
}

/* CPU cpu writes a span switched out at ts_ns by tid. */
static void put(struct fake *f, int cpu, uint64_t ts_ns, uint32_t tid)
{
	uint64_t *head = &f->heads[cpu * TTF_SCHED_FLIGHT_HEAD_STRIDE];

	f->slots[cpu * SLOTS + (*head & (SLOTS - 1))] = (struct ttf_sched_span){
		.ts_ns = ts_ns, .tid = tid, .tgid = 1, .cpu = (uint16_t)cpu,
		.type = TTF_SCHED_OUT_BLOCKED };
	__atomic_store_n(head, *head + 1, __ATOMIC_RELEASE);
}

static uint64_t got_ts[4 * SLOTS];
static uint16_t got_cpu[4 * SLOTS];
static int n_got, stop_after;

static int collect(void *ctx, const struct ttf_sched_span *s)
{
	(void)ctx;
	got_cpu[n_got] = s->cpu;
	got_ts[n_got++] = s->ts_ns;
	return stop_after && n_got == stop_after ? -EINTR : 0;
}

/* What was there at mapping is skipped; then every CPU's spans, oldest first. */
static void test_reads_new_spans_in_time_order(void **state)
{
	struct fake fk;
	struct sched_flight *f;
	int err = 0;

	fake_open(&fk);
	put(&fk, 0, 5, 100);	/* before the reader: not read */
	f = sched_flight__map(fk.slots_fd, fk.heads_fd, NCPUS, LOG2, &err);
	assert_non_null(f);
	put(&fk, 1, 20, 2);
	put(&fk, 0, 10, 1);
	put(&fk, 0, 30, 1);
	put(&fk, 1, 25, 2);
	n_got = 0;
	assert_int_equal(sched_flight__read(f, collect, NULL), 4);
	assert_int_equal(n_got, 4);
	assert_int_equal(got_ts[0], 10);
	assert_int_equal(got_ts[1], 20);
	assert_int_equal(got_ts[2], 25);
	assert_int_equal(got_ts[3], 30);
	n_got = 0;
	assert_int_equal(sched_flight__read(f, collect, NULL), 0);	/* nothing new */
	assert_int_equal(sched_flight__written(f), 5);
	assert_int_equal(sched_flight__overwritten(f), 0);
	sched_flight__free(f);
}

/* Each read stores, per CPU, how far it read: the word the BPF side's wakeup is judged by. */
static void test_read_word_follows_the_reader(void **state)
{
	struct fake fk;
	struct sched_flight *f;
	int err = 0;

	fake_open(&fk);
	put(&fk, 1, 5, 100);	/* before the reader: counted as read at mapping */
	f = sched_flight__map(fk.slots_fd, fk.heads_fd, NCPUS, LOG2, &err);
	assert_non_null(f);
	assert_int_equal(fk.heads[TTF_SCHED_FLIGHT_READ_WORD], 0);
	assert_int_equal(fk.heads[TTF_SCHED_FLIGHT_HEAD_STRIDE + TTF_SCHED_FLIGHT_READ_WORD], 1);
	put(&fk, 0, 10, 1);
	put(&fk, 0, 20, 1);
	put(&fk, 1, 15, 2);
	assert_int_equal(fk.heads[TTF_SCHED_FLIGHT_READ_WORD], 0);	/* not before a read */
	n_got = 0;
	assert_int_equal(sched_flight__read(f, collect, NULL), 3);
	assert_int_equal(fk.heads[TTF_SCHED_FLIGHT_READ_WORD], 2);
	assert_int_equal(fk.heads[TTF_SCHED_FLIGHT_HEAD_STRIDE + TTF_SCHED_FLIGHT_READ_WORD], 2);
	sched_flight__free(f);
}

/* A CPU that came round past what was read: the newest SLOTS read, the rest counted. */
static void test_lapped_cpu_counts_overwritten(void **state)
{
	struct fake fk;
	struct sched_flight *f = reader(&fk);

	for (uint32_t i = 0; i < SLOTS + 7; i++)
		put(&fk, 1, 1000 + i, 3);
	n_got = 0;
	assert_int_equal(sched_flight__read(f, collect, NULL), SLOTS);
	assert_int_equal(sched_flight__overwritten(f), 7);
	assert_int_equal(got_ts[0], 1007);
	assert_int_equal(got_ts[SLOTS - 1], 1000 + SLOTS + 6);
	sched_flight__free(f);
}

/*
 * Five CPUs' runs merged: every span once, by time, a tie going to the
 * lower CPU; a CPU that runs dry leaves the merge, one with none never
 * enters it.
 */
static void test_merges_cpus_by_time_ties_to_lower_cpu(void **state)
{
	static const struct { int cpu; uint64_t ts; } w[] = {
		{ 0, 10 }, { 0, 40 }, { 0, 41 }, { 1, 5 }, { 1, 40 }, { 1, 90 },
		{ 3, 40 }, { 3, 50 }, { 4, 1 }, { 4, 100 }, { 4, 101 },
	};
	static const uint64_t want_ts[] = { 1, 5, 10, 40, 40, 40, 41, 50, 90, 100, 101 };
	static const uint16_t want_cpu[] = { 4, 1, 0, 0, 1, 3, 0, 3, 1, 4, 4 };
	struct fake fk;
	struct sched_flight *f = reader(&fk);
	int n = sizeof(w) / sizeof(w[0]);

	for (int i = 0; i < n; i++)
		put(&fk, w[i].cpu, w[i].ts, 7);
	n_got = 0;
	assert_int_equal(sched_flight__read(f, collect, NULL), n);
	assert_int_equal(n_got, n);
	for (int i = 0; i < n; i++) {
		assert_int_equal(got_ts[i], want_ts[i]);
		assert_int_equal(got_cpu[i], want_cpu[i]);
	}
	sched_flight__free(f);
}

/* A CPU whose spans are out of time order (never seen): the batch is sorted instead. */
static void test_unsorted_cpu_is_sorted(void **state)
{
	struct fake fk;
	struct sched_flight *f = reader(&fk);

	put(&fk, 2, 30, 1);
	put(&fk, 2, 10, 1);
	put(&fk, 3, 20, 1);
	n_got = 0;
	assert_int_equal(sched_flight__read(f, collect, NULL), 3);
	assert_int_equal(got_ts[0], 10);
	assert_int_equal(got_ts[1], 20);
	assert_int_equal(got_ts[2], 30);
	sched_flight__free(f);
}

/* A callback that fails stops the read: its value back, the rest counted overwritten. */
static void test_failing_callback_stops_and_counts(void **state)
{
	struct fake fk;
	struct sched_flight *f = reader(&fk);

	for (int i = 0; i < 6; i++)
		put(&fk, i % 2, 100 + i, 1);
	n_got = 0;
	stop_after = 2;
	assert_int_equal(sched_flight__read(f, collect, NULL), -EINTR);
	stop_after = 0;
	assert_int_equal(n_got, 2);
	assert_int_equal(sched_flight__overwritten(f), 4);
	sched_flight__free(f);
}

static void test_size_per_cpu(void **state)
{
	assert_int_equal(sched_flight__log2(8192, 2), 13);
	assert_int_equal(sched_flight__log2(8193, 2), 14);	/* rounded up */
	assert_int_equal(sched_flight__log2(1, 2), SCHED_FLIGHT_MIN_LOG2);
	assert_int_equal(sched_flight__log2(1u << 30, 1), SCHED_FLIGHT_MAX_LOG2);
	/* 16 MiB over 64 CPUs: 262,144 bytes a CPU, 6,553 spans: 4,096 */
	assert_int_equal(sched_flight__log2(8192, 64), 12);
	assert_int_equal(sched_flight__log2(8192, 4096), SCHED_FLIGHT_MIN_LOG2);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_reads_new_spans_in_time_order),
		cmocka_unit_test(test_read_word_follows_the_reader),
		cmocka_unit_test(test_lapped_cpu_counts_overwritten),
		cmocka_unit_test(test_merges_cpus_by_time_ties_to_lower_cpu),
		cmocka_unit_test(test_unsorted_cpu_is_sorted),
		cmocka_unit_test(test_failing_callback_stops_and_counts),
		cmocka_unit_test(test_size_per_cpu),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
