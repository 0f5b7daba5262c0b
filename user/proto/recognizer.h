/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * Protocol recognizers: what turns the bytes of one traced connection into
 * requests, responses and token events. The connection tracker (conn.c)
 * keys connections, keeps the requests in flight, matches writes to XMIT
 * records (conn_xmit.c) and emits finished requests; a recognizer detects its protocol
 * from a connection's first payloads, parses both directions, and reports
 * what it sees through track.h.
 *
 * Adding a protocol (HTTP/2, gRPC, NDJSON streaming, ZMTP ...):
 *   1. create a folder for its family, user/proto/<family>/ (http1/, HTTP/1.1
 *      with SSE, is the model), with a recognizer defining `const struct
 *      proto_recognizer proto_<proto>`; it may use user/proto/ (the
 *      response bodies and event streams of stream/ too) and user/lib/ only;
 *   2. declare it below, and add it to proto_recognizers[] in
 *      user/proto/recognizer.c: the table is tried in order, so a cheap and
 *      certain detect goes first;
 *   3. its counters, if any: a struct proto_counters of its family
 *      (declared below), appended to proto_counter_groups[];
 *   4. test it in tests/unit/ (test_conn.c feeds records through the
 *      tracker) and add seeds to tests/noroot/fuzz/corpus.
 * The Makefile and tests/noroot/fuzz/build.sh pick up every user/proto/ source file by themselves.
 *
 * Per connection, the tracker asks each recognizer in turn (detect) about
 * every payload record until one says yes; a recognizer that says no is not
 * asked again. When all said no, or none said yes within the first
 * PROTO_UNDECIDED_MAX records, the connection is not traced further
 * (conn_stats.non_http). The record that was recognized is then fed too.
 * Callbacks run synchronously inside conn_table__on_event().
 */
#ifndef TTFTRACE_RECOGNIZER_H
#define TTFTRACE_RECOGNIZER_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include "user/proto/track.h"

/* Payload records a connection may go without a yes before it is "not recognized". */
#define PROTO_UNDECIDED_MAX 16

enum proto_verdict {
	PROTO_NO,	/* not this protocol: do not ask again on this connection */
	PROTO_MAYBE,	/* cannot tell yet: ask again on the next record */
	PROTO_YES,	/* this protocol; *role says which way requests travel */
};

struct proto_recognizer {
	const char *name;
	/*
	 * buf, len: the captured prefix of one record's payload (len may be 0);
	 * is_read: a RECV record (else SEND). On PROTO_YES set *role.
	 */
	enum proto_verdict (*detect)(const char *buf, size_t len, bool is_read,
				     enum track_role *role);
	/* Per-connection state for a connection detect said yes to; NULL: out of memory. */
	void *(*open)(struct track_conn *tc, enum track_role role);
	/*
	 * One record of side `side`: gap_before bytes written before it that no
	 * record carried (a TCP sequence jump), then len captured bytes, then
	 * gap_after bytes the record moved but did not capture. One call per
	 * record, so that a recognizer that lost sync can look at the payload
	 * before deciding what the gap before it means.
	 */
	void (*feed)(void *st, enum track_side side, uint32_t gap_before, const char *buf,
		     size_t len, size_t gap_after);
	/* The tracker is about to emit q: drop every reference to it. */
	void (*forget)(void *st, struct track_req *q);
	/*
	 * The connection closes (until_close_ends: a response that lasts until
	 * close ends here) or tracing stops (it is cut). Report the byte
	 * counts of the messages cut short and end what closing ends; the
	 * tracker then emits every request left, calling forget for each.
	 */
	void (*close)(void *st, bool until_close_ends);
	/* Free st (after close, or when the tracker is freed). */
	void (*free)(void *st);
};

/*
 * A protocol family's counters (HTTP/2's, ZMTP's ...), printed at exit when
 * non-zero, after the tracker's own (conn_table__counter()). A recognizer
 * adds to its family's with track_count(tc, &counters, i, n), i an index
 * into names (an enum of the family's).
 */
struct proto_counters {
	const char *const *names;	/* as printed */
	unsigned int n;
};

/*
 * Every family's counters, in the order they are printed (recognizer.c): a
 * new family goes last, so that the counters printed before stay in place.
 */
extern const struct proto_counters *const proto_counter_groups[];
extern const unsigned int proto_n_counter_groups;

/* What requests of every protocol share: traceparent_invalid (track.c). */
extern const struct proto_counters track_req_counters;
/* HTTP/2 framing, HPACK and gRPC (http2/http2.c). */
extern const struct proto_counters http2_counters;
/* ZMTP and the length-prefixed streams summarized with it (zmtp/zmtp.c). */
extern const struct proto_counters zmtp_counters;

/* The recognizers, in the order they are tried (recognizer.c). */
extern const struct proto_recognizer *const proto_recognizers[];
extern const unsigned int proto_n_recognizers;

/* HTTP/1.1 requests and responses, SSE token streams (http1/http1.c). */
extern const struct proto_recognizer proto_http1;
/* HTTP/2 cleartext: streams as requests, SSE and gRPC bodies (http2/http2.c). */
extern const struct proto_recognizer proto_http2;
/* ZMTP 3.x (ZeroMQ): messages and request ids, no requests (zmtp/zmtp.c, zmtp.h). */
extern const struct proto_recognizer proto_zmtp;
/* ZMTP 3.x seen from the middle: no greeting, frames found (zmtp/zmtp.c, msg_sync.h). */
extern const struct proto_recognizer proto_zmtp_mid;
/* Streams of 4-byte big/little-endian length-prefixed messages, opaque but for ids (zmtp/zmtp.c). */
extern const struct proto_recognizer proto_len32be;
extern const struct proto_recognizer proto_len32le;

#endif /* TTFTRACE_RECOGNIZER_H */
