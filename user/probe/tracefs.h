/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * tracefs for the tracefs-event programs (SEC("tracepoint/...")): libbpf's
 * attach reads the event's id from <tracefs>/events/SYSTEM/NAME/id, with
 * tracefs at /sys/kernel/debug/tracing or /sys/kernel/tracing (libbpf.c,
 * tracefs_path(); which one depends on the libbpf release). A kernel without
 * CONFIG_FTRACE_SYSCALLS has no events/syscalls (docs/kernel.md B1.5).
 */
#ifndef TTFTRACE_TRACEFS_H
#define TTFTRACE_TRACEFS_H

/* Where tracefs is mounted when ttftrace mounts it. */
#define TTF_TRACEFS_MOUNT "/sys/kernel/tracing"

/*
 * Make tracefs reachable: mount it at TTF_TRACEFS_MOUNT when neither path
 * has an events directory. Returns 1 when this call mounted it (undo with
 * tracefs__unmount), 0 when it was there, or a negative errno from mount(2)
 * (-EPERM in a container without CAP_SYS_ADMIN, -ENODEV without
 * CONFIG_TRACING).
 */
int tracefs__ensure(void);
/* Lazily unmount what tracefs__ensure mounted (MNT_DETACH). */
void tracefs__unmount(void);
/* The tracefs mount (either path) that has the file rel, or NULL. */
const char *tracefs__root(const char *rel);
/* 1 when tracefs (either path) has the event SYSTEM/NAME (its id file), else 0. */
int tracefs__has_event(const char *system, const char *name);

#endif /* TTFTRACE_TRACEFS_H */
