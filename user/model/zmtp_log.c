// SPDX-License-Identifier: GPL-2.0-only
/* The ZMTP messages of each open connection, bounded (zmtp_log.h). */
#include <errno.h>
#include "user/lib/hash.h"
#include "user/model/zmtp_log.h"

struct zconn {
	uint64_t cookie;
	struct ttf_zmtp_msg *msgs;
	size_t n, cap;
	uint64_t dropped;
	UT_hash_handle hh;
};

struct zmtp_log {
	struct zconn *conns;
	unsigned int n_conns;
	struct zmtp_log_stats st;
};

struct zmtp_log *zmtp_log__new(void)
{
	return calloc(1, sizeof(struct zmtp_log));
}

static void zconn_free(struct zconn *c)
{
	free(c->msgs);
	free(c);
}

void zmtp_log__free(struct zmtp_log *l)
{
	struct zconn *c, *tmp;

	if (!l)
		return;
	HASH_ITER(hh, l->conns, c, tmp) {
		HASH_DEL(l->conns, c);
		zconn_free(c);
	}
	free(l);
}

static struct zconn *zconn_get(struct zmtp_log *l, uint64_t cookie)
{
	struct zconn *c;

	HASH_FIND(hh, l->conns, &cookie, sizeof(cookie), c);
	if (c || l->n_conns == ZMTP_LOG_CONNS)
		return c;
	c = calloc(1, sizeof(*c));
	if (!c)
		return NULL;
	c->cookie = cookie;
	HASH_ADD(hh, l->conns, cookie, sizeof(c->cookie), c);
	if (!ttf_hash_added(c)) {
		free(c);
		return NULL;
	}
	l->n_conns++;
	return c;
}

int zmtp_log__add(struct zmtp_log *l, const struct ttf_zmtp_msg *m)
{
	struct zconn *c = zconn_get(l, m->sock_cookie);

	if (!c || c->n == ZMTP_LOG_PER_CONN) {
		l->st.dropped++;
		if (c)
			c->dropped++;
		return c || l->n_conns == ZMTP_LOG_CONNS ? -ENOSPC : -ENOMEM;
	}
	if (c->n == c->cap) {
		size_t cap = c->cap ? c->cap * 2 : 16;
		struct ttf_zmtp_msg *n = realloc(c->msgs, cap * sizeof(*n));

		if (!n) {
			l->st.dropped++;
			c->dropped++;
			return -ENOMEM;
		}
		c->msgs = n;
		c->cap = cap;
	}
	c->msgs[c->n] = *m;
	c->msgs[c->n].more_ids = NULL;	/* valid only during the callback */
	c->msgs[c->n++].n_more_ids = 0;
	l->st.kept++;
	return 0;
}

const struct ttf_zmtp_msg *zmtp_log__msgs(const struct zmtp_log *l, uint64_t cookie, size_t *n,
					  uint64_t *dropped)
{
	struct zconn *c;

	HASH_FIND(hh, l->conns, &cookie, sizeof(cookie), c);
	*n = c ? c->n : 0;
	*dropped = c ? c->dropped : 0;
	return c && c->n ? c->msgs : NULL;
}

void zmtp_log__close(struct zmtp_log *l, uint64_t cookie)
{
	struct zconn *c;

	HASH_FIND(hh, l->conns, &cookie, sizeof(cookie), c);
	if (!c)
		return;
	HASH_DEL(l->conns, c);
	l->n_conns--;
	zconn_free(c);
}

const struct zmtp_log_stats *zmtp_log__stats(const struct zmtp_log *l)
{
	return &l->st;
}
