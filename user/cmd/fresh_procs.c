// SPDX-License-Identifier: GPL-2.0-only
#include <string.h>
#include "user/cmd/fresh_procs.h"

void fresh_procs__add(struct fresh_procs *f, uint32_t tgid, uint64_t now_ns)
{
	int i;

	for (i = 0; i < f->n && f->tgid[i] != tgid; i++)
		;
	if (i == f->n) {
		if (f->n == FRESH_MAX) {
			memmove(f->tgid, f->tgid + 1, (FRESH_MAX - 1) * sizeof(f->tgid[0]));
			memmove(f->until_ns, f->until_ns + 1, (FRESH_MAX - 1) * sizeof(f->until_ns[0]));
			i = --f->n;
		}
		f->n++;
	}
	f->tgid[i] = tgid;
	f->until_ns[i] = now_ns + FRESH_NS;
	maps_watch__changed(&f->watch, tgid, now_ns);	/* the baseline: what it maps now */
}

bool fresh_procs__any(struct fresh_procs *f, uint64_t now_ns)
{
	for (int i = 0; i < f->n;) {
		if (now_ns < f->until_ns[i]) {
			i++;
			continue;
		}
		f->n--;
		f->tgid[i] = f->tgid[f->n];
		f->until_ns[i] = f->until_ns[f->n];
	}
	return f->n > 0;
}

void fresh_procs__changed(struct fresh_procs *f, uint64_t now_ns,
			  void (*fn)(void *ctx, uint32_t tgid), void *ctx)
{
	for (int i = 0; i < f->n; i++)
		if (maps_watch__changed(&f->watch, f->tgid[i], now_ns))
			fn(ctx, f->tgid[i]);
}
