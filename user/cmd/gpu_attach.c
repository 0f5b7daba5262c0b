// SPDX-License-Identifier: GPL-2.0-only
/* Load the CUPTI collector into a running process: see gpu_attach.h. */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "cupti/gpu_wire.h"
#include "user/cmd/gpu_attach.h"
#include "user/lib/exit.h"
#include "user/lib/install_paths.h"
#include "user/probe/inject_check.h"
#include "user/probe/inject_lib.h"

/* How long the child that holds ptrace may take beyond its own bounded waits. */
#define CHILD_SLACK_MS 10000

struct child_report {
	int err;
	struct inject_lib_result r;
};

int gpu_attach__search_lib(char *out, size_t len)
{
	char exe[PATH_MAX], cand[PATH_MAX + 64], *slash;
	ssize_t n;

	n = readlink("/proc/self/exe", exe, sizeof(exe) - 1);
	if (n > 0) {
		exe[n] = '\0';
		slash = strrchr(exe, '/');
		if (slash)
			*slash = '\0';
		/* the build tree, next to the binary, an installed tree relative to it */
		static const char *const rel[] = { ".output/", "", TTF_LIB_DIR_FROM_BIN "/" };

		for (int i = 0; i < 3; i++) {
			snprintf(cand, sizeof(cand), "%s/%s%s", exe, rel[i], GPU_ATTACH_LIB_NAME);
			if (!access(cand, R_OK) && realpath(cand, out))
				return 0;
		}
	}
	snprintf(cand, sizeof(cand), "%s/%s", TTF_LIB_DIR, GPU_ATTACH_LIB_NAME);
	if (!access(cand, R_OK) && realpath(cand, out))
		return 0;
	return -ENOENT;
}

int gpu_attach__find_lib(const char *path, char *out, size_t len)
{
	char exe[PATH_MAX];

	if (path) {
		if (!realpath(path, exe) || access(exe, R_OK)) {
			fprintf(stderr, "Error: --lib %s: %s\n", path, strerror(errno));
			fprintf(stderr, "HINT: give the path of %s (`make` builds it in .output/)\n",
				GPU_ATTACH_LIB_NAME);
			return -ENOENT;
		}
		snprintf(out, len, "%s", exe);
		return 0;
	}
	if (!gpu_attach__search_lib(out, len))
		return 0;
	fprintf(stderr, "Error: %s not found next to the ttftrace binary (nor in .output/, "
		TTF_LIB_DIR_FROM_BIN " from it, or " TTF_LIB_DIR ")\n", GPU_ATTACH_LIB_NAME);
	if (gpu_attach__built())
		fprintf(stderr, "HINT: build it with `make`, or give its path with "
			"`ttftrace gpu-attach --lib PATH`\n");
	else
		fprintf(stderr, "HINT: this build found no CUDA headers: build it with "
			"`make CUDA_HOME=/path/to/cuda`, or give its path with "
			"`ttftrace gpu-attach --lib PATH`\n");
	return -ENOENT;
}

const char *gpu_attach__sock(const char *sock)
{
	const char *env = getenv(TTF_GPU_SOCK_ENV);

	if (sock && *sock)
		return sock;
	return env && *env ? env : TTF_GPU_SOCK_DEFAULT;
}

static int exit_code(int err)
{
	if (!err)
		return TTF_EXIT_OK;
	if (inject_lib__refused(err))
		return TTF_EXIT_ATTACH_REFUSED;
	switch (err) {
	case -ESRCH:
		return TTF_EXIT_NO_TARGET;
	case -ECHILD:
		return TTF_EXIT_TARGET_GONE;
	case -ETIMEDOUT:
	case -EFAULT:
	case -EIO:
		return TTF_EXIT_NOT_ATTACHED;
	default:
		return TTF_EXIT_INTERNAL;
	}
}

static uint64_t mono_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/*
 * inject_lib__load in a child: when it exits the kernel detaches whatever it
 * still holds (a thread that never stopped after a timeout), so nothing
 * stays attached to the process past this call.
 */
static int load_in_child(pid_t pid, const struct inject_lib_opts *io, struct child_report *rep)
{
	int fds[2], timeout_ms = io->timeout_ms ? io->timeout_ms : INJECT_DEFAULT_TIMEOUT_MS;
	uint64_t deadline = mono_ms() + 4ull * timeout_ms + CHILD_SLACK_MS;
	size_t got = 0;
	pid_t child;

	if (pipe2(fds, O_CLOEXEC))
		return -errno;
	fflush(NULL);
	child = fork();
	if (child < 0) {
		close(fds[0]);
		close(fds[1]);
		return -errno;
	}
	if (!child) {
		struct child_report c = { 0 };
		size_t off = 0;

		close(fds[0]);
		c.err = inject_lib__load(pid, io, &c.r);
		while (off < sizeof(c)) {
			ssize_t n = write(fds[1], (char *)&c + off, sizeof(c) - off);

			if (n <= 0)
				break;
			off += n;
		}
		_exit(0);
	}
	close(fds[1]);
	while (got < sizeof(*rep)) {
		struct pollfd p = { .fd = fds[0], .events = POLLIN };
		int64_t left = (int64_t)(deadline - mono_ms());
		ssize_t n;

		if (left <= 0 || poll(&p, 1, (int)left) == 0)
			break;
		n = read(fds[0], (char *)rep + got, sizeof(*rep) - got);
		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			break;
		got += n;
	}
	close(fds[0]);
	if (got < sizeof(*rep))
		kill(child, SIGKILL); /* past every bound it keeps: the kernel detaches */
	while (waitpid(child, NULL, 0) < 0 && errno == EINTR)
		;
	if (got < sizeof(*rep)) {
		memset(rep, 0, sizeof(*rep));
		rep->err = -EIO;
		snprintf(rep->r.why, sizeof(rep->r.why), "the attach did not finish in time; "
			 "its ptrace holder was stopped (the kernel detached it)");
	}
	return 0;
}

int gpu_attach__run(pid_t pid, const struct gpu_attach_opts *o)
{
	struct inject_lib_opts io = { .sz = sizeof(io), .lib_path = o->lib,
				      .entry = GPU_ATTACH_ENTRY, .entry_arg = o->sock,
				      .timeout_ms = o->timeout_ms, .yama_path = o->yama_path };
	struct child_report *rep;
	const char *sc;
	int err, code;

	if (o->sock[0] == '@' && inject_check__same_ns(pid, "net") == 0) {
		fprintf(stderr, "Error: PID %d is in another network namespace: the abstract socket "
			"%s is not reachable from there\n", (int)pid, o->sock);
		fprintf(stderr, "HINT: give a socket path both can reach (TTFTRACE_CUPTI_SOCK=/path, "
			"or --sock /path)\n");
		return TTF_EXIT_ATTACH_REFUSED;
	}
	rep = calloc(1, sizeof(*rep));
	if (!rep) {
		fprintf(stderr, "Error: out of memory\n");
		return TTF_EXIT_INTERNAL;
	}
	err = load_in_child(pid, &io, rep);
	if (err) {
		fprintf(stderr, "Error: cannot start the attach: %s\n", strerror(-err));
		free(rep);
		return TTF_EXIT_INTERNAL;
	}
	err = rep->err;
	if (!err && rep->r.entry_ret == 1) {
		snprintf(rep->r.why, sizeof(rep->r.why), "the collector in PID %d was started "
			 "already (loaded twice under another name?): not started again", (int)pid);
		rep->r.hint[0] = '\0';
		err = -EEXIST;
	} else if (!err && rep->r.entry_ret < 0) {
		snprintf(rep->r.why, sizeof(rep->r.why), "%s() in PID %d failed: %s",
			 GPU_ATTACH_ENTRY, (int)pid, strerror(-rep->r.entry_ret));
		err = -EIO;
	}
	code = exit_code(err);
	if (err) {
		fprintf(stderr, "Error: %s%s\n", code == TTF_EXIT_ATTACH_REFUSED ?
			"gpu-attach refused: " : "", rep->r.why);
		if (rep->r.hint[0])
			fprintf(stderr, "HINT: %s\n", rep->r.hint);
	} else {
		sc = inject_lib__syscall_name(rep->r.syscall_nr);
		fprintf(o->out, "Attached to PID %d: loaded %s through thread %d (blocked in %s%s%ld%s), "
			"held stopped %.2f ms\n", (int)pid, o->lib, (int)rep->r.tid, sc ? sc : "",
			sc ? " (" : "system call ", rep->r.syscall_nr, sc ? ")" : "",
			rep->r.held_ns / 1e6);
		fflush(o->out);
	}
	free(rep);
	return code;
}
