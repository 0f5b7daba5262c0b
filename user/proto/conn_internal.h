/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * The connection tracker's own state, shared by its parts and by nothing
 * else: conn.c (the table of connections, dispatch of records, emission),
 * conn_xmit.c (pairing response writes with their XMIT records),
 * track.c (what recognizers call, track.h) and close_wait.c (closes that
 * wait for a record still on its way). A struct track_conn is a struct
 * conn, a struct track_req a struct creq.
 */
#ifndef TTFTRACE_CONN_INTERNAL_H
#define TTFTRACE_CONN_INTERNAL_H

#include <stdbool.h>
#include <stdint.h>
#include "user/lib/hash.h"
#include "user/proto/conn.h"
#include "user/proto/recognizer.h"
#include "user/proto/track.h"

/* How long (in later event timestamps) an ended request waits for its last XMIT. */
#define XMIT_WAIT_NS (200ull * 1000 * 1000)
#define XMIT_RING 16		/* recent XMITs kept per connection */
#define PENDING_WRITES 32	/* writes waiting for their XMIT per connection */
#define TOMBSTONES 256		/* recently closed cookies whose late records are ignored */
#define TOUCHED_MAX 32	/* requests one record may write to (HTTP/2 multiplexes) */
/*
 * A close that came before the record of the connection's last write (a TLS
 * connection's plaintext record is submitted at the library call's return,
 * after the peer may have seen the bytes and closed; a SEND record may lag
 * its transmit) waits this long, in later event timestamps, for it.
 */
#define CLOSE_WAIT_NS (50ull * 1000 * 1000)
/* a close waiting for its process to read what was queued: the reader may be slow (B1.13) */
#define CLOSE_READ_WAIT_NS (1000ull * 1000 * 1000)
#define CLOSING_MAX 16		/* closes waiting at once; more close at once */
/*
 * The peer half-closed (its FIN: CLOSE_WAIT) with a request in flight: the
 * server may still answer it in full, so the close waits for the responses
 * in flight, this long at most.
 */
#define CLOSE_WAIT_RESP_NS (30ull * 1000 * 1000 * 1000)

/* ROLE_NON_HTTP: no recognizer took the connection */
enum conn_role { ROLE_UNKNOWN, ROLE_SERVER, ROLE_CLIENT, ROLE_NON_HTTP };

struct conn;

struct creq {
	struct ttf_request r;
	struct conn *conn;
	struct creq *prev, *next;	/* conn->reqs, oldest first */
	struct creq *wprev, *wnext;	/* table wait list */
	bool resp_started;
	bool resp_ended;
	bool waiting;
	bool have_seq;
	uint32_t last_seq_end;		/* seq_end of the latest response write */
	uint64_t last_xmit_ns;		/* XMIT of that write; 0 unknown */
	bool have_first_seq, have_first_ev_seq;
	uint32_t first_seq_end;		/* seq_end of the write of the first response byte */
	uint32_t first_ev_seq_end;	/* ... of the write that completed the first event */
	uint64_t deadline_ns;
};

struct xmit_rec {
	uint32_t seq_end;
	uint64_t ts_ns;
};

struct pending_write {
	uint32_t seq_end;
	struct creq *req;
	uint32_t ev_from, ev_to;
};

struct touched {
	struct creq *req;
	uint32_t ev_from;
};

struct conn {
	uint64_t cookie;
	struct conn_table *t;
	enum conn_role role;
	uint32_t tgid;
	uint32_t undecided;
	bool undecided_bytes;		/* a byte came while no recognizer had decided */
	uint32_t ruled_out;		/* bit i: proto_recognizers[i] said no */
	uint32_t next_seq;
	struct ttf_conn_addr addr;
	const struct proto_recognizer *rec;	/* set with the role */
	void *st;			/* rec's state */
	struct creq *head, *tail;	/* all live requests, oldest first */
	const struct ttf_net_event *cur;	/* record being fed */
	struct touched touched[TOUCHED_MAX];
	int n_touched;
	struct xmit_rec xmits[XMIT_RING];
	unsigned int xmit_head, n_xmits;	/* ring, oldest at xmit_head */
	struct pending_write pend[PENDING_WRITES];
	unsigned int n_pend;
	bool have_tx_seq;
	uint32_t tx_seq_end;		/* tcp write_seq after this connection's last SEND */
	bool tls;			/* carries TLS: only plaintext records are parsed */
	bool tls_plain;			/* a plaintext record came */
	bool have_cipher_seq, have_plain_seq;
	uint32_t cipher_seq;		/* write_seq after the last ciphertext write inside a TLS call */
	uint32_t plain_seq;		/* the same, as the plaintext records have reached */
	uint64_t close_ns;		/* a close waits (CLOSE_WAIT_NS); 0 none */
	uint32_t close_flag;
	/* the close waits for the SEND record that reaches close_seq, not for plaintext */
	bool close_for_send;
	/* the close waits for the responses in flight (CLOSE_WAIT_RESP_NS) */
	bool close_for_resp;
	uint32_t close_seq;		/* write_seq at the CLOSE (TTF_EVF_CLOSE_SEQ) */
	/* the close waits for RECV records of the close_unread bytes still queued */
	bool close_for_read;
	uint32_t close_unread;
	UT_hash_handle hh;		/* conn_table.conns, keyed by cookie */
};

struct conn_table {
	struct conn_table_opts opts;
	struct conn_stats stats;
	struct conn *conns;		/* uthash by cookie, oldest first */
	uint64_t tomb[TOMBSTONES];
	unsigned int tomb_next;
	struct creq *wait_head, *wait_tail;
	uint64_t next_id;
	uint64_t *proto_counts;		/* proto_counter_groups[], one after another */
	struct conn *closing[CLOSING_MAX];	/* connections whose close waits (close_wait.c) */
	unsigned int n_closing;
};

static inline bool seq_ge(uint32_t a, uint32_t b)
{
	return (int32_t)(a - b) >= 0;
}

static inline struct conn *conn_of(struct track_conn *tc)
{
	return (struct conn *)tc;
}

static inline struct creq *creq_of(struct track_req *q)
{
	return (struct creq *)q;
}

/* ---- conn.c ---- */

/* Hand q to on_request and free it; the recognizer forgets it first. */
void conn_emit(struct conn_table *t, struct creq *q);
/* Emit every live request of c (open_flag unless its response ended) and free c. */
void conn_close(struct conn_table *t, struct conn *c, uint32_t open_flag,
		bool until_close_ends, uint64_t close_ns);
struct conn *conn_lookup(const struct conn_table *t, uint64_t cookie);

/* ---- conn_xmit.c ---- */

/* q's response was written by the current record up to seq_end (events from ev_from on). */
void xmit_note_write(struct conn *c, struct creq *q, uint32_t ev_from, uint32_t seq_end);
/* An XMIT record of server connection c. */
void xmit_record(struct conn_table *t, struct conn *c, const struct ttf_net_event *e);
/* The XMIT folded into a SEND record (TTF_EVF_XMIT_FOLDED). */
void xmit_folded(struct conn_table *t, const struct ttf_net_event *e);
/* q's response ended: emit it now, or wait (bounded) for the XMIT of its last write. */
void xmit_emit_or_wait(struct conn_table *t, struct creq *q);
void xmit_wait_unlink(struct conn_table *t, struct creq *q);
/* Emit the waiting requests whose wait is over at now_ns. */
void xmit_wait_expire(struct conn_table *t, uint64_t now_ns);

/* ---- close_wait.c ---- */

/* A CLOSE of c: true when it waits for c's last plaintext or SEND record instead. */
bool close_waits(struct conn_table *t, struct conn *c, const struct ttf_net_event *e);
/* Close the waiting connections whose record came, or whose wait is over at now_ns. */
void close_waits_due(struct conn_table *t, uint64_t now_ns);
/* c closes now: it waits no more. */
void close_wait_drop(struct conn_table *t, struct conn *c);
/* A RECV on c, whose close may wait for it. */
void close_wait_read(struct conn_table *t, struct conn *c, const struct ttf_net_event *e);
/* Tracing stops: close every waiting connection as its close said. */
void close_waits_finish(struct conn_table *t);

/* ---- track.c ---- */

/* The recognizers' counters of t (proto_counts): 0, or -ENOMEM. */
int track_counts_new(struct conn_table *t);
void track_counts_free(struct conn_table *t);

#endif /* TTFTRACE_CONN_INTERNAL_H */
