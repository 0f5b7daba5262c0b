// SPDX-License-Identifier: GPL-2.0-only
/* user/proto/stream/body_model.c: the "model" of a JSON request body, fed in pieces. */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include <setjmp.h>
#include <cmocka.h>
#include "user/proto/stream/body_model.h"

/* Feed s in pieces of n bytes; returns 1 and the name when found. */
static int scan(const char *s, size_t n, char out[BODY_MODEL_MAX])
{
	struct body_model m;
	size_t len = strlen(s);

	body_model__reset(&m);
	out[0] = '\0';
	for (size_t i = 0; i < len; i += n)
		if (body_model__feed(&m, s + i, len - i < n ? len - i : n, out))
			return 1;
	return 0;
}

static void test_found_whole_and_split(void **state)
{
	const char *body = "{\"model\": \"llama-3.1-8b\", \"messages\":[{\"role\":\"user\"}]}";
	char out[BODY_MODEL_MAX];

	(void)state;
	for (size_t n = 1; n <= strlen(body); n++) {
		assert_int_equal(scan(body, n, out), 1);
		assert_string_equal(out, "llama-3.1-8b");
	}
	assert_int_equal(scan("{\"stream\":true,\"model\"\n:\t\"m\"}", 5, out), 1);
	assert_string_equal(out, "m");
}

static void test_not_a_plain_name(void **state)
{
	char out[BODY_MODEL_MAX];

	(void)state;
	/* inside a prompt a quote is escaped: that "model" is text, not a key */
	assert_int_equal(scan("{\"messages\":[{\"content\":\"the \\\"model\\\": \\\"x\\\"\"}]}", 7,
			      out), 0);
	assert_int_equal(scan("{\"model\": 7}", 3, out), 0);
	assert_int_equal(scan("{\"model\": \"a\\\"b\"}", 4, out), 0);
	/* a non-string "model" first, a real one later */
	assert_int_equal(scan("{\"model\":null,\"x\":{\"model\":\"late\"}}", 6, out), 1);
	assert_string_equal(out, "late");
}

static void test_only_the_scanned_prefix(void **state)
{
	char body[2048], out[BODY_MODEL_MAX];

	(void)state;
	memset(body, 0, sizeof(body));
	strcpy(body, "{\"messages\":\"");
	memset(body + strlen(body), 'a', 700);
	strcat(body, "\",\"model\":\"after-the-prompt\"}");
	assert_int_equal(scan(body, 64, out), 0);
}

static void test_long_and_odd_names_are_bounded(void **state)
{
	char body[256], out[BODY_MODEL_MAX];

	(void)state;
	strcpy(body, "{\"model\":\"");
	memset(body + strlen(body), 'x', 100);
	strcat(body, "\"}");
	assert_int_equal(scan(body, 9, out), 1);
	assert_int_equal(strlen(out), BODY_MODEL_MAX - 1);
	assert_int_equal(scan("{\"model\":\"a\x01\xc3\xa9\"}", 2, out), 1);
	assert_string_equal(out, "a???");
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_found_whole_and_split),
		cmocka_unit_test(test_not_a_plain_name),
		cmocka_unit_test(test_only_the_scanned_prefix),
		cmocka_unit_test(test_long_and_odd_names_are_bounded),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
