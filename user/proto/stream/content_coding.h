/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * Streaming decoder of an HTTP body's Content-Encoding (http.h enum
 * http_coding): gzip (RFC 1952) and deflate (RFC 9110 section 8.4.1.2: the
 * zlib format of RFC 1950; raw RFC 1951 data, which some servers send under
 * that name, is accepted too), with zlib. A decoder needs the body from its
 * first byte and every byte after: a missing byte cannot be skipped, and the
 * caller stops decoding (the request goes opaque). br, zstd and others are
 * not decoded.
 */
#ifndef TTFTRACE_CONTENT_CODING_H
#define TTFTRACE_CONTENT_CODING_H

#include <stdbool.h>
#include <stddef.h>

/* Content-Encoding of a message (RFC 9110 section 8.4), as far as it matters here. */
enum http_coding {
	HTTP_CODING_NONE = 0,	/* absent or identity */
	HTTP_CODING_GZIP,	/* gzip, x-gzip (RFC 1952) */
	HTTP_CODING_DEFLATE,	/* deflate: zlib format (RFC 1950) */
	HTTP_CODING_OTHER,	/* br, zstd, compress, several codings, anything else */
};

/*
 * One Content-Encoding field value (an HTTP/1.1 header line, an HTTP/2
 * field), after prev, what the earlier ones said: several codings are
 * HTTP_CODING_OTHER.
 */
enum http_coding http_coding_of(const char *v, size_t n, enum http_coding prev);

struct cc_decoder;

/* Decoded bytes, in order; called synchronously inside cc_decoder__feed(). */
typedef void (*cc_out_cb)(void *ctx, const char *data, size_t len);

/* Whether a coding can be decoded here (gzip, deflate). */
bool cc_decodable(enum http_coding c);
/* A decoder for c (cc_decodable); NULL with errno set (EINVAL, ENOMEM). */
struct cc_decoder *cc_decoder__new(enum http_coding c, cc_out_cb cb, void *ctx);
void cc_decoder__free(struct cc_decoder *d);
/*
 * Feed the next len encoded bytes. Returns 0, -EPROTO when the data is not
 * valid for the coding (or follows its end), -ENOMEM. After an error the
 * decoder refuses everything.
 */
int cc_decoder__feed(struct cc_decoder *d, const char *buf, size_t len);
/* Decoded bytes produced so far. */
size_t cc_decoder__out_bytes(const struct cc_decoder *d);

#endif /* TTFTRACE_CONTENT_CODING_H */
