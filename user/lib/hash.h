/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * The one hash table of user/: uthash (Debian uthash-dev, header only),
 * included through this header so that every table is set up alike:
 *
 *  - an allocation failure fails the insert instead of exiting the process
 *    (HASH_NONFATAL_OOM): after HASH_ADD, ttf_hash_added(elt) says whether
 *    elt went in; a table whose bucket array cannot grow keeps working with
 *    longer chains;
 *  - ttf_mix64() is the one 64-bit mixer (the splitmix64 finaliser), for
 *    code that needs well-spread bits from sequential ids (OTLP trace and
 *    span ids). uthash hashes keys itself (Jenkins), so tables need no mixer.
 *
 * Include this header, never <uthash.h> directly, before any other uthash
 * header in a source file.
 */
#ifndef TTFTRACE_LIB_HASH_H
#define TTFTRACE_LIB_HASH_H

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#ifdef UTHASH_H
#error "include user/lib/hash.h before <uthash.h>"
#endif
#define HASH_NONFATAL_OOM 1
#include <uthash.h>

/* After HASH_ADD(hh, head, ..., elt): true when elt is in the table. */
#define ttf_hash_added(elt) ((elt)->hh.tbl != NULL)

/* splitmix64 finaliser (Steele, Lea, Flood 2014): a bijection of 64-bit values. */
static inline uint64_t ttf_mix64(uint64_t x)
{
	x += 0x9e3779b97f4a7c15ull;
	x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
	x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
	return x ^ (x >> 31);
}

#endif /* TTFTRACE_LIB_HASH_H */
