/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * Recordings (`ttftrace --record FILE`): the raw event stream of a trace, so
 * that `ttftrace replay FILE` can run the whole user-side pipeline on it
 * again, without root, at full speed.
 *
 * File: one gzip stream (zlib, RFC 1952). Decompressed, it is a header then
 * frames; integers are little-endian (the reader refuses a header whose
 * byte-order mark differs):
 *
 *   header (40 bytes): magic "TTFREC\r\n" (8), u32 version (2; 1 is read too), u32 header
 *     bytes (40), u64 start CLOCK_MONOTONIC ns, u64 start CLOCK_REALTIME ns,
 *     u32 flags (enum rec_flags: how the live pipeline was set up), u32
 *     byte-order mark 0x01020304.
 *   frame: u8 type (enum rec_frame), varint payload bytes, payload.
 *     NET      u8 net record type, delta record (below), cap_len payload bytes
 *     SCHED    u8 sched record type, delta record
 *     ENGINE   u8 is_return, delta record of a struct ttf_engine_event (role and
 *              n_seq coded as u32; probe_id and flags are not stored;
 *              version 1 files lack the per-sequence counts)
 *     ADVANCE  u64 watermark ns: the live pipeline advanced here
 *     COUNTERS at the end: u32 n, then n times { u64 value, u8 name bytes,
 *              name } with every drop and health counter of the live run
 *     END      u64 CLOCK_MONOTONIC ns: the trace ended cleanly here
 *     GPU      u32 pid, u32 kind (TTF_GPU_MSG_RECORDS: one struct ttf_gpu_rec;
 *              NAME: struct ttf_gpu_name + name bytes; STATS: struct
 *              ttf_gpu_stats; cupti/gpu_wire.h), as the CUPTI receiver
 *              delivered them; replays give the same GPU joins
 *
 * Delta records: the record's fields (struct ttf_net_event without payload,
 * struct ttf_sched_event, struct ttf_engine_event; the field lists are in
 * record.c) are coded against the previous record of the same frame type
 * and record type (all zero at the start): a varint bit mask of the fields
 * that differ, then those fields in order at their own size, except ts_ns:
 * a zigzag varint of the difference. Varints are LEB128 (7 bits a byte, low
 * first). Most of a record repeats (addresses, comm, pid): a token's SEND
 * codes in about 30 bytes before its payload, a scheduler record in 10-15.
 *
 * The writer flushes the gzip stream (Z_SYNC_FLUSH) about once a second, so
 * a tracer killed without a chance to finish leaves a file that reads up to
 * the last flush; the reader reports such a file as truncated (no END).
 *
 * Privacy: NET frames carry the payload prefixes the probes captured
 * (request headers, prompt and token bytes): the file is created mode 0600
 * and must be treated as the prompts themselves.
 */
#ifndef TTFTRACE_RECORD_H
#define TTFTRACE_RECORD_H

#include <stddef.h>
#include <stdint.h>
#include "bpf/net.h"
#include "bpf/sched.h"
#include "bpf/engine.h"
#include "user/export/sink.h"

#define REC_MAGIC "TTFREC\r\n"
#define REC_VERSION 2	/* 2: per-sequence batch fields in ENGINE frames; 1 is still read */
#define REC_HEADER_BYTES 40
#define REC_BOM 0x01020304u
/* Largest delta-coded record body: every field of the larger record, plus the mask. */
#define REC_MAX_RECORD_BYTES (16 + (sizeof(struct ttf_net_event) > sizeof(struct ttf_engine_event) ? \
				    sizeof(struct ttf_net_event) : sizeof(struct ttf_engine_event)))
/* Largest frame payload: a NET record with every field and the largest capture. */
#define REC_MAX_FRAME (16 + sizeof(struct ttf_net_event) + TTF_CAPTURE_MAX_BYTES)

enum rec_frame {
	REC_NET = 1,
	REC_SCHED = 2,
	REC_ENGINE = 3,
	REC_ADVANCE = 4,
	REC_COUNTERS = 5,
	REC_END = 6,
	REC_GPU = 7,
	REC_FRAME__MAX = REC_GPU,
};

enum rec_flags {
	REC_F_XMIT = 1 << 0,		/* the XMIT probe attached (TTFT ends at the device) */
	REC_F_ATTRIBUTION = 1 << 1,	/* engine timeline and stage split */
	REC_F_SCHED = 1 << 2,		/* scheduler overlay */
	REC_F_GPU = 1 << 3,		/* GPU store: GPU frames follow (older files have none) */
};

struct rec_header {
	char magic[8];
	uint32_t version;
	uint32_t header_bytes;
	uint64_t start_mono_ns;
	uint64_t start_real_ns;
	uint32_t flags;
	uint32_t bom;
};

struct record;

/*
 * Create path (mode 0600, truncated) and write the header. flags: enum
 * rec_flags. Returns NULL with errno set (open or zlib failure).
 */
struct record *record__open(const char *path, uint32_t flags);
/*
 * Append one frame: a record (coded as above; len: ring record bytes), a
 * watermark, or raw bytes (ADVANCE, COUNTERS, END). 0, or the first write
 * error (negative errno; later frames are dropped and counted).
 */
int record__net(struct record *rec, const struct ttf_net_event *e, size_t len);
int record__sched(struct record *rec, const struct ttf_sched_event *e);
int record__engine(struct record *rec, const struct ttf_engine_event *ev);
/* One GPU item (see GPU above); -E2BIG when it does not fit a frame. */
int record__gpu(struct record *rec, uint32_t pid, uint32_t kind, const void *body, size_t len);
int record__frame(struct record *rec, enum rec_frame type, const void *payload, size_t len);
/* Z_SYNC_FLUSH: everything so far becomes readable. 0 or negative errno. */
int record__flush(struct record *rec);
/* Write COUNTERS and END, close the file. 0 or the first error (negative errno). */
int record__close(struct record *rec, const struct report_counter *c, int n, uint64_t end_ns);
/* Close without END (error paths); frees rec. */
void record__abandon(struct record *rec);

/* Delta coding of one record type (record.c has the tables). */
struct rec_field {
	uint16_t off;
	uint8_t size;	/* bytes in the struct: 1, 2, 4, 8, 16, or an array's (up to 255) */
	uint8_t is_ts;	/* coded as a zigzag varint difference */
	uint8_t wire;	/* bytes in the file (>= size: zero-extended, little-endian) */
};

struct rec_codec {
	const struct rec_field *fields;
	int n_fields;
	size_t rec_bytes;	/* size of the struct (prev records) */
};

extern const struct rec_codec rec_net_codec, rec_sched_codec, rec_engine_codec;

/* Code cur against prev into out (room for rec_bytes + 20); returns the bytes written. */
size_t rec_codec__encode(const struct rec_codec *c, const void *prev, const void *cur,
			 uint8_t *out);
/*
 * Decode in[0..len) onto rec (the previous record, updated in place).
 * Returns the bytes read, or -EBADMSG when in is short or the mask unknown.
 */
int rec_codec__decode(const struct rec_codec *c, void *rec, const uint8_t *in, size_t len);
/* LEB128; get returns the bytes read, or 0 when in ends first or it is over 10 bytes. */
size_t rec_varint__put(uint8_t *out, uint64_t v);
size_t rec_varint__get(const uint8_t *in, size_t len, uint64_t *v);

/*
 * The `--record FILE` sink: taps net, sched, engine and GPU records, the
 * pipeline's watermarks, flushes about once a second from tick, and writes
 * COUNTERS and END from finish. *out is filled with hooks whose ctx is the
 * record. Returns 0 or negative errno (the file could not be created).
 */
int record_sink__new(const char *path, uint32_t flags, struct ttf_sink *out);

/* ---- reading (record_read.c) ---- */

struct rec_reader;

/*
 * Open path and check its header (copied to *h). NULL with *err: -errno
 * from open, -EISDIR, -EBADMSG (not a recording, bad version or byte
 * order), -ENOMEM.
 */
struct rec_reader *rec_reader__open(const char *path, struct rec_header *h, int *err);
/*
 * The next frame: returns 1 with *type, *payload (8-byte aligned, valid
 * until the next call) and *len; 0 after END; -EPIPE when the file ends
 * without END (killed tracer: everything before is valid); -EBADMSG for a
 * corrupt frame or gzip stream; -EIO for a read error. NET, SCHED and
 * ENGINE frames come decoded: a struct ttf_net_event with its payload, a
 * struct ttf_sched_event, a struct ttf_engine_event.
 */
int rec_reader__next(struct rec_reader *rr, uint32_t *type, const void **payload, uint32_t *len);
void rec_reader__close(struct rec_reader *rr);

#endif /* TTFTRACE_RECORD_H */
