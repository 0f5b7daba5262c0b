// SPDX-License-Identifier: GPL-2.0-only
/*
 * libFuzzer harness: the connection tracker (user/proto/conn.c, with user/proto/http1/http.c,
 * user/proto/stream/sse.c and user/proto/zmtp/zmtp.c behind it) and the per-request metrics
 * (user/model/metrics.c) on record sequences built from the input.
 *
 * Input: a list of records, each a 12-byte header then payload:
 *   [0] type (low 3 bits: 1 RECV 2 SEND 3 XMIT 4 CLOSE 5 EXIT 6 FORK, 0/7 junk)
 *   [1] socket (low 2 bits: cookie 1..4; bit 2: tgid 101 instead of 100)
 *   [2..3] payload length, little endian, mod 4096 (capped at what is left)
 *   [4..5] bytes beyond the payload (a gap: bytes = cap_len + this)
 *   [6] ts step in ms; [7] flags byte (bit 0: malformed length; bit 1: cap_len > bytes)
 *   [8..11] seq_end
 * Every finished request is checked for internal consistency (an abort() is a
 * finding) and fed to ttf_metrics__compute.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "user/proto/conn.h"
#include "user/model/metrics.h"

#define HDR_BYTES 12

static void check_request(void *ctx, const struct ttf_request *r)
{
	struct ttf_req_metrics m;
	uint64_t *itl = NULL;
	uint64_t sum = 0;

	(void)ctx;
	if (r->n_events > r->cap_events || (r->n_events && !r->events))
		abort();
	if (memchr(r->method, 0, sizeof(r->method)) == NULL ||
	    memchr(r->path, 0, sizeof(r->path)) == NULL)
		abort();
	for (uint32_t i = 0; i < r->n_events; i++)
		sum += r->events[i].write_ns + r->events[i].n_tokens;
	(void)sum;
	memset(&m, 0, sizeof(m));
	ttf_metrics__compute(r, &m);
	if (ttf_metrics__itl_alloc(r, &itl) >= 0)
		free(itl);
}

static void check_read(void *ctx, const struct ttf_request *r)
{
	(void)ctx;
	if (memchr(r->path, 0, sizeof(r->path)) == NULL)
		abort();
}

/* A ZMTP message: its ids NUL-terminated and id-like, its sizes consistent. */
static void check_zmtp_msg(void *ctx, const struct ttf_zmtp_msg *m)
{
	(void)ctx;
	if (m->n_ids > ZMTP_MSG_IDS || m->dir >= ZMTP_DIR__N || !m->frames ||
	    m->bytes < m->body_bytes + 2ull * m->frames)
		abort();
	for (unsigned int i = 0; i < m->n_ids; i++)
		if (!memchr(m->ids[i], 0, ZMTP_ID_BYTES) || !zmtp_id_like(m->ids[i], strlen(m->ids[i])))
			abort();
}

static void check_zmtp_conn(void *ctx, const struct ttf_zmtp_conn *z)
{
	(void)ctx;
	if (z->n_ids > ZMTP_CONN_IDS || z->n_ids > z->ids_seen)
		abort();
	for (int d = 0; d < ZMTP_DIR__N; d++)
		if (!memchr(z->dir[d].socket_type, 0, sizeof(z->dir[d].socket_type)) ||
		    !memchr(z->dir[d].mechanism, 0, sizeof(z->dir[d].mechanism)) ||
		    z->dir[d].partial > z->dir[d].msgs)
			abort();
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct conn_table_opts opts = {
		.sz = sizeof(opts), .on_request = check_request, .on_request_read = check_read,
		.on_zmtp_msg = check_zmtp_msg, .on_zmtp_conn = check_zmtp_conn,
	};
	struct conn_table *t;
	struct ttf_net_event *e;
	uint64_t ts = 1000000000ull;
	size_t off = 0;

	if (size < 1)
		return 0;
	opts.xmit_expected = data[0] & 1;
	opts.send_seq_exact = !!(data[0] & 2);
	off = 1;
	t = conn_table__new(&opts);
	if (!t)
		return 0;
	e = malloc(sizeof(*e) + 4096);
	if (!e)
		goto cleanup;
	while (off + HDR_BYTES <= size) {
		const uint8_t *h = data + off;
		size_t plen = (h[2] | (size_t)h[3] << 8) % 4096;
		size_t extra = h[4] | (size_t)h[5] << 8;
		size_t len;

		off += HDR_BYTES;
		if (plen > size - off)
			plen = size - off;
		memset(e, 0, sizeof(*e));
		e->type = h[0] & 7;
		e->sock_cookie = 1 + (h[1] & 3);
		e->tgid = h[1] & 4 ? 101 : 100;
		e->tid = e->tgid + (h[1] >> 4);
		ts += (uint64_t)h[6] * 1000000ull;
		e->ts_ns = ts;
		e->enter_ns = h[7] & 4 ? 0 : ts - 1000;
		e->arrival_first_ns = h[7] & 8 ? 0 : ts - 5000;
		e->arrival_last_ns = h[7] & 8 ? 0 : ts - 2000;
		e->seq_end = h[8] | (uint32_t)h[9] << 8 | (uint32_t)h[10] << 16 |
			     (uint32_t)h[11] << 24;
		e->family = 2;
		e->lport = 8080;
		e->rport = 40000 + (h[1] & 3);
		e->cap_len = plen;
		e->bytes = plen + extra;
		if (e->type == TTF_EV_XMIT)
			e->bytes = extra;
		if (h[7] & 2 && e->bytes)
			e->bytes--;		/* cap_len > bytes: must be rejected */
		memcpy(e->comm, "fuzz", 5);
		memcpy(e->payload, data + off, plen);
		off += plen;
		len = sizeof(*e) + plen;
		if (h[7] & 1)
			len = h[7] & 16 ? sizeof(*e) - 1 : sizeof(*e) + plen / 2;
		conn_table__on_event(t, e, len);
	}
	conn_table__finish(t, ts + 1);
cleanup:
	free(e);
	conn_table__free(t);
	return 0;
}
