// SPDX-License-Identifier: GPL-2.0-only
#include <errno.h>
#include <poll.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cupti/clock.h"
#include "cupti/sender.h"

int cupti_sender__init(struct cupti_sender *s, const char *path, uint32_t pid,
		       struct ttf_gpu_stats *stats)
{
	size_t len;

	memset(s, 0, sizeof(*s));
	s->fd = -1;
	s->pid = pid;
	s->stats = stats;
	s->now_ns = cupti_clock__mono_ns;
	if (!path)
		path = getenv(TTF_GPU_SOCK_ENV);
	if (!path || !*path)
		path = TTF_GPU_SOCK_DEFAULT;
	len = strlen(path);
	if (len >= sizeof(s->addr.sun_path))
		return -ENAMETOOLONG;
	s->addr.sun_family = AF_UNIX;
	memcpy(s->addr.sun_path, path, len);
	if (path[0] == '@')
		s->addr.sun_path[0] = 0; /* abstract: no terminating NUL counted */
	else
		len++;
	s->addr_len = offsetof(struct sockaddr_un, sun_path) + len;
	return 0;
}

void cupti_sender__close(struct cupti_sender *s)
{
	if (s->fd >= 0)
		close(s->fd);
	s->fd = -1;
}

static bool try_connect(struct cupti_sender *s)
{
	uint64_t now_ns;
	int fd;

	if (s->fd >= 0)
		return true;
	now_ns = s->now_ns();
	if (now_ns < s->next_connect_ns)
		return false;
	s->next_connect_ns = now_ns + CUPTI_SENDER_RETRY_NS;
	fd = socket(AF_UNIX, SOCK_SEQPACKET | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
	if (fd < 0)
		return false;
	setsockopt(fd, SOL_SOCKET, SO_SNDBUF, &(int){ CUPTI_SENDER_SNDBUF_BYTES }, sizeof(int));
	if (connect(fd, (struct sockaddr *)&s->addr, s->addr_len)) {
		close(fd);
		return false;
	}
	s->fd = fd;
	s->epoch++;
	return true;
}

static void fill_hdr(struct cupti_sender *s, void *msg, uint16_t type, uint32_t count)
{
	struct ttf_gpu_msg_hdr *h = msg;

	h->magic = TTF_GPU_WIRE_MAGIC;
	h->version = TTF_GPU_WIRE_VERSION;
	h->type = type;
	h->pid = s->pid;
	h->count = count;
	h->seq = s->seq++;
}

/* One packet; false (and the connection closed if it broke) when not sent. */
static bool send_msg(struct cupti_sender *s, const void *msg, size_t len)
{
	if (s->fd < 0)
		return false;
	if (send(s->fd, msg, len, MSG_DONTWAIT | MSG_NOSIGNAL) == (ssize_t)len)
		return true;
	if (errno == EAGAIN && s->now_ns() >= s->last_wait_timeout_ns + CUPTI_SENDER_RETRY_NS) {
		struct pollfd p = { .fd = s->fd, .events = POLLOUT };

		if (poll(&p, 1, CUPTI_SENDER_WAIT_MS) == 1 &&
		    send(s->fd, msg, len, MSG_DONTWAIT | MSG_NOSIGNAL) == (ssize_t)len)
			return true;
		s->last_wait_timeout_ns = s->now_ns();
	}
	if (errno != EAGAIN && errno != EWOULDBLOCK && errno != ENOBUFS && errno != EINTR)
		cupti_sender__close(s);
	return false;
}

static void send_name(struct cupti_sender *s, struct cupti_name *n)
{
	uint8_t msg[sizeof(struct ttf_gpu_msg_hdr) + sizeof(struct ttf_gpu_name) +
		    TTF_GPU_NAME_MAX];
	struct ttf_gpu_name *w = (void *)(msg + sizeof(struct ttf_gpu_msg_hdr));

	fill_hdr(s, msg, TTF_GPU_MSG_NAME, 1);
	w->name_id = n->id;
	w->len = n->len;
	w->truncated = n->truncated;
	memcpy(w + 1, n->str, n->len);
	if (send_msg(s, msg, sizeof(struct ttf_gpu_msg_hdr) + sizeof(*w) + n->len))
		n->sent_epoch = s->epoch;
}

void cupti_sender__flush(struct cupti_sender *s)
{
	size_t len = sizeof(struct ttf_gpu_msg_hdr) + s->n * sizeof(struct ttf_gpu_rec);

	if (!s->n)
		return;
	if (try_connect(s)) {
		for (uint32_t i = 0; i < s->n; i++)
			if (s->names[i] && s->names[i]->sent_epoch != s->epoch)
				send_name(s, s->names[i]);
		fill_hdr(s, s->msg, TTF_GPU_MSG_RECORDS, s->n);
		if (!send_msg(s, s->msg, len))
			s->stats->send_dropped += s->n;
	} else {
		s->stats->send_dropped += s->n;
	}
	s->n = 0;
}

void cupti_sender__push(struct cupti_sender *s, const struct ttf_gpu_rec *rec,
			struct cupti_name *name)
{
	struct ttf_gpu_rec *slot = (void *)(s->msg + sizeof(struct ttf_gpu_msg_hdr));

	if (s->n == TTF_GPU_MSG_MAX_RECS)
		cupti_sender__flush(s);
	slot[s->n] = *rec;
	s->names[s->n] = name;
	s->n++;
}

void cupti_sender__send_stats(struct cupti_sender *s)
{
	uint8_t msg[sizeof(struct ttf_gpu_msg_hdr) + sizeof(struct ttf_gpu_stats)];

	if (!try_connect(s))
		return;
	fill_hdr(s, msg, TTF_GPU_MSG_STATS, 1);
	memcpy(msg + sizeof(struct ttf_gpu_msg_hdr), s->stats, sizeof(*s->stats));
	send_msg(s, msg, sizeof(msg));
}

bool cupti_sender__send_notice(struct cupti_sender *s, uint32_t code, const char *text)
{
	uint8_t msg[sizeof(struct ttf_gpu_msg_hdr) + sizeof(struct ttf_gpu_notice) +
		    TTF_GPU_NOTICE_MAX];
	struct ttf_gpu_notice *n = (void *)(msg + sizeof(struct ttf_gpu_msg_hdr));
	size_t len = strlen(text);

	if (len > TTF_GPU_NOTICE_MAX)
		len = TTF_GPU_NOTICE_MAX;
	if (!try_connect(s))
		return false;
	fill_hdr(s, msg, TTF_GPU_MSG_NOTICE, 1);
	n->code = code;
	n->len = (uint32_t)len;
	memcpy(n + 1, text, len);
	return send_msg(s, msg, sizeof(struct ttf_gpu_msg_hdr) + sizeof(*n) + len);
}

void cupti_sender__sink(void *ctx, const struct ttf_gpu_rec *rec, struct cupti_name *name)
{
	cupti_sender__push(ctx, rec, name);
}
