/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * One writer for both OTLP/HTTP encodings, so that protobuf and JSON carry
 * the same content: each call names a field by its protobuf field number
 * (opentelemetry-proto's .proto files) and by its JSON name (lowerCamelCase,
 * the protobuf JSON mapping), and each backend uses what it needs.
 *
 * JSON follows OTLP's mapping (https://opentelemetry.io/docs/specs/otlp/#json-protobuf-encoding):
 * int64/fixed64 as decimal strings, enums as numbers, traceId/spanId as
 * lower-case hex (not base64). Protobuf: user/lib/pbwire.h.
 * Errors (ENOMEM, bad nesting) stick; otlp_enc__finish reports them.
 */
#ifndef TTFTRACE_OTLP_ENC_H
#define TTFTRACE_OTLP_ENC_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

enum otlp_proto {
	OTLP_PROTO_PROTOBUF = 0,	/* http/protobuf: Content-Type application/x-protobuf */
	OTLP_PROTO_JSON,		/* http/json: Content-Type application/json */
};

struct otlp_enc;

/* NULL with errno = ENOMEM. */
struct otlp_enc *otlp_enc__new(enum otlp_proto p);
/* A nested message; repeated: one element of a repeated field (a JSON array). */
void otlp_enc__begin(struct otlp_enc *e, uint32_t field, const char *name, bool repeated);
void otlp_enc__end(struct otlp_enc *e);
void otlp_enc__str(struct otlp_enc *e, uint32_t field, const char *name, const char *s);
void otlp_enc__int64(struct otlp_enc *e, uint32_t field, const char *name, int64_t v);
/* uint32 and enum fields (JSON numbers). */
void otlp_enc__uint(struct otlp_enc *e, uint32_t field, const char *name, uint32_t v);
void otlp_enc__fixed32(struct otlp_enc *e, uint32_t field, const char *name, uint32_t v);
void otlp_enc__fixed64(struct otlp_enc *e, uint32_t field, const char *name, uint64_t v);
void otlp_enc__double(struct otlp_enc *e, uint32_t field, const char *name, double v);
/* bytes fields holding a trace or span id: hex in JSON. */
void otlp_enc__id(struct otlp_enc *e, uint32_t field, const char *name, const uint8_t *id,
		  size_t n);
/* Repeated (packed) fixed64 and double. */
void otlp_enc__fixed64s(struct otlp_enc *e, uint32_t field, const char *name,
			const uint64_t *v, size_t n);
void otlp_enc__doubles(struct otlp_enc *e, uint32_t field, const char *name, const double *v,
		       size_t n);
/*
 * The encoded body (malloc'ed, *len bytes; JSON is NUL-terminated too), and
 * frees e. Returns 0, -ENOMEM or -EINVAL (unbalanced begin/end).
 */
int otlp_enc__finish(struct otlp_enc *e, char **out, size_t *len);

/* KeyValue attribute helpers (common.proto KeyValue/AnyValue) under field `field`. */
void otlp_enc__attr_str(struct otlp_enc *e, uint32_t field, const char *key, const char *v);
void otlp_enc__attr_int(struct otlp_enc *e, uint32_t field, const char *key, int64_t v);
void otlp_enc__attr_double(struct otlp_enc *e, uint32_t field, const char *key, double v);
void otlp_enc__attr_bool(struct otlp_enc *e, uint32_t field, const char *key, bool v);
void otlp_enc__attr_strs(struct otlp_enc *e, uint32_t field, const char *key,
			 const char *const *v, int n);

#endif /* TTFTRACE_OTLP_ENC_H */
