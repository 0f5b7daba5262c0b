/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * Tracepoint presence check, before a skeleton is loaded.
 *
 * A tp_btf program for tracepoint T attaches through the BTF typedef
 * "btf_trace_T" that the kernel emits for every raw tracepoint
 * (include/trace/bpf_probe.h, DEFINE_EVENT -> btf_trace_##call). When the
 * typedef is absent the kernel does not have T, and libbpf's load fails for
 * the whole object with -ESRCH and no name a user can act on. Checking first
 * lets a caller name the missing tracepoint, or leave an optional program
 * out and go on without it.
 *
 * Example: sock_recv_length, sock_send_length and sk_data_ready arrived in
 * Linux 6.3 (include/trace/events/sock.h; docs/kernel.md B1, which cites
 * the backports project's sock.h, defining trace_sk_data_ready away below
 * 6.3).
 */
#ifndef TTFTRACE_TP_CHECK_H
#define TTFTRACE_TP_CHECK_H

#include <bpf/btf.h>
#include <bpf/libbpf.h>

/*
 * The kernel BTF that tracepoint checks read: the file named by env
 * TTFTRACE_SYS_BTF when set (tests point it at a copy with a typedef
 * renamed), else the running kernel's (btf__load_vmlinux_btf). Returns NULL
 * with errno set when it cannot be read. Free with btf__free.
 */
struct btf *tp_check__kernel_btf(void);

/*
 * 1 when the kernel BTF has tracepoint tp (name without "btf_trace_"),
 * 0 when not.
 */
int tp_check__has(const struct btf *vmlinux, const char *tp);

/*
 * Number of arguments a tp_btf program of tracepoint tp gets (the
 * prototype's parameters after the leading void *__data), or -ENOENT when
 * the kernel BTF has no such tracepoint, -EINVAL when its typedef is not a
 * pointer to a function prototype.
 */
int tp_check__nargs(const struct btf *vmlinux, const char *tp);

/*
 * Walk obj's programs that will load and whose section is "tp_btf/<tp>".
 * A missing tracepoint that is in required (a NULL-terminated list of
 * tracepoint names; NULL means every one is required) fails the check:
 * returns -ENOENT with its name copied to missing[missing_len]. Any
 * other missing tracepoint has its program's autoload turned off, a warning
 * printed, and is counted. Returns the number of programs turned off (>= 0).
 * Call between open and load.
 */
int tp_check__prune(struct bpf_object *obj, const struct btf *vmlinux,
		    const char *const *required, char *missing, size_t missing_len);

#endif /* TTFTRACE_TP_CHECK_H */
