/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * Test helper: fields of a parsed JSON object (cJSON), for the tests that read
 * ttftrace's JSON outputs back. Include after <cmocka.h>.
 */
#ifndef TTFTRACE_TESTS_CJSON_FIELDS_H
#define TTFTRACE_TESTS_CJSON_FIELDS_H

#include <cjson/cJSON.h>

/* The number at key k (the test fails when it is missing). */
static inline double num(const cJSON *o, const char *k)
{
	const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, k);

	assert_non_null(v);
	return v->valuedouble;
}

/* The string at key k, "" when missing or not a string. */
static inline const char *str(const cJSON *o, const char *k)
{
	const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, k);

	return cJSON_IsString(v) ? v->valuestring : "";
}

#endif /* TTFTRACE_TESTS_CJSON_FIELDS_H */
