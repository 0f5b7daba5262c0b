// SPDX-License-Identifier: GPL-2.0-only
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include "user/probe/gpu_rx.h"

struct gpu_rx_client {
	int fd;
	uint32_t pid; /* SO_PEERCRED pid; 0 = use the header's */
};

struct gpu_rx {
	struct ttf_records out;	/* where items go (gpu hook) */
	int fd;
	int ep_fd;		/* epoll over fd and the clients: the tracer's wait fd; -1: none */
	char path[sizeof(((struct sockaddr_un *)0)->sun_path)]; /* to unlink; "" if abstract */
	struct gpu_rx_client *clients;
	uint32_t nclients, max_clients;
	uint64_t bad_msgs;
	void (*notice)(void *ctx, uint32_t pid, uint32_t code, const char *text);
	void *notice_ctx;
	uint8_t buf[TTF_GPU_MSG_MAX_BYTES + sizeof(struct ttf_gpu_name) + TTF_GPU_NAME_MAX];
};

static void watch(struct gpu_rx *rx, int fd);

struct gpu_rx *gpu_rx__new(const struct gpu_rx_opts *opts)
{
	const char *path = opts ? opts->sock_path : NULL;
	struct sockaddr_un addr = { .sun_family = AF_UNIX };
	struct gpu_rx *rx;
	socklen_t len;
	size_t plen;
	int err;

	if (!path)
		path = getenv(TTF_GPU_SOCK_ENV);
	if (!path || !*path)
		path = TTF_GPU_SOCK_DEFAULT;
	plen = strlen(path);
	if (plen >= sizeof(addr.sun_path)) {
		errno = ENAMETOOLONG;
		return NULL;
	}
	rx = calloc(1, sizeof(*rx));
	if (!rx)
		return NULL;
	rx->max_clients = opts && opts->max_clients ? opts->max_clients : 256;
	if (opts && opts->sz >= offsetof(struct gpu_rx_opts, notice_ctx) + sizeof(void *)) {
		rx->notice = opts->notice;
		rx->notice_ctx = opts->notice_ctx;
	}
	rx->clients = calloc(rx->max_clients, sizeof(*rx->clients));
	rx->ep_fd = -1;
	rx->fd = socket(AF_UNIX, SOCK_SEQPACKET | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
	if (!rx->clients || rx->fd < 0)
		goto fail;
	memcpy(addr.sun_path, path, plen);
	if (path[0] == '@') {
		addr.sun_path[0] = 0;
		len = offsetof(struct sockaddr_un, sun_path) + plen;
	} else {
		/* A stale socket file from a killed ttftrace would make bind fail. */
		unlink(path);
		memcpy(rx->path, path, plen + 1);
		len = offsetof(struct sockaddr_un, sun_path) + plen + 1;
	}
	if (bind(rx->fd, (struct sockaddr *)&addr, len) || listen(rx->fd, 64))
		goto fail;
	watch(rx, rx->fd);
	return rx;
fail:
	err = errno;
	if (rx->fd >= 0)
		close(rx->fd);
	free(rx->clients);
	free(rx);
	errno = err;
	return NULL;
}

/*
 * Add fd to the epoll the tracer waits on (created on first use). Without
 * it (epoll failed) the tracer polls this source on every drain instead.
 */
static void watch(struct gpu_rx *rx, int fd)
{
	struct epoll_event ev = { .events = EPOLLIN };

	if (rx->ep_fd < 0 && fd == rx->fd)
		rx->ep_fd = epoll_create1(EPOLL_CLOEXEC);
	if (rx->ep_fd >= 0 && epoll_ctl(rx->ep_fd, EPOLL_CTL_ADD, fd, &ev)) {
		close(rx->ep_fd);
		rx->ep_fd = -1;
	}
}

uint64_t gpu_rx__bad_msgs(const struct gpu_rx *rx)
{
	return rx->bad_msgs;
}

int gpu_rx__counters(void *ctx, struct report_counter *c, int cap)
{
	if (cap < 1)
		return 0;
	c[0] = (struct report_counter){ "gpu_bad_msgs", gpu_rx__bad_msgs(ctx) };
	return 1;
}

static void accept_all(struct gpu_rx *rx)
{
	struct ucred cred;
	socklen_t clen;
	int fd;

	while ((fd = accept4(rx->fd, NULL, NULL, SOCK_NONBLOCK | SOCK_CLOEXEC)) >= 0) {
		if (rx->nclients == rx->max_clients) {
			close(fd);
			continue;
		}
		clen = sizeof(cred);
		if (getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &cred, &clen))
			cred.pid = 0;
		rx->clients[rx->nclients++] = (struct gpu_rx_client){ .fd = fd, .pid = cred.pid };
		watch(rx, fd);
	}
}

/* One message; returns records added (>= 0). */
static int handle(struct gpu_rx *rx, const struct gpu_rx_client *cl, size_t len,
		  const struct ttf_records *out)
{
	const struct ttf_gpu_msg_hdr *h = (const void *)rx->buf;
	const uint8_t *body = rx->buf + sizeof(*h);
	size_t body_len = len - sizeof(*h);
	uint32_t pid;
	int added = 0;

	if (len < sizeof(*h) || h->magic != TTF_GPU_WIRE_MAGIC || h->version != TTF_GPU_WIRE_VERSION)
		goto bad;
	pid = cl->pid ? cl->pid : h->pid;
	switch (h->type) {
	case TTF_GPU_MSG_RECORDS:
		if (h->count > TTF_GPU_MSG_MAX_RECS || body_len != h->count * sizeof(struct ttf_gpu_rec))
			goto bad;
		for (uint32_t i = 0; i < h->count; i++)
			if (!out->gpu(out->ctx, pid, TTF_GPU_MSG_RECORDS,
				      body + i * sizeof(struct ttf_gpu_rec), sizeof(struct ttf_gpu_rec)))
				added++;
		return added;
	case TTF_GPU_MSG_NAME: {
		struct ttf_gpu_name n;

		if (body_len < sizeof(n))
			goto bad;
		memcpy(&n, body, sizeof(n));
		if (n.len > TTF_GPU_NAME_MAX || body_len != sizeof(n) + n.len)
			goto bad;
		out->gpu(out->ctx, pid, TTF_GPU_MSG_NAME, body, body_len);
		return 0;
	}
	case TTF_GPU_MSG_STATS: {
		if (body_len != sizeof(struct ttf_gpu_stats))
			goto bad;
		out->gpu(out->ctx, pid, TTF_GPU_MSG_STATS, body, body_len);
		return 0;
	}
	case TTF_GPU_MSG_NOTICE: {
		struct ttf_gpu_notice n;
		char text[TTF_GPU_NOTICE_MAX + 1];

		if (body_len < sizeof(n))
			goto bad;
		memcpy(&n, body, sizeof(n));
		if (n.len > TTF_GPU_NOTICE_MAX || body_len != sizeof(n) + n.len)
			goto bad;
		memcpy(text, body + sizeof(n), n.len);
		text[n.len] = '\0';
		if (rx->notice)
			rx->notice(rx->notice_ctx, pid, n.code, text);
		return 0;
	}
	}
bad:
	rx->bad_msgs++;
	return 0;
}

int gpu_rx__poll(struct gpu_rx *rx, const struct ttf_records *out)
{
	int total = 0;
	ssize_t n;

	accept_all(rx);
	for (uint32_t i = 0; i < rx->nclients;) {
		struct gpu_rx_client *cl = &rx->clients[i];

		while ((n = recv(cl->fd, rx->buf, sizeof(rx->buf), MSG_DONTWAIT | MSG_TRUNC)) > 0) {
			if ((size_t)n > sizeof(rx->buf)) {
				rx->bad_msgs++;
				continue;
			}
			total += handle(rx, cl, n, out);
		}
		if (n == 0 || (errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR)) {
			/* The collector's process exited (or the connection broke). */
			close(cl->fd);
			rx->clients[i] = rx->clients[--rx->nclients];
			continue;
		}
		i++;
	}
	return total;
}

void gpu_rx__free(struct gpu_rx *rx)
{
	if (!rx)
		return;
	for (uint32_t i = 0; i < rx->nclients; i++)
		close(rx->clients[i].fd);
	close(rx->fd);
	if (rx->ep_fd >= 0)
		close(rx->ep_fd);
	if (rx->path[0])
		unlink(rx->path);
	free(rx->clients);
	free(rx);
}

/* ---- as a probe source (user/probe/source.h) ---- */

static int src_poll(void *ctx, int timeout_ms)
{
	struct gpu_rx *rx = ctx;

	(void)timeout_ms;	/* never the first source: the tracer waits */
	return gpu_rx__poll(rx, &rx->out);
}

static int src_wait_fd(void *ctx)
{
	return ((struct gpu_rx *)ctx)->ep_fd;
}

void gpu_rx__source(struct gpu_rx *rx, const struct ttf_records *out, struct ttf_probe_source *src)
{
	rx->out = *out;
	*src = (struct ttf_probe_source){ .name = "gpu", .ctx = rx, .poll = src_poll,
					  .wait_fd = src_wait_fd, .ready_only = 1,
					  .counters = gpu_rx__counters };
}
