/* SPDX-License-Identifier: GPL-2.0-only */
/* What the message-hop unit tests share (test_msg_hops*.c; after cmocka.h). */
#ifndef TTFTRACE_TEST_MSG_HOPS_FIX_H
#define TTFTRACE_TEST_MSG_HOPS_FIX_H

#include <string.h>
#include "user/model/hops/msg.h"

/* A client request with one token event, its metrics and its attribution. */
struct req_fix {
	struct ttf_token_event ev;
	struct ttf_request r;
	struct ttf_req_metrics m;
	struct ttf_attrib a;
};

/* A message without ids crossing own_ino's end of the unix connection to peer_ino. */
static inline void cross(struct msg_hops *mh, uint32_t tgid, uint8_t dir, uint64_t ts,
			 uint64_t bytes, uint64_t own_ino, uint64_t peer_ino)
{
	struct ttf_zmtp_msg m = { .tgid = tgid, .dir = dir, .ts_ns = ts, .bytes = bytes };

	m.addr.family = 1;
	memcpy(m.addr.laddr, &own_ino, sizeof(own_ino));
	memcpy(m.addr.raddr, &peer_ino, sizeof(peer_ino));
	assert_int_equal(msg_hops__on_msg(mh, &m), 0);
}

#endif
