// SPDX-License-Identifier: GPL-2.0-only
/* W3C traceparent header values (traceparent.h). */
#include <errno.h>
#include <string.h>
#include "user/proto/traceparent.h"

static int hexval(char c)
{
	if (c >= '0' && c <= '9')
		return c - '0';
	if (c >= 'a' && c <= 'f')
		return c - 'a' + 10;
	return -1;	/* upper case is invalid too */
}

/* n hex digits -> n/2 bytes; false on a non-hex digit */
static bool hex(const char *s, size_t n, uint8_t *out)
{
	for (size_t i = 0; i < n; i += 2) {
		int hi = hexval(s[i]), lo = hexval(s[i + 1]);

		if (hi < 0 || lo < 0)
			return false;
		out[i / 2] = (uint8_t)(hi << 4 | lo);
	}
	return true;
}

static bool all_zero(const uint8_t *b, size_t n)
{
	for (size_t i = 0; i < n; i++)
		if (b[i])
			return false;
	return true;
}

int ttf_traceparent__parse(const char *v, size_t n, struct ttf_trace_parent *out)
{
	struct ttf_trace_parent tp = { 0 };
	uint8_t ver;

	memset(out, 0, sizeof(*out));
	/* 00-<32>-<16>-<2>: 55 characters */
	if (n < 55 || v[2] != '-' || v[35] != '-' || v[52] != '-')
		return -EINVAL;
	if (!hex(v, 2, &ver) || ver == 0xff)
		return -EINVAL;
	if (ver == 0 ? n != 55 : n > 55 && v[55] != '-')
		return -EINVAL;
	if (!hex(v + 3, 32, tp.trace_id) || !hex(v + 36, 16, tp.span_id) ||
	    !hex(v + 53, 2, &tp.flags))
		return -EINVAL;
	if (all_zero(tp.trace_id, 16) || all_zero(tp.span_id, 8))
		return -EINVAL;
	tp.valid = true;
	*out = tp;
	return 0;
}
