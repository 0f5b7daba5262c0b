// SPDX-License-Identifier: GPL-2.0-only
#include <argp.h>
#include <errno.h>
#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/stat.h>
#include <unistd.h>
#include "user/cmd/subcmd.h"
#include "user/lib/exit.h"

/* Returned by a parser that has printed its error (and by --help): stops argp. */
#define SUBCMD_STOP ECANCELED

int subcmd__same_file(const char *a, const char *b)
{
	struct stat sa, sb;

	return a && b && !stat(a, &sa) && !stat(b, &sb) && sa.st_dev == sb.st_dev &&
	       sa.st_ino == sb.st_ino;
}

/* The path of a file that may not exist yet: its directory resolved, then its name. */
static void canonical(const char *path, char *out, size_t len)
{
	char dir[PATH_MAX], real[PATH_MAX];
	const char *slash = strrchr(path, '/');

	snprintf(dir, sizeof(dir), "%.*s", slash ? (int)(slash - path) + 1 : 1, slash ? path : ".");
	if (!realpath(dir, real))
		snprintf(real, sizeof(real), "%s", dir);
	snprintf(out, len, "%s/%s", real, slash ? slash + 1 : path);
}

int subcmd__same_output(const char *a, const char *b)
{
	char ca[2 * PATH_MAX], cb[2 * PATH_MAX];
	struct stat sa, sb;

	if (!a || !b)
		return 0;
	if (!stat(a, &sa) && !stat(b, &sb))
		return sa.st_dev == sb.st_dev && sa.st_ino == sb.st_ino && !S_ISCHR(sa.st_mode);
	canonical(a, ca, sizeof(ca));
	canonical(b, cb, sizeof(cb));
	return !strcmp(ca, cb);
}

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

error_t subcmd__bad(const char *fmt, ...)
{
	va_list ap;

	fputs("Error: ", stderr);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputc('\n', stderr);
	return SUBCMD_STOP;
}

void subcmd__help(const struct argp *argp, unsigned flags, const char *prog)
{
	const char *fmt = getenv("ARGP_HELP_FMT"), *cols = getenv("COLUMNS");
	struct winsize ws;
	long width = 0;
	char buf[256];

	if (cols && *cols)
		width = strtol(cols, NULL, 10);
	else if (isatty(STDOUT_FILENO) && !ioctl(STDOUT_FILENO, TIOCGWINSZ, &ws))
		width = ws.ws_col;
	/* glibc's argp reads its layout from ARGP_HELP_FMT at the first help it prints */
	if (width >= 40 && width <= 1000 && !(fmt && strstr(fmt, "rmargin"))) {
		snprintf(buf, sizeof(buf), "%s%srmargin=%ld", fmt && *fmt ? fmt : "",
			 fmt && *fmt ? "," : "", width - 1);
		setenv("ARGP_HELP_FMT", buf, 1);
	}
	argp_help(argp, stdout, flags, (char *)prog);
}

struct subcmd_ctx {
	void *input;		/* the subcommand parser's */
	int help;		/* --help seen */
	int err_next;		/* argp's state->next when parsing failed */
};

static const struct argp_option help_options[] = {
	{ "help", 'h', NULL, 0, "Show this help", -1 },
	{},
};

/* The parent of the subcommand's argp: --help, and where an error stopped argp. */
static error_t help_parse(int key, char *arg, struct argp_state *state)
{
	struct subcmd_ctx *c = state->input;

	(void)arg;
	switch (key) {
	case ARGP_KEY_INIT:
		state->child_inputs[0] = c->input;
		return 0;
	case 'h':
		c->help = 1;
		return SUBCMD_STOP;
	case ARGP_KEY_ERROR:
		c->err_next = state->next;
		return 0;
	default:
		return ARGP_ERR_UNKNOWN;
	}
}

int subcmd__parse(const struct argp *argp, const char *prog, int argc, char **argv,
		  void *input)
{
	const struct argp_child children[] = { { argp, 0, NULL, 0 }, {} };
	const struct argp root = { help_options, help_parse, NULL, NULL, children, NULL, NULL };
	struct subcmd_ctx c = { .input = input };
	error_t err;

	/* argp's own messages and exits are off: errors read "Error: ..." and return */
	err = argp_parse(&root, argc, argv, ARGP_NO_ERRS | ARGP_NO_EXIT | ARGP_NO_HELP, NULL, &c);
	if (c.help) {
		subcmd__help(&root, ARGP_HELP_STD_HELP & ~ARGP_HELP_EXIT_OK, prog);
		return -1;
	}
	if (!err)
		return 0;
	if (err != SUBCMD_STOP)
		fprintf(stderr, "Error: unknown or incomplete option '%s'\n",
			c.err_next > 0 && c.err_next <= argc ? argv[c.err_next - 1] : "?");
	fprintf(stderr, "HINT: see `%s --help`\n", prog);
	return TTF_EXIT_USAGE;
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
