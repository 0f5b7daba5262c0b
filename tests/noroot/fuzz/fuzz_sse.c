// SPDX-License-Identifier: GPL-2.0-only
/*
 * libFuzzer harness: SSE splitting and token classification (user/proto/stream/sse.c).
 *
 * Input: [0] chunking seed, then the byte stream. The stream is classified
 * whole (sse_classify on an exact-size heap copy, so any over-read is caught),
 * then fed to a splitter in pieces whose sizes come from the seed, with a gap
 * now and then; every event the splitter reports is classified too.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "user/proto/stream/sse.h"

static void on_event(void *ctx, const char *data, size_t len, uint64_t tag)
{
	struct sse_event_info info;
	char *copy = malloc(len ? len : 1);

	(void)ctx;
	(void)tag;
	if (!copy)
		return;
	memcpy(copy, data, len);
	memset(&info, 0, sizeof(info));
	sse_classify(copy, len, &info);
	if (info.kind > SSE_EV_ERROR || (info.kind == SSE_EV_TOKEN && info.n_tokens == 0))
		abort();
	free(copy);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct sse_event_info info;
	struct sse_splitter *s;
	uint32_t seed;
	size_t off = 1;
	char *whole;

	if (size < 1)
		return 0;
	seed = data[0] * 2654435761u + 1;
	whole = malloc(size - 1 ? size - 1 : 1);
	if (!whole)
		return 0;
	memcpy(whole, data + 1, size - 1);
	memset(&info, 0, sizeof(info));
	sse_classify(whole, size - 1, &info);
	free(whole);

	s = sse_splitter__new(on_event, NULL);
	if (!s)
		return 0;
	while (off < size) {
		size_t n;

		seed = seed * 1103515245u + 12345u;
		n = 1 + (seed >> 16) % 64;
		if (n > size - off)
			n = size - off;
		if (((seed >> 8) & 31) == 0)
			sse_splitter__gap(s, n);
		else if (((seed >> 8) & 63) == 1)
			sse_splitter__reset(s);
		else
			sse_splitter__feed(s, (const char *)data + off, n, off);
		off += n;
	}
	sse_splitter__free(s);
	return 0;
}
