// SPDX-License-Identifier: GPL-2.0-only
#include <errno.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>
#include "user/probe/sched_flight.h"

struct sched_flight {
	const struct ttf_sched_span *slots;	/* CPU c: slots[c << log2 ...] */
	uint64_t *heads;			/* CPU c: heads[c * STRIDE], spans written */
	size_t slots_len, heads_len;		/* the mappings' lengths */
	int ncpus;
	uint32_t log2;
	uint64_t *tail;				/* per CPU: spans read (or skipped) */
	struct ttf_sched_span *batch;		/* one read, all CPUs */
	size_t batch_cap;
	size_t *run_end;			/* per CPU: its spans end here in batch */
	size_t *pos;				/* per CPU: its next span in the merge */
	int *heap;				/* the merge's CPUs, by their next span */
	bool unsorted;				/* a CPU's spans were out of time order */
	uint64_t overwritten;
};

uint32_t sched_flight__log2(uint32_t spans_per_cpu, int ncpus)
{
	uint64_t cpus = ncpus > 0 ? (uint64_t)ncpus : 1;
	uint32_t log2 = SCHED_FLIGHT_MIN_LOG2;

	while (log2 < SCHED_FLIGHT_MAX_LOG2 && (1ull << log2) < spans_per_cpu)
		log2++;
	while (log2 > SCHED_FLIGHT_MIN_LOG2 &&
	       (cpus << log2) * sizeof(struct ttf_sched_span) > SCHED_FLIGHT_MAX_BYTES)
		log2--;
	return log2;
}

static size_t page_round(size_t len)
{
	size_t page = (size_t)sysconf(_SC_PAGESIZE);

	return (len + page - 1) / page * page;
}

static uint64_t head_of(const struct sched_flight *f, int cpu)
{
	return __atomic_load_n(&f->heads[(size_t)cpu * TTF_SCHED_FLIGHT_HEAD_STRIDE],
			       __ATOMIC_ACQUIRE);
}

/* What user space has read of CPU cpu: the word its wakeup is judged by (bpf/sched.h). */
static void set_read(struct sched_flight *f, int cpu, uint64_t n)
{
	__atomic_store_n(&f->heads[(size_t)cpu * TTF_SCHED_FLIGHT_HEAD_STRIDE +
				   TTF_SCHED_FLIGHT_READ_WORD], n, __ATOMIC_RELAXED);
}

struct sched_flight *sched_flight__map(int slots_fd, int heads_fd, int ncpus, uint32_t log2,
				       int *err)
{
	struct sched_flight *f = calloc(1, sizeof(*f));
	void *p;

	if (!f || ncpus <= 0 || !(f->tail = calloc(ncpus, sizeof(*f->tail))) ||
	    !(f->run_end = calloc(ncpus, sizeof(*f->run_end))) ||
	    !(f->pos = calloc(ncpus, sizeof(*f->pos))) ||
	    !(f->heap = calloc(ncpus, sizeof(*f->heap)))) {
		*err = f && ncpus <= 0 ? -EINVAL : -ENOMEM;
		sched_flight__free(f);
		return NULL;
	}
	f->ncpus = ncpus;
	f->log2 = log2;
	f->slots_len = page_round(((size_t)ncpus << log2) * sizeof(struct ttf_sched_span));
	f->heads_len = page_round((size_t)ncpus * TTF_SCHED_FLIGHT_HEAD_STRIDE * sizeof(uint64_t));
	p = mmap(NULL, f->slots_len, PROT_READ, MAP_SHARED, slots_fd, 0);
	f->slots = p == MAP_FAILED ? NULL : p;
	p = mmap(NULL, f->heads_len, PROT_READ | PROT_WRITE, MAP_SHARED, heads_fd, 0);
	f->heads = p == MAP_FAILED ? NULL : p;
	if (!f->slots || !f->heads) {
		*err = -errno;
		sched_flight__free(f);
		return NULL;
	}
	for (int c = 0; c < ncpus; c++) {
		f->tail[c] = head_of(f, c);
		set_read(f, c, f->tail[c]);
	}
	return f;
}

/* Room for n more spans in the batch; 0 or -ENOMEM. */
static int batch_room(struct sched_flight *f, size_t used, size_t n)
{
	size_t cap = f->batch_cap ? f->batch_cap : 1024;
	struct ttf_sched_span *b;

	if (used + n <= f->batch_cap)
		return 0;
	while (cap < used + n)
		cap *= 2;
	b = realloc(f->batch, cap * sizeof(*b));
	if (!b)
		return -ENOMEM;
	f->batch = b;
	f->batch_cap = cap;
	return 0;
}

/*
 * CPU cpu's new spans onto the batch at *used. A span the CPU may have
 * overwritten while it was copied (its slot reused, by the head read after
 * the copy) is taken back and counted.
 */
static int copy_cpu(struct sched_flight *f, int cpu, size_t *used)
{
	uint64_t slots = 1ull << f->log2, mask = slots - 1, head = head_of(f, cpu);
	uint64_t from = f->tail[cpu], after;
	const struct ttf_sched_span *ring = f->slots + ((size_t)cpu << f->log2);
	size_t n, skip;

	if (head - from > slots) {
		f->overwritten += head - from - slots;
		from = head - slots;
	}
	n = head - from;
	if (batch_room(f, *used, n))
		return -ENOMEM;
	for (size_t i = 0; i < n; i++) {
		f->batch[*used + i] = ring[(from + i) & mask];
		if (i && f->batch[*used + i].ts_ns < f->batch[*used + i - 1].ts_ns)
			f->unsorted = true;
	}
	__atomic_thread_fence(__ATOMIC_ACQUIRE);	/* the copies before the head's reread */
	after = head_of(f, cpu);
	skip = after - from > slots ? (size_t)(after - from - slots) : 0;
	if (skip > n)
		skip = n;
	if (skip) {
		memmove(f->batch + *used, f->batch + *used + skip, (n - skip) * sizeof(*f->batch));
		f->overwritten += skip;
	}
	*used += n - skip;
	f->tail[cpu] = head;
	set_read(f, cpu, head);
	return 0;
}

static int by_time(const void *a, const void *b)
{
	const struct ttf_sched_span *x = a, *y = b;

	if (x->ts_ns != y->ts_ns)
		return x->ts_ns < y->ts_ns ? -1 : 1;
	return (x->cpu > y->cpu) - (x->cpu < y->cpu);
}

/* Does CPU a's next span (at pos[a]) come before CPU b's? */
static bool before(const struct sched_flight *f, const size_t *pos, int a, int b)
{
	int d = by_time(&f->batch[pos[a]], &f->batch[pos[b]]);

	return d < 0 || (d == 0 && a < b);
}

/* Restore the heap below slot i (n CPUs in it). */
static void sift_down(struct sched_flight *f, const size_t *pos, int n, int i)
{
	for (;;) {
		int l = 2 * i + 1, m = i, t;

		if (l < n && before(f, pos, f->heap[l], f->heap[m]))
			m = l;
		if (l + 1 < n && before(f, pos, f->heap[l + 1], f->heap[m]))
			m = l + 1;
		if (m == i)
			return;
		t = f->heap[i];
		f->heap[i] = f->heap[m];
		f->heap[m] = t;
		i = m;
	}
}

/*
 * The batch to cb oldest first: each CPU's spans are in time order already
 * (a CPU writes them one after the other, under its run-queue lock), so
 * the CPUs' runs are merged, by a heap of CPUs keyed by their next span.
 * pos: per CPU, its next span in the batch. Returns spans given, or cb's
 * value (the rest counted overwritten).
 */
static int merge_to(struct sched_flight *f, size_t *pos, size_t used, sched_span_cb cb,
		    void *ctx)
{
	size_t given = 0;
	int n = 0, c, err;

	for (c = 0; c < f->ncpus; c++)
		if (pos[c] < f->run_end[c])
			f->heap[n++] = c;
	for (int i = n / 2 - 1; i >= 0; i--)
		sift_down(f, pos, n, i);
	while (n) {
		c = f->heap[0];
		err = cb(ctx, &f->batch[pos[c]++]);
		given++;
		if (err) {
			f->overwritten += used - given;
			return err;
		}
		if (pos[c] == f->run_end[c])
			f->heap[0] = f->heap[--n];
		sift_down(f, pos, n, 0);
	}
	return used > INT32_MAX ? INT32_MAX : (int)used;
}

int sched_flight__read(struct sched_flight *f, sched_span_cb cb, void *ctx)
{
	size_t used = 0, *pos = f->pos;
	int err;

	f->unsorted = false;
	for (int c = 0; c < f->ncpus; c++) {
		err = copy_cpu(f, c, &used);
		if (err)
			return err;
		f->run_end[c] = used;
	}
	if (f->unsorted) {	/* never seen; then a sort, as the runs cannot be merged */
		qsort(f->batch, used, sizeof(*f->batch), by_time);
		for (int c = 0; c < f->ncpus; c++)
			f->run_end[c] = c == f->ncpus - 1 ? used : 0;
	}
	for (int c = 0; c < f->ncpus; c++)
		pos[c] = c ? f->run_end[c - 1] : 0;
	return merge_to(f, pos, used, cb, ctx);
}

uint64_t sched_flight__written(const struct sched_flight *f)
{
	uint64_t n = 0;

	for (int c = 0; c < f->ncpus; c++)
		n += head_of(f, c);
	return n;
}

uint64_t sched_flight__overwritten(const struct sched_flight *f)
{
	return f->overwritten;
}

void sched_flight__free(struct sched_flight *f)
{
	if (!f)
		return;
	if (f->slots)
		munmap((void *)f->slots, f->slots_len);
	if (f->heads)
		munmap((void *)f->heads, f->heads_len);
	free(f->tail);
	free(f->run_end);
	free(f->pos);
	free(f->heap);
	free(f->batch);
	free(f);
}
