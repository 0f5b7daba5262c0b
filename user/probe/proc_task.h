/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * Threads of a process from /proc/TGID/task (proc(5)): their names and
 * which of them sleep now. For a scheduler view that starts after its
 * threads did (tests/drivers/sched-probe --seed).
 */
#ifndef TTFTRACE_PROC_TASK_H
#define TTFTRACE_PROC_TASK_H

#include <stddef.h>
#include <stdint.h>

/* /proc/TGID/task/TID/comm into buf (len bytes, NUL-terminated); "" when unreadable. */
void proc_task__comm(uint32_t tgid, uint32_t tid, char *buf, size_t len);
/*
 * The threads of tgid in state S or D (/proc/TGID/task/TID/stat) into
 * tids[0..cap), and *now_ns: CLOCK_MONOTONIC taken before reading the
 * states (a thread shown sleeping slept from then on). Returns how many,
 * or -errno (the process is gone).
 */
int proc_task__sleeping(uint32_t tgid, uint32_t *tids, int cap, uint64_t *now_ns);

#endif /* TTFTRACE_PROC_TASK_H */
