// SPDX-License-Identifier: GPL-2.0-only
/*
 * gRPC message framing and token profiles (grpc.h). Protobuf wire format:
 * a key varint (field number << 3 | wire type), then 0: varint, 1: 8 bytes,
 * 2: a varint length and that many bytes, 5: 4 bytes (protobuf's "Encoding"
 * guide); groups (3, 4) are refused.
 */
#include <ctype.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "user/proto/http2/grpc.h"

/* ---- profiles ---- */

static int parse_line(char *l, struct grpc_rule *r)
{
	char *m, *f, *end;

	m = strtok_r(l, " \t", &end);
	f = strtok_r(NULL, " \t", &end);
	if (!m || !f || strtok_r(NULL, " \t", &end) || m[0] != '/' ||
	    strlen(m) >= sizeof(r->method))
		return -EINVAL;
	memset(r, 0, sizeof(*r));
	strcpy(r->method, m);
	for (;;) {
		char *e;
		unsigned long v = strtoul(f, &e, 10);

		if (e == f || v == 0 || v > 536870911 || r->depth == GRPC_PATH_MAX)
			return -EINVAL;
		r->path[r->depth++] = v;
		if (*e == '.') {
			f = e + 1;
			continue;
		}
		if (*e == '#') {
			r->packed = true;
			e++;
		}
		return *e ? -EINVAL : 0;
	}
}

int grpc_profile__parse(const char *text, struct grpc_profile *p, int *bad_line)
{
	char *copy = strdup(text), *line, *save;
	int lineno = 0, err = 0;

	memset(p, 0, sizeof(*p));
	if (!copy)
		return -ENOMEM;
	for (line = strtok_r(copy, "\n", &save); line; line = strtok_r(NULL, "\n", &save)) {
		char *h = strchr(line, '#'), *s = line;
		struct grpc_rule *rules;

		lineno++;
		/* a comment starts with '#' after blanks; '#' ending a field path is not one */
		while (isspace((unsigned char)*s))
			s++;
		if (!*s || *s == '#')
			continue;
		h = strstr(s, " #");
		if (!h)
			h = strstr(s, "\t#");
		if (h)
			*h = '\0';
		rules = realloc(p->rules, (p->n + 1) * sizeof(*rules));
		if (!rules) {
			err = -ENOMEM;
			break;
		}
		p->rules = rules;
		if (parse_line(s, &p->rules[p->n])) {
			if (bad_line)
				*bad_line = lineno;
			err = -EINVAL;
			break;
		}
		p->n++;
	}
	free(copy);
	if (err)
		grpc_profile__free(p);
	return err;
}

int grpc_profile__load(const char *file, struct grpc_profile *p, int *bad_line)
{
	FILE *f = fopen(file, "r");
	char *text = NULL;
	size_t cap = 0;
	ssize_t n;
	int err;

	memset(p, 0, sizeof(*p));
	if (!f)
		return -errno;
	errno = 0;
	n = getdelim(&text, &cap, '\0', f);
	/* the read's own errno (EISDIR for a directory), EIO when it left none */
	err = n < 0 && ferror(f) ? (errno ? -errno : -EIO) : 0;
	fclose(f);
	if (!err)
		err = grpc_profile__parse(n < 0 ? "" : text, p, bad_line);
	free(text);
	return err;
}

void grpc_profile__free(struct grpc_profile *p)
{
	free(p->rules);
	p->rules = NULL;
	p->n = 0;
}

const struct grpc_rule *grpc_profile__find(const struct grpc_profile *p, const char *method)
{
	for (int i = 0; p && i < p->n; i++)
		if (!strcmp(p->rules[i].method, method))
			return &p->rules[i];
	return NULL;
}

/* ---- protobuf walk ---- */

static int varint(const uint8_t **p, const uint8_t *end, uint64_t *v)
{
	*v = 0;
	for (int shift = 0; shift < 64; shift += 7) {
		if (*p >= end)
			return -EPROTO;
		*v |= (uint64_t)(**p & 0x7f) << shift;
		if (!(*(*p)++ & 0x80))
			return 0;
	}
	return -EPROTO;
}

static int64_t count_in(const struct grpc_rule *r, int level, const uint8_t *p, const uint8_t *end)
{
	int64_t total = 0;

	while (p < end) {
		uint64_t key, len, v;
		uint32_t field;
		int wt;

		if (varint(&p, end, &key))
			return -EPROTO;
		field = key >> 3;
		wt = key & 7;
		switch (wt) {
		case 0:
			if (varint(&p, end, &v))
				return -EPROTO;
			if (field == r->path[level] && level == r->depth - 1)
				total++;
			break;
		case 1:
		case 5:
			if ((size_t)(end - p) < (wt == 1 ? 8u : 4u))
				return -EPROTO;
			p += wt == 1 ? 8 : 4;
			if (field == r->path[level] && level == r->depth - 1)
				total++;
			break;
		case 2:
			if (varint(&p, end, &len) || len > (uint64_t)(end - p))
				return -EPROTO;
			if (field == r->path[level]) {
				if (level < r->depth - 1) {
					int64_t n = count_in(r, level + 1, p, p + len);

					if (n < 0)
						return n;
					total += n;
				} else if (r->packed) {
					const uint8_t *q = p;

					while (q < p + len) {
						if (varint(&q, p + len, &v))
							return -EPROTO;
						total++;
					}
				} else if (len) {
					total++;
				}
			}
			p += len;
			break;
		default:
			return -EPROTO;
		}
	}
	return total;
}

int64_t grpc_count_tokens(const struct grpc_rule *r, const uint8_t *msg, size_t len)
{
	if (!r || r->depth < 1)
		return -EPROTO;
	return count_in(r, 0, msg, msg + len);
}

/* ---- framing ---- */

void grpc_reader__init(struct grpc_reader *r)
{
	memset(r, 0, sizeof(*r));
}

static void msg_end(struct grpc_reader *r, grpc_msg_cb cb, void *ctx)
{
	struct grpc_msg m = {
		.compressed = r->hdr[0] & 1, .len = r->msg_len, .kept = r->keep,
		.kept_len = r->kept, .whole = r->kept_whole && r->kept == r->msg_len,
	};

	r->n_msgs++;
	r->in_msg = false;
	r->hdr_got = 0;
	cb(ctx, &m);
}

static void msg_begin(struct grpc_reader *r)
{
	r->msg_len = (uint32_t)r->hdr[1] << 24 | (uint32_t)r->hdr[2] << 16 |
		     (uint32_t)r->hdr[3] << 8 | r->hdr[4];
	r->msg_got = 0;
	r->kept = 0;
	r->kept_whole = true;
	r->in_msg = true;
}

void grpc_reader__feed(struct grpc_reader *r, const uint8_t *p, size_t len, grpc_msg_cb cb,
		       void *ctx)
{
	while (len && !r->lost) {
		if (!r->in_msg) {
			r->hdr[r->hdr_got++] = *p++;
			len--;
			if (r->hdr_got == 5) {
				msg_begin(r);
				if (!r->msg_len)
					msg_end(r, cb, ctx);
			}
			continue;
		}
		size_t n = r->msg_len - r->msg_got;

		if (n > len)
			n = len;
		if (r->kept_whole) {
			size_t k = n;

			if (r->kept + k > GRPC_KEEP_BYTES) {
				k = GRPC_KEEP_BYTES - r->kept;
				r->kept_whole = false;
			}
			memcpy(r->keep + r->kept, p, k);
			r->kept += k;
		}
		r->msg_got += n;
		p += n;
		len -= n;
		if (r->msg_got == r->msg_len)
			msg_end(r, cb, ctx);
	}
}

int grpc_reader__gap(struct grpc_reader *r, size_t len, grpc_msg_cb cb, void *ctx)
{
	while (len && !r->lost) {
		size_t n;

		if (!r->in_msg) {
			r->lost = true;	/* a message prefix not seen: where messages end is unknown */
			return -EPROTO;
		}
		n = r->msg_len - r->msg_got;
		if (n > len)
			n = len;
		r->kept_whole = false;
		r->msg_got += n;
		len -= n;
		if (r->msg_got == r->msg_len)
			msg_end(r, cb, ctx);
	}
	return r->lost ? -EPROTO : 0;
}
