// SPDX-License-Identifier: GPL-2.0-only
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include "user/cmd/cli.h"
#include "user/cmd/subcmd.h"

int subcmd__parse_int(const char *s, int min, int max, int *out)
{
	char *end;
	long v;

	errno = 0;
	v = strtol(s, &end, 10);
	if (errno || end == s || *end || v < min || v > max)
		return -EINVAL;
	*out = (int)v;
	return 0;
}

int subcmd__usage_error(const char *cmd, int exit_code, const char *fmt, const char *arg)
{
	fprintf(stderr, "Error: ");
	fprintf(stderr, fmt, arg);
	fprintf(stderr, "\nHINT: see `ttftrace %s --help`\n", cmd);
	return exit_code;
}

void subcmd__usage_fail(const char *prog, const char *fmt, ...)
{
	va_list ap;

	fputs("Error: ", stderr);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fprintf(stderr, "\nHINT: see `%s --help`\n", prog);
	exit(TTF_EXIT_USAGE);
}
