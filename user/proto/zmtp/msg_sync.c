// SPDX-License-Identifier: GPL-2.0-only
/* Message framing found from a record's first byte (msg_sync.h). */
#include <errno.h>
#include <string.h>
#include "user/proto/zmtp/msg_sync.h"
#include "user/proto/zmtp/zmtp_pickle.h"
#include "user/proto/zmtp/zmtp.h"

#define F_MORE 0x01
#define F_LONG 0x02
#define F_COMMAND 0x04
#define F_RESERVED 0xf8
#define NAME_MAX_BYTES 31

static const char *const names[MSG_FRAMING__N] = { "zmtp", "len32be", "len32le" };

const char *msg_framing_name(enum msg_framing f)
{
	return f < MSG_FRAMING__N ? names[f] : "?";
}

bool msg_sync__tls_record(const unsigned char *b, size_t len)
{
	return len >= 3 && b[0] >= 0x14 && b[0] <= 0x17 && b[1] == 0x03 && b[2] <= 0x04;
}

struct found {
	bool id;
};

static void found_str(void *ctx, const char *s, size_t n)
{
	struct found *f = ctx;

	if (zmtp_id_like(s, n))
		f->id = true;
}

/* Does a ZMTP message body (captured prefix b[0 .. n) of size bytes) hold an id in msgpack? */
static bool zmtp_body_id(const unsigned char *b, size_t n, uint64_t size)
{
	struct found f = { false };
	long end;

	if (!n || !((b[0] >= 0x80 && b[0] <= 0x9f) || (b[0] >= 0xdc && b[0] <= 0xdf)))
		return false;	/* no map or array */
	end = zmtp_msgpack_value(b, n, size);
	if (end < 0 || (end > 0 && (uint64_t)end != size))
		return false;
	zmtp_msgpack_strs(b, n, found_str, &f);
	return f.id;
}

/* Is the ZMTP message body b[0 .. size), captured whole, one msgpack map or array or one pickle? */
static bool zmtp_body_value(const unsigned char *b, uint64_t size)
{
	if (size >= 3 && zmtp_is_pickle(b, (size_t)size))
		return b[size - 1] == '.';	/* STOP */
	if (!size || !((b[0] >= 0x80 && b[0] <= 0x9f) || (b[0] >= 0xdc && b[0] <= 0xdf)))
		return false;
	return zmtp_msgpack_value(b, (size_t)size, size) == (long)size;
}

static bool len32_body_id(const unsigned char *b, size_t n)
{
	struct found f = { false };

	zmtp_ids_scan(b, n, found_str, &f);
	return f.id;
}

/* A command frame's body b[0 .. n) (captured) starts with a name of capital letters? */
static bool command_ok(const unsigned char *b, size_t n)
{
	if (!n)
		return true;	/* not captured: cannot tell */
	if (!b[0] || b[0] > NAME_MAX_BYTES)
		return false;
	for (size_t i = 1; i < n && i <= b[0]; i++)
		if (b[i] < 'A' || b[i] > 'Z')
			return false;
	return true;
}

int msg_sync__check(enum msg_framing f, const unsigned char *b, size_t len, uint64_t total,
		    struct msg_sync *out)
{
	uint64_t end = total ? total : len, i = 0;
	unsigned int values = 0;	/* message frames whose body is one whole value */

	memset(out, 0, sizeof(*out));
	if (total && total < len)
		return -EINVAL;
	out->values = f == MSG_FRAMING_ZMTP;
	while (i < end) {
		uint64_t size = 0, hdr;
		uint8_t flags = 0;
		size_t cap;

		if (f == MSG_FRAMING_ZMTP) {
			if (i >= len) {
				out->cut = true;	/* a header not captured */
				return 0;
			}
			flags = b[i];
			if (flags & F_RESERVED)
				return -EINVAL;
			hdr = flags & F_LONG ? 9 : 2;
		} else {
			hdr = 4;
		}
		if (i + hdr > len) {
			out->cut = true;
			return 0;
		}
		if (f == MSG_FRAMING_ZMTP) {
			for (unsigned int k = 1; k < hdr; k++)
				size = size << 8 | b[i + k];
			if ((flags & F_LONG) && (size <= 255 || size >> 32))
				return -EINVAL;
		} else {
			for (unsigned int k = 0; k < 4; k++)
				size |= (uint64_t)b[i + (f == MSG_FRAMING_LEN32BE ? 3 - k : k)] << (8 * k);
			if (!size || size >= MSG_SYNC_LEN32_MAX_BYTES)
				return -EINVAL;
		}
		i += hdr;
		cap = i >= len ? 0 : len - i < size ? len - (size_t)i : (size_t)size;
		if (f == MSG_FRAMING_ZMTP && (flags & F_COMMAND)) {
			if (!command_ok(b + i, cap))
				return -EINVAL;
		} else {
			if (!out->id)
				out->id = f == MSG_FRAMING_ZMTP ? zmtp_body_id(b + i, cap, size)
								: len32_body_id(b + i, cap);
			if (cap == size && zmtp_body_value(b + i, size))
				values++;
			else if (cap < size || size > MSG_SYNC_SMALL_FRAME_BYTES)
				out->values = false;
		}
		if (size > end - i || (!total && size > len - i)) {
			out->cut = true;
			return 0;
		}
		i += size;
		out->frames++;
	}
	out->tiled = true;
	out->values = out->values && values;
	return 0;
}
