/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * TTFT buckets for a summary's tail in fixed memory (user/export/
 * report_stages.c, report_hop_split.c): exact below 2^TAIL_SUB_BITS ns, then
 * 2^TAIL_SUB_BITS log-linear buckets per power of two of ns (a bucket spans
 * at most 1/64 of its values), TAIL_OCTAVES of them; larger values share
 * the last bucket.
 */
#ifndef TTFTRACE_TAIL_BUCKET_H
#define TTFTRACE_TAIL_BUCKET_H

#include <stddef.h>
#include <stdint.h>

#define TAIL_SUB_BITS 6
#define TAIL_OCTAVES 48
#define TAIL_BUCKETS ((TAIL_OCTAVES << TAIL_SUB_BITS) + 1)

/* The bucket of ns (< 0 counts as 0): 0 .. TAIL_BUCKETS - 1, ascending with ns. */
static inline size_t tail_bucket_of(int64_t ns)
{
	uint64_t v = ns > 0 ? (uint64_t)ns : 0;
	int e;

	if (v < (1u << TAIL_SUB_BITS))
		return v;
	e = 63 - __builtin_clzll(v);	/* v in [2^e, 2^(e+1)) */
	if (e - TAIL_SUB_BITS + 1 >= TAIL_OCTAVES)
		return TAIL_BUCKETS - 1;
	return ((size_t)(e - TAIL_SUB_BITS + 1) << TAIL_SUB_BITS) +
	       ((v >> (e - TAIL_SUB_BITS)) & ((1u << TAIL_SUB_BITS) - 1));
}

#endif /* TTFTRACE_TAIL_BUCKET_H */
