/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * HPACK header block decoding (RFC 7541): integers (section 5.1), string
 * literals with Huffman coding (5.2, hpack_huffman.h), the static table
 * (Appendix A) and the dynamic table (section 4) with its size updates.
 *
 * One decoder per direction of a connection. A decoder that saw the
 * connection from its start ("synced") knows its dynamic table exactly. One
 * that did not (tracing began later, or a header block was lost) knows only
 * the entries added since: eviction removes the oldest entries first, so
 * those are exact while they fit in the table's maximum size, and a
 * reference to anything older yields a field whose name or value is
 * unknown (never a wrong one). Invalid input returns -EPROTO and leaves the
 * decoder unsynced.
 */
#ifndef TTFTRACE_HPACK_H
#define TTFTRACE_HPACK_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* The default SETTINGS_HEADER_TABLE_SIZE (RFC 9113 section 6.5.2). */
#define HPACK_DEFAULT_TABLE_BYTES 4096u
/* A decoded string longer than this is not kept: the block is lost (-E2BIG). */
#define HPACK_MAX_STRING_BYTES (64u * 1024)

/* One header field; strings are valid only during the callback, not NUL-terminated. */
struct hpack_field {
	const char *name, *value;
	size_t name_len, value_len;
	bool name_known, value_known;	/* false: an unknown dynamic table entry */
};

typedef void (*hpack_field_cb)(void *ctx, const struct hpack_field *f);

struct hpack_dec;

struct hpack_dec_stats {
	uint64_t blocks;	/* header blocks decoded */
	uint64_t unknown_refs;	/* references to dynamic entries not known (unsynced) */
	uint64_t errors;	/* blocks rejected (-EPROTO, -E2BIG, -ENOMEM) */
};

/* synced: the decoder sees the connection from its first header block. NULL: ENOMEM. */
struct hpack_dec *hpack_dec__new(bool synced);
void hpack_dec__free(struct hpack_dec *d);
/*
 * Decode one complete header block (HEADERS + CONTINUATION fragments,
 * padding and priority removed), calling cb for each field in order.
 * Returns 0, -EPROTO (malformed; the rest of the block is not decoded),
 * -E2BIG (a string over HPACK_MAX_STRING_BYTES) or -ENOMEM; on error the
 * decoder is unsynced.
 */
int hpack_dec__block(struct hpack_dec *d, const uint8_t *blk, size_t len, hpack_field_cb cb,
		     void *ctx);
/*
 * The decoder side's SETTINGS_HEADER_TABLE_SIZE: the table's maximum size
 * from now on, and the limit of size updates.
 */
void hpack_dec__settings_max(struct hpack_dec *d, uint32_t max_bytes);
/* A header block was not seen: the dynamic table is no longer known. */
void hpack_dec__desync(struct hpack_dec *d);
bool hpack_dec__synced(const struct hpack_dec *d);
const struct hpack_dec_stats *hpack_dec__stats(const struct hpack_dec *d);

#endif /* TTFTRACE_HPACK_H */
