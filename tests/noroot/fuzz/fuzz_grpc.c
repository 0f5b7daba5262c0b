// SPDX-License-Identifier: GPL-2.0-only
/*
 * libFuzzer harness: gRPC (user/proto/http2/grpc.c) on its own and behind the
 * HTTP/2 recognizer.
 *
 * Input: [0] mode bits, [1] profile text length L, then L bytes of profile
 * text (parsed; a good one also counts tokens), then chunks [len][gap] +
 * len bytes:
 *   bit 0 clear: the chunks feed one message reader (gap: bytes not
 *     captured), every message's kept bytes counted with each rule;
 *   bit 0 set: the chunks are the DATA frames of a gRPC response on an
 *     HTTP/2 connection (preface, request and response heads built here),
 *     through the tracker with the profile; bit 1: END_STREAM on the last.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "user/model/metrics.h"
#include "user/proto/conn.h"
#include "user/proto/http2/grpc.h"

struct ctx {
	const struct grpc_profile *p;
};

static void on_msg(void *c, const struct grpc_msg *m)
{
	const struct ctx *x = c;

	if (m->kept_len > GRPC_KEEP_BYTES || m->kept_len > m->len || (m->whole && m->kept_len != m->len))
		abort();
	for (int i = 0; x->p && i < x->p->n; i++) {
		int64_t n = grpc_count_tokens(&x->p->rules[i], m->kept, m->kept_len);

		/* a count never exceeds the bytes it was read from */
		if (n > (int64_t)m->kept_len)
			abort();
	}
}

static void check_request(void *ctx, const struct ttf_request *r)
{
	struct ttf_req_metrics m;

	(void)ctx;
	if (r->n_events > r->cap_events || (r->n_events && !r->events))
		abort();
	ttf_metrics__compute(r, &m);
}

static void put_frame(uint8_t *b, size_t *n, uint8_t type, uint8_t flags, uint32_t sid,
		      const void *p, size_t len)
{
	uint8_t h[9] = { len >> 16, len >> 8, len, type, flags, sid >> 24, sid >> 16, sid >> 8,
			 sid };

	memcpy(b + *n, h, 9);
	memcpy(b + *n + 9, p, len);
	*n += 9 + len;
}

static void send_rec(struct conn_table *t, int type, uint64_t ts, const uint8_t *p, size_t cap,
		     size_t bytes)
{
	struct ttf_net_event *e = malloc(sizeof(*e) + cap);

	if (!e)
		return;
	memset(e, 0, sizeof(*e));
	e->type = type;
	e->sock_cookie = 9;
	e->tgid = 100;
	e->ts_ns = ts;
	e->bytes = bytes;
	e->cap_len = cap;
	memcpy(e->payload, p, cap);
	conn_table__on_event(t, e, sizeof(*e) + cap);
	free(e);
}

static void over_h2(const uint8_t *p, size_t n, const struct grpc_profile *gp, bool end)
{
	static const uint8_t req[] = { 0x83, 0x86, 0x04, 0x06, '/', 'g', '.', 'S', '/', 'M' };
	static const uint8_t resp[] = { 0x88, 0x0f, 0x10, 0x10, 'a', 'p', 'p', 'l', 'i', 'c', 'a',
					't', 'i', 'o', 'n', '/', 'g', 'r', 'p', 'c' };
	struct conn_table_opts opts = { .sz = sizeof(opts), .on_request = check_request,
					.grpc_profile = gp };
	struct conn_table *t = conn_table__new(&opts);
	uint8_t *b = malloc(4096 + 64);
	uint64_t ts = 1000000000ull;
	size_t bn = 0, off = 0;

	if (!t || !b)
		goto out;
	memcpy(b, "PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n", 24);
	bn = 24;
	put_frame(b, &bn, 1, 0x5, 1, req, sizeof(req));
	send_rec(t, TTF_EV_RECV, ts, b, bn, bn);
	bn = 0;
	put_frame(b, &bn, 1, 0x4, 1, resp, sizeof(resp));
	send_rec(t, TTF_EV_SEND, ts += 1000, b, bn, bn);
	while (off + 2 <= n) {
		size_t len = p[off], gap = p[off + 1];
		bool last;

		off += 2;
		if (len > n - off)
			len = n - off;
		last = off + len + 2 > n;
		bn = 0;
		put_frame(b, &bn, 0, last && end ? 1 : 0, 1, p + off, len);
		/* gap: the frame's last bytes not captured */
		if (gap > len)
			gap = len;
		send_rec(t, TTF_EV_SEND, ts += 1000000, b, bn - gap, bn);
		off += len;
	}
	conn_table__finish(t, ts + 1);
out:
	free(b);
	conn_table__free(t);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct grpc_profile gp = { 0 };
	struct grpc_reader *r;
	struct ctx x = { NULL };
	size_t off, plen;
	char *text;
	int bad;

	if (size < 2)
		return 0;
	plen = data[1];
	if (plen > size - 2)
		plen = size - 2;
	text = malloc(plen + 1);
	if (!text)
		return 0;
	memcpy(text, data + 2, plen);
	text[plen] = '\0';
	if (grpc_profile__parse(text, &gp, &bad) == 0)
		x.p = &gp;
	free(text);
	off = 2 + plen;
	if (data[0] & 1) {
		over_h2(data + off, size - off, x.p, data[0] & 2);
	} else if ((r = malloc(sizeof(*r)))) {
		grpc_reader__init(r);
		while (off + 2 <= size) {
			size_t len = data[off], gap = data[off + 1];

			off += 2;
			if (len > size - off)
				len = size - off;
			grpc_reader__feed(r, data + off, len, on_msg, &x);
			if (gap & 1)
				grpc_reader__gap(r, gap >> 1, on_msg, &x);
			off += len;
		}
		free(r);
	}
	grpc_profile__free(&gp);
	return 0;
}
