/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * Helpers the BPF programs share (BPF side only; the records and counter
 * indexes user space reads are in the *.h ABI headers next to this one).
 *
 * Each program keeps its own maps (user space finds them by name in its
 * skeleton, and the sched probe reuses the net probe's traced_tgids through
 * its fd), so every helper takes the map it works on. All are
 * __always_inline: with the map a constant at each call, the code is what
 * the open-coded version was, with no extra instruction per run.
 */
#ifndef TTF_COMMON_BPF_H
#define TTF_COMMON_BPF_H

#include "vmlinux.h"
#include <bpf/bpf_helpers.h>

/* Bump slot idx of a BPF_MAP_TYPE_PERCPU_ARRAY of __u64 counters. */
static __always_inline void ttf_count(void *counters, __u32 idx)
{
	__u64 *v = bpf_map_lookup_elem(counters, &idx);

	if (v)
		(*v)++;
}

/* Is tgid in the traced-process set (a hash map tgid -> __u8)? */
static __always_inline bool ttf_tgid_traced(void *tgids, __u32 tgid)
{
	return bpf_map_lookup_elem(tgids, &tgid) != NULL;
}

/*
 * Submit/output flags for a ring buffer whose consumer drains on a timer:
 * wake it only when more than wakeup_bytes are unread.
 */
static __always_inline __u64 ttf_rb_wakeup_flags(void *ring, __u64 wakeup_bytes)
{
	return bpf_ringbuf_query(ring, BPF_RB_AVAIL_DATA) > wakeup_bytes ?
		BPF_RB_FORCE_WAKEUP : BPF_RB_NO_WAKEUP;
}

/* Reserve size bytes in ring; when it is full, count counters[full_idx]. */
static __always_inline void *ttf_rb_reserve(void *ring, __u64 size, void *counters,
					    __u32 full_idx)
{
	void *p = bpf_ringbuf_reserve(ring, size, 0);

	if (!p)
		ttf_count(counters, full_idx);
	return p;
}

#endif /* TTF_COMMON_BPF_H */
