// SPDX-License-Identifier: GPL-2.0-only
/*
 * The protocol recognizers the connection tracker tries, in order, and the
 * counters of their families, in the order they are printed (recognizer.h).
 */
#include "user/proto/recognizer.h"

const struct proto_recognizer *const proto_recognizers[] = {
	&proto_zmtp,	/* first: a first byte other than 0xFF rules it out */
	&proto_http1,
	&proto_http2,	/* after HTTP/1.1: its preface reads as text there, never as a request */
	/* the mid-stream ones last: they need a whole record of frames with an id */
	&proto_zmtp_mid,
	&proto_len32be,
	&proto_len32le,
};

const unsigned int proto_n_recognizers = sizeof(proto_recognizers) / sizeof(proto_recognizers[0]);

const struct proto_counters *const proto_counter_groups[] = {
	&http2_counters,
	&track_req_counters,
	&zmtp_counters,
};

const unsigned int proto_n_counter_groups =
	sizeof(proto_counter_groups) / sizeof(proto_counter_groups[0]);

/* conn.c remembers which recognizers said no in 32 bits */
_Static_assert(sizeof(proto_recognizers) / sizeof(proto_recognizers[0]) <= 32,
	       "at most 32 recognizers");
