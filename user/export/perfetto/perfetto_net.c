// SPDX-License-Identifier: GPL-2.0-only
/*
 * Connection tracks of the Perfetto sink: a slice per read syscall, one per
 * run of write syscalls, byte counters (see perfetto.h).
 */
#include <inttypes.h>
#include <stdio.h>
#include "user/export/perfetto/perfetto_int.h"

static void fmt_addr(char *buf, size_t sz, uint8_t family, const uint8_t *a, uint16_t port)
{
	if (family == TTF_AF_UNIX)
		snprintf(buf, sz, "unix:%llu", (unsigned long long)ttf_unix_ino(a));
	else if (family == TTF_AF_INET6)
		snprintf(buf, sz, "[%x:%x:..:%x]:%u", a[0] << 8 | a[1], a[2] << 8 | a[3],
			 a[14] << 8 | a[15], port);
	else
		snprintf(buf, sz, "%u.%u.%u.%u:%u", a[0], a[1], a[2], a[3], port);
}

static uint32_t conn_hash(uint64_t cookie)
{
	return (uint32_t)(cookie * 0x9e3779b97f4a7c15ull >> 32);
}

struct conn *pf_conn_find(struct perfetto *pf, uint64_t cookie)
{
	uint32_t h = conn_hash(cookie);

	for (uint32_t i = 0; cookie && i < PERFETTO_MAX_CONNS; i++) {
		struct conn *c = &pf->conns[(h + i) % PERFETTO_MAX_CONNS];

		if (c->cookie == cookie)
			return c;
		if (!c->cookie)
			break;
	}
	return NULL;
}

static struct conn *conn_get(struct perfetto *pf, const struct ttf_net_event *e)
{
	uint32_t h = conn_hash(e->sock_cookie);

	for (uint32_t i = 0; i < PERFETTO_MAX_CONNS; i++) {
		struct conn *c = &pf->conns[(h + i) % PERFETTO_MAX_CONNS];
		char l[64], r[64], name[160];

		if (c->cookie == e->sock_cookie)
			return c;
		if (c->cookie)
			continue;
		*c = (struct conn){ .cookie = e->sock_cookie, .seq = ++pf->n_conns };
		fmt_addr(l, sizeof(l), e->family, e->laddr, e->lport);
		fmt_addr(r, sizeof(r), e->family, e->raddr, e->rport);
		snprintf(name, sizeof(name), "conn %u %s<-%s", c->seq, l, r);
		pf_meta(&pf->out, PERFETTO_PID_CONNS, c->seq, "thread_name", name);
		return c;
	}
	pf->conns_refused++;
	return NULL;
}

static void counter(struct perfetto *pf, const struct conn *c, uint64_t ts_ns)
{
	char name[32];

	pf_ev(&pf->out, 'C', ts_ns, PERFETTO_PID_CONNS, 0);
	snprintf(name, sizeof(name), "conn %u bytes", c->seq);
	pf_name(&pf->out, name, "net");
	fprintf(pf->out.f, ",\"args\":{\"in\":%" PRIu64 ",\"out\":%" PRIu64 "}}", c->in_bytes,
		c->out_bytes);
}

/* A syscall slice [start, end) on the connection's track, from where the last one ended. */
static void conn_slice(struct perfetto *pf, struct conn *c, uint64_t start_ns, uint64_t end_ns,
		       const char *name)
{
	if (start_ns < c->drawn_ns)
		start_ns = c->drawn_ns;	/* a read entered while the writes went on */
	if (end_ns < start_ns)
		end_ns = start_ns;
	pf_complete(&pf->out, PERFETTO_PID_CONNS, c->seq, start_ns, end_ns - start_ns, name, "net");
	c->drawn_ns = end_ns;
}

/* Draws the open run of writes, if any. */
static void writes_flush(struct perfetto *pf, struct conn *c)
{
	char name[64];

	if (!c->w_n)
		return;
	if (c->w_n == 1)
		snprintf(name, sizeof(name), "send %" PRIu64 " B", c->w_bytes);
	else
		snprintf(name, sizeof(name), "send %" PRIu64 " B in %u writes", c->w_bytes, c->w_n);
	conn_slice(pf, c, c->w_start_ns, c->w_end_ns, name);
	fprintf(pf->out.f, ",\"args\":{\"bytes\":%" PRIu64 ",\"writes\":%u,\"tid\":%u}}",
		c->w_bytes, c->w_n, c->w_tid);
	counter(pf, c, c->w_end_ns);
	c->w_n = 0;
	c->w_bytes = 0;
}

void pf_conns_flush(struct perfetto *pf)
{
	for (uint32_t i = 0; i < PERFETTO_MAX_CONNS; i++)
		if (pf->conns[i].cookie)
			writes_flush(pf, &pf->conns[i]);
}

void pf_on_net(void *ctx, const struct ttf_net_event *e, size_t len)
{
	struct perfetto *pf = ctx;
	int recv = e->type == TTF_EV_RECV;
	uint64_t start = e->enter_ns && e->enter_ns <= e->ts_ns ? e->enter_ns : e->ts_ns;
	char name[48];
	struct conn *c;

	if (len < sizeof(*e) || !(recv || e->type == TTF_EV_SEND || e->type == TTF_EV_CLOSE))
		return;
	c = conn_get(pf, e);
	if (!c)
		return;
	if (e->type == TTF_EV_SEND) {
		/* writes are drawn as runs: one slice per response, not per token */
		c->out_bytes += e->bytes;
		if (!c->w_n) {
			c->w_start_ns = start;
			c->w_tid = e->tid;
		}
		c->w_end_ns = e->ts_ns > c->w_end_ns || c->w_n == 0 ? e->ts_ns : c->w_end_ns;
		c->w_bytes += e->bytes;
		c->w_n++;
		return;
	}
	writes_flush(pf, c);
	if (e->type == TTF_EV_CLOSE) {
		pf_ev(&pf->out, 'i', e->ts_ns, PERFETTO_PID_CONNS, c->seq);
		pf_name(&pf->out, e->flags & TTF_EVF_RESET ? "reset" : "close", "net");
		fputs(",\"s\":\"t\"}", pf->out.f);
		return;
	}
	c->in_bytes += e->bytes;
	snprintf(name, sizeof(name), "recv %u B", e->bytes);
	conn_slice(pf, c, start, e->ts_ns, name);
	fprintf(pf->out.f, ",\"args\":{\"bytes\":%u,\"tid\":%u}}", e->bytes, e->tid);
	counter(pf, c, e->ts_ns);
}
