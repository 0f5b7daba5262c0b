/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * A cJSON tree printed unformatted, byte for byte as cJSON_PrintUnformatted
 * (cJSON 1.7.x print_value) prints it, into a buffer the caller keeps between
 * lines: no allocation per line, and numbers with a short decimal form (at
 * most 4 decimals, under 1e11: the ms values of the NDJSON lines) are
 * written without printf/sscanf ("%1.15g" prints such a number as exactly
 * that decimal, and it reads back). Every other number (-0, NaN, long
 * fractions, large values) is printed by the linked cJSON itself, so the
 * bytes never differ.
 */
#ifndef TTFTRACE_JSON_PRINT_H
#define TTFTRACE_JSON_PRINT_H

#include <stddef.h>
#include <cjson/cJSON.h>

struct json_buf {
	char *p;
	size_t len, cap; /* bytes used / allocated */
};

/*
 * Append item to b (b->len grows; b->p stays NUL-terminated). Returns 0,
 * -ENOMEM, or -EINVAL for what cJSON would refuse to print too (a raw item
 * without text, an invalid type, a number longer than cJSON's 25 bytes).
 * On error b->len is back where it was.
 */
int json_print__append(struct json_buf *b, const cJSON *item);

/*
 * Format one cJSON_Number item as cJSON prints it into out (at least 26
 * bytes, NUL-terminated); returns its length, -ENOMEM, or -EINVAL past 25 bytes.
 */
int json_print__number(char *out, const cJSON *item);

void json_buf__free(struct json_buf *b);

/*
 * cJSON_Add*ToObject with the key not copied (cJSON_AddItemToObjectCS): k
 * must outlive o (a literal or a static name table). One allocation per
 * member instead of two. Each returns the new item, or NULL (nothing added)
 * when o is NULL or memory ran out.
 */
cJSON *json_add__item(cJSON *o, const char *k, cJSON *item);
#define json_add__num(o, k, v) json_add__item(o, k, cJSON_CreateNumber(v))
#define json_add__null(o, k) json_add__item(o, k, cJSON_CreateNull())
#define json_add__bool(o, k, b) json_add__item(o, k, cJSON_CreateBool(b))
#define json_add__str(o, k, s) json_add__item(o, k, cJSON_CreateString(s))
#define json_add__raw(o, k, s) json_add__item(o, k, cJSON_CreateRaw(s))
#define json_add__obj(o, k) json_add__item(o, k, cJSON_CreateObject())
#define json_add__arr(o, k) json_add__item(o, k, cJSON_CreateArray())

#endif /* TTFTRACE_JSON_PRINT_H */
