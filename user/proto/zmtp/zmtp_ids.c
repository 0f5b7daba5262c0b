// SPDX-License-Identifier: GPL-2.0-only
/*
 * Request ids in ZMTP message bodies (zmtp.h): a minimal msgpack walk that
 * finds str values, the filter that says which of them are ids, the scan
 * of opaque bodies for them, and the msgpack value check of msg_sync.c. Format
 * facts: the msgpack specification (docs/protocols.md, "ZMTP").
 */
#include <string.h>
#include "user/proto/zmtp/zmtp.h"

#define MP_MAX_VALUES 65536

static bool is_hex(char c)
{
	return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'f') || (c >= 'A' && c <= 'F');
}

static bool id_char(char c)
{
	return is_hex(c) || (c >= 'g' && c <= 'z') || (c >= 'G' && c <= 'Z') || c == '-' ||
	       c == '_' || c == '.' || c == ':';
}

/* A canonical UUID (8-4-4-4-12 hex digits) at s[0 .. 36)? */
static bool uuid_at(const char *s, size_t n)
{
	static const unsigned char dash[] = { 8, 13, 18, 23 };
	size_t d = 0;

	if (n < 36)
		return false;
	for (size_t i = 0; i < 36; i++) {
		if (d < sizeof(dash) && i == dash[d]) {
			if (s[i] != '-')
				return false;
			d++;
		} else if (!is_hex(s[i])) {
			return false;
		}
	}
	return true;
}

bool zmtp_id_like(const char *s, size_t n)
{
	size_t run = 0;
	bool ok = false;

	if (n < 16 || n >= ZMTP_ID_BYTES)
		return false;
	for (size_t i = 0; i < n; i++) {
		if (!id_char(s[i]))
			return false;
		run = is_hex(s[i]) ? run + 1 : 0;
		if (run >= 32 || uuid_at(s + i, n - i))
			ok = true;
	}
	return ok;
}

/* Big-endian unsigned of w bytes (1, 2, 4, 8). */
static size_t copy_lower(const char *s, size_t n, char *core, size_t room)
{
	if (n >= room)
		return 0;
	for (size_t i = 0; i < n; i++)
		core[i] = s[i] >= 'A' && s[i] <= 'F' ? (char)(s[i] - 'A' + 'a') : s[i];
	core[n] = '\0';
	return n;
}

size_t zmtp_id_core(const char *s, char *core, size_t room)
{
	size_t n = strlen(s), run = 0;

	for (size_t i = 0; i < n; i++)
		if (uuid_at(s + i, n - i))
			return copy_lower(s + i, 36, core, room);
	for (size_t i = 0; i <= n; i++) {
		if (i < n && is_hex(s[i])) {
			run++;
			continue;
		}
		if (run >= 32)
			return copy_lower(s + i - run, run, core, room);
		run = 0;
	}
	return 0;
}

static uint64_t be(const unsigned char *p, unsigned int w)
{
	uint64_t v = 0;

	for (unsigned int i = 0; i < w; i++)
		v = v << 8 | p[i];
	return v;
}

void zmtp_msgpack_strs(const unsigned char *b, size_t n,
		       void (*found)(void *ctx, const char *s, size_t n), void *ctx)
{
	size_t i = 0;

	for (unsigned int k = 0; i < n && k < MP_MAX_VALUES; k++) {
		unsigned char c = b[i++];
		unsigned int lw = 0;	/* width of a length field that follows */
		uint64_t fixed = 0;	/* bytes of payload that follow, known now */
		bool str = false;

		if (c <= 0x9f || c >= 0xe0)	/* fixint, fixmap, fixarray, negative fixint */
			continue;
		if (c <= 0xbf) {			/* fixstr */
			fixed = c & 0x1f;
			str = true;
		} else {
			switch (c) {
			case 0xc0: case 0xc2: case 0xc3: continue;	/* nil, false, true */
			case 0xc1: return;				/* never used */
			case 0xc4: lw = 1; break;			/* bin 8/16/32 */
			case 0xc5: lw = 2; break;
			case 0xc6: lw = 4; break;
			case 0xc7: lw = 1; fixed = 1; break;		/* ext 8/16/32: + type */
			case 0xc8: lw = 2; fixed = 1; break;
			case 0xc9: lw = 4; fixed = 1; break;
			case 0xca: fixed = 4; break;			/* float 32/64 */
			case 0xcb: fixed = 8; break;
			case 0xcc: case 0xd0: fixed = 1; break;		/* (u)int 8 .. 64 */
			case 0xcd: case 0xd1: fixed = 2; break;
			case 0xce: case 0xd2: fixed = 4; break;
			case 0xcf: case 0xd3: fixed = 8; break;
			case 0xd4: fixed = 2; break;			/* fixext 1 .. 16: + type */
			case 0xd5: fixed = 3; break;
			case 0xd6: fixed = 5; break;
			case 0xd7: fixed = 9; break;
			case 0xd8: fixed = 17; break;
			case 0xd9: lw = 1; str = true; break;		/* str 8/16/32 */
			case 0xda: lw = 2; str = true; break;
			case 0xdb: lw = 4; str = true; break;
			case 0xdc: case 0xde: i += 2; continue;		/* array/map 16: a count */
			default: i += 4; continue;			/* 0xdd, 0xdf: array/map 32 */
			}
		}
		if (lw) {
			if (n - i < lw)
				return;
			fixed += be(b + i, lw);
			i += lw;
		}
		if (fixed > n - i)
			return;		/* cut by the end of what was captured */
		if (str && found)
			found(ctx, (const char *)b + i, (size_t)fixed);
		i += (size_t)fixed;
	}
}

void zmtp_ids_scan(const unsigned char *b, size_t n,
		   void (*found)(void *ctx, const char *s, size_t n), void *ctx)
{
	size_t i = 0;

	while (i < n) {
		size_t j = i;

		while (j < n && id_char((char)b[j]))
			j++;
		if (j < n && j > i && zmtp_id_like((const char *)b + i, j - i))
			found(ctx, (const char *)b + i, j - i);
		i = j + 1;
	}
}

long zmtp_msgpack_value(const unsigned char *b, size_t n, uint64_t total)
{
	uint64_t pending = 1;	/* values still to read */
	size_t i = 0;

	while (pending) {
		unsigned char c;
		unsigned int lw = 0;
		uint64_t fixed = 0, count = 0;

		if (i >= n)
			return 0;
		c = b[i++];
		pending--;
		if (c <= 0x7f || c >= 0xe0 || (c >= 0xc0 && c <= 0xc3 && c != 0xc1))
			continue;		/* fixints, nil, false, true */
		if (c == 0xc1)
			return -1;
		if (c <= 0x8f) {
			count = 2 * (c & 0x0f);	/* fixmap */
		} else if (c <= 0x9f) {
			count = c & 0x0f;	/* fixarray */
		} else if (c <= 0xbf) {
			fixed = c & 0x1f;	/* fixstr */
		} else {
			switch (c) {
			case 0xc4: case 0xd9: lw = 1; break;		/* bin, str 8 */
			case 0xc5: case 0xda: lw = 2; break;
			case 0xc6: case 0xdb: lw = 4; break;
			case 0xc7: lw = 1; fixed = 1; break;		/* ext 8/16/32 */
			case 0xc8: lw = 2; fixed = 1; break;
			case 0xc9: lw = 4; fixed = 1; break;
			case 0xca: case 0xce: case 0xd2: fixed = 4; break;
			case 0xcb: case 0xcf: case 0xd3: fixed = 8; break;
			case 0xcc: case 0xd0: fixed = 1; break;
			case 0xcd: case 0xd1: case 0xd4: fixed = 2; break;
			case 0xd5: fixed = 3; break;
			case 0xd6: fixed = 5; break;
			case 0xd7: fixed = 9; break;
			case 0xd8: fixed = 17; break;
			case 0xdc: case 0xde: lw = 2; break;		/* array/map 16 */
			default: lw = 4; break;				/* 0xdd, 0xdf */
			}
		}
		if (lw) {
			uint64_t v;

			if (n - i < lw)
				return 0;
			v = be(b + i, lw);
			i += lw;
			if (c >= 0xdc)
				count = c == 0xdc || c == 0xdd ? v : 2 * v;
			else
				fixed += v;
		}
		/* every element takes a byte at least */
		if (fixed > total - i || count > total - i)
			return -1;
		pending += count;
		if (fixed > n - i)
			return 0;	/* within total (above): cut by the capture */
		i += (size_t)fixed;
	}
	return (long)i;
}
