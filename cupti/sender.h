/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * Collector side of the transport (cupti/gpu_wire.h): batches records and
 * sends them over a non-blocking AF_UNIX SOCK_SEQPACKET connection. Never
 * blocks and never queues more than one message: when nobody listens, or the
 * receiver's queue is full, the batch is dropped and counted in
 * stats->send_dropped. Used from one thread only.
 */
#ifndef TTFTRACE_CUPTI_SENDER_H
#define TTFTRACE_CUPTI_SENDER_H

#include <stdbool.h>
#include <stdint.h>
#include <sys/socket.h>
#include <sys/un.h>

#include "cupti/decode.h"
#include "cupti/gpu_wire.h"

/* Internal to libttftrace-cupti.so: keep out of the host process's symbol space. */
#pragma GCC visibility push(hidden)

#define CUPTI_SENDER_RETRY_NS 1000000000ull /* reconnect at most once a second */
/*
 * A full socket (ttftrace reads slower than a burst) makes the collector's
 * own thread wait up to CUPTI_SENDER_WAIT_MS for room, at most once per
 * CUPTI_SENDER_RETRY_NS; the application's threads never wait.
 */
#define CUPTI_SENDER_WAIT_MS 20
#define CUPTI_SENDER_SNDBUF_BYTES (4 << 20) /* asked for; the kernel caps it at wmem_max */

struct cupti_sender {
	int fd;                 /* -1 while not connected */
	struct sockaddr_un addr;
	socklen_t addr_len;
	uint32_t pid;
	uint32_t epoch;         /* bumped per connection: names are resent once per epoch */
	uint64_t seq;
	uint64_t next_connect_ns;
	uint64_t last_wait_timeout_ns; /* a wait for room timed out then */
	uint32_t n;             /* records in batch */
	struct ttf_gpu_stats *stats;
	uint64_t (*now_ns)(void); /* CLOCK_MONOTONIC ns; replaced in tests */
	struct cupti_name *names[TTF_GPU_MSG_MAX_RECS]; /* kernel names of the batch */
	uint8_t msg[TTF_GPU_MSG_MAX_BYTES];
};

/*
 * Prepare a sender for socket @path ("@name" = abstract; NULL = $TTFTRACE_CUPTI_SOCK
 * or TTF_GPU_SOCK_DEFAULT). Does not connect. Returns 0 or -ENAMETOOLONG.
 */
int cupti_sender__init(struct cupti_sender *s, const char *path, uint32_t pid,
		       struct ttf_gpu_stats *stats);
/* Append one record (with its kernel name, sent first if this connection lacks it). */
void cupti_sender__push(struct cupti_sender *s, const struct ttf_gpu_rec *rec,
			struct cupti_name *name);
/* Send the pending batch now (drop and count it if that is impossible). */
void cupti_sender__flush(struct cupti_sender *s);
/* Send the current stats (best effort, not counted as a record drop). */
void cupti_sender__send_stats(struct cupti_sender *s);
/*
 * Send one NOTICE (code: enum ttf_gpu_notice_code; text cut at
 * TTF_GPU_NOTICE_MAX bytes), connecting first if needed. Returns true when
 * it was sent, false when nobody listens or the socket is full.
 */
bool cupti_sender__send_notice(struct cupti_sender *s, uint32_t code, const char *text);
/* Close the socket. */
void cupti_sender__close(struct cupti_sender *s);

/* Sink adapter for struct cupti_decode_sink: ctx = struct cupti_sender *. */
void cupti_sender__sink(void *ctx, const struct ttf_gpu_rec *rec, struct cupti_name *name);

#pragma GCC visibility pop

#endif /* TTFTRACE_CUPTI_SENDER_H */
