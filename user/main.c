// SPDX-License-Identifier: GPL-2.0-only
/*
 * ttftrace: why was this request's first token late?
 * Dispatches subcommands; the default is the tracer (user/cmd/trace.c).
 */
#include <string.h>
#include "user/cmd/cli.h"
#include "user/cmd/subcmd.h"
#include "user/cmd/trace.h"
#include "user/lib/log.h"

/*
 * The subcommands: an exact name as the first word runs it; anything else is
 * the tracer's command line (it takes options, so no other word dispatches).
 * The tracer's --help lists this table.
 */
static const struct ttf_subcmd subcmds[] = {
	{ "pcie", pcie_main, "[OPTIONS]", "PCIe link audit of NVIDIA GPUs" },
	{ "copybw", copybw_main, "[OPTIONS]", "host<->device copy bandwidth" },
	{ "replay", replay_main, "FILE [--json] [-o OUT]", "run a --record FILE again, no root" },
	{ "report", report_main, "RUN.ndjson [-o report.html]", "HTML report of a --json run" },
	{ "gpu-attach", gpu_attach_main, "-p PID [OPTIONS]", "add the CUPTI collector, no restart" },
};

#define N_SUBCMDS ((int)(sizeof(subcmds) / sizeof(subcmds[0])))

int main(int argc, char **argv)
{
	struct ttf_opts opts;

	for (int i = 0; argc > 1 && i < N_SUBCMDS; i++)
		if (!strcmp(argv[1], subcmds[i].name))
			return subcmds[i].main(argc - 1, argv + 1);
	trace__catch_signals();
	cli__parse(argc, argv, &opts, subcmds, N_SUBCMDS);
	ttf_verbosity = opts.verbose;
	return trace__run(&opts);
}
