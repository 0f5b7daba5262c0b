/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * The "model" of an OpenAI-style JSON request body, read from the captured
 * prefix of the body as it arrives in pieces: the first "model" key with a
 * string value. Only that name is kept (a label for metrics and spans);
 * the rest of the body (the prompt) is never stored.
 *
 * The key is found in the first BODY_MODEL_SCAN_BYTES bytes of the body or
 * not at all (a client that sends it after a long prompt gets "" unknown).
 * A JSON string cannot hold an unescaped '"', so a "model" inside the
 * prompt's text never matches; a nested "model" key (a tool argument) that
 * comes before the top-level one would.
 */
#ifndef TTFTRACE_BODY_MODEL_H
#define TTFTRACE_BODY_MODEL_H

#include <stddef.h>

#define BODY_MODEL_SCAN_BYTES 512
#define BODY_MODEL_MAX 64	/* bytes kept of the name, NUL included */

struct body_model {
	char buf[BODY_MODEL_SCAN_BYTES];
	size_t len;
	int done;		/* found, or gave up */
};

void body_model__reset(struct body_model *m);
/*
 * Feed the next len body bytes. Returns 1 once the name is known (out[]
 * gets it: printable ASCII only, other bytes as '?', at most
 * BODY_MODEL_MAX - 1 bytes), else 0 (keep feeding, or done without one).
 */
int body_model__feed(struct body_model *m, const char *data, size_t len,
		     char out[BODY_MODEL_MAX]);

#endif /* TTFTRACE_BODY_MODEL_H */
