// SPDX-License-Identifier: GPL-2.0-only
/*
 * gzip / deflate body decoding with zlib's inflate (content_coding.h).
 * Output goes to the callback in pieces of at most OUT_BYTES.
 */
#include <errno.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <zlib.h>
#include "user/proto/stream/content_coding.h"

static bool is_token(const char *v, size_t n, const char *t)
{
	return n == strlen(t) && !strncasecmp(v, t, n);
}

enum http_coding http_coding_of(const char *v, size_t n, enum http_coding prev)
{
	enum http_coding c;

	if (!n || is_token(v, n, "identity"))
		return prev;
	if (is_token(v, n, "gzip") || is_token(v, n, "x-gzip"))
		c = HTTP_CODING_GZIP;
	else if (is_token(v, n, "deflate"))
		c = HTTP_CODING_DEFLATE;
	else
		c = HTTP_CODING_OTHER;	/* br, zstd, or a list of codings */
	return prev == HTTP_CODING_NONE ? c : HTTP_CODING_OTHER;
}

#define OUT_BYTES 16384

struct cc_decoder {
	z_stream z;
	enum http_coding coding;
	bool started;		/* inflateInit2 done (deflate waits for its first 2 bytes) */
	bool ended;		/* Z_STREAM_END seen */
	bool failed;
	unsigned char head[2];	/* deflate: the first bytes, to tell zlib from raw */
	size_t n_head;
	size_t out_bytes;
	cc_out_cb cb;
	void *ctx;
	char out[OUT_BYTES];
};

bool cc_decodable(enum http_coding c)
{
	return c == HTTP_CODING_GZIP || c == HTTP_CODING_DEFLATE;
}

struct cc_decoder *cc_decoder__new(enum http_coding c, cc_out_cb cb, void *ctx)
{
	struct cc_decoder *d;

	if (!cc_decodable(c) || !cb) {
		errno = EINVAL;
		return NULL;
	}
	d = calloc(1, sizeof(*d));
	if (!d) {
		errno = ENOMEM;
		return NULL;
	}
	d->coding = c;
	d->cb = cb;
	d->ctx = ctx;
	if (c == HTTP_CODING_GZIP) {
		/* 16 + MAX_WBITS: a gzip wrapper only (zlib manual, inflateInit2) */
		if (inflateInit2(&d->z, 16 + MAX_WBITS) != Z_OK) {
			free(d);
			errno = ENOMEM;
			return NULL;
		}
		d->started = true;
	}
	return d;
}

void cc_decoder__free(struct cc_decoder *d)
{
	if (!d)
		return;
	if (d->started)
		inflateEnd(&d->z);
	free(d);
}

/*
 * A zlib stream begins with CMF, FLG: CM = 8 (deflate), CINFO <= 7, and
 * CMF * 256 + FLG a multiple of 31 (RFC 1950 section 2.2).
 */
static bool zlib_header(const unsigned char *h)
{
	return (h[0] & 0x0f) == 8 && (h[0] >> 4) <= 7 && ((h[0] << 8) | h[1]) % 31 == 0;
}

static int inflate_some(struct cc_decoder *d, const unsigned char *in, size_t len)
{
	d->z.next_in = (unsigned char *)in;
	d->z.avail_in = len;
	while (d->z.avail_in) {
		int rc;
		size_t n;

		if (d->ended)
			return -EPROTO;	/* bytes after the end of the coded data */
		d->z.next_out = (unsigned char *)d->out;
		d->z.avail_out = sizeof(d->out);
		rc = inflate(&d->z, Z_NO_FLUSH);
		n = sizeof(d->out) - d->z.avail_out;
		if (n) {
			d->out_bytes += n;
			d->cb(d->ctx, d->out, n);
		}
		if (rc == Z_STREAM_END) {
			d->ended = true;
			continue;
		}
		if (rc == Z_MEM_ERROR)
			return -ENOMEM;
		if (rc != Z_OK && !(rc == Z_BUF_ERROR && !n && !d->z.avail_in))
			return -EPROTO;
		if (!n && d->z.avail_out)
			break;	/* all input consumed into zlib's state */
	}
	return 0;
}

int cc_decoder__feed(struct cc_decoder *d, const char *buf, size_t len)
{
	const unsigned char *p = (const unsigned char *)buf;
	int err;

	if (d->failed)
		return -EPROTO;
	if (!d->started) {
		while (d->n_head < 2 && len) {
			d->head[d->n_head++] = *p++;
			len--;
		}
		if (d->n_head < 2)
			return 0;
		if (inflateInit2(&d->z, zlib_header(d->head) ? MAX_WBITS : -MAX_WBITS) != Z_OK) {
			d->failed = true;
			return -ENOMEM;
		}
		d->started = true;
		err = inflate_some(d, d->head, 2);
		if (err) {
			d->failed = true;
			return err;
		}
	}
	err = len ? inflate_some(d, p, len) : 0;
	if (err)
		d->failed = true;
	return err;
}

size_t cc_decoder__out_bytes(const struct cc_decoder *d)
{
	return d->out_bytes;
}
