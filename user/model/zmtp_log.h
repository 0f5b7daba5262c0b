/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * The ZMTP messages of each open connection (user/proto/zmtp/zmtp.h), kept so
 * that they can be joined to requests: at most ZMTP_LOG_PER_CONN per
 * connection and ZMTP_LOG_CONNS connections; a message past either bound
 * is dropped and counted, never kept in part. A connection's messages go
 * when it closes (zmtp_log__close).
 */
#ifndef TTFTRACE_ZMTP_LOG_H
#define TTFTRACE_ZMTP_LOG_H

#include <stddef.h>
#include <stdint.h>
#include "user/proto/zmtp/zmtp.h"

#define ZMTP_LOG_PER_CONN 1024
#define ZMTP_LOG_CONNS 256

struct zmtp_log;

struct zmtp_log_stats {
	uint64_t kept;		/* messages kept, all connections, since the start */
	uint64_t dropped;	/* messages dropped: a bound was reached, or no memory */
};

/* NULL with errno on failure. */
struct zmtp_log *zmtp_log__new(void);
void zmtp_log__free(struct zmtp_log *l);
/* Keep a copy of m under m->sock_cookie: 0, -ENOSPC (a bound: dropped) or -ENOMEM. */
int zmtp_log__add(struct zmtp_log *l, const struct ttf_zmtp_msg *m);
/*
 * The messages kept of connection cookie, oldest first (*n of them, NULL
 * when none), valid until the next add or close; *dropped: its drops.
 */
const struct ttf_zmtp_msg *zmtp_log__msgs(const struct zmtp_log *l, uint64_t cookie, size_t *n,
					  uint64_t *dropped);
/* The connection closed: forget its messages. */
void zmtp_log__close(struct zmtp_log *l, uint64_t cookie);
const struct zmtp_log_stats *zmtp_log__stats(const struct zmtp_log *l);

#endif /* TTFTRACE_ZMTP_LOG_H */
