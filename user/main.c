// SPDX-License-Identifier: GPL-2.0-only
/*
 * ttftrace: why was this request's first token late?
 * Dispatches subcommands; the default is the tracer (user/trace.c).
 */
#include <string.h>
#include "user/cli.h"
#include "user/log.h"
#include "user/trace.h"

int main(int argc, char **argv)
{
	struct ttf_opts opts;

	cli__parse(argc, argv, &opts);
	ttf_verbosity = opts.verbose;
	return trace__run(&opts);
}
