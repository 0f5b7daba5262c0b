/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * Connection tracker: turns the ring-buffer records of bpf/net.h into
 * requests (struct ttf_request). Keys connections by socket cookie; hands
 * each connection's bytes to the protocol recognizer that took it
 * (recognizer.h: HTTP/1.1 with SSE today), which parses both directions;
 * matches SEND records to XMIT records by TCP sequence number.
 *
 * Works on partial captures: each SEND/RECV carries the first cap_len of
 * `bytes` bytes; the rest is a gap the parsers skip by count.
 */
#ifndef TTFTRACE_CONN_H
#define TTFTRACE_CONN_H

#include <stdint.h>
#include <stdio.h>
#include <linux/types.h>
#include "bpf/net.h"
#include "user/proto/request.h"
#include "user/proto/zmtp.h"

struct conn_table;
struct grpc_profile;

/*
 * Called once per finished request (response ended, connection closed,
 * process exited, or conn_table__finish). The callee may read *r only during
 * the call; the table releases it afterwards.
 */
typedef void (*conn_request_cb)(void *ctx, const struct ttf_request *r);

struct conn_table_opts {
	size_t sz;            /* sizeof(struct conn_table_opts) */
	conn_request_cb on_request;
	/*
	 * Optional: called when a request has been read completely (id,
	 * rx_tid, read_done_ns, sock_cookie are final), long before it ends;
	 * the attribution uses it to queue the request for the engine.
	 */
	conn_request_cb on_request_read;
	/*
	 * Optional: called when the first byte of a request's response is
	 * written (resp_first_write_ns is set); llama-server writes its
	 * streaming headers when a slot starts on the request.
	 */
	conn_request_cb on_response_begin;
	/* Optional: called when a request's first token event is recorded (events[0]). */
	conn_request_cb on_first_token;
	void *ctx;
	int xmit_expected;    /* 1: wait for XMIT records to end TTFT at the device */
	/*
	 * 1: SEND seq_end is the socket's tcp write_seq after the write (live
	 * records, recordings), so a jump between consecutive SENDs is bytes no
	 * record carried (ring buffer full): parsed as a gap, request flagged
	 * TTF_REQ_TRUNCATED. 0: seq_end only pairs SEND with XMIT.
	 */
	int send_seq_exact;
	/*
	 * Optional: every complete ZMTP message (user/proto/zmtp.h); *m is
	 * valid only during the call. With on_zmtp_conn, once per ZMTP
	 * connection, when it closes or tracing stops.
	 */
	void (*on_zmtp_msg)(void *ctx, const struct ttf_zmtp_msg *m);
	void (*on_zmtp_conn)(void *ctx, const struct ttf_zmtp_conn *z);
	/* Optional: where gRPC response messages hold their tokens (grpc.h); NULL: chunks. */
	const struct grpc_profile *grpc_profile;
};

/* Counters the tracker keeps; all are printed at exit when non-zero. */
struct conn_stats {
	uint64_t events;            /* records consumed */
	uint64_t connections;       /* connections seen */
	uint64_t requests;          /* requests finished */
	uint64_t truncated_events;  /* payloads shorter than the bytes moved */
	uint64_t lost_sync;         /* times a parser lost the byte stream and resynced */
	uint64_t non_http;          /* connections no protocol recognizer took (not HTTP) */
	uint64_t events_dropped_oom;/* token events (or requests) lost to allocation failure */
	uint64_t malformed;         /* records rejected with -EINVAL */
	uint64_t h2_frames_skipped; /* HTTP/2 frames not parsed (sync lost, gap inside) */
	uint64_t h2_streams_unseen; /* HTTP/2 streams begun before tracing (not timed) */
	uint64_t hpack_unknown;     /* header fields referencing unknown HPACK entries */
	uint64_t hpack_errors;      /* header blocks that could not be decoded */
	uint64_t grpc_lost;         /* gRPC messages whose framing was lost */
	uint64_t traceparent_invalid; /* requests with an invalid traceparent header (ignored) */
	uint64_t zmtp_conns;        /* ZMTP connections summarized */
	uint64_t zmtp_msgs_in;      /* ZMTP messages read by traced processes */
	uint64_t zmtp_msgs_out;     /* ... written */
	uint64_t zmtp_partial;      /* ZMTP messages with body bytes not captured */
	uint64_t zmtp_ids;          /* request ids found in ZMTP messages */
	uint64_t zmtp_lost_sync;    /* ZMTP directions whose framing was lost */
	uint64_t zmtp_mid_stream;   /* ZMTP connections recognized without a greeting */
	uint64_t len32_conns;       /* connections of 4-byte length-prefixed messages (summarized as ZMTP's) */
};

/* Returns NULL with errno set on failure. */
struct conn_table *conn_table__new(const struct conn_table_opts *opts);
void conn_table__free(struct conn_table *t);

/*
 * Feed one ring-buffer record (header + payload, `len` bytes as delivered by
 * ring_buffer callbacks). Returns 0, or -EINVAL for a malformed record
 * (counted, skipped).
 */
int conn_table__on_event(struct conn_table *t, const struct ttf_net_event *e, size_t len);

/*
 * Close every open request as incomplete (tracing stops) or aborted
 * (process gone), calling on_request for each. now_ns: CLOCK_MONOTONIC.
 */
void conn_table__finish(struct conn_table *t, uint64_t now_ns);

const struct conn_stats *conn_table__stats(const struct conn_table *t);

#endif /* TTFTRACE_CONN_H */
