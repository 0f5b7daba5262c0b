// SPDX-License-Identifier: GPL-2.0-only
/*
 * libFuzzer harness: the recording reader (user/cmd/replay.c rec_reader, with the
 * delta decoder of user/export/record/record.c) and, for some inputs, a whole replay
 * through the pipeline (replay__run).
 *
 * Input: [0] mode bits, then data.
 *   bit 0: data is the file as is (exercises the gzip layer); else the
 *          harness gzips data, so the fuzzer works on the decompressed frames
 *   bit 1: put a valid 40-byte header (flags from the low bits of [0]>>4) in
 *          front of the decompressed data
 *   bit 2: after reading every frame, replay the file through the pipeline,
 *          only when $FUZZ_RECORD_REPLAY is set: a replay allocates the
 *          report's fixed histograms and the timeline (about 50 ms a run
 *          under ASan against 0.2 ms for the reader), so the long runs fuzz
 *          the reader and the short CI run adds a replay pass
 * The file lives in a memfd, opened by its /proc/self/fd path.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>
#include <zlib.h>

#include "user/cmd/replay.h"

static int fd = -1;
static char path[64];
static FILE *devnull;

static int write_gz(const uint8_t *hdr, size_t hdr_len, const uint8_t *data, size_t len)
{
	uint8_t out[1 << 16];
	z_stream z;
	int ret = 0;

	memset(&z, 0, sizeof(z));
	if (deflateInit2(&z, 1, Z_DEFLATED, 15 + 16, 8, Z_DEFAULT_STRATEGY) != Z_OK)
		return -1;
	for (int pass = 0; pass < 2 && !ret; pass++) {
		z.next_in = (uint8_t *)(pass ? data : hdr);
		z.avail_in = pass ? len : hdr_len;
		do {
			z.next_out = out;
			z.avail_out = sizeof(out);
			deflate(&z, pass ? Z_FINISH : Z_NO_FLUSH);
			if (write(fd, out, sizeof(out) - z.avail_out) < 0)
				ret = -1;
		} while (z.avail_out == 0 && !ret);
	}
	deflateEnd(&z);
	return ret;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct rec_header h = { .version = REC_VERSION, .header_bytes = REC_HEADER_BYTES,
				.bom = REC_BOM, .start_mono_ns = 1000000000ull };
	struct replay_opts ro = { .json = 1 };
	struct replay_stats st;
	struct rec_reader *rr;
	const void *payload;
	uint32_t type, len;
	int err, n = 0;
	uint8_t mode;

	if (size < 1)
		return 0;
	if (fd < 0) {
		fd = memfd_create("fuzz_record", 0);
		snprintf(path, sizeof(path), "/proc/self/fd/%d", fd);
		devnull = fopen("/dev/null", "w");
		if (fd < 0 || !devnull)
			abort();
	}
	mode = data[0];
	data++;
	size--;
	if (ftruncate(fd, 0) || lseek(fd, 0, SEEK_SET))
		abort();
	memcpy(h.magic, REC_MAGIC, sizeof(h.magic));
	h.flags = (mode >> 4) & 7;
	if (mode & 1) {
		if (size && write(fd, data, size) != (ssize_t)size)
			abort();
	} else if (write_gz((const uint8_t *)&h, mode & 2 ? sizeof(h) : 0, data, size)) {
		abort();
	}

	rr = rec_reader__open(path, &h, &err);
	if (rr) {
		while (n++ < 100000 && rec_reader__next(rr, &type, &payload, &len) > 0)
			if (((uintptr_t)payload & 7) || len > REC_MAX_FRAME)
				abort();
		rec_reader__close(rr);
	}
	if (mode & 4 && getenv("FUZZ_RECORD_REPLAY")) {
		ro.out = devnull;
		replay__run(path, &ro, &st);
	}
	return 0;
}
