// SPDX-License-Identifier: GPL-2.0-only
#include <string.h>
#include "user/proto/stream/body_model.h"

void body_model__reset(struct body_model *m)
{
	m->len = 0;
	m->done = 0;
}

static int is_ws(char c)
{
	return c == ' ' || c == '\t' || c == '\r' || c == '\n';
}

/*
 * In buf[0..len): "model" ws* ':' ws* '"' name '"'. Returns 1 found, 0 need
 * more bytes, -1 not there (a "model" key with no string value).
 */
static int parse_at(const char *p, size_t len, char out[BODY_MODEL_MAX])
{
	size_t i = 7, k = 0;	/* past "model" with its quotes */

	while (i < len && is_ws(p[i]))
		i++;
	if (i == len)
		return 0;
	if (p[i++] != ':')
		return -1;
	while (i < len && is_ws(p[i]))
		i++;
	if (i == len)
		return 0;
	if (p[i++] != '"')
		return -1;
	for (; i < len; i++) {
		char c = p[i];

		if (c == '"') {
			out[k] = '\0';
			return 1;
		}
		if (c == '\\')
			return -1;	/* escapes: not a plain model name */
		if (k < BODY_MODEL_MAX - 1)
			out[k++] = c >= 0x20 && c < 0x7f ? c : '?';
	}
	return 0;
}

int body_model__feed(struct body_model *m, const char *data, size_t len,
		     char out[BODY_MODEL_MAX])
{
	size_t n = len < sizeof(m->buf) - m->len ? len : sizeof(m->buf) - m->len;
	const char *p, *end;

	if (m->done)
		return 0;
	memcpy(m->buf + m->len, data, n);
	m->len += n;
	end = m->buf + m->len;
	for (p = m->buf; (p = memmem(p, end - p, "\"model\"", 7)); p++) {
		int r = parse_at(p, end - p, out);

		if (r == 1) {
			m->done = 1;
			return 1;
		}
		if (r == 0 && m->len < sizeof(m->buf))
			return 0;	/* the value may come in the next piece */
	}
	if (m->len == sizeof(m->buf))
		m->done = 1;		/* not in the scanned prefix */
	return 0;
}
