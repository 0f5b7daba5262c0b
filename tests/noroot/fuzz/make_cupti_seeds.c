// SPDX-License-Identifier: GPL-2.0-only
/*
 * Writes the seed corpus of fuzz_cupti_decode (tests/noroot/fuzz/corpus/cupti_decode/)
 * from the real CUDA 13.0 record structs (tests/unit/cupti/cupti_records.h).
 * Run from the repository root:
 *   cc -I. -I/usr/local/cuda-13.0/include tests/noroot/fuzz/make_cupti_seeds.c -o /tmp/mcs && /tmp/mcs
 */
#include <stdio.h>

#include "tests/unit/cupti/cupti_records.h"

#define MS 1000000ull

static void write_seed(const char *dir, const char *name, struct abuf *b, int flags,
		       const char *names)
{
	char path[512];
	FILE *f;

	snprintf(path, sizeof(path), "%s/%s", dir, name);
	f = fopen(path, "wb");
	if (!f) {
		perror(path);
		exit(1);
	}
	fputc(b->len & 0xff, f);
	fputc(b->len >> 8, f);
	fputc(flags, f);
	fwrite(b->p, 1, b->len, f);
	fputs(names, f);
	fclose(f);
	abuf_free(b);
}

int main(int argc, char **argv)
{
	const char *dir = argc > 1 ? argv[1] : "tests/noroot/fuzz/corpus/cupti_decode";
	struct abuf b = { 0 };

	put_api(&b, CUPTI_ACTIVITY_KIND_RUNTIME, 211, 1, 77, 5000 * MS, 5000 * MS + 10);
	/* name selector byte (low byte of the pointer): 1 -> first name */
	put_kernel(&b, 1, 5001 * MS, 5002 * MS, 0, (const char *)1);
	put_memcpy(&b, 2, 5003 * MS, 5004 * MS, 4096, 1, 2, 3);
	put_memset(&b, 3, 5005 * MS, 5006 * MS, 64);
	put_kernel(&b, 4, 5007 * MS, 5008 * MS, 9, (const char *)2);
	write_seed(dir, "mixed", &b, 0, "ampere_sgemm_128x64\nllama_flash_attn");
	put_kernel(&b, 5, 0, 5008 * MS, 0, NULL);
	put_kernel(&b, 6, 5009 * MS, 5008 * MS, 0, NULL);
	put_api(&b, CUPTI_ACTIVITY_KIND_DRIVER, 1, 7, 77, 5000 * MS, 5000 * MS + 10);
	write_seed(dir, "invalid_ts_api_all", &b, 1, "");
	put_memcpy(&b, 8, 5003 * MS, 5004 * MS, 4096, 2, 3, 1);
	put_memcpy(&b, 8, 5003 * MS, 5004 * MS, 4096, 2, 3, 1);
	b.len -= 8;	/* truncated last record */
	write_seed(dir, "dup_truncated", &b, 2, "");
	return 0;
}
