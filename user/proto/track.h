/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * What a protocol recognizer (recognizer.h) calls to build requests on the
 * connection it parses. The tracker (conn.c, track.c) owns connections and requests:
 * it assigns ids, copies addresses and record times, matches response writes
 * to XMIT records, and emits a request once its response ended (or the
 * connection closed). A recognizer only says what the bytes mean.
 *
 * Handles are opaque. A struct track_req stays valid until the tracker emits
 * it, and the tracker tells the recognizer first (proto_recognizer.forget);
 * a request whose response ended may be emitted at the end of the record.
 *
 * "The current record" is the RECV/SEND record being fed (track_cur()); it
 * is NULL while the connection closes (proto_recognizer.close), and the
 * functions that take times from it then keep what they had.
 */
#ifndef TTFTRACE_TRACK_H
#define TTFTRACE_TRACK_H

#include <stdbool.h>
#include <stdint.h>
#include "bpf/net.h"
#include "user/proto/request.h"
#include "user/proto/zmtp/zmtp.h"

struct track_conn;
struct track_req;
struct grpc_profile;
struct proto_counters;

/* Which way requests travel on a connection, from the traced process's view. */
enum track_role {
	TRACK_ROLE_SERVER,	/* requests arrive on reads (RECV), responses leave on writes */
	TRACK_ROLE_CLIENT,	/* requests leave on writes (SEND), responses arrive on reads */
};

/* The direction a record belongs to, given the role. */
enum track_side {
	TRACK_SIDE_REQ,		/* request bytes */
	TRACK_SIDE_RESP,	/* response bytes */
};

/* The record being fed; NULL during close. */
const struct ttf_net_event *track_cur(const struct track_conn *tc);
/* Read-only view of the request being built (method, flags, status, events ...). */
const struct ttf_request *track_req_info(const struct track_req *q);

/* ---- request side ---- */

/*
 * A request begins in the current record: the tracker creates it (id,
 * connection order, addresses, process, thread, read and arrival times) as
 * the newest of the connection. NULL when out of memory (counted).
 */
struct track_req *track_req_begin(struct track_conn *tc);
/* Its head: method and path (truncated to fit), and the API the path names. */
void track_req_head(struct track_req *q, const char *method, const char *path,
		    enum ttf_api api);
/* The "model" its body names (user/proto/stream/body_model.h). */
void track_req_model(struct track_req *q, const char *model);
/*
 * Its traceparent header(s): n_seen headers, tp the valid one (n_seen == 1
 * and tp->valid), else counted (traceparent_invalid).
 */
void track_req_traceparent(struct track_conn *tc, struct track_req *q, int n_seen,
			   const struct ttf_trace_parent *tp);
/* Its body: bytes, and a hash of its first bytes (0 unknown) that recognises it forwarded. */
void track_req_body(struct track_req *q, uint64_t body_bytes, uint32_t body_hash);
/* It was read completely in the current record (bytes: all of it); fires on_request_read. */
void track_req_end(struct track_conn *tc, struct track_req *q, uint64_t bytes);
/*
 * The request said Expect: 100-continue; wait_known: wait_ns is the time
 * from its head's arrival to its body's first arrival (the client waiting
 * for the 100 Continue, or for its own timeout).
 */
void track_req_expect(struct track_req *q, bool wait_known, uint64_t wait_ns);
/* Bytes of a request cut short (the connection closed inside it). */
void track_req_bytes(struct track_req *q, uint64_t bytes);

/* ---- response side ---- */

/*
 * A response begins in the current record, for the oldest request whose
 * response has not begun (requests answered in order); returns it, or NULL
 * when there is none. The request is touched (below).
 */
struct track_req *track_resp_begin(struct track_conn *tc);
/*
 * q's response begins in the current record (multiplexed protocols, where
 * responses do not come in request order). false when it had begun.
 */
bool track_resp_begin_for(struct track_conn *tc, struct track_req *q);
/*
 * The current record carries bytes of q's response: its write ends the
 * response so far (end_write_ns), is matched to its XMIT, and q is emitted
 * after the record if its response ended. Call once per record, before
 * feeding, for a response already in progress (track_resp_begin touches).
 */
void track_resp_touch(struct track_conn *tc, struct track_req *q);
/*
 * An interim response (HTTP 1xx) ended in the current record: q's real
 * response is still to come (counted in n_interim, the first one's write in
 * interim_write_ns, TTF_REQ_INTERIM).
 */
void track_resp_interim(struct track_conn *tc, struct track_req *q);
/* The final response's head: status (0 unknown) and whether it streams tokens (again: replaces). */
void track_resp_head(struct track_req *q, int status, bool streamed);
/*
 * One event of a streamed response (an SSE event ...), counted in
 * n_sse_events; tok: the token event it carries, NULL for none. The first
 * token event takes tx_tid and TTF_REQ_NODELAY from the current record.
 */
void track_resp_event(struct track_conn *tc, struct track_req *q,
		      const struct ttf_token_event *tok);
/*
 * A non-streamed response counts as one content token written by the
 * current record (the write of its last byte).
 */
void track_resp_whole(struct track_conn *tc, struct track_req *q);
/*
 * q's body cannot be read (a coding not decoded here, or bytes of a coded
 * body not captured): TTF_REQ_OPAQUE, no token counts. The first token
 * event seen, if any, stays for TTFT; the others and the usage report are
 * dropped; with none, TTFT ends at first_body_write_ns (the write of the
 * body's first byte; 0 unknown).
 */
void track_resp_opaque(struct track_req *q, uint64_t first_body_write_ns);
/*
 * An opaque stream's first body byte is in the current record: its write
 * ends TTFT (matched to its XMIT like a token event's).
 */
void track_resp_opaque_first(struct track_conn *tc, struct track_req *q);
/* The server's token usage report. */
void track_req_usage(struct track_req *q, uint32_t completion_tokens, uint32_t prompt_tokens);
/*
 * The response ended with its last byte in the current record (bytes: all
 * of it). Emitted after the record, once its write is matched to an XMIT.
 */
void track_resp_end(struct track_conn *tc, struct track_req *q, uint64_t bytes);
/*
 * The response ends where its last byte was seen, not at a message
 * boundary (a new request came while it could only end at close, or sync
 * was lost). Emitted now, or waits for the XMIT of its last write.
 */
void track_resp_cut(struct track_conn *tc, struct track_req *q);
/* Bytes of a response cut short. */
void track_resp_bytes(struct track_req *q, uint64_t bytes);

/* ---- messages (protocols without requests: ZMTP) ---- */

/*
 * A ZMTP message ended in the current record (its last byte captured or
 * in the record's gap): the tracker fills m->sock_cookie, tgid, tid and
 * ts_ns from that record (0 during close) and calls
 * conn_table_opts.on_zmtp_msg.
 */
void track_zmtp_msg(struct track_conn *tc, struct ttf_zmtp_msg *m);
/*
 * A ZMTP connection's summary, once, from proto_recognizer.close: the
 * tracker fills z->sock_cookie, tgid and addr and calls
 * conn_table_opts.on_zmtp_conn.
 */
void track_zmtp_conn(struct track_conn *tc, struct ttf_zmtp_conn *z);

/* ---- flags and counters ---- */

/* OR enum ttf_req_flags into q (TTF_REQ_TRUNCATED, _UNKNOWN, _ERROR, _DONE_MARKER ...). */
void track_req_flag(struct track_req *q, uint32_t flags);
/* The response's id (len bytes, not NUL-terminated; kept when it fits ttf_request.resp_id). */
void track_resp_id(struct track_req *q, const char *id, size_t len);
/* The parser lost the byte stream (conn_stats.lost_sync). */
void track_lost_sync(struct track_conn *tc);
/* An allocation failed: an event or request is lost (conn_stats.events_dropped_oom). */
void track_oom(struct track_conn *tc);

/*
 * Add n to counter i of a protocol family's counters (recognizer.h: struct
 * proto_counters), printed at exit.
 */
void track_count(struct track_conn *tc, const struct proto_counters *g, unsigned int i,
		 uint64_t n);
/* The gRPC token profile of the table (conn_table_opts.grpc_profile), or NULL. */
const struct grpc_profile *track_grpc_profile(const struct track_conn *tc);

#endif /* TTFTRACE_TRACK_H */
