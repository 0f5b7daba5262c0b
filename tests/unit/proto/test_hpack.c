// SPDX-License-Identifier: GPL-2.0-only
/*
 * HPACK: the Huffman table (a complete prefix code, every octet round-trips)
 * and the decoder against RFC 7541 Appendix C (C.4: requests with Huffman
 * on one connection; C.5: responses with a 256-byte table and evictions);
 * an unsynced decoder (tracing began mid-connection) never names what it
 * does not know; malformed blocks are refused.
 */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <cmocka.h>
#include "user/proto/http2/hpack.h"
#include "user/proto/http2/hpack_huffman.h"

static size_t unhex(const char *h, uint8_t *out)
{
	size_t n = 0;
	unsigned int b;

	while (*h) {
		if (*h == ' ') {
			h++;
			continue;
		}
		assert_int_equal(sscanf(h, "%2x", &b), 1);
		out[n++] = b;
		h += 2;
	}
	return n;
}

static void huff_is(const char *hex, const char *want)
{
	uint8_t in[256];
	char out[256];
	size_t n = unhex(hex, in), len;

	assert_int_equal(hpack_huff_decode(in, n, out, sizeof(out), &len), 0);
	assert_int_equal(len, strlen(want));
	assert_memory_equal(out, want, len);
}

static void test_huffman_rfc_examples(void **state)
{
	huff_is("f1e3 c2e5 f23a 6ba0 ab90 f4ff", "www.example.com");	/* C.4.1 */
	huff_is("a8eb 1064 9cbf", "no-cache");				/* C.4.2 */
	huff_is("25a8 49e9 5ba9 7d7f", "custom-key");			/* C.4.3 */
	huff_is("25a8 49e9 5bb8 e8b4 bf", "custom-value");
	huff_is("6402", "302");						/* C.6.1 */
	huff_is("", "");
}

/* Encode every octet with the table, one string, and decode it back. */
static void test_huffman_every_octet(void **state)
{
	uint8_t enc[1200] = {};
	char out[300];
	size_t bits = 0, len;

	for (int sym = 0; sym < 256; sym++) {
		const struct hpack_huff_code *c = &hpack_huff_table[sym];

		assert_true(c->len_bits >= 5 && c->len_bits <= 30);
		assert_true(c->code < (1u << c->len_bits));
		for (int i = c->len_bits - 1; i >= 0; i--, bits++)
			if ((c->code >> i) & 1)
				enc[bits / 8] |= 0x80 >> (bits % 8);
	}
	for (; bits % 8; bits++)	/* pad with the most significant bits of EOS */
		enc[bits / 8] |= 0x80 >> (bits % 8);
	assert_int_equal(hpack_huff_decode(enc, bits / 8, out, sizeof(out), &len), 0);
	assert_int_equal(len, 256);
	for (int i = 0; i < 256; i++)
		assert_int_equal((uint8_t)out[i], i);
	assert_int_equal(hpack_huff_decode(enc, bits / 8, out, 10, &len), -ENOSPC);
	assert_int_equal(len, 10);
}

static void test_huffman_invalid(void **state)
{
	uint8_t eos[4] = { 0xff, 0xff, 0xff, 0xfc };	/* EOS (30 ones) inside */
	uint8_t zero_pad[1] = { 0x00 };			/* '0' then 3 zero bits */
	uint8_t long_pad[2] = { 0x07, 0xff };		/* '0' then 11 one bits */
	uint8_t ok_pad[1] = { 0x07 };			/* '0' then 3 one bits */
	char out[8];
	size_t len;

	assert_int_equal(hpack_huff_decode(eos, 4, out, sizeof(out), &len), -EPROTO);
	assert_int_equal(hpack_huff_decode(zero_pad, 1, out, sizeof(out), &len), -EPROTO);
	assert_int_equal(hpack_huff_decode(long_pad, 2, out, sizeof(out), &len), -EPROTO);
	assert_int_equal(hpack_huff_decode(ok_pad, 1, out, sizeof(out), &len), 0);
	assert_int_equal(len, 1);
	assert_int_equal(out[0], '0');
}

/* ---- the decoder ---- */

struct list {
	int n;
	char text[1024];	/* "name: value\n" each; "?" for unknown */
};

static void on_field(void *ctx, const struct hpack_field *f)
{
	struct list *l = ctx;
	size_t used = strlen(l->text);

	snprintf(l->text + used, sizeof(l->text) - used, "%.*s: %.*s\n",
		 f->name_known ? (int)f->name_len : 1, f->name_known ? f->name : "?",
		 f->value_known ? (int)f->value_len : 1, f->value_known ? f->value : "?");
	l->n++;
}

static void block_is(struct hpack_dec *d, const char *hex, const char *want)
{
	uint8_t in[512];
	size_t n = unhex(hex, in);
	struct list l = {};

	assert_int_equal(hpack_dec__block(d, in, n, on_field, &l), 0);
	assert_string_equal(l.text, want);
}

static void test_rfc_c4_requests_huffman(void **state)
{
	struct hpack_dec *d = hpack_dec__new(true);

	block_is(d, "8286 8441 8cf1 e3c2 e5f2 3a6b a0ab 90f4 ff",
		 ":method: GET\n:scheme: http\n:path: /\n:authority: www.example.com\n");
	block_is(d, "8286 84be 5886 a8eb 1064 9cbf",
		 ":method: GET\n:scheme: http\n:path: /\n:authority: www.example.com\n"
		 "cache-control: no-cache\n");
	block_is(d, "8287 85bf 4088 25a8 49e9 5ba9 7d7f 8925 a849 e95b b8e8 b4bf",
		 ":method: GET\n:scheme: https\n:path: /index.html\n"
		 ":authority: www.example.com\ncustom-key: custom-value\n");
	assert_int_equal(hpack_dec__stats(d)->blocks, 3);
	hpack_dec__free(d);
}

static void test_rfc_c5_responses_evictions(void **state)
{
	struct hpack_dec *d = hpack_dec__new(true);

	hpack_dec__settings_max(d, 256);
	block_is(d, "4803 3330 3258 0770 7269 7661 7465 611d 4d6f 6e2c 2032 3120 4f63 7420 "
		    "3230 3133 2032 303a 3133 3a32 3120 474d 546e 1768 7474 7073 3a2f 2f77 "
		    "7777 2e65 7861 6d70 6c65 2e63 6f6d",
		 ":status: 302\ncache-control: private\ndate: Mon, 21 Oct 2013 20:13:21 GMT\n"
		 "location: https://www.example.com\n");
	/* :status: 302 is evicted to make room for :status: 307 */
	block_is(d, "4803 3330 37c1 c0bf",
		 ":status: 307\ncache-control: private\ndate: Mon, 21 Oct 2013 20:13:21 GMT\n"
		 "location: https://www.example.com\n");
	block_is(d, "88c1 611d 4d6f 6e2c 2032 3120 4f63 7420 3230 3133 2032 303a 3133 3a32 "
		    "3220 474d 54c0 5a04 677a 6970 7738 666f 6f3d 4153 444a 4b48 514b 425a "
		    "584f 5157 454f 5049 5541 5851 5745 4f49 553b 206d 6178 2d61 6765 3d33 "
		    "3630 303b 2076 6572 7369 6f6e 3d31",
		 ":status: 200\ncache-control: private\ndate: Mon, 21 Oct 2013 20:13:22 GMT\n"
		 "location: https://www.example.com\ncontent-encoding: gzip\n"
		 "set-cookie: foo=ASDJKHQKBZXOQWEOPIUAXQWEOIU; max-age=3600; version=1\n");
	/* the table now holds set-cookie, content-encoding, date (C.5.3): 62..64 */
	block_is(d, "be bf c0", "set-cookie: foo=ASDJKHQKBZXOQWEOPIUAXQWEOIU; max-age=3600; "
		 "version=1\ncontent-encoding: gzip\ndate: Mon, 21 Oct 2013 20:13:22 GMT\n");
	hpack_dec__free(d);
}

static void test_unsynced_mid_connection(void **state)
{
	struct hpack_dec *d = hpack_dec__new(false);
	uint8_t b[4];
	struct list l = {};

	/* entries from before tracing: unknown, never guessed */
	block_is(d, "83 be 44 05 2f76 312f 63", ":method: POST\n?: ?\n:path: /v1/c\n");
	assert_int_equal(hpack_dec__stats(d)->unknown_refs, 1);
	assert_false(hpack_dec__synced(d));
	/* what was added since is known (62); what is older (63) is not */
	block_is(d, "83 be bf", ":method: POST\n:path: /v1/c\n?: ?\n");
	assert_int_equal(hpack_dec__stats(d)->unknown_refs, 2);
	/* a literal with an unknown indexed name: the value is known, the name not */
	block_is(d, "7f 00 01 78", "?: x\n");
	/* an index beyond the table is an error for a synced decoder */
	hpack_dec__free(d);
	d = hpack_dec__new(true);
	b[0] = 0xbe;
	assert_int_equal(hpack_dec__block(d, b, 1, on_field, &l), -EPROTO);
	assert_false(hpack_dec__synced(d));	/* and it is no longer trusted */
	hpack_dec__free(d);
}

static void test_malformed(void **state)
{
	struct hpack_dec *d = hpack_dec__new(true);
	struct list l = {};
	uint8_t idx0[] = { 0x80 };
	uint8_t trunc_int[] = { 0xff, 0x80 };
	uint8_t trunc_str[] = { 0x40, 0x05, 'a', 'b' };
	uint8_t big_update[] = { 0x3f, 0xe2, 0x1f };	/* size update 4096 + 1 > 4096 */
	uint8_t late_update[] = { 0x82, 0x20 };		/* a size update after a field */

	assert_int_equal(hpack_dec__block(d, idx0, sizeof(idx0), on_field, &l), -EPROTO);
	assert_int_equal(hpack_dec__block(d, trunc_int, sizeof(trunc_int), on_field, &l), -EPROTO);
	assert_int_equal(hpack_dec__block(d, trunc_str, sizeof(trunc_str), on_field, &l), -EPROTO);
	assert_int_equal(hpack_dec__block(d, big_update, sizeof(big_update), on_field, &l),
			 -EPROTO);
	assert_int_equal(hpack_dec__block(d, late_update, sizeof(late_update), on_field, &l),
			 -EPROTO);
	assert_int_equal(hpack_dec__stats(d)->errors, 5);
	hpack_dec__free(d);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_huffman_rfc_examples),
		cmocka_unit_test(test_huffman_every_octet),
		cmocka_unit_test(test_huffman_invalid),
		cmocka_unit_test(test_rfc_c4_requests_huffman),
		cmocka_unit_test(test_rfc_c5_responses_evictions),
		cmocka_unit_test(test_unsynced_mid_connection),
		cmocka_unit_test(test_malformed),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
