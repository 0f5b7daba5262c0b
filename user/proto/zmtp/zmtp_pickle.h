/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * Strings in pickled ZMTP message bodies (Python's pickle protocol 2 and
 * later, as pyzmq's send_pyobj writes them: SGLang's default IPC). Format
 * facts: docs/protocols.md P8 ("Ids").
 */
#ifndef TTFTRACE_ZMTP_PICKLE_H
#define TTFTRACE_ZMTP_PICKLE_H

#include <stdbool.h>
#include <stddef.h>

/* Does buf[0 .. len) start as a pickle does (PROTO, protocol 2 .. 5)? */
bool zmtp_is_pickle(const unsigned char *buf, size_t len);

/*
 * Call found(ctx, s, n) for each str a pickle's bytes buf[0 .. len) seem
 * to hold: a SHORT_BINUNICODE (0x8c, 1-byte length) or BINUNICODE ('X',
 * 4-byte little-endian length) opcode whose length fits 16 .. 63 bytes and
 * the buffer. A scan, not a walk of the opcodes: a match inside other
 * data is handed on too (the callback filters: zmtp_id_like); a string
 * found is skipped whole.
 */
void zmtp_pickle_strs(const unsigned char *buf, size_t len,
		      void (*found)(void *ctx, const char *s, size_t n), void *ctx);

/* A frame body's strings: zmtp_pickle_strs for a pickle, else zmtp_msgpack_strs (zmtp.h). */
void zmtp_body_strs(const unsigned char *buf, size_t len,
		    void (*found)(void *ctx, const char *s, size_t n), void *ctx);

#endif /* TTFTRACE_ZMTP_PICKLE_H */
