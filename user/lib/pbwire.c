// SPDX-License-Identifier: GPL-2.0-only
/* Protocol-buffers wire-format writer (pbwire.h). */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include "user/lib/pbwire.h"

void pb_init(struct pb_buf *b)
{
	memset(b, 0, sizeof(*b));
}

void pb_free(struct pb_buf *b)
{
	free(b->p);
	pb_init(b);
}

static int reserve(struct pb_buf *b, size_t n)
{
	size_t cap;
	uint8_t *p;

	if (b->err)
		return -1;
	if (b->len + n <= b->cap)
		return 0;
	cap = b->cap ? b->cap : 256;
	while (cap < b->len + n)
		cap *= 2;
	p = realloc(b->p, cap);
	if (!p) {
		b->err = -ENOMEM;
		return -1;
	}
	b->p = p;
	b->cap = cap;
	return 0;
}

size_t pb_varint_len(uint64_t v)
{
	size_t n = 1;

	while (v >= 0x80) {
		v >>= 7;
		n++;
	}
	return n;
}

void pb_raw(struct pb_buf *b, const void *data, size_t n)
{
	if (!n || reserve(b, n))
		return;
	memcpy(b->p + b->len, data, n);
	b->len += n;
}

static size_t put_varint(uint8_t *p, uint64_t v)
{
	size_t n = 0;

	while (v >= 0x80) {
		p[n++] = (uint8_t)(v | 0x80);
		v >>= 7;
	}
	p[n++] = (uint8_t)v;
	return n;
}

void pb_varint(struct pb_buf *b, uint64_t v)
{
	if (reserve(b, 10))
		return;
	b->len += put_varint(b->p + b->len, v);
}

void pb_tag(struct pb_buf *b, uint32_t field, enum pb_wire wt)
{
	pb_varint(b, (uint64_t)field << 3 | wt);
}

void pb_uint(struct pb_buf *b, uint32_t field, uint64_t v)
{
	pb_tag(b, field, PB_VARINT);
	pb_varint(b, v);
}

void pb_int64(struct pb_buf *b, uint32_t field, int64_t v)
{
	pb_uint(b, field, (uint64_t)v);
}

static void put_le(struct pb_buf *b, uint64_t v, int n)
{
	if (reserve(b, n))
		return;
	for (int i = 0; i < n; i++)
		b->p[b->len++] = (uint8_t)(v >> (8 * i));
}

void pb_fixed64(struct pb_buf *b, uint32_t field, uint64_t v)
{
	pb_tag(b, field, PB_I64);
	put_le(b, v, 8);
}

void pb_fixed32(struct pb_buf *b, uint32_t field, uint32_t v)
{
	pb_tag(b, field, PB_I32);
	put_le(b, v, 4);
}

static uint64_t double_bits(double v)
{
	uint64_t u;

	memcpy(&u, &v, sizeof(u));
	return u;
}

void pb_double(struct pb_buf *b, uint32_t field, double v)
{
	pb_fixed64(b, field, double_bits(v));
}

void pb_bytes(struct pb_buf *b, uint32_t field, const void *data, size_t n)
{
	pb_tag(b, field, PB_LEN);
	pb_varint(b, n);
	pb_raw(b, data, n);
}

void pb_string(struct pb_buf *b, uint32_t field, const char *s)
{
	pb_bytes(b, field, s, strlen(s));
}

/* The head of a packed field of n 8-byte elements; false for none (nothing written). */
static int packed8_head(struct pb_buf *b, uint32_t field, size_t n)
{
	if (!n)
		return 0;
	pb_tag(b, field, PB_LEN);
	pb_varint(b, n * 8);
	return 1;
}

void pb_packed_fixed64(struct pb_buf *b, uint32_t field, const uint64_t *v, size_t n)
{
	if (packed8_head(b, field, n))
		for (size_t i = 0; i < n; i++)
			put_le(b, v[i], 8);
}

void pb_packed_double(struct pb_buf *b, uint32_t field, const double *v, size_t n)
{
	if (packed8_head(b, field, n))
		for (size_t i = 0; i < n; i++)
			put_le(b, double_bits(v[i]), 8);
}

void pb_begin(struct pb_buf *b, uint32_t field)
{
	if (b->err)
		return;
	if (b->depth == PB_MAX_DEPTH) {
		b->err = -EOVERFLOW;
		return;
	}
	pb_tag(b, field, PB_LEN);
	if (reserve(b, 1))
		return;
	b->open[b->depth++] = b->len;
	b->p[b->len++] = 0;
}

void pb_end(struct pb_buf *b)
{
	size_t at, body, n;

	if (b->err)
		return;
	if (!b->depth) {
		b->err = -EINVAL;
		return;
	}
	at = b->open[--b->depth];
	body = b->len - at - 1;
	n = pb_varint_len(body);
	if (n > 1) {
		if (reserve(b, n - 1))
			return;
		memmove(b->p + at + n, b->p + at + 1, body);
		b->len += n - 1;
	}
	put_varint(b->p + at, body);
}
