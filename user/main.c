// SPDX-License-Identifier: GPL-2.0-only
/*
 * ttftrace: why was this request's first token late?
 * Dispatches subcommands; the default is the tracer (user/cmd/trace.c).
 */
#include <string.h>
#include "user/cmd/cli.h"
#include "user/hw/copybw.h"
#include "user/export/html_report.h"
#include "user/lib/log.h"
#include "user/hw/pcie.h"
#include "user/cmd/replay.h"
#include "user/cmd/trace.h"

int main(int argc, char **argv)
{
	struct ttf_opts opts;

	if (argc > 1 && !strcmp(argv[1], "pcie"))
		return pcie_main(argc - 1, argv + 1);
	if (argc > 1 && !strcmp(argv[1], "copybw"))
		return copybw_main(argc - 1, argv + 1);
	if (argc > 1 && !strcmp(argv[1], "replay"))
		return replay_main(argc - 1, argv + 1);
	if (argc > 1 && !strcmp(argv[1], "report"))
		return report_main(argc - 1, argv + 1);
	trace__catch_signals();
	cli__parse(argc, argv, &opts);
	ttf_verbosity = opts.verbose;
	return trace__run(&opts);
}
