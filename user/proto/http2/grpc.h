/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * gRPC over HTTP/2: the length-prefixed message framing of a stream's DATA
 * ("Length-Prefixed-Message": 1 byte compressed flag, 4 bytes big-endian
 * length, the message; gRPC's PROTOCOL-HTTP2 document), and token profiles:
 * where a method's response messages hold their tokens (protobuf wire
 * format: field numbers, varints, length-delimited fields).
 *
 * Profile file, one method a line ('#' starts a comment):
 *     /package.Service/Method   FIELD[.FIELD...][#]
 * FIELD is a protobuf field number, the path leads through nested messages;
 * the message's token count is the number of occurrences of the last field
 * (a non-empty string, a number ...), or with '#' the number of varints
 * packed in it (token ids: repeated uint32). Example (text-generation-
 * inference's router to its shards, generated token ids):
 *     /generate.v2.TextGenerationService/Decode   1.3#
 */
#ifndef TTFTRACE_GRPC_H
#define TTFTRACE_GRPC_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define GRPC_PATH_MAX 8		/* nesting of a token field path */
#define GRPC_KEEP_BYTES 4096	/* bytes of a message kept to count its tokens */

struct grpc_rule {
	char method[128];		/* ":path" of the call */
	uint32_t path[GRPC_PATH_MAX];	/* field numbers */
	int depth;
	bool packed;			/* count the varints packed in the last field */
};

struct grpc_profile {
	struct grpc_rule *rules;
	int n;
};

/*
 * Load a profile file. Returns 0, -errno for a file that cannot be read, or
 * -EINVAL with *bad_line the 1-based line that does not parse.
 */
int grpc_profile__load(const char *file, struct grpc_profile *p, int *bad_line);
/* Parse profile text (the file's contents); same returns. */
int grpc_profile__parse(const char *text, struct grpc_profile *p, int *bad_line);
void grpc_profile__free(struct grpc_profile *p);
/* The rule for a method, or NULL. */
const struct grpc_rule *grpc_profile__find(const struct grpc_profile *p, const char *method);
/*
 * Tokens in one protobuf message by rule: >= 0, or -EPROTO when the bytes
 * do not parse as the path says (or were cut short).
 */
int64_t grpc_count_tokens(const struct grpc_rule *r, const uint8_t *msg, size_t len);

/* One message's end: its flag and length, and the first bytes of it kept. */
struct grpc_msg {
	bool compressed;
	uint32_t len;
	const uint8_t *kept;	/* its first kept_len bytes */
	size_t kept_len;
	bool whole;		/* kept holds the whole message (not too long, all captured) */
};

typedef void (*grpc_msg_cb)(void *ctx, const struct grpc_msg *m);

/* The message framing of one direction of one stream. */
struct grpc_reader {
	uint8_t hdr[5];
	uint8_t hdr_got;
	bool in_msg;
	bool lost;		/* a gap hit a message prefix: framing lost for good */
	uint32_t msg_len, msg_got;
	bool kept_whole;	/* every byte so far was kept */
	uint8_t keep[GRPC_KEEP_BYTES];
	size_t kept;
	uint64_t n_msgs;
};

void grpc_reader__init(struct grpc_reader *r);
/* DATA payload bytes in order; cb for each message that ends in them. */
void grpc_reader__feed(struct grpc_reader *r, const uint8_t *p, size_t len, grpc_msg_cb cb,
		       void *ctx);
/*
 * len payload bytes not captured: skipped inside a message (it ends without
 * them: kept_len < len), else the framing is lost (returns -EPROTO).
 */
int grpc_reader__gap(struct grpc_reader *r, size_t len, grpc_msg_cb cb, void *ctx);

#endif /* TTFTRACE_GRPC_H */
