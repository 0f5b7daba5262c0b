// SPDX-License-Identifier: GPL-2.0-only
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "user/lib/hash.h"
#include "user/model/gpu_store.h"

struct gpu_span {
	struct ttf_gpu_rec r;
	uint32_t pid;
};

struct name_key {
	uint64_t id;
	uint32_t pid;
	uint32_t zero;		/* no padding: the key is hashed and compared as bytes */
};

struct gpu_name {
	struct name_key key;
	char *str;
	UT_hash_handle hh;	/* gpu_store.names */
};

struct gpu_pid_stats {
	uint32_t pid;
	struct ttf_gpu_stats st;
};

/*
 * (pid, corr) -> apis[] index. A uthash table whose entries live in chunks
 * that are never moved, so that emptying and refilling it after apis[] was
 * sorted or compacted reuses their memory.
 */
#define INDEX_CHUNK 1024

struct index_ent {
	uint64_t key;
	uint32_t val;
	UT_hash_handle hh;
};

struct api_index {
	struct index_ent *head;		/* uthash */
	struct index_ent **chunks;
	size_t n, n_chunks;		/* entries in use, chunks allocated */
};

struct gpu_store {
	struct gpu_span *spans;  /* kernels, copies, memsets */
	size_t n, cap;
	bool sorted;
	uint64_t max_dur_ns;     /* longest span: bounds the backward search of a window */
	struct gpu_span *apis;
	size_t napi, capapi;
	bool api_sorted;
	struct api_index api_map; /* (pid, corr) -> apis[] index; rebuilt after sorting */
	bool api_map_dirty;
	struct gpu_name *names;  /* uthash by (name id, pid) */
	struct gpu_pid_stats *stats;
	size_t nstats;
};

/* Map key to val, replacing the value of a key already there. */
static int map_put(struct api_index *m, uint64_t key, uint32_t val)
{
	struct index_ent *e;

	HASH_FIND(hh, m->head, &key, sizeof(key), e);
	if (e) {
		e->val = val;
		return 0;
	}
	if (m->n == m->n_chunks * INDEX_CHUNK) {
		struct index_ent **c = realloc(m->chunks, (m->n_chunks + 1) * sizeof(*c));

		if (!c)
			return -ENOMEM;
		m->chunks = c;
		c[m->n_chunks] = malloc(INDEX_CHUNK * sizeof(**c));
		if (!c[m->n_chunks])
			return -ENOMEM;
		m->n_chunks++;
	}
	e = &m->chunks[m->n / INDEX_CHUNK][m->n % INDEX_CHUNK];
	e->key = key;
	e->val = val;
	HASH_ADD(hh, m->head, key, sizeof(e->key), e);
	if (!ttf_hash_added(e))
		return -ENOMEM;
	m->n++;
	return 0;
}

static bool map_get(const struct api_index *m, uint64_t key, uint32_t *val)
{
	struct index_ent *e;

	HASH_FIND(hh, m->head, &key, sizeof(key), e);
	if (e)
		*val = e->val;
	return e != NULL;
}

static void map_clear(struct api_index *m)
{
	HASH_CLEAR(hh, m->head);
	m->n = 0;
}

static void map_free(struct api_index *m)
{
	map_clear(m);
	for (size_t i = 0; i < m->n_chunks; i++)
		free(m->chunks[i]);
	free(m->chunks);
}

static uint64_t api_key(uint32_t pid, uint32_t corr)
{
	return ((uint64_t)pid << 32) | corr;
}

static struct gpu_name *find_name(const struct gpu_store *s, uint32_t pid, uint64_t id)
{
	struct name_key k = { .id = id, .pid = pid };
	struct gpu_name *n;

	HASH_FIND(hh, s->names, &k, sizeof(k), n);
	return n;
}

struct gpu_store *gpu_store__new(void)
{
	return calloc(1, sizeof(struct gpu_store));
}

void gpu_store__free(struct gpu_store *s)
{
	struct gpu_name *n, *tmp;

	if (!s)
		return;
	free(s->spans);
	free(s->apis);
	map_free(&s->api_map);
	HASH_ITER(hh, s->names, n, tmp) {
		HASH_DEL(s->names, n);
		free(n->str);
		free(n);
	}
	free(s->stats);
	free(s);
}

static int push(struct gpu_span **arr, size_t *n, size_t *cap, uint32_t pid,
		const struct ttf_gpu_rec *r)
{
	struct gpu_span *p;

	if (*n == *cap) {
		size_t ncap = *cap ? *cap * 2 : 1024;

		p = realloc(*arr, ncap * sizeof(*p));
		if (!p)
			return -ENOMEM;
		*arr = p;
		*cap = ncap;
	}
	(*arr)[*n].r = *r;
	(*arr)[*n].pid = pid;
	(*n)++;
	return 0;
}

int gpu_store__add(struct gpu_store *s, uint32_t pid, const struct ttf_gpu_rec *r)
{
	int err;

	switch (r->type) {
	case TTF_GPU_REC_KERNEL:
	case TTF_GPU_REC_MEMCPY:
	case TTF_GPU_REC_MEMSET:
		err = push(&s->spans, &s->n, &s->cap, pid, r);
		if (err)
			return err;
		if (s->n > 1 && r->start_ns < s->spans[s->n - 2].r.start_ns)
			s->sorted = false;
		else if (s->n == 1)
			s->sorted = true;
		if (r->end_ns - r->start_ns > s->max_dur_ns)
			s->max_dur_ns = r->end_ns - r->start_ns;
		return 0;
	case TTF_GPU_REC_API:
		err = push(&s->apis, &s->napi, &s->capapi, pid, r);
		if (err)
			return err;
		s->api_sorted = false;
		if (!s->api_map_dirty)
			err = map_put(&s->api_map, api_key(pid, r->correlation_id), s->napi - 1);
		return err;
	default:
		return -EINVAL;
	}
}

int gpu_store__add_name(struct gpu_store *s, uint32_t pid, uint64_t name_id, const char *name,
			size_t len)
{
	struct gpu_name *n;

	if (find_name(s, pid, name_id))
		return 0;
	n = calloc(1, sizeof(*n));
	if (!n)
		return -ENOMEM;
	n->key = (struct name_key){ .id = name_id, .pid = pid };
	n->str = strndup(name, len);
	if (n->str)
		HASH_ADD(hh, s->names, key, sizeof(n->key), n);
	if (!n->str || !ttf_hash_added(n)) {
		free(n->str);
		free(n);
		return -ENOMEM;
	}
	return 0;
}

static const char *name_of(const struct gpu_store *s, uint32_t pid, uint64_t id)
{
	const struct gpu_name *n = id ? find_name(s, pid, id) : NULL;

	return n ? n->str : "?";
}

int gpu_store__set_stats(struct gpu_store *s, uint32_t pid, const struct ttf_gpu_stats *st)
{
	struct gpu_pid_stats *p;

	for (size_t i = 0; i < s->nstats; i++) {
		if (s->stats[i].pid == pid) {
			s->stats[i].st = *st;
			return 0;
		}
	}
	p = realloc(s->stats, (s->nstats + 1) * sizeof(*p));
	if (!p)
		return -ENOMEM;
	s->stats = p;
	s->stats[s->nstats].pid = pid;
	s->stats[s->nstats].st = *st;
	s->nstats++;
	return 0;
}

int gpu_store__stats(const struct gpu_store *s, uint32_t pid, struct ttf_gpu_stats *out)
{
	const size_t nfield = sizeof(*out) / sizeof(uint64_t);
	bool found = false;

	memset(out, 0, sizeof(*out));
	for (size_t i = 0; i < s->nstats; i++) {
		const uint64_t *src = (const uint64_t *)&s->stats[i].st;
		uint64_t *dst = (uint64_t *)out;

		if (pid && s->stats[i].pid != pid)
			continue;
		found = true;
		if (pid) {
			*out = s->stats[i].st;
			break;
		}
		/* clock_mode and cupti_version are not counts: keep the largest. */
		for (size_t f = 0; f < nfield - 2; f++)
			dst[f] += src[f];
		for (size_t f = nfield - 2; f < nfield; f++)
			dst[f] = src[f] > dst[f] ? src[f] : dst[f];
	}
	return found ? 0 : -ENOENT;
}

static int cmp_start(const void *a, const void *b)
{
	const struct gpu_span *x = a, *y = b;

	if (x->r.start_ns != y->r.start_ns)
		return x->r.start_ns < y->r.start_ns ? -1 : 1;
	return x->r.end_ns < y->r.end_ns ? -1 : x->r.end_ns > y->r.end_ns;
}

static void sort_spans(struct gpu_store *s)
{
	if (!s->sorted) {
		qsort(s->spans, s->n, sizeof(*s->spans), cmp_start);
		s->sorted = true;
	}
}

static void sort_apis(struct gpu_store *s)
{
	if (!s->api_sorted) {
		qsort(s->apis, s->napi, sizeof(*s->apis), cmp_start);
		s->api_sorted = true;
		s->api_map_dirty = true;
	}
	if (s->api_map_dirty) {
		map_clear(&s->api_map);
		s->api_map_dirty = false;
		for (size_t i = 0; i < s->napi; i++)
			if (map_put(&s->api_map, api_key(s->apis[i].pid, s->apis[i].r.correlation_id),
				    i)) {
				s->api_map_dirty = true; /* out of memory: retry next time */
				break;
			}
	}
}

static void to_api(const struct gpu_span *a, struct gpu_api_span *out)
{
	*out = (struct gpu_api_span){
		.start_ns = a->r.start_ns,
		.end_ns = a->r.end_ns,
		.pid = a->pid,
		.tid = a->r.api.tid,
		.correlation_id = a->r.correlation_id,
		.cbid = a->r.api.cbid,
		.domain = a->r.api.domain,
		.category = a->r.api.category,
	};
}

int gpu_store__api(const struct gpu_store *s, uint32_t pid, uint32_t corr,
		   struct gpu_api_span *out)
{
	uint32_t idx;

	if (s->api_map_dirty)
		sort_apis((struct gpu_store *)s);
	if (!corr || !map_get(&s->api_map, api_key(pid, corr), &idx))
		return -ENOENT;
	to_api(&s->apis[idx], out);
	return 0;
}

static uint32_t launch_tid(const struct gpu_store *s, uint32_t pid, uint32_t corr)
{
	struct gpu_api_span api;

	return gpu_store__api(s, pid, corr, &api) ? 0 : api.tid;
}

/* Index of the first span that may overlap from_ns. */
static size_t first_candidate(struct gpu_store *s, uint64_t from_ns)
{
	uint64_t lo_start = from_ns > s->max_dur_ns ? from_ns - s->max_dur_ns : 0;
	size_t lo = 0, hi = s->n;

	sort_spans(s);
	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;

		if (s->spans[mid].r.start_ns < lo_start)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo;
}

size_t gpu_store__kernels(struct gpu_store *s, uint32_t pid, uint64_t from_ns, uint64_t to_ns,
			  struct gpu_kernel_span *out, size_t max)
{
	size_t count = 0;

	sort_apis(s);
	for (size_t i = first_candidate(s, from_ns); i < s->n; i++) {
		const struct gpu_span *sp = &s->spans[i];
		const struct ttf_gpu_rec *r = &sp->r;

		if (r->start_ns >= to_ns)
			break;
		if (r->type != TTF_GPU_REC_KERNEL || r->end_ns <= from_ns || (pid && sp->pid != pid))
			continue;
		if (count < max)
			out[count] = (struct gpu_kernel_span){
				.start_ns = r->start_ns,
				.end_ns = r->end_ns,
				.pid = sp->pid,
				.tid = launch_tid(s, sp->pid, r->correlation_id),
				.device_id = r->device_id,
				.stream_id = r->stream_id,
				.correlation_id = r->correlation_id,
				.graph_id = r->graph_id,
				.grid = { r->kernel.grid_x, r->kernel.grid_y, r->kernel.grid_z },
				.block = { r->kernel.block_x, r->kernel.block_y, r->kernel.block_z },
				.name = name_of(s, sp->pid, r->kernel.name_id),
			};
		count++;
	}
	return count;
}

size_t gpu_store__copies(struct gpu_store *s, uint32_t pid, uint64_t from_ns, uint64_t to_ns,
			 struct gpu_copy_span *out, size_t max)
{
	size_t count = 0;

	sort_apis(s);
	for (size_t i = first_candidate(s, from_ns); i < s->n; i++) {
		const struct gpu_span *sp = &s->spans[i];
		const struct ttf_gpu_rec *r = &sp->r;
		uint64_t dur;

		if (r->start_ns >= to_ns)
			break;
		if (r->type == TTF_GPU_REC_KERNEL || r->end_ns <= from_ns || (pid && sp->pid != pid))
			continue;
		dur = r->end_ns - r->start_ns;
		if (count < max)
			out[count] = (struct gpu_copy_span){
				.start_ns = r->start_ns,
				.end_ns = r->end_ns,
				.bytes = r->copy.bytes,
				.pid = sp->pid,
				.tid = launch_tid(s, sp->pid, r->correlation_id),
				.device_id = r->device_id,
				.stream_id = r->stream_id,
				.correlation_id = r->correlation_id,
				.memset = r->type == TTF_GPU_REC_MEMSET,
				.copy_kind = r->copy_kind,
				.src_kind = r->src_kind,
				.dst_kind = r->dst_kind,
				.pageable = r->type == TTF_GPU_REC_MEMCPY &&
					    (r->src_kind == TTF_GPU_MEM_PAGEABLE ||
					     r->dst_kind == TTF_GPU_MEM_PAGEABLE),
				.gbps = dur ? (double)r->copy.bytes / (double)dur : 0,
			};
		count++;
	}
	return count;
}

size_t gpu_store__apis(struct gpu_store *s, uint32_t pid, uint32_t tid, uint64_t from_ns,
		       uint64_t to_ns, struct gpu_api_span *out, size_t max)
{
	size_t count = 0, lo = 0, hi;

	sort_apis(s);
	hi = s->napi;
	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;

		if (s->apis[mid].r.start_ns < from_ns)
			lo = mid + 1;
		else
			hi = mid;
	}
	for (size_t i = lo; i < s->napi && s->apis[i].r.start_ns < to_ns; i++) {
		if (s->apis[i].pid != pid || (tid && s->apis[i].r.api.tid != tid))
			continue;
		if (count < max)
			to_api(&s->apis[i], &out[count]);
		count++;
	}
	return count;
}

void gpu_store__expire(struct gpu_store *s, uint64_t before_ns)
{
	size_t j = 0;

	for (size_t i = 0; i < s->n; i++)
		if (s->spans[i].r.end_ns >= before_ns)
			s->spans[j++] = s->spans[i];
	s->n = j;
	j = 0;
	for (size_t i = 0; i < s->napi; i++)
		if (s->apis[i].r.end_ns >= before_ns)
			s->apis[j++] = s->apis[i];
	s->napi = j;
	s->api_map_dirty = true;
}

int gpu_store__add_item(struct gpu_store *s, uint32_t pid, uint32_t kind, const void *body,
			size_t len)
{
	switch (kind) {
	case TTF_GPU_MSG_RECORDS: {
		struct ttf_gpu_rec r;

		if (len != sizeof(r))
			return -EINVAL;
		memcpy(&r, body, sizeof(r));
		return gpu_store__add(s, pid, &r);
	}
	case TTF_GPU_MSG_NAME: {
		struct ttf_gpu_name n;

		if (len < sizeof(n))
			return -EINVAL;
		memcpy(&n, body, sizeof(n));
		if (n.len > TTF_GPU_NAME_MAX || len != sizeof(n) + n.len)
			return -EINVAL;
		return gpu_store__add_name(s, pid, n.name_id, (const char *)body + sizeof(n), n.len);
	}
	case TTF_GPU_MSG_STATS: {
		struct ttf_gpu_stats st;

		if (len != sizeof(st))
			return -EINVAL;
		memcpy(&st, body, sizeof(st));
		return gpu_store__set_stats(s, pid, &st);
	}
	}
	return -EINVAL;
}
