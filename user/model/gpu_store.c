// SPDX-License-Identifier: GPL-2.0-only
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "user/model/gpu_store.h"

struct gpu_span {
	struct ttf_gpu_rec r;
	uint32_t pid;
};

struct gpu_name {
	uint64_t id;
	uint32_t pid;
	char *str;
};

struct gpu_pid_stats {
	uint32_t pid;
	struct ttf_gpu_stats st;
};

/* Open-addressing map from a nonzero 64-bit key to an index. */
struct u64map {
	uint64_t *keys;
	uint32_t *vals;
	size_t slots, used;
};

struct gpu_store {
	struct gpu_span *spans;  /* kernels, copies, memsets */
	size_t n, cap;
	bool sorted;
	uint64_t max_dur_ns;     /* longest span: bounds the backward search of a window */
	struct gpu_span *apis;
	size_t napi, capapi;
	bool api_sorted;
	struct u64map api_map;   /* (pid, corr) -> apis[] index; rebuilt after sorting */
	bool api_map_dirty;
	struct gpu_name *names;
	size_t nnames, capnames;
	struct u64map name_map;  /* mix(pid, id) -> names[] index */
	struct gpu_pid_stats *stats;
	size_t nstats;
};

static uint64_t mix64(uint64_t x)
{
	x ^= x >> 33;
	x *= 0xff51afd7ed558ccdull;
	x ^= x >> 33;
	return x;
}

static int map_put(struct u64map *m, uint64_t key, uint32_t val);

static int map_grow(struct u64map *m)
{
	struct u64map old = *m;
	size_t slots = old.slots ? old.slots * 2 : 1024;

	m->keys = calloc(slots, sizeof(*m->keys));
	m->vals = calloc(slots, sizeof(*m->vals));
	if (!m->keys || !m->vals) {
		free(m->keys);
		free(m->vals);
		*m = old;
		return -ENOMEM;
	}
	m->slots = slots;
	m->used = 0;
	for (size_t i = 0; i < old.slots; i++)
		if (old.keys[i])
			map_put(m, old.keys[i], old.vals[i]);
	free(old.keys);
	free(old.vals);
	return 0;
}

static int map_put(struct u64map *m, uint64_t key, uint32_t val)
{
	size_t i;

	if ((m->used + 1) * 4 > m->slots * 3 && map_grow(m))
		return -ENOMEM;
	for (i = mix64(key) & (m->slots - 1); m->keys[i] && m->keys[i] != key;
	     i = (i + 1) & (m->slots - 1))
		;
	if (!m->keys[i])
		m->used++;
	m->keys[i] = key;
	m->vals[i] = val;
	return 0;
}

static bool map_get(const struct u64map *m, uint64_t key, uint32_t *val)
{
	if (!m->slots)
		return false;
	for (size_t i = mix64(key) & (m->slots - 1); m->keys[i]; i = (i + 1) & (m->slots - 1)) {
		if (m->keys[i] == key) {
			*val = m->vals[i];
			return true;
		}
	}
	return false;
}

static void map_clear(struct u64map *m)
{
	if (m->keys)
		memset(m->keys, 0, m->slots * sizeof(*m->keys));
	m->used = 0;
}

static uint64_t api_key(uint32_t pid, uint32_t corr)
{
	return (1ull << 63) | ((uint64_t)pid << 32) | corr;
}

static uint64_t name_key(uint32_t pid, uint64_t id)
{
	uint64_t k = id ^ mix64(pid);

	return k ? k : 1;
}

struct gpu_store *gpu_store__new(void)
{
	return calloc(1, sizeof(struct gpu_store));
}

void gpu_store__free(struct gpu_store *s)
{
	if (!s)
		return;
	free(s->spans);
	free(s->apis);
	free(s->api_map.keys);
	free(s->api_map.vals);
	for (size_t i = 0; i < s->nnames; i++)
		free(s->names[i].str);
	free(s->names);
	free(s->name_map.keys);
	free(s->name_map.vals);
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
	struct gpu_name *p;
	uint32_t idx;
	char *copy;

	if (map_get(&s->name_map, name_key(pid, name_id), &idx))
		return 0;
	if (s->nnames == s->capnames) {
		size_t ncap = s->capnames ? s->capnames * 2 : 256;

		p = realloc(s->names, ncap * sizeof(*p));
		if (!p)
			return -ENOMEM;
		s->names = p;
		s->capnames = ncap;
	}
	copy = strndup(name, len);
	if (!copy)
		return -ENOMEM;
	if (map_put(&s->name_map, name_key(pid, name_id), s->nnames)) {
		free(copy);
		return -ENOMEM;
	}
	s->names[s->nnames++] = (struct gpu_name){ .id = name_id, .pid = pid, .str = copy };
	return 0;
}

static const char *name_of(const struct gpu_store *s, uint32_t pid, uint64_t id)
{
	uint32_t idx;

	if (id && map_get(&s->name_map, name_key(pid, id), &idx) && s->names[idx].id == id &&
	    s->names[idx].pid == pid)
		return s->names[idx].str;
	return "?";
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
