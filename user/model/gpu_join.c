// SPDX-License-Identifier: GPL-2.0-only
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "user/model/gpu_join.h"

struct ival {
	uint64_t a, b;
};

static int cmp_ival(const void *x, const void *y)
{
	const struct ival *p = x, *q = y;

	return p->a < q->a ? -1 : p->a > q->a;
}

/* Sort and merge in place; returns the merged count. */
static size_t merge(struct ival *v, size_t n)
{
	size_t m = 0;

	if (!n)
		return 0;
	qsort(v, n, sizeof(*v), cmp_ival);
	for (size_t i = 1; i < n; i++) {
		if (v[i].a <= v[m].b) {
			if (v[i].b > v[m].b)
				v[m].b = v[i].b;
		} else {
			v[++m] = v[i];
		}
	}
	return m + 1;
}

static uint64_t total(const struct ival *v, size_t n)
{
	uint64_t t = 0;

	for (size_t i = 0; i < n; i++)
		t += v[i].b - v[i].a;
	return t;
}

/* Length of (union c) minus (union k); both merged and sorted. */
static uint64_t minus(const struct ival *c, size_t nc, const struct ival *k, size_t nk)
{
	uint64_t t = 0;
	size_t j = 0;

	for (size_t i = 0; i < nc; i++) {
		uint64_t a = c[i].a, len = c[i].b - c[i].a;

		while (j < nk && k[j].b <= a)
			j++;
		for (size_t q = j; q < nk && k[q].a < c[i].b; q++) {
			uint64_t lo = k[q].a > a ? k[q].a : a;
			uint64_t hi = k[q].b < c[i].b ? k[q].b : c[i].b;

			if (hi > lo)
				len -= hi - lo;
		}
		t += len;
	}
	return t;
}

static bool clip(uint64_t a, uint64_t b, uint64_t from, uint64_t to, struct ival *out)
{
	out->a = a > from ? a : from;
	out->b = b < to ? b : to;
	return out->b > out->a;
}

/* The split of [from, to) for @pid/@tid; copies also go to @bw when set. */
static int split(struct gpu_store *s, uint32_t pid, uint32_t tid, uint64_t from, uint64_t to,
		 struct gpu_split *out, struct gpu_copy_bw *bw, size_t max_bw, uint64_t *copy_all)
{
	size_t nk = gpu_store__kernels(s, pid, from, to, NULL, 0);
	size_t nc = gpu_store__copies(s, pid, from, to, NULL, 0);
	struct gpu_kernel_span *ks = calloc(nk + 1, sizeof(*ks));
	struct gpu_copy_span *cs = calloc(nc + 1, sizeof(*cs));
	struct ival *kv = calloc(nk + 1, sizeof(*kv));
	struct ival *cv = calloc(nc + 1, sizeof(*cv));
	size_t mk = 0, mc = 0, nbw = 0;
	int err = 0;

	memset(out, 0, sizeof(*out));
	if (!ks || !cs || !kv || !cv) {
		err = -ENOMEM;
		goto cleanup;
	}
	gpu_store__kernels(s, pid, from, to, ks, nk);
	gpu_store__copies(s, pid, from, to, cs, nc);
	for (size_t i = 0; i < nk; i++) {
		if (tid && ks[i].tid && ks[i].tid != tid)
			continue;
		out->unjoined += !ks[i].tid;
		out->kernels++;
		mk += clip(ks[i].start_ns, ks[i].end_ns, from, to, &kv[mk]);
	}
	for (size_t i = 0; i < nc; i++) {
		if (tid && cs[i].tid && cs[i].tid != tid)
			continue;
		out->unjoined += !cs[i].tid;
		out->copies++;
		mc += clip(cs[i].start_ns, cs[i].end_ns, from, to, &cv[mc]);
		if (bw && nbw < max_bw)
			bw[nbw++] = (struct gpu_copy_bw){
				.start_ns = cs[i].start_ns,
				.end_ns = cs[i].end_ns,
				.bytes = cs[i].bytes,
				.copy_kind = cs[i].memset ? 0 : cs[i].copy_kind,
				.src_kind = cs[i].src_kind,
				.dst_kind = cs[i].dst_kind,
				.pageable = cs[i].pageable,
				.gbps = cs[i].gbps,
			};
	}
	mk = merge(kv, mk);
	mc = merge(cv, mc);
	out->window_ns = to - from;
	out->compute_ns = total(kv, mk);
	out->copy_ns = minus(cv, mc, kv, mk);
	out->host_gap_ns = out->window_ns - out->compute_ns - out->copy_ns;
	if (copy_all)
		*copy_all = total(cv, mc);
cleanup:
	free(ks);
	free(cs);
	free(kv);
	free(cv);
	return err;
}

int gpu_join__step(struct gpu_store *s, uint32_t pid, const struct gpu_step *step,
		   struct gpu_split *out)
{
	if (step->end_ns < step->start_ns)
		return -EINVAL;
	return split(s, pid, step->tid, step->start_ns, step->end_ns, out, NULL, 0, NULL);
}

int gpu_join__prefill(struct gpu_store *s, uint32_t pid, uint32_t tid, uint64_t start_ns,
		      uint64_t end_ns, struct gpu_prefill *out, struct gpu_copy_bw *copies,
		      size_t max)
{
	int err;

	if (end_ns < start_ns)
		return -EINVAL;
	memset(out, 0, sizeof(*out));
	err = split(s, pid, tid, start_ns, end_ns, &out->split, copies, max, &out->copy_total_ns);
	if (err)
		return err;
	out->gpu_busy_ns = out->split.compute_ns + out->split.copy_ns;
	return (int)out->split.copies;
}

static bool is_work(uint8_t cat)
{
	return cat == TTF_GPU_API_LAUNCH || cat == TTF_GPU_API_GRAPH_LAUNCH ||
	       cat == TTF_GPU_API_MEMCPY || cat == TTF_GPU_API_MEMSET;
}

int gpu_join__infer_steps(struct gpu_store *s, uint32_t pid, uint32_t tid, uint64_t from_ns,
			  uint64_t to_ns, uint64_t idle_gap_ns, struct gpu_step *out, size_t max)
{
	size_t na = gpu_store__apis(s, pid, tid, from_ns, to_ns, NULL, 0);
	struct gpu_api_span *a = calloc(na + 1, sizeof(*a));
	uint64_t *last_call = calloc(max + 1, sizeof(*last_call));
	size_t nsteps = 0, nstored;
	bool open = false;
	uint64_t last_end = 0;
	int ret;

	if (!a || !last_call) {
		ret = -ENOMEM;
		goto cleanup;
	}
	gpu_store__apis(s, pid, tid, from_ns, to_ns, a, na);
	for (size_t i = 0; i < na; i++) {
		if (open && a[i].start_ns > last_end + idle_gap_ns) {
			if (nsteps < max)
				out[nsteps].end_ns = last_end;
			nsteps++;
			open = false;
		}
		if (is_work(a[i].category)) {
			if (!open && nsteps < max) {
				out[nsteps] = (struct gpu_step){ .start_ns = a[i].start_ns,
								 .tid = a[i].tid };
			}
			if (nsteps < max)
				last_call[nsteps] = a[i].start_ns;
			open = true;
		} else if (a[i].category == TTF_GPU_API_SYNC && open) {
			if (nsteps < max)
				out[nsteps].end_ns = a[i].end_ns;
			nsteps++;
			open = false;
		}
		if (a[i].end_ns > last_end)
			last_end = a[i].end_ns;
	}
	if (open) {
		if (nsteps < max)
			out[nsteps].end_ns = last_end;
		nsteps++;
	}
	nstored = nsteps < max ? nsteps : max;

	/* Extend each step to the end of the GPU work its own calls launched. */
	{
		size_t nk = gpu_store__kernels(s, pid, from_ns, UINT64_MAX, NULL, 0);
		size_t nc = gpu_store__copies(s, pid, from_ns, UINT64_MAX, NULL, 0);
		struct gpu_kernel_span *ks = calloc(nk + 1, sizeof(*ks));
		struct gpu_copy_span *cs = calloc(nc + 1, sizeof(*cs));
		struct gpu_api_span api;

		if (!ks || !cs) {
			free(ks);
			free(cs);
			ret = -ENOMEM;
			goto cleanup;
		}
		gpu_store__kernels(s, pid, from_ns, UINT64_MAX, ks, nk);
		gpu_store__copies(s, pid, from_ns, UINT64_MAX, cs, nc);
		for (size_t i = 0; i < nk + nc; i++) {
			uint32_t corr = i < nk ? ks[i].correlation_id : cs[i - nk].correlation_id;
			uint64_t end = i < nk ? ks[i].end_ns : cs[i - nk].end_ns;

			if (gpu_store__api(s, pid, corr, &api) || (tid && api.tid != tid))
				continue;
			for (size_t k = 0; k < nstored; k++) {
				if (api.start_ns >= out[k].start_ns && api.start_ns <= last_call[k] &&
				    end > out[k].end_ns)
					out[k].end_ns = end;
			}
		}
		free(ks);
		free(cs);
	}
	ret = (int)nsteps;
cleanup:
	free(a);
	free(last_call);
	return ret;
}
