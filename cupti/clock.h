/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * Clock domain of CUPTI records. Primary: cuptiActivityRegisterTimestampCallback
 * with cupti_clock__mono_ns, so records are CLOCK_MONOTONIC like
 * bpf_ktime_get_ns(). Fallback when the callback is missing or refused:
 * CUPTI stamps with CLOCK_REALTIME on Linux (cupti_activity.h, 13.0), and we
 * add an offset measured by bracketing (docs/cupti.md A4, docs/cases.md #21).
 */
#ifndef TTFTRACE_CUPTI_CLOCK_H
#define TTFTRACE_CUPTI_CLOCK_H

#include <stdint.h>

/* Internal to libttftrace-cupti.so: keep out of the host process's symbol space. */
#pragma GCC visibility push(hidden)

/* clock_gettime(CLOCK_MONOTONIC) in ns; the CUPTI timestamp callback. */
uint64_t cupti_clock__mono_ns(void);

/*
 * Offset (ns) to add to a @cupti_ts reading to land in the @mono domain:
 * over @samples tries, mono() is read before and after cupti_ts() and the
 * tightest bracket wins (its midpoint minus the CUPTI reading). Returns 0 if
 * cupti_ts() never succeeds (it returns 0 on failure).
 */
int64_t cupti_clock__offset_ns(uint64_t (*cupti_ts)(void), uint64_t (*mono)(void), int samples);

#pragma GCC visibility pop

#endif /* TTFTRACE_CUPTI_CLOCK_H */
