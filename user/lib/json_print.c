// SPDX-License-Identifier: GPL-2.0-only
/* cJSON_PrintUnformatted's bytes into a kept buffer (json_print.h). */
#include <errno.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "user/lib/json_print.h"

static int reserve(struct json_buf *b, size_t more)
{
	size_t need = b->len + more + 1, cap = b->cap ? b->cap : 1024;
	char *p;

	if (need <= b->cap)
		return 0;
	while (cap < need)
		cap *= 2;
	p = realloc(b->p, cap);
	if (!p)
		return -ENOMEM;
	b->p = p;
	b->cap = cap;
	return 0;
}

static inline int put(struct json_buf *b, const char *s, size_t n)
{
	if (b->len + n + 1 > b->cap && reserve(b, n))
		return -ENOMEM;
	memcpy(b->p + b->len, s, n);
	b->len += n;
	b->p[b->len] = '\0';
	return 0;
}

/* Digits of v (v >= 0) at out; returns their count. */
static int utoa(char *out, uint64_t v)
{
	char tmp[20];
	int n = 0, i;

	do {
		tmp[n++] = (char)('0' + v % 10);
		v /= 10;
	} while (v);
	for (i = 0; i < n; i++)
		out[i] = tmp[n - 1 - i];
	return n;
}

/*
 * d == k / 10^4 for an integer k with |k| < 1e15 and |d| >= 1e-4: d is the
 * double nearest that decimal (IEEE division rounds correctly, and k and
 * 10^4 are exact), which has at most 15 significant digits and a decimal
 * exponent in [-4, 15), so "%1.15g" prints exactly that decimal without
 * trailing zeros, and it reads back as d. So is +0 ("0" in every cJSON).
 * Returns the length, or 0 when d is not such a number.
 */
static int short_decimal(char *out, double d)
{
	double a = fabs(d), k;
	uint64_t u, ip, fp;
	int n = 0, i;
	char frac[4];

	if (d == 0 && !signbit(d)) {
		out[0] = '0';	/* -0 is left to cJSON (1.7.15 prints "-0") */
		return 1;
	}
	if (!(a >= 1e-4 && a < 1e11))
		return 0;
	k = nearbyint(a * 1e4);
	if (k / 1e4 != a)
		return 0;
	u = (uint64_t)k;
	ip = u / 10000;
	fp = u % 10000;
	if (d < 0)
		out[n++] = '-';
	n += utoa(out + n, ip);
	if (!fp)
		return n;
	for (i = 3; i >= 0; i--) {
		frac[i] = (char)('0' + fp % 10);
		fp /= 10;
	}
	out[n++] = '.';
	for (i = 3; i > 0 && frac[i] == '0'; i--)
		;
	memcpy(out + n, frac, (size_t)i + 1);
	return n + i + 1;
}

int json_print__number(char *out, const cJSON *item)
{
	char *s;
	size_t n;
	int len = short_decimal(out, item->valuedouble);

	if (len) {
		out[len] = '\0';
		return len;
	}
	/*
	 * The rest as the linked cJSON prints it: versions differ (1.7.15 prints
	 * -0 and every integer by "%1.15g", later ones an int by "%d").
	 */
	s = cJSON_PrintUnformatted(item);
	if (!s)
		return -ENOMEM;
	n = strlen(s);
	if (n > 25) {
		cJSON_free(s);
		return -EINVAL;
	}
	memcpy(out, s, n + 1);
	cJSON_free(s);
	return (int)n;
}

/* cJSON's print_string_ptr: " \ and the C escapes by two bytes, other controls \u00XX. */
static int print_string(struct json_buf *b, const char *s)
{
	const unsigned char *p = (const unsigned char *)(s ? s : "");
	size_t run;

	if (put(b, "\"", 1))
		return -ENOMEM;
	while (*p) {
		char esc[7];
		int n = 2;

		for (run = 0; p[run] >= 32 && p[run] != '"' && p[run] != '\\'; run++)
			;
		if (run && put(b, (const char *)p, run))
			return -ENOMEM;
		p += run;
		if (!*p)
			break;
		esc[0] = '\\';
		switch (*p) {
		case '"': esc[1] = '"'; break;
		case '\\': esc[1] = '\\'; break;
		case '\b': esc[1] = 'b'; break;
		case '\f': esc[1] = 'f'; break;
		case '\n': esc[1] = 'n'; break;
		case '\r': esc[1] = 'r'; break;
		case '\t': esc[1] = 't'; break;
		default:
			n = snprintf(esc + 1, sizeof(esc) - 1, "u%04x", *p) + 1;
		}
		if (put(b, esc, (size_t)n))
			return -ENOMEM;
		p++;
	}
	return put(b, "\"", 1);
}

static int print_value(struct json_buf *b, const cJSON *it)
{
	char num[26];
	int n;

	switch (it->type & 0xFF) {
	case cJSON_NULL:
		return put(b, "null", 4);
	case cJSON_False:
		return put(b, "false", 5);
	case cJSON_True:
		return put(b, "true", 4);
	case cJSON_Number:
		n = json_print__number(num, it);
		return n < 0 ? n : put(b, num, (size_t)n);
	case cJSON_Raw:
		return it->valuestring ? put(b, it->valuestring, strlen(it->valuestring)) : -EINVAL;
	case cJSON_String:
		return print_string(b, it->valuestring);
	case cJSON_Array:
	case cJSON_Object: {
		int obj = (it->type & 0xFF) == cJSON_Object, err;
		const cJSON *c;

		if (put(b, obj ? "{" : "[", 1))
			return -ENOMEM;
		for (c = it->child; c; c = c->next) {
			if (c != it->child && put(b, ",", 1))
				return -ENOMEM;
			if (obj && (print_string(b, c->string) || put(b, ":", 1)))
				return -ENOMEM;
			err = print_value(b, c);
			if (err)
				return err;
		}
		return put(b, obj ? "}" : "]", 1);
	}
	default:
		return -EINVAL;
	}
}

int json_print__append(struct json_buf *b, const cJSON *item)
{
	size_t at = b->len;
	int err = item ? print_value(b, item) : -EINVAL;

	if (err) {
		b->len = at;
		if (b->p)
			b->p[at] = '\0';
	}
	return err;
}

cJSON *json_add__item(cJSON *o, const char *k, cJSON *item)
{
	if (!o || !item || !cJSON_AddItemToObjectCS(o, k, item)) {
		cJSON_Delete(item);
		return NULL;
	}
	return item;
}

void json_buf__free(struct json_buf *b)
{
	free(b->p);
	b->p = NULL;
	b->len = b->cap = 0;
}
