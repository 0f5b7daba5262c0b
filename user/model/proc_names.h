/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * Process names (comm) by tgid, as the net records show them: a FORK
 * record names its child (bpf/net.h: tid is the child's tgid, comm the
 * child's at fork), and a record of a process's main thread (tid == tgid)
 * its current name. Threads name themselves (libzmq's I/O threads are
 * "ZMQbg/IO/0"), so only the main thread's name is the process's.
 *
 * Used to name a hop's process where no request of its own names it (a
 * message hop's engine, user/model/hops/msg.h). Bounded: PROC_NAMES_MAX
 * processes, the oldest entry overwritten (a replay sees the same records,
 * so it names them alike).
 */
#ifndef TTFTRACE_PROC_NAMES_H
#define TTFTRACE_PROC_NAMES_H

#include <stddef.h>
#include <stdint.h>

#define PROC_NAMES_MAX 256

struct proc_names;

/* NULL on ENOMEM. */
struct proc_names *proc_names__new(void);
void proc_names__free(struct proc_names *pn);
/* tgid is called comm (NUL-terminated within 16 bytes, or cut there). */
void proc_names__set(struct proc_names *pn, uint32_t tgid, const char *comm);
/* Copy tgid's name into buf (size sz); 1 known, 0 not ("" in buf). */
int proc_names__get(const struct proc_names *pn, uint32_t tgid, char *buf, size_t sz);

#endif /* TTFTRACE_PROC_NAMES_H */
