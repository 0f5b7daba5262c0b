/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * Whether a process's executable file mappings may have changed since it
 * was last scanned, without reading its /proc/PID/maps: the kernel's count
 * of executable, non-writable pages (mm->exec_vm, shown as VmExe + VmLib in
 * /proc/PID/status) moves when a library is mapped or unmapped, such as by
 * dlopen (docs/kernel.md B11). A scan of maps that finds nothing new (the
 * rescans of the TLS and engine probes) costs a few hundred us on a server
 * with hundreds of mappings; the status read costs about 20 us.
 *
 * The sum can come back to the same value (one library unmapped, another of
 * the same size mapped between two checks): a full scan is let through at
 * least every MAPS_WATCH_FULL_NS per process anyway, so nothing stays unseen
 * longer than that.
 */
#ifndef TTFTRACE_MAPS_WATCH_H
#define TTFTRACE_MAPS_WATCH_H

#include <stdbool.h>
#include <stdint.h>

#define MAPS_WATCH_SLOTS 256
#define MAPS_WATCH_FULL_NS 10000000000ull

struct maps_watch {
	struct {
		uint32_t tgid;		/* 0: empty */
		uint64_t exec_kb;	/* VmExe + VmLib at the last scan let through, kB */
		uint64_t full_ns;	/* CLOCK_MONOTONIC ns of the last scan let through */
	} slot[MAPS_WATCH_SLOTS];	/* by tgid modulo the size; a collision lets a scan through */
};

/*
 * VmExe + VmLib of /proc/<tgid>/status, kB, in *kb. 0, or negative errno
 * (-ENOENT: gone; -ENODATA: the lines are missing, as for a kernel thread).
 */
int maps_watch__exec_kb(uint32_t tgid, uint64_t *kb);

/*
 * true when tgid's maps should be scanned now (and remembered as scanned at
 * now_ns): not seen before in w, exec_kb changed or unreadable, or the last
 * scan let through is MAPS_WATCH_FULL_NS old. w starts zeroed. Calls with
 * the same tgid and now_ns (several watchers on one tick) share one read
 * of /proc/<tgid>/status; pass the tick's time, not a fresh clock reading.
 * Not thread-safe.
 */
bool maps_watch__changed(struct maps_watch *w, uint32_t tgid, uint64_t now_ns);

/* Whether tgid has a scan remembered in w. */
bool maps_watch__known(const struct maps_watch *w, uint32_t tgid);

#endif
