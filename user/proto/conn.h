/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * Connection tracker: turns the ring-buffer records of bpf/net.h into
 * requests (struct ttf_request). Keys connections by socket cookie; hands
 * each connection's bytes to the protocol recognizer that took it
 * (recognizer.h: HTTP/1.1, HTTP/2, ZMTP ...), which parses both
 * directions; matches SEND records to XMIT records by TCP sequence number
 * (conn_xmit.c).
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
#include "user/proto/zmtp/zmtp.h"

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
	 * Optional: every complete ZMTP message (user/proto/zmtp/zmtp.h); *m is
	 * valid only during the call. With on_zmtp_conn, once per ZMTP
	 * connection, when it closes or tracing stops.
	 */
	void (*on_zmtp_msg)(void *ctx, const struct ttf_zmtp_msg *m);
	void (*on_zmtp_conn)(void *ctx, const struct ttf_zmtp_conn *z);
	/* Optional: where gRPC response messages hold their tokens (grpc.h); NULL: chunks. */
	const struct grpc_profile *grpc_profile;
};

/*
 * Counters the tracker keeps; all are printed at exit when non-zero. The
 * recognizers' own follow them (conn_table__counter()).
 */
struct conn_stats {
	uint64_t events;            /* records consumed */
	uint64_t connections;       /* connections seen */
	uint64_t requests;          /* requests finished */
	uint64_t truncated_events;  /* payloads shorter than the bytes moved */
	uint64_t lost_sync;         /* times a parser lost the byte stream and resynced */
	uint64_t non_http;          /* connections no protocol recognizer took (not HTTP), also
				     * those that ended before one decided */
	uint64_t events_dropped_oom;/* token events (or requests) lost to allocation failure */
	uint64_t malformed;         /* records rejected with -EINVAL */
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

/*
 * The recognizers' counters (recognizer.h: struct proto_counters), every
 * family's in turn, in the order they are printed: how many, and the i-th's
 * name and value.
 */
unsigned int conn_table__n_counters(const struct conn_table *t);
const char *conn_table__counter_name(const struct conn_table *t, unsigned int i);
uint64_t conn_table__counter(const struct conn_table *t, unsigned int i);
/* The recognizers' counter printed as name; 0 when there is none. */
uint64_t conn_table__count(const struct conn_table *t, const char *name);

#endif /* TTFTRACE_CONN_H */
