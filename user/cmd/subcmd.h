/* SPDX-License-Identifier: GPL-2.0-only */
/* Argument helpers shared by the command-line parsers (tracer and subcommands). */
#ifndef TTFTRACE_SUBCMD_H
#define TTFTRACE_SUBCMD_H

/* Decimal integer in [min, max] into *out. Returns 0 or -EINVAL. */
int subcmd__parse_int(const char *s, int min, int max, int *out);

/*
 * "Error: <fmt with arg>" and "HINT: see `ttftrace <cmd> --help`" on stderr;
 * returns exit_code for the caller to return.
 */
int subcmd__usage_error(const char *cmd, int exit_code, const char *fmt, const char *arg);

/*
 * For argp parsers: "Error: <printf fmt>" and "HINT: see `<prog> --help`" on
 * stderr, then exit(2) (TTF_EXIT_USAGE). prog: "ttftrace", "ttftrace replay".
 */
void subcmd__usage_fail(const char *prog, const char *fmt, ...)
	__attribute__((noreturn, format(printf, 2, 3)));

#endif /* TTFTRACE_SUBCMD_H */
