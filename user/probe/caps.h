/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * Which of the capabilities ttftrace relies on the process holds, read from
 * the CapEff mask in /proc/self/status (proc(5)). Root in a container can
 * lack some of them; an unprivileged user can be given them (setcap, or
 * ambient capabilities) instead of running as root.
 *
 *   CAP_BPF + CAP_PERFMON   load tracing programs and maps, attach
 *                           tracepoints and uprobes (since Linux 5.8,
 *                           capabilities(7)); CAP_SYS_ADMIN stands in for
 *                           both. Perf uprobes need CAP_SYS_ADMIN again
 *                           since the CVE-2025-38466 fix: uprobe_attach.h.
 *   CAP_SYS_PTRACE          read /proc/PID/{fd,maps,root} of another user's
 *                           processes (ptrace access mode, proc(5)).
 *   CAP_SYS_ADMIN or CAP_CHECKPOINT_RESTORE
 *                           open /proc/PID/map_files (the engine uprobes'
 *                           path to libraries in another mount namespace).
 */
#ifndef TTFTRACE_CAPS_H
#define TTFTRACE_CAPS_H

#include <stddef.h>
#include <stdint.h>

/* Capability numbers (include/uapi/linux/capability.h). */
enum ttf_cap {
	TTF_CAP_DAC_READ_SEARCH = 2,
	TTF_CAP_SYS_PTRACE = 19,
	TTF_CAP_SYS_ADMIN = 21,
	TTF_CAP_PERFMON = 38,
	TTF_CAP_BPF = 39,
	TTF_CAP_CHECKPOINT_RESTORE = 40,
};

/*
 * Effective capability mask of this process into *mask (bit N = capability
 * N). Returns 0 or -errno (-ENOENT when /proc is not mounted, -EINVAL when
 * the CapEff line is missing or malformed).
 */
int caps__effective(uint64_t *mask);

/*
 * Parse the CapEff line out of the text of a /proc/PID/status file (for
 * tests). Returns 0 or -EINVAL.
 */
int caps__parse_status(const char *status_text, uint64_t *mask);

/*
 * 0 when mask allows loading and attaching the BPF programs; else -EPERM
 * and names of the missing capabilities ("CAP_BPF, CAP_PERFMON") in
 * missing[missing_len].
 */
int caps__check_bpf(uint64_t mask, char *missing, size_t missing_len);

static inline int caps__has(uint64_t mask, enum ttf_cap cap)
{
	return (mask >> cap) & 1;
}

#endif /* TTFTRACE_CAPS_H */
