// SPDX-License-Identifier: GPL-2.0-only
/*
 * Closes that wait: a CLOSE record can come before the record of the
 * connection's last write, and closing at once would cut a response whose
 * end is still on its way. A TLS connection waits for the plaintext of its
 * last ciphertext write; a server connection whose write_seq at close is
 * past the last SEND seen waits for that SEND. Either waits at most
 * CLOSE_WAIT_NS of record time. A server connection whose peer half-closed
 * with a request in flight waits for its responses, CLOSE_WAIT_RESP_NS at
 * most. The table keeps the waiting connections in a short list
 * (closing[]), checked as records come.
 */
#include <netinet/tcp.h>
#include "user/proto/conn_internal.h"

/* A request of c whose response has not ended; NULL when none. */
static struct creq *resp_in_flight(const struct conn *c)
{
	struct creq *q = c->head;

	while (q && q->resp_ended)
		q = q->next;
	return q;
}

/* Should the close of c wait for the plaintext of its last ciphertext write? Then it does. */
static bool close_waits_for_plaintext(struct conn_table *t, struct conn *c, uint64_t close_ns)
{
	if (!c->tls || !c->have_cipher_seq || t->n_closing == CLOSING_MAX ||
	    (c->have_plain_seq && seq_ge(c->plain_seq, c->cipher_seq)))
		return false;
	if (!c->close_ns)
		t->closing[t->n_closing++] = c;
	c->close_ns = close_ns ? close_ns : 1;
	c->close_flag = TTF_REQ_ABORTED;
	return true;
}

/*
 * A CLOSE of a server connection whose process had written more (its
 * write_seq, TTF_EVF_CLOSE_SEQ) than the SEND records seen so far: the peer
 * read the last write and closed before that write's SEND record reached
 * the ring (the writer was preempted between its transmit and
 * sock_send_length). Wait for that record, bounded like a TLS close.
 */
static bool close_waits_for_send(struct conn_table *t, struct conn *c,
				 const struct ttf_net_event *e)
{
	if (!(e->flags & TTF_EVF_CLOSE_SEQ) || c->tls || !c->have_tx_seq ||
	    seq_ge(c->tx_seq_end, e->seq_end) || t->n_closing == CLOSING_MAX || c->close_ns)
		return false;
	t->closing[t->n_closing++] = c;
	c->close_ns = e->ts_ns ? e->ts_ns : 1;
	c->close_flag = TTF_REQ_ABORTED;
	c->close_for_send = true;
	c->close_seq = e->seq_end;
	return true;
}

/*
 * A CLOSE of a client connection (a gateway's upstream call) whose socket
 * still held bytes its process had not read (TTF_EVF_CLOSE_UNREAD: the
 * peer's FIN or reset came behind its last data, B1.13): wait for the RECV
 * records that read them, bounded by CLOSE_READ_WAIT_NS. Without the wait,
 * an upstream's response sent with `Connection: close` was cut whenever the
 * FIN reached the socket before the gateway read the response. A server
 * connection whose client half-closed before the server read its request
 * waits for that read, then for the response (close_waits_for_response).
 */
static bool close_waits_for_read(struct conn_table *t, struct conn *c,
				 const struct ttf_net_event *e)
{
	uint32_t unread = e->flags & TTF_EVF_CLOSE_UNREAD ? e->close_unread : 0;

	/* inside the process's own read: that read's record is still to come */
	if (!unread && (e->flags & TTF_EVF_CLOSE_IN_READ))
		unread = 1;
	/*
	 * The peer's FIN with nothing unread before any answer was seen on a
	 * call: a read on another CPU may have taken the answer and not yet
	 * written its record (docs/kernel.md B1.13). Wait for it like the above.
	 */
	if (!unread && e->bytes == TCP_CLOSE_WAIT && c->role == ROLE_CLIENT && c->head &&
	    !c->head->resp_started)
		unread = 1;
	if (!unread || c->tls || (c->role != ROLE_CLIENT && c->role != ROLE_SERVER) ||
	    t->n_closing == CLOSING_MAX || c->close_ns)
		return false;
	t->closing[t->n_closing++] = c;
	c->close_ns = e->ts_ns ? e->ts_ns : 1;
	c->close_flag = TTF_REQ_ABORTED;
	c->close_for_read = true;
	c->close_unread = unread;
	return true;
}

/*
 * A CLOSE that is the peer's FIN (the socket went ESTABLISHED -> CLOSE_WAIT:
 * the record's bytes hold the new state, bpf/net_close.bpf.h) while a
 * request is in flight: a client that half-closed after its request still
 * reads the answer, and the server writes it. Closing here would drop the
 * response as records of a closed connection and report the request
 * aborted. Wait for the responses; the server's writes to a client that
 * closed altogether draw a reset, which ends the wait (TCP_CLOSE).
 */
static bool close_waits_for_response(struct conn_table *t, struct conn *c,
				     const struct ttf_net_event *e)
{
	if (e->bytes != TCP_CLOSE_WAIT || c->role != ROLE_SERVER || c->close_ns ||
	    t->n_closing == CLOSING_MAX || !resp_in_flight(c))
		return false;
	t->closing[t->n_closing++] = c;
	c->close_ns = e->ts_ns ? e->ts_ns : 1;
	c->close_flag = TTF_REQ_ABORTED;
	c->close_for_resp = true;
	return true;
}

/* A CLOSE of c: does it wait for c's last plaintext, SEND, RECV records or responses? */
bool close_waits(struct conn_table *t, struct conn *c, const struct ttf_net_event *e)
{
	return close_waits_for_plaintext(t, c, e->ts_ns) || close_waits_for_send(t, c, e) ||
	       close_waits_for_read(t, c, e) || close_waits_for_response(t, c, e);
}

void close_wait_read(struct conn_table *t, struct conn *c, const struct ttf_net_event *e)
{
	if (!c->close_for_read || e->type != TTF_EV_RECV)
		return;
	c->close_unread = e->bytes >= c->close_unread ? 0 : c->close_unread - e->bytes;
	if (!c->close_unread && c->role == ROLE_SERVER && resp_in_flight(c)) {
		c->close_for_read = false;	/* the request read: now its response */
		c->close_for_resp = true;
	}
	close_waits_due(t, e->ts_ns);
}

/* Has a waiting close what it waits for: the plaintext, the SEND or RECV records, the responses. */
static bool close_wait_met(const struct conn *c)
{
	if (c->close_for_send)
		return seq_ge(c->tx_seq_end, c->close_seq);
	if (c->close_for_read)
		return !c->close_unread;
	if (c->close_for_resp)
		return !resp_in_flight(c);
	return c->have_plain_seq && seq_ge(c->plain_seq, c->cipher_seq);
}

/* Waiting closes whose record came, or whose wait is over at now_ns. */
void close_waits_due(struct conn_table *t, uint64_t now_ns)
{
	for (unsigned int i = 0; i < t->n_closing; i++) {
		struct conn *c = t->closing[i];
		uint64_t wait_ns = c->close_for_read ? CLOSE_READ_WAIT_NS :
				   c->close_for_resp ? CLOSE_WAIT_RESP_NS : CLOSE_WAIT_NS;

		if (close_wait_met(c) || c->close_ns + wait_ns < now_ns) {
			conn_close(t, c, c->close_flag, true, c->close_ns);
			i--;	/* conn_close moved the last one here */
		}
	}
}

void close_wait_drop(struct conn_table *t, struct conn *c)
{
	for (unsigned int i = 0; c->close_ns && i < t->n_closing; i++)
		if (t->closing[i] == c)
			t->closing[i--] = t->closing[--t->n_closing];
}

/* Closed already, waiting for a record that did not come. */
void close_waits_finish(struct conn_table *t)
{
	while (t->n_closing)
		conn_close(t, t->closing[0], t->closing[0]->close_flag, true,
			   t->closing[0]->close_ns);
}
