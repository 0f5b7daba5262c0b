/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * The subcommands' entry points (the table in user/main.c), and argument
 * helpers shared by the command-line parsers (tracer and subcommands).
 */
#ifndef TTFTRACE_SUBCMD_H
#define TTFTRACE_SUBCMD_H

#include <argp.h>

/*
 * `ttftrace NAME ARGS...` runs NAME_main(argc - 1, argv + 1): argv[0] is the
 * subcommand's name. Each returns an enum ttf_exit code (user/lib/exit.h),
 * as documented in its --help.
 */
int pcie_main(int argc, char **argv);		/* PCIe link audit (pcie_cmd.c) */
int copybw_main(int argc, char **argv);		/* copy bandwidth (copybw_cmd.c) */
int replay_main(int argc, char **argv);		/* a --record FILE again (replay_cmd.c) */
int report_main(int argc, char **argv);		/* HTML report of a --json run (report_cmd.c) */
int gpu_attach_main(int argc, char **argv);	/* add the CUPTI collector (gpu_attach_cmd.c) */

/*
 * One example for the part of an argp doc after \v: the command line on a
 * line of its own, what it does indented below it. argp wraps doc text only
 * at a line's end, so a command line shorter than the help width is never
 * broken, and a description too long for a narrow terminal is wrapped as
 * prose, never into the command. Keep each line of both under 78 columns.
 */
#define SUBCMD_EXAMPLE(cmd, what) "  " cmd "\n      " what "\n"

/*
 * argp_help() on stdout at the terminal's width: $COLUMNS, else the width of
 * stdout when it is a terminal, else argp's default (79), unless
 * $ARGP_HELP_FMT sets rmargin itself. No line is wider than that width.
 */
void subcmd__help(const struct argp *argp, unsigned flags, const char *prog);

/* Decimal integer in [min, max] into *out. Returns 0 or -EINVAL. */
int subcmd__parse_int(const char *s, int min, int max, int *out);

/*
 * Parse a subcommand's argv (argv[0] the subcommand's name) with argp: the
 * options of *argp plus -h/--help, which prints the help ("Usage: <prog> ...",
 * then argp's doc; the part after \v holds EXIT STATUS and EXAMPLES) on
 * stdout. argp's parser reports a bad value or argument with subcmd__bad().
 * Returns 0 to go on; -1 after --help (the command exits TTF_EXIT_OK); or
 * TTF_EXIT_USAGE after "Error: ..." (subcmd__bad's, or "unknown or incomplete
 * option" for what getopt rejects) and "HINT: see `<prog> --help`" on stderr.
 * Never exits, so tests can run a subcommand in-process.
 */
int subcmd__parse(const struct argp *argp, const char *prog, int argc, char **argv,
		  void *input);

/*
 * For the argp parser of subcmd__parse: "Error: <printf fmt>" on stderr;
 * returns the error for the parser to return (subcmd__parse adds the HINT).
 */
error_t subcmd__bad(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

/*
 * For the tracer's argp parser (user/cmd/cli.c): "Error: <printf fmt>" and
 * "HINT: see `<prog> --help`" on stderr, then exit(TTF_EXIT_USAGE).
 */
void subcmd__usage_fail(const char *prog, const char *fmt, ...)
	__attribute__((noreturn, format(printf, 2, 3)));

/* 1 when paths a and b both exist and are the same file (an input named as the output). */
int subcmd__same_file(const char *a, const char *b);

/*
 * 1 when output paths a and b name the same file, created or not (its
 * directory resolved); a character device (/dev/null) may be shared.
 */
int subcmd__same_output(const char *a, const char *b);

#endif /* TTFTRACE_SUBCMD_H */
