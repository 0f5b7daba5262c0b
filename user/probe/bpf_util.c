// SPDX-License-Identifier: GPL-2.0-only
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <bpf/bpf.h>
#include "user/probe/bpf_util.h"

void bpf_util__sum_percpu(const struct bpf_map *map, uint32_t n, uint64_t *out)
{
	int ncpus = libbpf_num_possible_cpus();
	uint64_t *vals;

	memset(out, 0, n * sizeof(*out));
	if (ncpus <= 0)
		return;
	vals = calloc(ncpus, sizeof(*vals));
	if (!vals)
		return;
	for (uint32_t i = 0; i < n; i++) {
		if (bpf_map__lookup_elem(map, &i, sizeof(i), vals, ncpus * sizeof(*vals), 0))
			continue;
		for (int c = 0; c < ncpus; c++)
			out[i] += vals[c];
	}
	free(vals);
}

int bpf_util__prog_stats(const struct bpf_object *obj, const char **names, uint64_t *run_cnt,
			 uint64_t *run_time_ns, int max)
{
	struct bpf_program *prog;
	int n = 0;

	bpf_object__for_each_program(prog, obj) {
		struct bpf_prog_info info = {};
		__u32 len = sizeof(info);
		int fd = bpf_program__fd(prog);

		if (n >= max || fd < 0 || bpf_obj_get_info_by_fd(fd, &info, &len))
			continue;
		names[n] = bpf_program__name(prog);
		run_cnt[n] = info.run_cnt;
		run_time_ns[n] = info.run_time_ns;
		n++;
	}
	return n;
}

int bpf_util__push_link(struct bpf_link ***v, int *n, struct bpf_link *l)
{
	struct bpf_link **nv = realloc(*v, (*n + 1) * sizeof(*nv));

	if (!nv) {
		bpf_link__destroy(l);
		return -ENOMEM;
	}
	*v = nv;
	nv[(*n)++] = l;
	return 0;
}
