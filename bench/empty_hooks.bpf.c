// SPDX-License-Identifier: GPL-2.0-only
/*
 * Empty BPF programs on every hook ttftrace uses by default on a 6.18 kernel
 * (bpf/net.bpf.c with the per-syscall tracepoints, bpf/sched.bpf.c without
 * sched_wakeup, docs/kernel.md B1.15; bpf/engine.bpf.c), named like
 * ttftrace's programs so that bench/overhead_report.py and bench/cost.py
 * (config E) can put their ns/run from the kernel's BPF run-time stats
 * side by side: the floor any program on that hook costs. Built and
 * attached by bench/overhead.sh and bench/cost.py through bench/empty_hooks.c.
 */
#include "vmlinux.h"
#include <bpf/bpf_helpers.h>

char LICENSE[] SEC("license") = "GPL";

#define EMPTY(sec, name) \
	SEC(sec) int name(void *ctx) { return 0; }

EMPTY("tp_btf/sched_process_fork", handle_fork)
EMPTY("tp_btf/sched_process_exec", handle_exec)
EMPTY("tp_btf/sched_process_exit", handle_exit)
EMPTY("tracepoint/syscalls/sys_enter_write", enter_write)
EMPTY("tracepoint/syscalls/sys_enter_writev", enter_writev)
EMPTY("tracepoint/syscalls/sys_enter_sendto", enter_sendto)
EMPTY("tracepoint/syscalls/sys_enter_sendmsg", enter_sendmsg)
EMPTY("tracepoint/syscalls/sys_enter_close", enter_close)
EMPTY("tp_btf/sock_recv_length", handle_recv)
EMPTY("tp_btf/sock_send_length", handle_send)
EMPTY("tp_btf/sk_data_ready", handle_data_ready)
EMPTY("tp_btf/net_dev_start_xmit", handle_xmit)
EMPTY("tp_btf/inet_sock_set_state", handle_set_state)
EMPTY("tp_btf/sched_switch", handle_switch)
EMPTY("tp_btf/sched_wakeup_new", handle_wakeup_new)
EMPTY("uprobe", handle_entry)
EMPTY("uretprobe", handle_return)
