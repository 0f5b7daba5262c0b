// SPDX-License-Identifier: GPL-2.0-only
/* Copy bandwidth summary: per direction and host memory kind, against the link rate. */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>
#include "user/model/copy_stats.h"

static void test_pinned_and_pageable(void **state)
{
	struct copy_stats *cs = copy_stats__new();
	struct ttf_gpu_part g = { .have = 1, .link_gbps = 50.0, .n_copies = 2 };
	cJSON *o = cJSON_CreateObject(), *arr, *x;
	char *buf = NULL;
	size_t len = 0;
	FILE *f;
	int err = 0;

	assert_non_null(cs);
	g.copies[0] = (struct ttf_copy){ .bytes = 64 << 20, .copy_kind = 1, .gbps = 40.0 };
	g.copies[1] = (struct ttf_copy){ .bytes = 1 << 20, .copy_kind = 1, .pageable = 1,
					 .gbps = 2.0 };
	assert_int_equal(copy_stats__add(cs, &g), 0);
	g.n_copies = 1;
	g.copies[0].gbps = 30.0;
	assert_int_equal(copy_stats__add(cs, &g), 0);

	copy_stats__json(o, cs, &err);
	assert_int_equal(err, 0);
	arr = cJSON_GetObjectItem(o, "copies");
	assert_int_equal(cJSON_GetArraySize(arr), 2);
	x = cJSON_GetArrayItem(arr, 0);	/* HtoD pinned: 40 and 30 GB/s */
	assert_string_equal(cJSON_GetObjectItem(x, "host")->valuestring, "pinned");
	assert_int_equal(cJSON_GetObjectItem(x, "n")->valueint, 2);
	assert_float_equal(cJSON_GetObjectItem(x, "gbps_p50")->valuedouble, 35.0, 1e-9);
	assert_float_equal(cJSON_GetObjectItem(x, "share_of_link_p50")->valuedouble, 0.7, 1e-9);
	assert_float_equal(cJSON_GetObjectItem(x, "bytes")->valuedouble, 2.0 * (64 << 20), 1e-3);
	x = cJSON_GetArrayItem(arr, 1);
	assert_string_equal(cJSON_GetObjectItem(x, "host")->valuestring, "pageable");
	assert_float_equal(cJSON_GetObjectItem(x, "gbps_p50")->valuedouble, 2.0, 1e-9);

	f = open_memstream(&buf, &len);
	copy_stats__text(f, cs);
	fclose(f);
	assert_non_null(strstr(buf, "(P50 = 70% of link 50.00 GB/s)"));
	assert_non_null(strstr(buf, "pageable: not link evidence"));
	free(buf);
	cJSON_Delete(o);
	copy_stats__free(cs);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_pinned_and_pageable),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
