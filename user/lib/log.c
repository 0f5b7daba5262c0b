// SPDX-License-Identifier: GPL-2.0-only
#include <stdio.h>
#include <bpf/libbpf.h>
#include "user/lib/log.h"

int ttf_verbosity;

static void vprint(const char *prefix, const char *fmt, va_list ap)
{
	fputs(prefix, stderr);
	vfprintf(stderr, fmt, ap);
	fputc('\n', stderr);
}

void ttf_error(const char *hint, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vprint("Error: ", fmt, ap);
	va_end(ap);
	if (hint)
		fprintf(stderr, "HINT: %s\n", hint);
}

void ttf_warn(const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vprint("Warning: ", fmt, ap);
	va_end(ap);
}

void ttf_info(const char *fmt, ...)
{
	va_list ap;

	if (ttf_verbosity < 1)
		return;
	va_start(ap, fmt);
	vprint("", fmt, ap);
	va_end(ap);
}

void ttf_debug(const char *fmt, ...)
{
	va_list ap;

	if (ttf_verbosity < 2)
		return;
	va_start(ap, fmt);
	vprint("debug: ", fmt, ap);
	va_end(ap);
}

int ttf_libbpf_print(enum libbpf_print_level level, const char *fmt, va_list ap)
{
	if (level == LIBBPF_DEBUG && ttf_verbosity < 3)
		return 0;
	if (level == LIBBPF_INFO && ttf_verbosity < 2)
		return 0;
	return vfprintf(stderr, fmt, ap);
}
