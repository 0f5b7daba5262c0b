/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * What the two socket sources share (BPF side only): net.bpf.c (socket
 * tracepoints, 6.3+) and net_syscall.bpf.c (raw syscall enter/exit, 5.8+)
 * each include this once. Maps, configuration and records are the same in
 * both objects, so user/probe/net_probe.c drives either one.
 *
 *   sched_process_*     follow fork/exec/exit of traced processes
 *   (sources' reads)    trace a traced process's new local upstream at its first read
 *   sk_data_ready       kernel arrival time of data on a traced socket
 *   tcp_probe           the same from TCP receive, where sk_data_ready is missing
 *   net_dev_start_xmit  XMIT record with the segment's end sequence number
 *   inet_sock_set_state CLOSE record when a traced socket leaves ESTABLISHED
 *
 * Define TTF_SK_ID_BY_PTR before including it when the source finds its
 * sockets through file descriptors (see sk_ids).
 */
#ifndef TTF_NET_COMMON_BPF_H
#define TTF_NET_COMMON_BPF_H

/*
 * The parts, each including what it uses. Their order here is the order of
 * the programs in the object (and so of the source's attach loop): process
 * following, TLS uprobes, arrival and transmit, close.
 */
#include "bpf/net_maps.bpf.h"		/* configuration, records, maps */
#include "bpf/net_sock.bpf.h"		/* socket kind, addresses, ids */
#include "bpf/net_follow.bpf.h"		/* fork/exec/exit programs */
#include "bpf/net_hop.bpf.h"		/* a new local upstream traced at its first read */
#include "bpf/net_xmit.bpf.h"		/* XMIT records, folding into SEND */
#include "bpf/net_args.bpf.h"		/* syscall arguments at sys_enter */
#include "bpf/net_capture.bpf.h"	/* RECV/SEND records with payload */
#include "bpf/tls.bpf.h"		/* TLS plaintext (uprobes) */
#include "bpf/net_timing.bpf.h"		/* arrival and transmit programs */
#include "bpf/net_close.bpf.h"		/* CLOSE records */

#endif /* TTF_NET_COMMON_BPF_H */
