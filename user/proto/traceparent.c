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

	/* the tracestate header may come first: keep it */
	memcpy(tp.state, out->state, sizeof(tp.state));
	tp.state_cut = out->state_cut;
	out->valid = false;
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

/* One list member: key=value, printable ASCII, no blanks around (already trimmed). */
static bool member_ok(const char *m, size_t n)
{
	const char *eq = memchr(m, '=', n);

	if (!eq || eq == m || eq == m + n - 1)
		return false;
	for (size_t i = 0; i < n; i++)
		if (m[i] < 0x20 || m[i] > 0x7e)
			return false;
	return true;
}

void ttf_tracestate__add(struct ttf_trace_parent *tp, const char *v, size_t n)
{
	size_t len = strlen(tp->state);

	for (size_t i = 0; i < n;) {
		size_t j = i, a, b;

		while (j < n && v[j] != ',')
			j++;
		a = i;
		b = j;
		while (a < b && (v[a] == ' ' || v[a] == '\t'))
			a++;
		while (b > a && (v[b - 1] == ' ' || v[b - 1] == '\t'))
			b--;
		i = j + 1;
		if (a == b)
			continue;	/* empty list members are allowed */
		if (!member_ok(v + a, b - a)) {
			tp->state_cut = true;
			continue;
		}
		if (len + (len ? 1 : 0) + (b - a) > TTF_TRACESTATE_MAX) {
			tp->state_cut = true;
			continue;
		}
		if (len)
			tp->state[len++] = ',';
		memcpy(tp->state + len, v + a, b - a);
		len += b - a;
		tp->state[len] = '\0';
	}
}
