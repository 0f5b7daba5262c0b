// SPDX-License-Identifier: GPL-2.0-only
/* Hop discovery: who listens where a traced process calls (follow.h). */
#include <stdlib.h>
#include <string.h>
#include "bpf/net.h"
#include "user/probe/follow.h"

#define LOOK_EVERY_NS 1000000000ull	/* an upstream is looked up at most this often */
#define MAX_PER_KIND 64			/* TCP ports, and unix paths or peers, each */

/* One upstream looked up: a TCP port, or a unix listener's path or a peer socket. */
struct follow_entry {
	int is_unix;
	uint16_t port;		/* TCP: the upstream's port */
	uint64_t key;		/* unix: the inode of the listener's path file; 0: by peer */
	uint64_t peer;		/* unix by peer (no path): the peer socket's inode */
	uint32_t tgid;		/* one process found there; 0 none */
	uint64_t looked_ns;	/* when (record time) */
};

struct follow {
	struct follow_entry e[2 * MAX_PER_KIND];
	int n;
	int n_kind[2];		/* entries of each kind: [0] TCP, [1] unix */
};

struct follow *follow__new(void)
{
	return calloc(1, sizeof(struct follow));
}

void follow__free(struct follow *f)
{
	free(f);
}

void follow_req__free(struct follow_req *req)
{
	target_set__free(&req->found);
}

/* An address of this host's loopback, or the connection's own local address. */
static int local_peer(const struct follow_upstream *u)
{
	static const uint8_t v6_loop[16] = { [15] = 1 };

	if (u->family == TTF_AF_INET)
		return u->raddr[0] == 127 || !memcmp(u->raddr, u->laddr, 4);
	return !memcmp(u->raddr, v6_loop, 16) || !memcmp(u->raddr, u->laddr, 16);
}

/*
 * The cache entry for an upstream (is_unix, port or key/peer), or a new
 * one; NULL when its kind's entries are all taken. *fresh: 1 when new.
 */
static struct follow_entry *entry(struct follow *f, int is_unix, uint16_t port, uint64_t key,
				  uint64_t peer, int *fresh)
{
	struct follow_entry *e;

	*fresh = 0;
	for (int i = 0; i < f->n; i++) {
		e = &f->e[i];
		if (e->is_unix != is_unix)
			continue;
		if (is_unix ? key ? e->key == key : e->peer == peer : e->port == port)
			return e;
	}
	if (f->n_kind[is_unix] == MAX_PER_KIND)
		return NULL;
	f->n_kind[is_unix]++;
	e = &f->e[f->n++];
	*e = (struct follow_entry){ .is_unix = is_unix, .port = port };
	*fresh = 1;
	return e;
}

/*
 * A known upstream at record time t: look it up again only a second after
 * the last look, and only when the process found there is gone.
 */
static int due(struct follow_entry *e, uint64_t t)
{
	if (t < e->looked_ns + LOOK_EVERY_NS)
		return 0;
	e->looked_ns = t;
	return !(e->tgid && target__alive(e->tgid));
}

/* The processes found, with their descendants (engine and worker processes). */
static void with_descendants(struct target_set *ts)
{
	for (size_t i = 0, n = ts->n; i < n; i++)
		target__by_pid(ts, ts->tgids[i]);
}

static void caller(struct follow_req *req, const struct follow_upstream *u)
{
	req->caller_tgid = u->tgid;
	memcpy(req->caller_comm, u->comm, sizeof(req->caller_comm));
}

/*
 * Over a unix stream socket: who listens on the path the caller connected
 * to (the record carries the inode of its file, bpf/net.h), or for a peer
 * without a path (a socketpair) the process holding the peer socket (its
 * inode from the record, or from sock_diag when the write came before the
 * accept).
 */
static int upstream_unix(struct follow *f, const struct follow_upstream *u,
			 struct follow_req *req)
{
	uint64_t peer = ttf_unix_ino(u->raddr), key = ttf_unix_path_ino(u->raddr);
	struct follow_entry *e;
	char path[108];
	int fresh, err;

	if (!key && !peer)
		target__unix_peer(ttf_unix_ino(u->laddr), &peer);
	if (!key && !peer)
		return 0;	/* not accepted yet or gone: the next call looks again */
	e = entry(f, 1, 0, key, peer, &fresh);
	if (!e || (!fresh && !due(e, u->read_first_ns)))
		return 0;
	e->key = key;
	e->peer = peer;
	e->tgid = 0;
	e->looked_ns = u->read_first_ns;
	if (key)
		err = target__by_unix_path_ino(&req->found, key, path, sizeof(path));
	else
		err = target__by_socket_inode(&req->found, peer);
	if (err) {
		target_set__free(&req->found);
		return 0;
	}
	e->tgid = req->found.tgids[0];
	if (key)
		snprintf(req->where, sizeof(req->where), "unix:%s", path);
	else
		snprintf(req->where, sizeof(req->where), "unix:socket:[%llu]",
			 (unsigned long long)peer);
	req->what = key ? "listens there" : "holds its peer socket";
	caller(req, u);
	with_descendants(&req->found);
	return 1;
}

/* Over TCP to this host: the port is traced in the caller's namespace, its listener too. */
static int upstream_tcp(struct follow *f, const struct follow_upstream *u,
			struct follow_req *req)
{
	struct follow_entry *e;
	char ns_pid[16];
	int fresh;

	if (!local_peer(u))
		return 0;
	e = entry(f, 0, u->rport, 0, 0, &fresh);
	if (!e || (!fresh && !due(e, u->read_first_ns)))
		return 0;
	/* an upstream is in its caller's network namespace (a container's own loopback) */
	snprintf(ns_pid, sizeof(ns_pid), "%u", u->tgid);
	if (fresh) {
		req->trace_port = 1;
		req->netns = target__netns(ns_pid);
		req->port = u->rport;
	}
	e->tgid = 0;
	e->looked_ns = u->read_first_ns;
	caller(req, u);
	if (target__by_port_in(&req->found, ns_pid, u->rport)) {
		target_set__free(&req->found);
		return req->trace_port;
	}
	e->tgid = req->found.tgids[0];
	snprintf(req->where, sizeof(req->where), "port %u", u->rport);
	req->what = "listens there";
	with_descendants(&req->found);
	return 1;
}

int follow__upstream(struct follow *f, const struct follow_upstream *u, struct follow_req *req)
{
	memset(req, 0, sizeof(*req));
	if (u->family == TTF_AF_UNIX)
		return upstream_unix(f, u, req);
	return upstream_tcp(f, u, req);
}

int follow__listeners(uint16_t port, struct follow_req *req)
{
	memset(req, 0, sizeof(*req));
	if (target__by_port_in(&req->found, "self", port)) {
		target_set__free(&req->found);
		return 0;
	}
	snprintf(req->where, sizeof(req->where), "port %u", port);
	req->what = "listens there";
	with_descendants(&req->found);
	return 1;
}

void follow_req__say(const struct follow_req *req, uint32_t tgid, FILE *out)
{
	if (req->caller_tgid)
		fprintf(out, "Hop: PID %u (%s) calls %s: tracing PID %u, which %s, too.\n",
			req->caller_tgid, req->caller_comm, req->where, tgid, req->what);
	else
		fprintf(out, "Tracing PID %u: it listens on %s now.\n", tgid, req->where);
}
