/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * Attach a BPF program as a uprobe or uretprobe, through whichever of the
 * kernel's two paths this process may use (docs/deploy.md, "Capabilities"):
 *
 *   perf uprobe PMU   perf_event_open(2) of the "uprobe" PMU, what libbpf
 *                     does. Linux 5.8 let CAP_PERFMON create these; the fix
 *                     for CVE-2025-38466 ("perf: Revert to requiring
 *                     CAP_SYS_ADMIN for uprobes", in 6.16 and the stable
 *                     releases 5.10.240, 5.15.189, 6.1.146, 6.6.99, 6.12.39,
 *                     6.15.7) takes that back: without CAP_SYS_ADMIN,
 *                     perf_uprobe_event_init() in kernel/events/core.c
 *                     answers EACCES.
 *   tracefs event     a "p:"/"r:" line written to <tracefs>/uprobe_events
 *                     (Documentation/trace/uprobetracer.rst), opened as a
 *                     PERF_TYPE_TRACEPOINT perf event, whose perf_tp_event_init()
 *                     asks only what any perf event asks (CAP_PERFMON under
 *                     perf_event_paranoid > 1). Writing uprobe_events needs no
 *                     capability, only the file's permission (root's, mode
 *                     0640) and a mounted tracefs (mounting it needs
 *                     CAP_SYS_ADMIN). libbpf has this path too, but takes it
 *                     only where the "uprobe" PMU is missing, not where it
 *                     refuses.
 *
 * The first refusal of the PMU (EACCES or EPERM) switches every later
 * uprobe to the tracefs path and says so once on stderr.
 */
#ifndef TTFTRACE_UPROBE_ATTACH_H
#define TTFTRACE_UPROBE_ATTACH_H

#include <stdbool.h>
#include <stdint.h>
#include <bpf/libbpf.h>

/*
 * Attach prog at file offset off of the file open as fd (through
 * /proc/self/fd/N, see engine_probe_attach.c), with BPF cookie cookie; a
 * return probe when retprobe. Returns the link, or NULL with errno set
 * (uprobe_attach__why says why in words).
 */
struct bpf_link *uprobe_attach(struct bpf_program *prog, int fd, uint64_t off, uint64_t cookie,
			       bool retprobe);

/*
 * Why an attach failed with negative errno err, in words for a warning:
 * "attach refused (EACCES): ..." when the kernel refused the perf uprobe
 * and the tracefs path could not stand in, with what that needs.
 */
const char *uprobe_attach__why(int err);

/* 1 when a uprobe was refused for want of privilege and not attached at all. */
bool uprobe_attach__refused(int err);

#endif /* TTFTRACE_UPROBE_ATTACH_H */
