/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * Finding the processes to trace, from /proc (see proc(5)): by PID (plus its
 * existing descendants), by comm, by listening TCP port, by a unix socket's
 * inode, or by starting a command. All functions return 0 or a negative errno.
 */
#ifndef TTFTRACE_TARGET_H
#define TTFTRACE_TARGET_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

struct target_set {
	uint32_t *tgids;
	size_t n, cap;
	uint16_t ports[64];	/* TCP ports the targets listen on (host order) */
	uint32_t port_netns[64];	/* the network namespace of each (target__netns) */
	size_t n_ports;
};

void target_set__free(struct target_set *ts);
/* Add one tgid (ignores duplicates). -ENOMEM. */
int target_set__add(struct target_set *ts, uint32_t tgid);

/* PID and its current descendants. -ESRCH when PID does not exist. */
int target__by_pid(struct target_set *ts, pid_t pid);
/* Every process whose /proc/PID/comm equals comm. -ESRCH when none. */
int target__by_comm(struct target_set *ts, const char *comm);
/*
 * Owners of the TCP socket listening on port (IPv4 or IPv6) in this
 * process's network namespace; _in: in that of process ns_pid ("self" or a
 * number; docs/kernel.md B14). -ESRCH when none.
 */
int target__by_port(struct target_set *ts, uint16_t port);
int target__by_port_in(struct target_set *ts, const char *ns_pid, uint16_t port);
/* Processes holding socket:[ino] in /proc/PID/fd (a unix socket's owners). -ESRCH when none. */
int target__by_socket_inode(struct target_set *ts, uint64_t ino);
/*
 * Owners of the unix sockets listening on the path whose file has inode
 * path_ino (stat(2) st_ino; bpf/net.h): /proc/net/unix's listeners with an
 * absolute path, stat'ed from this mount namespace. path: the path found.
 * -ESRCH when none.
 */
int target__by_unix_path_ino(struct target_set *ts, uint64_t path_ino, char *path, size_t len);
/*
 * The peer inode of unix socket ino (sock_diag UNIX_DIAG_PEER) into *peer;
 * 0 when it has none (yet). -ESRCH when ino is not a unix socket here.
 */
int target__unix_peer(uint64_t ino, uint64_t *peer);
/*
 * Add the TCP ports every tgid in ts listens on to ts->ports, each with its
 * network namespace: read from /proc/TGID/net/tcp{,6}, which show the
 * namespace of TGID, not this process's (a container's server is found from
 * the host; docs/kernel.md B14).
 */
int target__collect_listen_ports(struct target_set *ts);
/*
 * The network namespace of process pid ("self" or a number): st_ino of
 * /proc/PID/ns/net, which is the kernel's net->ns.inum (docs/kernel.md B14);
 * 0 when it cannot be read (the process is gone, or no CONFIG_NET_NS).
 */
uint32_t target__netns(const char *pid);

#define TARGET_MAX_HOLDERS 16

/*
 * One listening TCP socket (IPv4 or IPv6) and the processes holding it: a
 * parent that binds and workers that accept on the descriptor they
 * inherited or received with SCM_RIGHTS all show socket:[inode] in
 * /proc/PID/fd (docs/design.md D11). n_holders counts them all; holders
 * names the first TARGET_MAX_HOLDERS.
 */
struct target_listener {
	uint64_t inode;
	uint16_t port;		/* host order */
	uint32_t netns;		/* its network namespace (target__netns) */
	uint32_t holders[TARGET_MAX_HOLDERS];
	size_t n_holders;
};

/*
 * The listening sockets on ts->ports (each in its port_netns, from the
 * tables of the targets' namespaces) and their holders (one walk of
 * /proc/PID/fd, this process left out), up to max into out; *n: how many.
 */
int target__listeners(const struct target_set *ts, struct target_listener *out, size_t max,
		      size_t *n);
/* 1 when tgid holds one of the sockets ls[0..n) (*which: its index), else 0. */
int target__holds_listener(uint32_t tgid, const struct target_listener *ls, size_t n,
			   size_t *which);
/* /proc/PID/comm into comm (len bytes, "?" when gone). */
void target__comm(uint32_t tgid, char *comm, size_t len);

/*
 * Fork a child that runs `/bin/sh -c cmd` once target__spawn_release() is
 * called, so that it can be traced from its first instruction. The child
 * leads a process group of its own (pgid = *pid), so that the tracer can end
 * everything cmd started (`kill(-pid, SIGTERM)`): sh does not exec a command
 * it runs in the background, or a last command of several. A terminal's
 * Ctrl-C then reaches only the tracer, which ends the group at exit.
 * *go_fd is the write end the release closes.
 */
int target__spawn(const char *cmd, pid_t *pid, int *go_fd);
void target__spawn_release(int go_fd);

/* 1 when the process exists (and is not a zombie), else 0. */
int target__alive(uint32_t tgid);

#endif /* TTFTRACE_TARGET_H */
