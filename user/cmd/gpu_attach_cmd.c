// SPDX-License-Identifier: GPL-2.0-only
/*
 * `ttftrace gpu-attach -p PID`: load the CUPTI collector into a running CUDA
 * process without a restart (docs/cupti.md A9), and print what the collector
 * reports back from inside it.
 */
#include <argp.h>
#include <errno.h>
#include <limits.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "cupti/gpu_wire.h"
#include "user/cmd/gpu_attach.h"
#include "user/cmd/subcmd.h"
#include "user/lib/exit.h"
#include "user/lib/install_paths.h"
#include "user/probe/gpu_rx.h"

#define WAIT_DEFAULT_MS 5000

static const char gpu_attach_doc[] =
"Load the CUPTI collector (" GPU_ATTACH_LIB_NAME ") into a running process, without a "
"restart: ptrace holds one thread that is blocked in a system call, makes it call dlopen() "
"and the collector's entry, restores it and detaches. The collector then looks for an "
"initialised CUDA context, enables CUPTI activity, and reports what it found to the tracer's "
"socket; this command listens there (unless a tracer does) and prints the report. It refuses, "
"touching nothing, when ptrace is not allowed, the collector is loaded already, or the "
"process's libc has no dlopen(). What it does to the process: docs/cupti.md A9."
"\v"
"EXAMPLES:\n"
SUBCMD_EXAMPLE("ttftrace gpu-attach -p $(pidof python3)",
	       "Attach, print the collector's report")
SUBCMD_EXAMPLE("ttftrace -p 1234 --gpu-attach",
	       "The same, then trace PID 1234")
SUBCMD_EXAMPLE("ttftrace gpu-attach -p 1234 --lib /opt/ttftrace/" GPU_ATTACH_LIB_NAME,
	       "A collector library elsewhere")
SUBCMD_EXAMPLE("TTFTRACE_CUPTI_SOCK=/run/ttf.sock ttftrace gpu-attach -p 1234",
	       "Report to a path socket")
"\n"
"EXIT STATUS:\n"
"  0   attached; CUPTI activity enabled (or no report: a tracer listens)\n"
"  2   bad command line, or no collector library\n"
"  5   no such process\n"
"  6   attached, but the library did not load or CUPTI could not be enabled\n"
"      (the thread restored)\n"
"  7   the process exited during the attach\n"
"  9   internal error\n"
"  12  attached: the collector found no CUDA in the process\n"
"  14  refused: ptrace not allowed (Yama ptrace_scope, another user, no\n"
"      CAP_SYS_PTRACE, a container), the collector loaded already, no dlopen()\n"
"      in its libc, the process traced already or stopped, or no thread\n"
"      blocked in a system call";

enum { OPT_LIB = 0x100, OPT_SOCK, OPT_TIMEOUT, OPT_WAIT };

static const struct argp_option gpu_attach_options[] = {
	{ "pid", 'p', "PID", 0, "The process to attach to (required)", 0 },
	{ "lib", OPT_LIB, "PATH", 0, "The collector library (default: " GPU_ATTACH_LIB_NAME
	  " in ttftrace's .output/, next to it, or in " TTF_LIB_DIR_FROM_BIN " from it, "
	  "else " TTF_LIB_DIR ")", 0 },
	{ "sock", OPT_SOCK, "NAME", 0, "Socket the collector reports to: @name (abstract) or a "
	  "path (default $TTFTRACE_CUPTI_SOCK, else " TTF_GPU_SOCK_DEFAULT ")", 0 },
	{ "timeout-ms", OPT_TIMEOUT, "MS", 0, "Longest the process's thread may take to stop, "
	  "and each call in it (default 3000)", 0 },
	{ "wait-ms", OPT_WAIT, "MS", 0, "How long to wait for the collector's report (default "
	  "5000; 0: do not wait)", 0 },
	{},
};

struct gpu_attach_args {
	int pid;
	const char *lib;
	const char *sock;
	int timeout_ms;
	int wait_ms;
};

static error_t gpu_attach_parse_opt(int key, char *arg, struct argp_state *state)
{
	struct gpu_attach_args *a = state->input;

	switch (key) {
	case 'p':
		if (subcmd__parse_int(arg, 1, 1 << 30, &a->pid))
			return subcmd__bad("bad --pid '%s'", arg);
		break;
	case OPT_LIB:
		a->lib = arg;
		break;
	case OPT_SOCK:
		if (!*arg || strlen(arg) >= 108)
			return subcmd__bad("bad --sock '%s' (@name or a path, < 108 bytes)", arg);
		a->sock = arg;
		break;
	case OPT_TIMEOUT:
		if (subcmd__parse_int(arg, 10, 60000, &a->timeout_ms))
			return subcmd__bad("bad --timeout-ms '%s' (10..60000)", arg);
		break;
	case OPT_WAIT:
		if (subcmd__parse_int(arg, 0, 600000, &a->wait_ms))
			return subcmd__bad("bad --wait-ms '%s' (0..600000)", arg);
		break;
	case ARGP_KEY_ARG:
		return subcmd__bad("unexpected argument '%s'", arg);
	case ARGP_KEY_END:
		if (!a->pid)
			return subcmd__bad("give the process: -p PID");
		break;
	default:
		return ARGP_ERR_UNKNOWN;
	}
	return 0;
}

struct notice_wait {
	uint32_t pid;
	bool got;
	uint32_t code;
	char text[TTF_GPU_NOTICE_MAX + 1];
};

static void on_notice(void *ctx, uint32_t pid, uint32_t code, const char *text)
{
	struct notice_wait *w = ctx;

	if (pid != w->pid || w->got)
		return;
	w->got = true;
	w->code = code;
	snprintf(w->text, sizeof(w->text), "%s", text);
}

static int ignore_gpu(void *ctx, uint32_t pid, uint32_t kind, const void *body, size_t len)
{
	return 0; /* records of other collectors: not ours to keep */
}

static void wait_notice(struct gpu_rx *rx, struct notice_wait *w, int wait_ms)
{
	const struct ttf_records recs = { .gpu = ignore_gpu };
	struct timespec nap = { 0, 20 * 1000000L };

	for (int waited = 0; !w->got && waited <= wait_ms; waited += 20) {
		gpu_rx__poll(rx, &recs);
		if (!w->got)
			nanosleep(&nap, NULL);
	}
}

int gpu_attach_main(int argc, char **argv)
{
	static const struct argp argp = { gpu_attach_options, gpu_attach_parse_opt, NULL,
					  gpu_attach_doc, NULL, NULL, NULL };
	struct gpu_attach_args a = { .wait_ms = WAIT_DEFAULT_MS };
	struct gpu_attach_opts o = { .out = stdout };
	struct notice_wait w = { 0 };
	struct gpu_rx_opts ro = { .sz = sizeof(ro), .notice = on_notice, .notice_ctx = &w };
	struct gpu_rx *rx = NULL;
	char lib[PATH_MAX];
	int rc;

	rc = subcmd__parse(&argp, "ttftrace gpu-attach", argc, argv, &a);
	if (rc)
		return rc < 0 ? TTF_EXIT_OK : rc;
	/* the target before the library: a wrong PID is the first thing to fix */
	if (kill(a.pid, 0) && errno == ESRCH) {
		fprintf(stderr, "Error: no process %d\nHINT: check the PID with `ps -p PID`\n",
			a.pid);
		return TTF_EXIT_NO_TARGET;
	}
	if (gpu_attach__find_lib(a.lib, lib, sizeof(lib)))
		return TTF_EXIT_USAGE;
	o.lib = lib;
	o.sock = gpu_attach__sock(a.sock);
	o.timeout_ms = a.timeout_ms;
	o.yama_path = getenv("TTFTRACE_YAMA_PTRACE_SCOPE");
	w.pid = (uint32_t)a.pid;
	ro.sock_path = o.sock;
	/* Listen before the attach, so that the report finds us. */
	if (a.wait_ms && !(rx = gpu_rx__new(&ro)) && errno != EADDRINUSE) {
		fprintf(stderr, "Error: cannot listen on %s: %s\n", o.sock, strerror(errno));
		return TTF_EXIT_INTERNAL;
	}
	rc = gpu_attach__run(a.pid, &o);
	if (rc || !a.wait_ms)
		goto out;
	if (!rx) {
		printf("PID %d: a ttftrace tracer listens on %s: the collector reports to it\n",
		       a.pid, o.sock);
		goto out;
	}
	wait_notice(rx, &w, a.wait_ms);
	if (!w.got) {
		printf("PID %d: no report from the collector within %d ms\n", a.pid, a.wait_ms);
		goto out;
	}
	printf("PID %d: GPU: %s\n", a.pid, w.text);
	if (w.code == TTF_GPU_NOTICE_NO_CUDA)
		rc = TTF_EXIT_NO_CUDA;
	else if (w.code != TTF_GPU_NOTICE_ENABLED)
		rc = TTF_EXIT_NOT_ATTACHED;
out:
	gpu_rx__free(rx);
	return rc;
}
