// SPDX-License-Identifier: GPL-2.0-only
/*
 * HPACK decoder (hpack.h). Section numbers are RFC 7541's.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include "user/proto/http2/hpack.h"
#include "user/proto/http2/hpack_huffman.h"

/* Appendix A */
static const char *const static_table[62][2] = {
	{ NULL, NULL },
	{ ":authority", "" }, { ":method", "GET" }, { ":method", "POST" }, { ":path", "/" },
	{ ":path", "/index.html" }, { ":scheme", "http" }, { ":scheme", "https" },
	{ ":status", "200" }, { ":status", "204" }, { ":status", "206" }, { ":status", "304" },
	{ ":status", "400" }, { ":status", "404" }, { ":status", "500" },
	{ "accept-charset", "" }, { "accept-encoding", "gzip, deflate" },
	{ "accept-language", "" }, { "accept-ranges", "" }, { "accept", "" },
	{ "access-control-allow-origin", "" }, { "age", "" }, { "allow", "" },
	{ "authorization", "" }, { "cache-control", "" }, { "content-disposition", "" },
	{ "content-encoding", "" }, { "content-language", "" }, { "content-length", "" },
	{ "content-location", "" }, { "content-range", "" }, { "content-type", "" },
	{ "cookie", "" }, { "date", "" }, { "etag", "" }, { "expect", "" }, { "expires", "" },
	{ "from", "" }, { "host", "" }, { "if-match", "" }, { "if-modified-since", "" },
	{ "if-none-match", "" }, { "if-range", "" }, { "if-unmodified-since", "" },
	{ "last-modified", "" }, { "link", "" }, { "location", "" }, { "max-forwards", "" },
	{ "proxy-authenticate", "" }, { "proxy-authorization", "" }, { "range", "" },
	{ "referer", "" }, { "refresh", "" }, { "retry-after", "" }, { "server", "" },
	{ "set-cookie", "" }, { "strict-transport-security", "" }, { "transfer-encoding", "" },
	{ "user-agent", "" }, { "vary", "" }, { "via", "" }, { "www-authenticate", "" },
};
#define STATIC_N 61

/* section 4.1: an entry's size is its name and value lengths plus 32 */
#define ENTRY_OVERHEAD 32

struct entry {
	char *name, *value;	/* one allocation: name then value */
	uint32_t name_len, value_len;
};

struct hpack_dec {
	struct entry *ring;	/* the dynamic table, newest at (head + n - 1) % cap */
	uint32_t cap, head, n;
	uint64_t size_bytes;	/* sum of entry sizes */
	uint32_t max_bytes;	/* current maximum (size updates) */
	uint32_t settings_max;	/* SETTINGS_HEADER_TABLE_SIZE */
	bool synced;
	char *scratch[2];	/* decoded name, value */
	size_t scratch_cap[2];
	struct hpack_dec_stats stats;
};

struct hpack_dec *hpack_dec__new(bool synced)
{
	struct hpack_dec *d = calloc(1, sizeof(*d));

	if (!d)
		return NULL;
	d->synced = synced;
	d->max_bytes = d->settings_max = HPACK_DEFAULT_TABLE_BYTES;
	return d;
}

static void entry_free(struct entry *e)
{
	free(e->name);
	e->name = e->value = NULL;
}

static void evict_oldest(struct hpack_dec *d)
{
	struct entry *e = &d->ring[d->head];

	d->size_bytes -= (uint64_t)e->name_len + e->value_len + ENTRY_OVERHEAD;
	entry_free(e);
	d->head = (d->head + 1) % d->cap;
	d->n--;
}

static void clear(struct hpack_dec *d)
{
	while (d->n)
		evict_oldest(d);
	d->size_bytes = 0;
}

void hpack_dec__free(struct hpack_dec *d)
{
	if (!d)
		return;
	clear(d);
	free(d->ring);
	free(d->scratch[0]);
	free(d->scratch[1]);
	free(d);
}

/* section 4.4: evict until the table fits max_bytes */
static void fit(struct hpack_dec *d, uint64_t max_bytes)
{
	while (d->n && d->size_bytes > max_bytes)
		evict_oldest(d);
}

void hpack_dec__settings_max(struct hpack_dec *d, uint32_t max_bytes)
{
	d->settings_max = max_bytes;
	d->max_bytes = max_bytes;
	fit(d, max_bytes);
}

void hpack_dec__desync(struct hpack_dec *d)
{
	/* what is in the table from now on is known; what was there is not */
	clear(d);
	d->synced = false;
}

bool hpack_dec__synced(const struct hpack_dec *d)
{
	return d->synced;
}

const struct hpack_dec_stats *hpack_dec__stats(const struct hpack_dec *d)
{
	return &d->stats;
}

/* section 4.4: add an entry (after evicting to make room); -ENOMEM */
static int add(struct hpack_dec *d, const char *name, size_t nl, const char *value, size_t vl)
{
	uint64_t sz = (uint64_t)nl + vl + ENTRY_OVERHEAD;
	struct entry *e;
	char *mem;

	if (sz > d->max_bytes) {
		/* larger than the table: the table empties, nothing is added */
		clear(d);
		return 0;
	}
	fit(d, d->max_bytes - sz);
	if (d->n == d->cap) {
		uint32_t ncap = d->cap ? d->cap * 2 : 16;
		struct entry *r = calloc(ncap, sizeof(*r));

		if (!r)
			return -ENOMEM;
		for (uint32_t i = 0; i < d->n; i++)
			r[i] = d->ring[(d->head + i) % d->cap];
		free(d->ring);
		d->ring = r;
		d->cap = ncap;
		d->head = 0;
	}
	mem = malloc(nl + vl + 1);
	if (!mem)
		return -ENOMEM;
	memcpy(mem, name, nl);
	memcpy(mem + nl, value, vl);
	e = &d->ring[(d->head + d->n) % d->cap];
	e->name = mem;
	e->value = mem + nl;
	e->name_len = nl;
	e->value_len = vl;
	d->n++;
	d->size_bytes += sz;
	return 0;
}

/* section 5.1: an integer with an n-bit prefix at *p; -EPROTO past end or over 2^32 */
static int integer(const uint8_t **p, const uint8_t *end, int n, uint32_t *out)
{
	uint32_t max = (1u << n) - 1, v;
	uint64_t acc;
	int shift = 0;

	if (*p >= end)
		return -EPROTO;
	v = **p & max;
	(*p)++;
	if (v < max) {
		*out = v;
		return 0;
	}
	acc = v;
	for (;;) {
		uint8_t b;

		if (*p >= end || shift > 28)
			return -EPROTO;
		b = *(*p)++;
		acc += (uint64_t)(b & 0x7f) << shift;
		shift += 7;
		if (acc > UINT32_MAX)
			return -EPROTO;
		if (!(b & 0x80))
			break;
	}
	*out = (uint32_t)acc;
	return 0;
}

/* section 5.2: a string literal into scratch[slot]; *s, *len point there */
static int string(struct hpack_dec *d, int slot, const uint8_t **p, const uint8_t *end,
		  const char **s, size_t *len)
{
	bool huff;
	uint32_t n;
	size_t need;
	int err;

	if (*p >= end)
		return -EPROTO;
	huff = **p & 0x80;
	err = integer(p, end, 7, &n);
	if (err)
		return err;
	if ((size_t)(end - *p) < n)
		return -EPROTO;
	/* the shortest code is 5 bits: at most 8/5 output bytes per input byte */
	need = huff ? (size_t)n * 8 / 5 + 1 : n;
	if (need > HPACK_MAX_STRING_BYTES)
		return -E2BIG;
	if (need > d->scratch_cap[slot]) {
		char *b = realloc(d->scratch[slot], need);

		if (!b)
			return -ENOMEM;
		d->scratch[slot] = b;
		d->scratch_cap[slot] = need;
	}
	if (huff) {
		err = hpack_huff_decode(*p, n, d->scratch[slot], d->scratch_cap[slot], len);
		if (err)
			return -EPROTO;
	} else {
		if (n)
			memcpy(d->scratch[slot], *p, n);
		*len = n;
	}
	*s = d->scratch[slot] ? d->scratch[slot] : "";	/* never NULL, even when empty */
	*p += n;
	return 0;
}

/*
 * Index (section 2.3.3) -> name and value. Returns 0 with known set, or
 * -EPROTO for an index no table has (synced decoder; index 0).
 */
static int lookup(struct hpack_dec *d, uint32_t index, struct hpack_field *f, bool *known)
{
	if (index == 0)
		return -EPROTO;
	if (index <= STATIC_N) {
		f->name = static_table[index][0];
		f->value = static_table[index][1];
		f->name_len = strlen(f->name);
		f->value_len = strlen(f->value);
		*known = true;
		return 0;
	}
	index -= STATIC_N + 1;	/* 0 = newest dynamic entry */
	if (index < d->n) {
		const struct entry *e = &d->ring[(d->head + d->n - 1 - index) % d->cap];

		f->name = e->name;
		f->value = e->value;
		f->name_len = e->name_len;
		f->value_len = e->value_len;
		*known = true;
		return 0;
	}
	if (d->synced)
		return -EPROTO;
	f->name = f->value = NULL;
	f->name_len = f->value_len = 0;
	*known = false;
	d->stats.unknown_refs++;
	return 0;
}

static int block(struct hpack_dec *d, const uint8_t *p, const uint8_t *end, hpack_field_cb cb,
		 void *ctx)
{
	bool first = true;

	while (p < end) {
		struct hpack_field f = {};
		uint8_t b = *p;
		uint32_t idx;
		bool known;
		int err, prefix, incremental = 0;

		if (b & 0x80) {
			/* section 6.1: indexed field */
			err = integer(&p, end, 7, &idx);
			if (!err)
				err = lookup(d, idx, &f, &known);
			if (err)
				return err;
			f.name_known = f.value_known = known;
			cb(ctx, &f);
			first = false;
			continue;
		}
		if ((b & 0xe0) == 0x20) {
			/* section 6.3: size update, only at the start of a block (4.2) */
			uint32_t max;

			if (!first)
				return -EPROTO;
			err = integer(&p, end, 5, &max);
			if (err)
				return err;
			if (max > d->settings_max)
				return -EPROTO;
			d->max_bytes = max;
			fit(d, max);
			continue;
		}
		/* section 6.2: literal, with incremental indexing (01), without (0000), never (0001) */
		if ((b & 0xc0) == 0x40) {
			prefix = 6;
			incremental = 1;
		} else {
			prefix = 4;
		}
		first = false;
		err = integer(&p, end, prefix, &idx);
		if (err)
			return err;
		if (idx) {
			err = lookup(d, idx, &f, &known);
			if (err)
				return err;
			f.name_known = known;
			if (known) {
				/* copy the name: the entry may be evicted by the add below */
				const char *nm = f.name;
				size_t nl = f.name_len;

				if (nl > d->scratch_cap[0]) {
					char *nb = realloc(d->scratch[0], nl);

					if (!nb)
						return -ENOMEM;
					d->scratch[0] = nb;
					d->scratch_cap[0] = nl;
				}
				if (nl)
					memmove(d->scratch[0], nm, nl);
				f.name = d->scratch[0] ? d->scratch[0] : "";
			}
		} else {
			err = string(d, 0, &p, end, &f.name, &f.name_len);
			if (err)
				return err;
			f.name_known = true;
		}
		err = string(d, 1, &p, end, &f.value, &f.value_len);
		if (err)
			return err;
		f.value_known = true;
		if (incremental) {
			if (!f.name_known) {
				/* an entry of unknown size: what the table holds is unknown again */
				clear(d);
				d->synced = false;
			} else {
				err = add(d, f.name, f.name_len, f.value, f.value_len);
				if (err)
					return err;
			}
		}
		cb(ctx, &f);
	}
	return 0;
}

int hpack_dec__block(struct hpack_dec *d, const uint8_t *blk, size_t len, hpack_field_cb cb,
		     void *ctx)
{
	int err = block(d, blk, blk + len, cb, ctx);

	if (err) {
		d->stats.errors++;
		hpack_dec__desync(d);
		return err;
	}
	d->stats.blocks++;
	return 0;
}
