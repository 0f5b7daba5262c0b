// SPDX-License-Identifier: GPL-2.0-only
/*
 * mkrec: write a synthetic recording (user/export/record/record.h) of N streamed chat
 * requests, for replay benchmarks and long-run memory tests. The records
 * look like those of tests/fixtures/sse_server under ttftrace: one thread
 * per keep-alive connection, C connections busy at once, per token an XMIT
 * then a SEND of one SSE chunk and the thread's wakeup/switch-in/sleep, and
 * (--engine) a llama.cpp-like engine thread with one prompt step per
 * request and one decode step per token. Watermarks every 10 ms of record
 * time, 2 ms behind, as the live tracer's loop.
 *
 *   mkrec -o FILE [-n REQUESTS] [-c CONCURRENCY] [-t TOKENS] [--ttft-us US]
 *         [--itl-us US] [--no-sched] [--engine] [--proto http1|h2|grpc]
 *
 * --proto h2: each connection is HTTP/2 cleartext (preface and SETTINGS on
 * its first request), each request a stream (HEADERS with literal fields),
 * each token one DATA frame of SSE; grpc: the same with application/grpc
 * responses, one length-prefixed message per token (field 1: the token id,
 * packed) and grpc-status trailers (profile line: /llm.Generator/Stream 1#).
 */
#include <errno.h>
#include <stdbool.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "user/export/record/record.h"

#define TGID 1000
#define ENGINE_TID 3000
#define T0_NS 1000000000000ull
#define ADVANCE_NS 10000000ull
#define SLACK_NS 2000000ull

struct ev {
	uint64_t ts_ns;
	uint32_t type;		/* enum rec_frame */
	uint32_t off, len;	/* in the cursor's arena */
};

/* One request being generated: its records, in time order. */
struct cursor {
	struct ev *ev;
	size_t n, next, cap;
	uint8_t *arena;
	size_t used, arena_cap;
};

enum proto { P_HTTP1, P_H2, P_GRPC };

struct gen {
	uint64_t n_req, conc, tokens, ttft_ns, itl_ns, period_ns;
	int sched, engine;
	enum proto proto;
	uint32_t *seq;		/* per connection */
	uint32_t *streams;	/* HTTP/2: streams begun per connection */
	uint64_t frames;
};

static void *grow(void *p, size_t *cap, size_t need, size_t elem)
{
	size_t c = *cap ? *cap : 64;

	while (c < need)
		c *= 2;
	if (c == *cap)
		return p;
	p = realloc(p, c * elem);
	if (!p) {
		perror("mkrec");
		exit(1);
	}
	*cap = c;
	return p;
}

static void *add(struct cursor *cu, uint64_t ts, uint32_t type, size_t len)
{
	struct ev *e;

	cu->ev = grow(cu->ev, &cu->cap, cu->n + 1, sizeof(*cu->ev));
	size_t room = (len + 7) & ~(size_t)7;	/* records stay 8-byte aligned */

	cu->arena = grow(cu->arena, &cu->arena_cap, cu->used + room, 1);
	e = &cu->ev[cu->n++];
	*e = (struct ev){ ts, type, cu->used, len };
	memset(cu->arena + cu->used, 0, room);
	cu->used += room;
	return cu->arena + e->off;
}

static void net(struct cursor *cu, uint32_t slot, uint8_t type, uint64_t ts, uint32_t bytes,
		uint32_t seq_end, const char *payload, size_t cap)
{
	struct ttf_net_event *e = add(cu, ts, REC_NET, sizeof(*e) + cap);

	e->ts_ns = ts;
	e->sock_cookie = 100 + slot;
	e->tgid = TGID;
	e->tid = 2000 + slot;
	e->bytes = bytes;
	e->seq_end = seq_end;
	e->cap_len = cap;
	e->type = type;
	e->family = TTF_AF_INET;
	e->lport = 8080;
	e->rport = 40000 + slot;
	e->laddr[0] = e->raddr[0] = 127;
	e->laddr[3] = e->raddr[3] = 1;
	if (type == TTF_EV_RECV || type == TTF_EV_SEND)
		e->enter_ns = ts - 20000;
	if (type == TTF_EV_RECV)
		e->arrival_first_ns = e->arrival_last_ns = ts - 50000;
	memcpy(e->comm, "sse_server", 11);
	memcpy(e->payload, payload, cap);
}

/* A write of the server: XMIT (inside the syscall on loopback), then SEND. */
static void write_bytes(struct gen *g, struct cursor *cu, uint32_t slot, uint64_t ts,
			const char *s, uint32_t len)
{
	g->seq[slot] += len;
	net(cu, slot, TTF_EV_XMIT, ts - 5000, len, g->seq[slot], NULL, 0);
	net(cu, slot, TTF_EV_SEND, ts, len, g->seq[slot], s, len);
}

static void write_rec(struct gen *g, struct cursor *cu, uint32_t slot, uint64_t ts, const char *s)
{
	write_bytes(g, cu, slot, ts, s, strlen(s));
}

/* An HTTP/2 frame header (RFC 9113 section 4.1) and payload at b; returns its size. */
static size_t h2_frame(char *b, uint8_t type, uint8_t flags, uint32_t sid, const void *p,
		       size_t n)
{
	uint8_t h[9] = { n >> 16, n >> 8, n, type, flags, sid >> 24, sid >> 16, sid >> 8, sid };

	memcpy(b, h, 9);
	memcpy(b + 9, p, n);
	return 9 + n;
}

/* A header block of literals without indexing: :status or :method/:path, content-type. */
static size_t h2_block(char *b, const char *path, const char *ctype)
{
	size_t n = 0, l;

	if (path) {
		b[n++] = (char)0x83;	/* :method POST */
		b[n++] = (char)0x86;	/* :scheme http */
		l = strlen(path);
		b[n++] = 0x04;		/* :path, indexed name 4 */
		b[n++] = l;
		memcpy(b + n, path, l);
		n += l;
	} else {
		b[n++] = (char)0x88;	/* :status 200 */
	}
	l = strlen(ctype);
	b[n++] = 0x0f;			/* content-type, indexed name 31 */
	b[n++] = 0x10;
	b[n++] = l;
	memcpy(b + n, ctype, l);
	return n + l;
}

static void sched(struct cursor *cu, uint64_t ts, uint32_t tid, uint8_t type, uint32_t state)
{
	struct ttf_sched_event *e = add(cu, ts, REC_SCHED, sizeof(*e));

	*e = (struct ttf_sched_event){ .ts_ns = ts, .tid = tid, .tgid = TGID, .state = state,
				       .cpu = tid & 1, .type = type };
}

static void engine(struct cursor *cu, uint64_t ts, int ret, int64_t n_tokens, int32_t seq)
{
	struct ttf_engine_event *e = add(cu, ts, REC_ENGINE, sizeof(*e));

	e->ts_ns = ts;
	e->tgid = TGID;
	e->tid = ENGINE_TID;
	e->role = TTF_ROLE_STEP;
	e->type = ret ? TTF_ENG_RETURN : TTF_ENG_ENTRY;
	e->value = ret ? 0 : n_tokens;
	e->n_seq = 1;
	e->seq_ids[0] = seq;
}

static int cmp_ev(const void *a, const void *b)
{
	const struct ev *x = a, *y = b;

	return x->ts_ns < y->ts_ns ? -1 : x->ts_ns > y->ts_ns ? 1 : (x->off > y->off) - (x->off < y->off);
}

static void build_h2(struct gen *g, struct cursor *cu, uint64_t i)
{
	bool grpc = g->proto == P_GRPC;
	uint32_t slot = i % g->conc, sid = 1 + 2 * g->streams[slot]++, tid = 2000 + slot;
	uint64_t t0 = T0_NS + i * g->period_ns, t;
	const char *ctype = grpc ? "application/grpc" : "text/event-stream";
	char buf[512], blk[128], data[256];
	size_t n = 0, bl;
	int dn;

	if (g->sched) {
		sched(cu, t0 - 30000, tid, TTF_SCHED_WAKEUP, 0);
		sched(cu, t0 - 25000, tid, TTF_SCHED_IN, 0);
	}
	if (sid == 1) {
		memcpy(buf, "PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n", 24);
		n = 24 + h2_frame(buf + 24, 4, 0, 0, NULL, 0);
	}
	bl = h2_block(blk, grpc ? "/llm.Generator/Stream" : "/v1/chat/completions",
		      grpc ? "application/grpc" : "application/json");
	n += h2_frame(buf + n, 1, 0x5, sid, blk, bl);
	net(cu, slot, TTF_EV_RECV, t0, n, 0, buf, n);
	if (g->engine) {
		engine(cu, t0 + g->ttft_ns / 4, 0, 32, slot);
		engine(cu, t0 + g->ttft_ns - 100000, 1, 0, slot);
	}
	bl = h2_block(blk, NULL, ctype);
	n = h2_frame(buf, 1, 0x4, sid, blk, bl);
	write_bytes(g, cu, slot, t0 + 40000, buf, n);
	if (g->sched)
		sched(cu, t0 + 50000, tid, TTF_SCHED_OUT_BLOCKED, 1);
	for (uint64_t k = 0; k < g->tokens; k++) {
		t = t0 + g->ttft_ns + k * g->itl_ns;
		if (g->sched) {
			sched(cu, t - 1000000 + 5000, tid, TTF_SCHED_WAKEUP, 0);
			sched(cu, t - 1000000 + 10000, tid, TTF_SCHED_IN, 0);
		}
		if (g->engine && k) {
			engine(cu, t - 300000, 0, 1, slot);
			engine(cu, t - 100000, 1, 0, slot);
		}
		if (grpc) {
			/* a message: field 1, packed, one token id */
			memcpy(data, "\0\0\0\0\x04\x0a\x02\xac\x02", 9);
			dn = 9;
		} else {
			dn = snprintf(data, sizeof(data), "data: {\"id\":\"chatcmpl-%llu\",\"object\":"
				      "\"chat.completion.chunk\",\"choices\":[{\"index\":0,\"delta\":"
				      "{\"content\":\"%c\"},\"finish_reason\":null}]}\n\n",
				      (unsigned long long)i, 'a' + (int)(k % 26));
		}
		n = h2_frame(buf, 0, 0, sid, data, dn);
		write_bytes(g, cu, slot, t, buf, n);
		if (g->sched)
			sched(cu, t + 20000, tid, TTF_SCHED_OUT_BLOCKED, 1);
	}
	t = t0 + g->ttft_ns + g->tokens * g->itl_ns;
	if (grpc) {
		memcpy(blk, "\x00\x0bgrpc-status\x01" "0", 15);
		n = h2_frame(buf, 1, 0x5, sid, blk, 15);
	} else {
		n = h2_frame(buf, 0, 0x1, sid, "data: [DONE]\n\n", 14);
	}
	write_bytes(g, cu, slot, t + 10000, buf, n);
	qsort(cu->ev, cu->n, sizeof(*cu->ev), cmp_ev);
}

static void build(struct gen *g, struct cursor *cu, uint64_t i)
{
	if (g->proto != P_HTTP1) {
		cu->n = cu->next = cu->used = 0;
		build_h2(g, cu, i);
		return;
	}
	{
	static const char req_fmt[] =
		"POST /v1/chat/completions HTTP/1.1\r\nHost: 127.0.0.1:8080\r\n"
		"Content-Type: application/json\r\nContent-Length: %zu\r\n\r\n%s";
	static const char body[] =
		"{\"messages\":[{\"role\":\"user\",\"content\":\"hi\"}],\"stream\":true}";
	static const char hdr[] =
		"HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nCache-Control: no-cache\r\n"
		"Transfer-Encoding: chunked\r\nConnection: keep-alive\r\n\r\n";
	uint32_t slot = i % g->conc, tid = 2000 + slot;
	uint64_t t0 = T0_NS + i * g->period_ns, t;
	char buf[512], data[256];
	int n;

	cu->n = cu->next = cu->used = 0;
	if (g->sched) {
		sched(cu, t0 - 30000, tid, TTF_SCHED_WAKEUP, 0);
		sched(cu, t0 - 25000, tid, TTF_SCHED_IN, 0);
	}
	n = snprintf(buf, sizeof(buf), req_fmt, strlen(body), body);
	net(cu, slot, TTF_EV_RECV, t0, n, 0, buf, n);
	if (g->engine) {
		engine(cu, t0 + g->ttft_ns / 4, 0, 32, slot);
		engine(cu, t0 + g->ttft_ns - 100000, 1, 0, slot);
	}
	write_rec(g, cu, slot, t0 + 40000, hdr);
	if (g->sched)
		sched(cu, t0 + 50000, tid, TTF_SCHED_OUT_BLOCKED, 1);
	for (uint64_t k = 0; k < g->tokens; k++) {
		t = t0 + g->ttft_ns + k * g->itl_ns;
		if (g->sched) {
			sched(cu, t - 1000000 + 5000, tid, TTF_SCHED_WAKEUP, 0);
			sched(cu, t - 1000000 + 10000, tid, TTF_SCHED_IN, 0);
		}
		if (g->engine && k) {
			engine(cu, t - 300000, 0, 1, slot);
			engine(cu, t - 100000, 1, 0, slot);
		}
		n = snprintf(data, sizeof(data), "data: {\"id\":\"chatcmpl-%llu\",\"object\":"
			     "\"chat.completion.chunk\",\"choices\":[{\"index\":0,\"delta\":"
			     "{\"content\":\"%c\"},\"finish_reason\":null}]}\n\n",
			     (unsigned long long)i, 'a' + (int)(k % 26));
		snprintf(buf, sizeof(buf), "%x\r\n%s\r\n", n, data);
		write_rec(g, cu, slot, t, buf);
		if (g->sched)
			sched(cu, t + 20000, tid, TTF_SCHED_OUT_BLOCKED, 1);
	}
	t = t0 + g->ttft_ns + g->tokens * g->itl_ns;
	n = snprintf(data, sizeof(data), "data: {\"id\":\"chatcmpl-%llu\",\"object\":"
		     "\"chat.completion.chunk\",\"choices\":[{\"index\":0,\"delta\":{},"
		     "\"finish_reason\":\"stop\"}]}\n\n", (unsigned long long)i);
	snprintf(buf, sizeof(buf), "%x\r\n%s\r\n", n, data);
	write_rec(g, cu, slot, t, buf);
	write_rec(g, cu, slot, t + 10000, "e\r\ndata: [DONE]\n\n\r\n");
	write_rec(g, cu, slot, t + 20000, "0\r\n\r\n");
	qsort(cu->ev, cu->n, sizeof(*cu->ev), cmp_ev);
	}
}

static uint64_t head_ts(const struct cursor *cu)
{
	return cu->next < cu->n ? cu->ev[cu->next].ts_ns : UINT64_MAX;
}

static void usage(void)
{
	fprintf(stderr, "Usage: mkrec -o FILE [-n REQUESTS] [-c CONCURRENCY] [-t TOKENS] "
		"[--ttft-us US] [--itl-us US] [--no-sched] [--engine] [--proto http1|h2|grpc]\n");
	exit(2);
}

int main(int argc, char **argv)
{
	static const struct option lo[] = {
		{ "ttft-us", required_argument, NULL, 'T' }, { "itl-us", required_argument, NULL, 'I' },
		{ "no-sched", no_argument, NULL, 'S' }, { "engine", no_argument, NULL, 'E' },
		{ "proto", required_argument, NULL, 'P' }, {},
	};
	struct gen g = { .n_req = 1000, .conc = 8, .tokens = 32, .ttft_ns = 20000000,
			 .itl_ns = 5000000, .sched = 1 };
	uint64_t next_req = 0, next_adv = T0_NS, last_ts = 0, dur;
	const char *out = NULL;
	struct cursor *cu;
	struct record *rec;
	int opt, err;

	while ((opt = getopt_long(argc, argv, "o:n:c:t:", lo, NULL)) != -1) {
		switch (opt) {
		case 'o': out = optarg; break;
		case 'n': g.n_req = strtoull(optarg, NULL, 10); break;
		case 'c': g.conc = strtoull(optarg, NULL, 10); break;
		case 't': g.tokens = strtoull(optarg, NULL, 10); break;
		case 'T': g.ttft_ns = strtoull(optarg, NULL, 10) * 1000; break;
		case 'I': g.itl_ns = strtoull(optarg, NULL, 10) * 1000; break;
		case 'S': g.sched = 0; break;
		case 'E': g.engine = 1; break;
		case 'P':
			g.proto = !strcmp(optarg, "h2") ? P_H2 : !strcmp(optarg, "grpc") ? P_GRPC :
				  !strcmp(optarg, "http1") ? P_HTTP1 : (usage(), P_HTTP1);
			break;
		default: usage();
		}
	}
	if (!out || !g.conc || g.conc > 4096 || g.ttft_ns < 2000000 || g.itl_ns < 2000000)
		usage();
	/* a connection's next request starts after its previous one ended */
	dur = g.ttft_ns + g.tokens * g.itl_ns + 1000000;
	g.period_ns = dur / g.conc + 1000;
	g.seq = calloc(g.conc, sizeof(*g.seq));
	g.streams = calloc(g.conc, sizeof(*g.streams));
	cu = calloc(g.conc, sizeof(*cu));
	rec = record__open(out, REC_F_XMIT | REC_F_ATTRIBUTION |
			   (g.sched ? REC_F_SCHED : 0));
	if (!g.seq || !cu || !rec) {
		fprintf(stderr, "Error: %s: %s\n", out, strerror(errno));
		return 1;
	}
	for (;;) {
		struct cursor *best = NULL;
		struct ev *e;

		/* start the requests whose first record comes next */
		while (next_req < g.n_req &&
		       T0_NS + next_req * g.period_ns - 100000 <= (last_ts ? last_ts : T0_NS)) {
			build(&g, &cu[next_req % g.conc], next_req);
			next_req++;
		}
		for (uint64_t s = 0; s < g.conc; s++)
			if (head_ts(&cu[s]) != UINT64_MAX && (!best || head_ts(&cu[s]) < head_ts(best)))
				best = &cu[s];
		if (!best) {
			if (next_req >= g.n_req)
				break;
			last_ts = T0_NS + next_req * g.period_ns;
			continue;
		}
		if (next_req < g.n_req && T0_NS + next_req * g.period_ns - 100000 < head_ts(best)) {
			last_ts = T0_NS + next_req * g.period_ns - 100000;
			continue;
		}
		e = &best->ev[best->next++];
		last_ts = e->ts_ns;
		while (next_adv + ADVANCE_NS <= e->ts_ns) {
			uint64_t w;

			next_adv += ADVANCE_NS;
			w = next_adv - SLACK_NS;
			record__frame(rec, REC_ADVANCE, &w, sizeof(w));
		}
		if (e->type == REC_NET)
			record__net(rec, (void *)(best->arena + e->off), e->len);
		else if (e->type == REC_SCHED)
			record__sched(rec, (void *)(best->arena + e->off));
		else
			record__engine(rec, (void *)(best->arena + e->off));
		g.frames++;
	}
	err = record__close(rec, NULL, 0, last_ts + 1000);
	if (err) {
		fprintf(stderr, "Error: writing %s: %s\n", out, strerror(-err));
		return 1;
	}
	fprintf(stderr, "mkrec: %llu requests, %llu events\n", (unsigned long long)g.n_req,
		(unsigned long long)g.frames);
	for (uint64_t s = 0; s < g.conc; s++) {
		free(cu[s].ev);
		free(cu[s].arena);
	}
	free(cu);
	free(g.seq);
	free(g.streams);
	return 0;
}
