// SPDX-License-Identifier: GPL-2.0-only
/*
 * libFuzzer harness: the HPACK decoder (user/proto/http2/hpack.c, hpack_huffman.c)
 * and the HTTP/2 recognizer (user/proto/http2.c) behind the connection
 * tracker.
 *
 * Input: [0] mode bits, then
 *   bit 0 clear: HPACK. A series of blocks [len][len bytes] through one
 *     decoder (synced unless bit 1), len 0xff: the next two bytes set the
 *     table size setting; every block's bytes also go through the Huffman
 *     decoder alone.
 *   bit 0 set: HTTP/2 records, each [dir][len lo][len hi][gap] + payload
 *     (dir bit 0: the server writes, else it reads; gap: bytes not
 *     captured after the payload), on one connection that starts with the
 *     client preface unless bit 1 (a connection seen mid-way).
 * Every field and finished request is checked (an abort() is a finding).
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "user/model/metrics.h"
#include "user/proto/conn.h"
#include "user/proto/http2/hpack.h"
#include "user/proto/http2/hpack_huffman.h"

#define PREFACE "PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n"

static void check_field(void *ctx, const struct hpack_field *f)
{
	(void)ctx;
	if (f->name_known && (!f->name || f->name_len > HPACK_MAX_STRING_BYTES))
		abort();
	if (f->value_known && (!f->value || f->value_len > HPACK_MAX_STRING_BYTES))
		abort();
	/* touch every byte: ASan finds a string that points at freed memory */
	for (size_t i = 0; f->name_known && i < f->name_len; i++)
		if (f->name[i] == 0x7f && f->name_len == (size_t)-1)
			abort();
	for (size_t i = 0; f->value_known && i < f->value_len; i++)
		if (f->value[i] == 0x7f && f->value_len == (size_t)-1)
			abort();
}

static void check_request(void *ctx, const struct ttf_request *r)
{
	struct ttf_req_metrics m;

	(void)ctx;
	if (r->n_events > r->cap_events || (r->n_events && !r->events))
		abort();
	if (!memchr(r->method, 0, sizeof(r->method)) || !memchr(r->path, 0, sizeof(r->path)))
		abort();
	ttf_metrics__compute(r, &m);
}

static void hpack_blocks(const uint8_t *p, size_t n, bool synced)
{
	struct hpack_dec *d = hpack_dec__new(synced);
	char out[512];
	size_t off = 0, olen;

	if (!d)
		return;
	while (off < n) {
		size_t len = p[off++];

		if (len == 0xff) {
			if (off + 2 > n)
				break;
			hpack_dec__settings_max(d, (uint32_t)p[off] << 8 | p[off + 1]);
			off += 2;
			continue;
		}
		if (len > n - off)
			len = n - off;
		hpack_dec__block(d, p + off, len, check_field, NULL);
		if (hpack_huff_decode(p + off, len, out, sizeof(out), &olen) == 0 && olen > len * 8 / 5 + 1)
			abort();
		off += len;
	}
	hpack_dec__free(d);
}

static void h2_records(const uint8_t *p, size_t n, bool mid)
{
	struct conn_table_opts opts = { .sz = sizeof(opts), .on_request = check_request };
	struct conn_table *t = conn_table__new(&opts);
	struct ttf_net_event *e = malloc(sizeof(*e) + 4096 + 24);
	uint64_t ts = 1000000000ull;
	size_t off = 0;
	bool first = true;

	if (!t || !e)
		goto out;
	while (off + 4 <= n) {
		const uint8_t *h = p + off;
		size_t plen = (h[1] | (size_t)h[2] << 8) % 4096, pre = 0;

		off += 4;
		if (plen > n - off)
			plen = n - off;
		memset(e, 0, sizeof(*e));
		e->type = h[0] & 1 ? TTF_EV_SEND : TTF_EV_RECV;
		if (first && !mid) {
			/* the connection's first record: the client's preface */
			e->type = TTF_EV_RECV;
			memcpy(e->payload, PREFACE, 24);
			pre = 24;
		}
		first = false;
		e->sock_cookie = 7;
		e->tgid = 100;
		ts += 1000000ull * (h[0] >> 4);
		e->ts_ns = ts;
		e->arrival_first_ns = e->arrival_last_ns = ts - 1000;
		e->seq_end = (uint32_t)off;
		memcpy(e->payload + pre, p + off, plen);
		e->cap_len = pre + plen;
		e->bytes = e->cap_len + h[3];
		off += plen;
		conn_table__on_event(t, e, sizeof(*e) + e->cap_len);
		if (h[0] & 2) {
			struct ttf_net_event x = { .type = TTF_EV_XMIT, .sock_cookie = 7, .tgid = 100,
						   .ts_ns = ts + 10, .seq_end = (uint32_t)off,
						   .bytes = 1 };

			conn_table__on_event(t, &x, sizeof(x));
		}
	}
	conn_table__finish(t, ts + 1);
out:
	free(e);
	conn_table__free(t);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	if (size < 1)
		return 0;
	if (data[0] & 1)
		h2_records(data + 1, size - 1, data[0] & 2);
	else
		hpack_blocks(data + 1, size - 1, !(data[0] & 2));
	return 0;
}
