// SPDX-License-Identifier: GPL-2.0-only
/*
 * Empty BPF programs on every hook ttftrace uses by default (bpf/net.bpf.c,
 * bpf/sched.bpf.c, bpf/engine.bpf.c), named like ttftrace's programs so that
 * bench/overhead_report.py can put their ns/run from the kernel's BPF
 * run-time stats side by side: the floor any program on that hook costs.
 * Built and attached by bench/overhead.sh through bench/empty_hooks.c.
 */
#include "vmlinux.h"
#include <bpf/bpf_helpers.h>

char LICENSE[] SEC("license") = "GPL";

#define EMPTY(sec, name) \
	SEC(sec) int name(void *ctx) { return 0; }

EMPTY("tp_btf/sched_process_fork", handle_fork)
EMPTY("tp_btf/sched_process_exec", handle_exec)
EMPTY("tp_btf/sched_process_exit", handle_exit)
EMPTY("tp_btf/sys_enter", handle_sys_enter)
EMPTY("tp_btf/sock_recv_length", handle_recv)
EMPTY("tp_btf/sock_send_length", handle_send)
EMPTY("tp_btf/sk_data_ready", handle_data_ready)
EMPTY("tp_btf/net_dev_start_xmit", handle_xmit)
EMPTY("tp_btf/inet_sock_set_state", handle_set_state)
EMPTY("tp_btf/sched_switch", handle_switch)
EMPTY("tp_btf/sched_wakeup", handle_wakeup)
EMPTY("tp_btf/sched_wakeup_new", handle_wakeup_new)
EMPTY("uprobe", handle_entry)
EMPTY("uretprobe", handle_return)
