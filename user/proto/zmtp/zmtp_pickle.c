// SPDX-License-Identifier: GPL-2.0-only
/* Strings in pickled ZMTP message bodies (zmtp_pickle.h; docs/protocols.md P8). */
#include "user/proto/zmtp/zmtp.h"
#include "user/proto/zmtp/zmtp_pickle.h"

#define OP_PROTO 0x80			/* then the protocol, 1 byte */
#define OP_SHORT_BINUNICODE 0x8c	/* then a 1-byte length, UTF-8 (protocol 4) */
#define OP_BINUNICODE 0x58		/* 'X', then a 4-byte little-endian length */
#define STR_MIN 16			/* shorter strings are no ids (zmtp_id_like) */
#define STR_MAX (ZMTP_ID_BYTES - 1)

bool zmtp_is_pickle(const unsigned char *b, size_t n)
{
	return n >= 2 && b[0] == OP_PROTO && b[1] >= 2 && b[1] <= 5;
}

void zmtp_pickle_strs(const unsigned char *b, size_t n,
		      void (*found)(void *ctx, const char *s, size_t n), void *ctx)
{
	size_t i = 0;

	while (i < n) {
		size_t hdr = 0, len = 0;

		if (b[i] == OP_SHORT_BINUNICODE && n - i >= 2) {
			hdr = 2;
			len = b[i + 1];
		} else if (b[i] == OP_BINUNICODE && n - i >= 5) {
			hdr = 5;
			len = (size_t)b[i + 1] | (size_t)b[i + 2] << 8 | (size_t)b[i + 3] << 16 |
			      (size_t)b[i + 4] << 24;
		}
		if (hdr && len >= STR_MIN && len <= STR_MAX && len <= n - i - hdr) {
			found(ctx, (const char *)b + i + hdr, len);
			i += hdr + len;
			continue;
		}
		i++;
	}
}

void zmtp_body_strs(const unsigned char *b, size_t n,
		    void (*found)(void *ctx, const char *s, size_t n), void *ctx)
{
	if (zmtp_is_pickle(b, n))
		zmtp_pickle_strs(b, n, found, ctx);
	else
		zmtp_msgpack_strs(b, n, found, ctx);
}
