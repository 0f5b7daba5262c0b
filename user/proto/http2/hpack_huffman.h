/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * The static Huffman code of HPACK (RFC 7541 section 5.2 and Appendix B):
 * decoding of Huffman-coded string literals.
 */
#ifndef TTFTRACE_HPACK_HUFFMAN_H
#define TTFTRACE_HPACK_HUFFMAN_H

#include <stddef.h>
#include <stdint.h>

/* Symbols: the 256 octets and EOS (256). */
#define HPACK_HUFF_SYMBOLS 257

/* The code of one symbol: its len_bits low bits, most significant first. */
struct hpack_huff_code {
	uint32_t code;
	uint8_t len_bits;
};

/* RFC 7541 Appendix B, indexed by symbol. */
extern const struct hpack_huff_code hpack_huff_table[HPACK_HUFF_SYMBOLS];

/*
 * Decode in[0..in_len) into out (at most out_cap bytes); *out_len: bytes
 * written. Returns 0; -EPROTO for an invalid string (EOS inside, padding
 * longer than 7 bits or not all ones: RFC 7541 section 5.2); -ENOSPC when
 * the output does not fit (the first out_cap bytes are written).
 */
int hpack_huff_decode(const uint8_t *in, size_t in_len, char *out, size_t out_cap,
		      size_t *out_len);

#endif /* TTFTRACE_HPACK_HUFFMAN_H */
