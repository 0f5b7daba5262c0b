// SPDX-License-Identifier: GPL-2.0-only
#include <ctype.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <poll.h>
#include <unistd.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <sys/stat.h>
#include <linux/inet_diag.h>
#include <linux/netlink.h>
#include <linux/rtnetlink.h>
#include <linux/sock_diag.h>
#include <linux/unix_diag.h>
#include "user/probe/target.h"

void target_set__free(struct target_set *ts)
{
	free(ts->tgids);
	memset(ts, 0, sizeof(*ts));
}

int target_set__add(struct target_set *ts, uint32_t tgid)
{
	uint32_t *n;

	for (size_t i = 0; i < ts->n; i++)
		if (ts->tgids[i] == tgid)
			return 0;
	if (ts->n == ts->cap) {
		size_t cap = ts->cap ? ts->cap * 2 : 16;

		n = realloc(ts->tgids, cap * sizeof(*n));
		if (!n)
			return -ENOMEM;
		ts->tgids = n;
		ts->cap = cap;
	}
	ts->tgids[ts->n++] = tgid;
	return 0;
}

static int is_pid_dir(const struct dirent *d)
{
	for (const char *p = d->d_name; *p; p++)
		if (!isdigit((unsigned char)*p))
			return 0;
	return d->d_name[0] != '\0';
}

/* /proc/PID/stat: "pid (comm) state ppid ..."; comm may contain spaces and ')'. */
static int read_stat(uint32_t pid, char *state, uint32_t *ppid)
{
	char path[64], buf[512], *p;
	ssize_t n;
	int fd;

	snprintf(path, sizeof(path), "/proc/%u/stat", pid);
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	n = read(fd, buf, sizeof(buf) - 1);
	close(fd);
	if (n <= 0)
		return -EIO;
	buf[n] = '\0';
	p = strrchr(buf, ')');
	if (!p || sscanf(p + 1, " %c %u", state, ppid) != 2)
		return -EIO;
	return 0;
}

int target__alive(uint32_t tgid)
{
	struct pollfd pfd = { .events = POLLIN };
	uint32_t ppid;
	char st;
	int r;

	/*
	 * A pidfd polls readable once the thread group has exited, zombies
	 * included (docs/kernel.md B12): three syscalls, where /proc/PID/stat
	 * walks every thread of the process for its CPU times.
	 */
	pfd.fd = (int)syscall(SYS_pidfd_open, (pid_t)tgid, 0);
	if (pfd.fd < 0 && errno == ESRCH)
		return 0;
	if (pfd.fd >= 0) {
		r = poll(&pfd, 1, 0);
		close(pfd.fd);
		if (r >= 0)
			return r == 0;
	}
	/* no pidfd_open (before 5.3, or seccomp), or tgid is not a thread group leader */
	return read_stat(tgid, &st, &ppid) == 0 && st != 'Z' && st != 'X';
}

/* 1 when tgid is pid or one of its descendants already listed in fam[0..n). */
static int in_family(const uint32_t *fam, size_t n, uint32_t ppid)
{
	for (size_t i = 0; i < n; i++)
		if (fam[i] == ppid)
			return 1;
	return 0;
}

int target__by_pid(struct target_set *ts, pid_t pid)
{
	uint32_t *fam = NULL;
	size_t n_fam = 0, cap = 0, done;
	int err = 0;

	if (!target__alive(pid))
		return -ESRCH;
	/* pid and its descendants, even when pid was already in ts */
	do {
		DIR *d;
		struct dirent *de;

		if (n_fam == cap) {
			uint32_t *f = realloc(fam, (cap = cap ? cap * 2 : 16) * sizeof(*f));

			if (!f) {
				err = -ENOMEM;
				break;
			}
			fam = f;
		}
		if (!n_fam)
			fam[n_fam++] = pid;
		done = n_fam;
		d = opendir("/proc");
		if (!d) {
			err = -errno;
			break;
		}
		while ((de = readdir(d)) && n_fam < cap) {
			uint32_t p, ppid;
			char st;

			if (!is_pid_dir(de))
				continue;
			p = strtoul(de->d_name, NULL, 10);
			if (read_stat(p, &st, &ppid) || st == 'Z' || in_family(fam, n_fam, p))
				continue;
			if (in_family(fam, n_fam, ppid))
				fam[n_fam++] = p;
		}
		closedir(d);
	} while (n_fam != done || n_fam == cap);
	for (size_t i = 0; !err && i < n_fam; i++)
		err = target_set__add(ts, fam[i]);
	free(fam);
	return err;
}

int target__by_comm(struct target_set *ts, const char *comm)
{
	struct dirent *de;
	size_t before = ts->n;
	int err = 0;
	DIR *d;

	d = opendir("/proc");
	if (!d)
		return -errno;
	while (!err && (de = readdir(d))) {
		char path[300], name[64];
		FILE *f;

		if (!is_pid_dir(de))
			continue;
		snprintf(path, sizeof(path), "/proc/%s/comm", de->d_name);
		f = fopen(path, "re");
		if (!f)
			continue;
		if (fgets(name, sizeof(name), f)) {
			name[strcspn(name, "\n")] = '\0';
			if (!strcmp(name, comm) && (uint32_t)getpid() != strtoul(de->d_name, NULL, 10))
				err = target_set__add(ts, strtoul(de->d_name, NULL, 10));
		}
		fclose(f);
	}
	closedir(d);
	if (err)
		return err;
	return ts->n == before ? -ESRCH : 0;
}

/*
 * Inodes of TCP sockets in state LISTEN (st 0A) from one table
 * (/proc/PID/net/tcp or tcp6); with port != 0 only that local port. Each line:
 * "sl local_address rem_address st tx:rx tr:when retrnsmt uid timeout inode".
 */
static int listen_inodes_in(const char *file, uint16_t port, unsigned long *inodes,
			    uint16_t *ports, size_t max, size_t *n)
{
	char line[512];
	FILE *f = fopen(file, "re");

	if (!f)
		return -errno;
	if (!fgets(line, sizeof(line), f)) {	/* header */
		fclose(f);
		return 0;
	}
	while (fgets(line, sizeof(line), f) && *n < max) {
		char local[64], rem[64];
		unsigned int st, lport;
		unsigned long inode;
		char *colon;

		if (sscanf(line, "%*d: %63s %63s %x %*s %*s %*s %*u %*d %lu", local, rem, &st,
			   &inode) != 4)
			continue;
		colon = strrchr(local, ':');
		if (!colon || st != 0x0A || sscanf(colon + 1, "%x", &lport) != 1)
			continue;
		if (port && lport != port)
			continue;
		inodes[*n] = inode;
		ports[*n] = lport;
		(*n)++;
	}
	fclose(f);
	return 0;
}

/*
 * The IPv4 and IPv6 TCP listeners (port != 0: on that port only) of the
 * network namespace process pid ("self" or a number) is in: /proc/PID/net
 * shows PID's namespace (docs/kernel.md B14).
 */
static void listen_inodes(const char *pid, uint16_t port, unsigned long *inodes, uint16_t *ports,
			  size_t max, size_t *n)
{
	char path[64];

	snprintf(path, sizeof(path), "/proc/%s/net/tcp", pid);
	listen_inodes_in(path, port, inodes, ports, max, n);
	snprintf(path, sizeof(path), "/proc/%s/net/tcp6", pid);
	listen_inodes_in(path, port, inodes, ports, max, n);
}

uint32_t target__netns(const char *pid)
{
	char path[64];
	struct stat st;

	snprintf(path, sizeof(path), "/proc/%s/ns/net", pid);
	return stat(path, &st) ? 0 : (uint32_t)st.st_ino;
}

#define NS_TABLES 8

/* The TCP listeners of one network namespace, read once per walk over the targets. */
struct ns_table {
	uint32_t netns;
	unsigned long inodes[64];
	uint16_t ports[64];
	size_t n;
};

/*
 * The table of pid's namespace from tabs[0..*n) (read it and add it when
 * new); NULL when pid's namespace is unknown (gone) or NS_TABLES are read.
 */
static const struct ns_table *ns_table_of(struct ns_table *tabs, size_t *n, const char *pid)
{
	uint32_t netns = target__netns(pid);

	if (!netns && strcmp(pid, "self"))
		return NULL;
	for (size_t i = 0; i < *n; i++)
		if (tabs[i].netns == netns)
			return &tabs[i];
	if (*n == NS_TABLES)
		return NULL;
	tabs[*n].netns = netns;
	tabs[*n].n = 0;
	listen_inodes(pid, 0, tabs[*n].inodes, tabs[*n].ports, 64, &tabs[*n].n);
	return &tabs[(*n)++];
}

/* Walk /proc/PID/fd of one process; return 1 if it holds a socket in inodes[]. */
static int holds_socket(const char *pid, const unsigned long *inodes, size_t n, size_t *which)
{
	char path[300], link[64];
	struct dirent *de;
	int found = 0;
	DIR *d;

	snprintf(path, sizeof(path), "/proc/%s/fd", pid);
	d = opendir(path);
	if (!d)
		return 0;
	while (!found && (de = readdir(d))) {
		char fdpath[600];
		unsigned long ino;
		ssize_t len;

		snprintf(fdpath, sizeof(fdpath), "%s/%s", path, de->d_name);
		len = readlink(fdpath, link, sizeof(link) - 1);
		if (len <= 0)
			continue;
		link[len] = '\0';
		if (sscanf(link, "socket:[%lu]", &ino) != 1)
			continue;
		for (size_t i = 0; i < n; i++) {
			if (inodes[i] == ino) {
				*which = i;
				found = 1;
				break;
			}
		}
	}
	closedir(d);
	return found;
}

/*
 * Add every process (but this one) that holds a socket in inodes[] to ts.
 * PID 1 only when nobody else holds one: an init that keeps the listener
 * of a socket-activated service (systemd) is no server, and tracing it
 * would follow every process it starts (docs/design.md D11). -ESRCH when none.
 */
static int socket_owners(struct target_set *ts, const unsigned long *inodes, size_t n)
{
	size_t before = ts->n;
	struct dirent *de;
	int err = 0, init_holds = 0, others = 0;
	DIR *d;

	d = opendir("/proc");
	if (!d)
		return -errno;
	while (!err && (de = readdir(d))) {
		uint32_t pid;
		size_t which;

		if (!is_pid_dir(de) || (pid = strtoul(de->d_name, NULL, 10)) == (uint32_t)getpid())
			continue;
		if (!holds_socket(de->d_name, inodes, n, &which))
			continue;
		if (pid == 1) {
			init_holds = 1;
		} else {
			others++;
			err = target_set__add(ts, pid);
		}
	}
	closedir(d);
	if (!err && init_holds && !others)
		err = target_set__add(ts, 1);
	if (err)
		return err;
	return ts->n == before ? -ESRCH : 0;
}

int target__by_port(struct target_set *ts, uint16_t port)
{
	return target__by_port_in(ts, "self", port);
}

int target__by_port_in(struct target_set *ts, const char *ns_pid, uint16_t port)
{
	unsigned long inodes[64];
	uint16_t ports[64];
	size_t n = 0;
	int err;

	listen_inodes(ns_pid, port, inodes, ports, 64, &n);
	if (!n)
		return -ESRCH;
	err = socket_owners(ts, inodes, n);
	if (err)
		return err;
	ts->ports[0] = port;
	ts->port_netns[0] = target__netns(ns_pid);
	ts->n_ports = 1;
	return 0;
}

int target__by_socket_inode(struct target_set *ts, uint64_t ino)
{
	unsigned long inodes[1] = { (unsigned long)ino };

	return socket_owners(ts, inodes, 1);
}

/* /proc/net/unix Flags of a listening socket (__SO_ACCEPTCON, include/linux/net.h) */
#define UNIX_ACCEPTCON 0x10000

/*
 * /proc/net/unix lines: "Num RefCount Protocol Flags Type St Inode [Path]"
 * (proc(5)); a listener's path as it was bound, "@name" when abstract.
 */
int target__by_unix_path_ino(struct target_set *ts, uint64_t path_ino, char *path, size_t len)
{
	unsigned long inodes[64];
	char line[512];
	size_t n = 0;
	FILE *f = fopen("/proc/net/unix", "re");

	if (!f)
		return -errno;
	path[0] = '\0';
	while (fgets(line, sizeof(line), f) && n < 64) {
		unsigned long long inode;
		unsigned int flags;
		struct stat st;
		int end = 0;
		char *p;

		if (sscanf(line, "%*s %*s %*s %x %*s %*s %llu%n", &flags, &inode, &end) != 2 ||
		    !(flags & UNIX_ACCEPTCON))
			continue;
		line[strcspn(line, "\n")] = '\0';
		p = line + end + strspn(line + end, " ");
		if (*p != '/' || stat(p, &st) || !S_ISSOCK(st.st_mode) || st.st_ino != path_ino)
			continue;
		snprintf(path, len, "%s", p);
		inodes[n++] = inode;
	}
	fclose(f);
	if (!n)
		return -ESRCH;
	return socket_owners(ts, inodes, n);
}

/*
 * sock_diag(7): one SOCK_DIAG_BY_FAMILY request for AF_UNIX socket ino with
 * UDIAG_SHOW_PEER; the answer's UNIX_DIAG_PEER attribute is the peer's
 * inode (0 while the peer is not accepted yet: it has no inode then).
 */
int target__unix_peer(uint64_t ino, uint64_t *peer)
{
	struct {
		struct nlmsghdr nlh;
		struct unix_diag_req r;
	} req = {
		.nlh = { .nlmsg_len = sizeof(req), .nlmsg_type = SOCK_DIAG_BY_FAMILY,
			 .nlmsg_flags = NLM_F_REQUEST },
		.r = { .sdiag_family = AF_UNIX, .udiag_states = -1, .udiag_ino = (__u32)ino,
		       .udiag_show = UDIAG_SHOW_PEER,
		       .udiag_cookie = { INET_DIAG_NOCOOKIE, INET_DIAG_NOCOOKIE } },
	};
	long buf[1024];
	struct nlmsghdr *h = (struct nlmsghdr *)buf;
	int fd, err = -ESRCH;
	ssize_t n;

	*peer = 0;
	fd = socket(AF_NETLINK, SOCK_DGRAM | SOCK_CLOEXEC, NETLINK_SOCK_DIAG);
	if (fd < 0)
		return -errno;
	if (send(fd, &req, sizeof(req), 0) < 0) {
		err = -errno;
		goto out;
	}
	n = recv(fd, buf, sizeof(buf), 0);
	if (n < 0) {
		err = -errno;
		goto out;
	}
	for (; NLMSG_OK(h, n); h = NLMSG_NEXT(h, n)) {
		struct unix_diag_msg *m = NLMSG_DATA(h);
		struct rtattr *a;
		int len;

		if (h->nlmsg_type != SOCK_DIAG_BY_FAMILY)
			break;	/* NLMSG_ERROR: no such socket */
		a = (struct rtattr *)(m + 1);
		len = h->nlmsg_len - NLMSG_LENGTH(sizeof(*m));
		for (; RTA_OK(a, len); a = RTA_NEXT(a, len))
			if (a->rta_type == UNIX_DIAG_PEER && RTA_PAYLOAD(a) >= sizeof(__u32))
				*peer = *(__u32 *)RTA_DATA(a);
		err = 0;
		break;
	}
out:
	close(fd);
	return err;
}

/* 1 when ts->ports holds port in namespace netns. */
static int has_port(const struct target_set *ts, uint32_t netns, uint16_t port)
{
	for (size_t k = 0; k < ts->n_ports; k++)
		if (ts->ports[k] == port && ts->port_netns[k] == netns)
			return 1;
	return 0;
}

int target__collect_listen_ports(struct target_set *ts)
{
	struct ns_table tabs[NS_TABLES];
	size_t n_tabs = 0;

	for (size_t t = 0; t < ts->n; t++) {
		const struct ns_table *tab;
		char pid[16];
		size_t which;

		snprintf(pid, sizeof(pid), "%u", ts->tgids[t]);
		tab = ns_table_of(tabs, &n_tabs, pid);
		if (!tab)
			continue;
		/* Each process can hold several listening sockets: test each inode alone. */
		for (size_t i = 0; i < tab->n; i++) {
			if (!holds_socket(pid, &tab->inodes[i], 1, &which) ||
			    has_port(ts, tab->netns, tab->ports[i]) || ts->n_ports == 64)
				continue;
			ts->port_netns[ts->n_ports] = tab->netns;
			ts->ports[ts->n_ports++] = tab->ports[i];
		}
	}
	return 0;
}

int target__listeners(const struct target_set *ts, struct target_listener *out, size_t max,
		      size_t *n)
{
	struct ns_table tabs[NS_TABLES];
	size_t n_tabs = 0;
	struct dirent *de;
	DIR *d;

	*n = 0;
	/* The namespaces of the targets, each once (a listener is in one of them). */
	for (size_t t = 0; t < ts->n; t++) {
		char pid[16];

		snprintf(pid, sizeof(pid), "%u", ts->tgids[t]);
		ns_table_of(tabs, &n_tabs, pid);
	}
	if (!ts->n)
		ns_table_of(tabs, &n_tabs, "self");
	for (size_t k = 0; k < n_tabs; k++)
		for (size_t i = 0; i < tabs[k].n && *n < max; i++) {
			if (!has_port(ts, tabs[k].netns, tabs[k].ports[i]))
				continue;
			memset(&out[*n], 0, sizeof(out[*n]));
			out[*n].inode = tabs[k].inodes[i];
			out[*n].netns = tabs[k].netns;
			out[(*n)++].port = tabs[k].ports[i];
		}
	if (!*n)
		return 0;
	d = opendir("/proc");
	if (!d)
		return -errno;
	while ((de = readdir(d))) {
		uint32_t pid;

		if (!is_pid_dir(de) || (pid = strtoul(de->d_name, NULL, 10)) == (uint32_t)getpid())
			continue;
		/* A process may hold several of them: test each inode alone. */
		for (size_t i = 0; i < *n; i++) {
			unsigned long ino = out[i].inode;
			size_t which;

			if (!holds_socket(de->d_name, &ino, 1, &which))
				continue;
			if (out[i].n_holders < TARGET_MAX_HOLDERS)
				out[i].holders[out[i].n_holders] = pid;
			out[i].n_holders++;
		}
	}
	closedir(d);
	return 0;
}

int target__holds_listener(uint32_t tgid, const struct target_listener *ls, size_t n,
			   size_t *which)
{
	unsigned long inodes[64];
	char pid[16];

	if (n > 64)
		n = 64;
	for (size_t i = 0; i < n; i++)
		inodes[i] = ls[i].inode;
	snprintf(pid, sizeof(pid), "%u", tgid);
	return holds_socket(pid, inodes, n, which);
}

void target__comm(uint32_t tgid, char *comm, size_t len)
{
	char path[64];
	FILE *f;

	snprintf(path, sizeof(path), "/proc/%u/comm", tgid);
	snprintf(comm, len, "?");
	f = fopen(path, "re");
	if (!f)
		return;
	if (fgets(comm, len, f))
		comm[strcspn(comm, "\n")] = '\0';
	fclose(f);
}

int target__spawn(const char *cmd, pid_t *pid, int *go_fd)
{
	int fds[2];
	pid_t p;

	if (pipe2(fds, O_CLOEXEC))
		return -errno;
	p = fork();
	if (p < 0) {
		int err = -errno;

		close(fds[0]);
		close(fds[1]);
		return err;
	}
	if (p == 0) {
		char c;

		close(fds[1]);
		/* a process group of its own: the tracer ends all of it (target.h) */
		setpgid(0, 0);
		/* Wait until the tracer has put us in its tgid map. */
		while (read(fds[0], &c, 1) < 0 && errno == EINTR)
			;
		execl("/bin/sh", "sh", "-c", cmd, (char *)NULL);
		_exit(127);
	}
	close(fds[0]);
	setpgid(p, p);	/* also here: whichever runs first, the group exists before exec */
	*pid = p;
	*go_fd = fds[1];
	return 0;
}

void target__spawn_release(int go_fd)
{
	close(go_fd);
}
