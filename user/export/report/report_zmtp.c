// SPDX-License-Identifier: GPL-2.0-only
/* A ZMTP connection's summary line (report_zmtp.h). */
#include <arpa/inet.h>
#include <inttypes.h>
#include "bpf/net.h"
#include "user/export/report/report_zmtp.h"
#include "user/proto/zmtp/msg_sync.h"

static const char *const dir_keys[ZMTP_DIR__N] = { "in", "out" };

/* "addr:port" (IPv6 in brackets); "" when the family is unknown. */
static void endpoint(char *buf, size_t len, uint8_t family, const uint8_t *a, uint16_t port)
{
	char h[INET6_ADDRSTRLEN];
	int af = family == 2 ? AF_INET : family == 10 ? AF_INET6 : 0;

	buf[0] = 0;
	if (family == TTF_AF_UNIX) {	/* its inode (bpf/net.h) */
		snprintf(buf, len, "unix:%llu", (unsigned long long)ttf_unix_ino(a));
		return;
	}
	if (af && inet_ntop(af, a, h, sizeof(h)))
		snprintf(buf, len, af == AF_INET6 ? "[%s]:%u" : "%s:%u", h, port);
}

static void num(cJSON *o, const char *k, uint64_t v, int *err)
{
	char b[24];

	snprintf(b, sizeof(b), "%" PRIu64, v);
	*err |= !cJSON_AddRawToObject(o, k, b);
}

static void dir_json(cJSON *o, const struct zmtp_dir_stats *d, const char *key, int *err)
{
	cJSON *s = cJSON_AddObjectToObject(o, key);

	if (!s) {
		*err = 1;
		return;
	}
	num(s, "messages", d->msgs, err);
	num(s, "bytes", d->bytes, err);
	num(s, "partial", d->partial, err);
	num(s, "commands", d->commands, err);
	num(s, "pings", d->pings, err);
	num(s, "lost_sync", d->lost_sync, err);
	num(s, "bytes_unparsed", d->bytes_unparsed, err);
	num(s, "cut", d->cut, err);
	if (d->minor != 0xff)
		num(s, "minor", d->minor, err);
	else
		*err |= !cJSON_AddNullToObject(s, "minor");
	*err |= !cJSON_AddStringToObject(s, "socket_type", d->socket_type);
	num(s, "identity_bytes", d->identity_bytes, err);
	*err |= !cJSON_AddStringToObject(s, "mechanism", d->mechanism);
}

cJSON *report_zmtp__json(const struct ttf_zmtp_conn *z)
{
	cJSON *o = cJSON_CreateObject(), *ids;
	char l[64], r[64];
	int err = !o;

	if (!o)
		return NULL;
	endpoint(l, sizeof(l), z->addr.family, z->addr.laddr, z->addr.lport);
	endpoint(r, sizeof(r), z->addr.family, z->addr.raddr, z->addr.rport);
	err |= !cJSON_AddStringToObject(o, "type", "zmtp");
	err |= !cJSON_AddStringToObject(o, "framing", msg_framing_name(z->framing));
	err |= !cJSON_AddBoolToObject(o, "mid_stream", z->mid_stream);
	num(o, "sock_cookie", z->sock_cookie, &err);
	num(o, "pid", z->tgid, &err);
	err |= !cJSON_AddStringToObject(o, "local", l);
	err |= !cJSON_AddStringToObject(o, "peer", r);
	for (int i = 0; i < ZMTP_DIR__N; i++)
		dir_json(o, &z->dir[i], dir_keys[i], &err);
	num(o, "ids_seen", z->ids_seen, &err);
	num(o, "ids_untracked", z->ids_untracked, &err);
	ids = cJSON_AddArrayToObject(o, "ids");
	err |= !ids;
	for (uint32_t i = 0; ids && i < z->n_ids && i < ZMTP_CONN_IDS; i++) {
		cJSON *s = cJSON_CreateString(z->ids[i]);

		err |= !s || !cJSON_AddItemToArray(ids, s);
	}
	num(o, "messages_kept", z->msgs_kept, &err);
	num(o, "messages_dropped", z->msgs_dropped, &err);
	if (err) {
		cJSON_Delete(o);
		return NULL;
	}
	return o;
}

void report_zmtp__text(FILE *out, const struct ttf_zmtp_conn *z)
{
	const struct zmtp_dir_stats *in = &z->dir[ZMTP_DIR_IN], *o = &z->dir[ZMTP_DIR_OUT];
	char l[64], r[64];

	endpoint(l, sizeof(l), z->addr.family, z->addr.laddr, z->addr.lport);
	endpoint(r, sizeof(r), z->addr.family, z->addr.raddr, z->addr.rport);
	fprintf(out, "%s%s pid %u %s<-%s: in %" PRIu64 " msgs %" PRIu64 " B (%s), out %" PRIu64
		" msgs %" PRIu64 " B (%s), ids %" PRIu64 "%s%s\n", msg_framing_name(z->framing),
		z->mid_stream ? " (mid-stream)" : "", z->tgid, l, r, in->msgs,
		in->bytes, in->socket_type[0] ? in->socket_type : "?", o->msgs, o->bytes,
		o->socket_type[0] ? o->socket_type : "?", z->ids_seen,
		in->lost_sync || o->lost_sync ? ", framing lost" : "",
		in->partial || o->partial ? ", some bodies not captured" : "");
}
