/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * The W3C Trace Context `traceparent` request header
 * (https://www.w3.org/TR/trace-context/#traceparent-header), recognised so
 * that a request's span continues the caller's trace. Only the ids and
 * flags are kept; no other header value leaves the recognizer.
 *
 *   version "-" trace-id "-" parent-id "-" trace-flags
 *   2 hex      32 hex        16 hex        2 hex          (lower case)
 * Invalid: upper-case or other non-hex digits, version ff, an all-zero
 * trace-id or parent-id, version 00 with anything after the flags; a later
 * version may carry more after the flags, behind a '-'.
 */
#ifndef TTFTRACE_TRACEPARENT_H
#define TTFTRACE_TRACEPARENT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/*
 * The `tracestate` kept with it (https://www.w3.org/TR/trace-context/#tracestate-header):
 * at least 512 characters SHOULD be passed on, so that many are kept; list
 * members past them are left out from the end.
 */
#define TTF_TRACESTATE_MAX 512

struct ttf_trace_parent {
	bool valid;
	uint8_t trace_id[16];
	uint8_t span_id[8];	/* the caller's span: the parent of ours */
	uint8_t flags;		/* trace-flags (bit 0: sampled) */
	bool state_cut;		/* members of the tracestate were left out */
	char state[TTF_TRACESTATE_MAX + 1];	/* the tracestate list, "" none */
};

/*
 * Parse the header value (v, n bytes, surrounding blanks already trimmed)
 * into out, keeping out->state. 0 or -EINVAL.
 */
int ttf_traceparent__parse(const char *v, size_t n, struct ttf_trace_parent *out);
/*
 * Add one tracestate header's list members (v, n bytes) to tp->state: a
 * second header continues the list. Members that are not key=value in
 * printable ASCII are dropped; the state is used only with a valid
 * traceparent (the W3C rule), which the exporter checks.
 */
void ttf_tracestate__add(struct ttf_trace_parent *tp, const char *v, size_t n);

#endif /* TTFTRACE_TRACEPARENT_H */
