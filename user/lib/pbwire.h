/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * A protocol-buffers wire-format writer: just what an encoder of known
 * messages needs (https://protobuf.dev/programming-guides/encoding/).
 *
 * A record is a tag (field_number << 3 | wire type) as a varint, then:
 *   wire type 0 VARINT: base-128 varint, least significant group first
 *                       (int64/uint64/uint32/enum/bool; a negative int64 is
 *                       its two's complement, 10 bytes);
 *   wire type 1 I64:    8 bytes little endian (fixed64, double);
 *   wire type 2 LEN:    a varint length, then that many bytes (string,
 *                       bytes, a nested message, a packed repeated scalar);
 *   wire type 5 I32:    4 bytes little endian (fixed32).
 * Nested messages: pb_begin() writes the tag and reserves one length byte;
 * pb_end() writes the length and moves the body when it needs more bytes.
 * Errors (out of memory, nesting deeper than PB_MAX_DEPTH, pb_end without
 * pb_begin) stick in b->err (a negative errno); later calls do nothing.
 */
#ifndef TTFTRACE_PBWIRE_H
#define TTFTRACE_PBWIRE_H

#include <stddef.h>
#include <stdint.h>

#define PB_MAX_DEPTH 16

enum pb_wire { PB_VARINT = 0, PB_I64 = 1, PB_LEN = 2, PB_I32 = 5 };

struct pb_buf {
	uint8_t *p;
	size_t len, cap;
	int err;			/* 0, -ENOMEM, -EOVERFLOW (depth), -EINVAL (unbalanced) */
	int depth;
	size_t open[PB_MAX_DEPTH];	/* offset of each open message's length byte */
};

void pb_init(struct pb_buf *b);
void pb_free(struct pb_buf *b);
/* Bytes a varint of v takes (1..10). */
size_t pb_varint_len(uint64_t v);
/* Raw pieces. */
void pb_raw(struct pb_buf *b, const void *data, size_t n);
void pb_varint(struct pb_buf *b, uint64_t v);
void pb_tag(struct pb_buf *b, uint32_t field, enum pb_wire wt);
/* Whole fields. */
void pb_uint(struct pb_buf *b, uint32_t field, uint64_t v);	/* uint32/uint64/enum/bool */
void pb_int64(struct pb_buf *b, uint32_t field, int64_t v);	/* int64 (not sint64) */
void pb_fixed64(struct pb_buf *b, uint32_t field, uint64_t v);
void pb_fixed32(struct pb_buf *b, uint32_t field, uint32_t v);
void pb_double(struct pb_buf *b, uint32_t field, double v);
void pb_bytes(struct pb_buf *b, uint32_t field, const void *data, size_t n);
void pb_string(struct pb_buf *b, uint32_t field, const char *s);
/* Packed repeated fixed64 / double (one LEN record); n == 0 writes nothing. */
void pb_packed_fixed64(struct pb_buf *b, uint32_t field, const uint64_t *v, size_t n);
void pb_packed_double(struct pb_buf *b, uint32_t field, const double *v, size_t n);
/* A nested message field. */
void pb_begin(struct pb_buf *b, uint32_t field);
void pb_end(struct pb_buf *b);

#endif /* TTFTRACE_PBWIRE_H */
