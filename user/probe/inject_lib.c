// SPDX-License-Identifier: GPL-2.0-only
/* Load a library into a running process through ptrace: see inject_lib.h. */
#include <dirent.h>
#include <dlfcn.h>
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include "user/probe/caps.h"
#include "user/probe/inject_check.h"
#include "user/probe/inject_lib.h"
#include "user/probe/inject_ptrace.h"
#include "user/probe/proc_maps.h"
#include "user/probe/remote_sym.h"

#define SAY(r, ...) snprintf((r)->why, sizeof((r)->why), __VA_ARGS__)
#define HINT(r, ...) snprintf((r)->hint, sizeof((r)->hint), __VA_ARGS__)

bool inject_lib__refused(int err)
{
	return err == -EPERM || err == -EXDEV || err == -EEXIST || err == -EBUSY ||
	       err == -ENOSYS || err == -EAGAIN || err == -EOPNOTSUPP;
}

const char *inject_lib__syscall_name(long nr)
{
	static const struct { long nr; const char *name; } names[] = {
		{ 0, "read" }, { 7, "poll" }, { 23, "select" }, { 34, "pause" },
		{ 35, "nanosleep" }, { 43, "accept" }, { 45, "recvfrom" }, { 47, "recvmsg" },
		{ 61, "wait4" }, { 128, "rt_sigtimedwait" }, { 202, "futex" },
		{ 230, "clock_nanosleep" }, { 232, "epoll_wait" }, { 270, "pselect6" },
		{ 271, "ppoll" }, { 281, "epoll_pwait" }, { 288, "accept4" },
		{ 441, "epoll_pwait2" },
	};

	for (size_t i = 0; i < sizeof(names) / sizeof(names[0]); i++)
		if (names[i].nr == nr)
			return names[i].name;
	return NULL;
}

/* A mapping of the library: same path, or a file of the same name (another copy). */
static bool lib_mapped(const struct proc_maps *pm, const char *lib, char *found, size_t len)
{
	const char *base = strrchr(lib, '/') ? strrchr(lib, '/') + 1 : lib;

	for (int i = 0; i < pm->n; i++) {
		const char *p = pm->v[i].path, *b = strrchr(p, '/');

		if (!strcmp(p, lib) || (b && !strcmp(b + 1, base))) {
			snprintf(found, len, "%s", p);
			return true;
		}
	}
	return false;
}

/* Everything that refuses before a thread is touched. */
static int preflight(pid_t pid, const struct inject_lib_opts *o, struct inject_lib_result *r)
{
	struct inject_ids me, them;
	uint64_t caps = 0;
	char path[64], buf[4096];
	bool cap;
	int scope, same, err, tracer;
	FILE *f;

	err = inject_check__read_ids(pid, &them);
	if (err == -ENOENT || err == -ESRCH) {
		SAY(r, "no process %d", (int)pid);
		HINT(r, "check the PID: `pgrep -f NAME` lists the server's");
		return -ESRCH;
	}
	if (err) {
		SAY(r, "cannot read /proc/%d/status: %s", (int)pid, strerror(-err));
		return -EPERM;
	}
	cap = !caps__effective(&caps) && caps__has(caps, TTF_CAP_SYS_PTRACE);
	scope = inject_check__yama_scope(o->yama_path);
	if (scope >= 0 && inject_check__yama(scope, cap, r->why, sizeof(r->why))) {
		HINT(r, "an administrator sets kernel.yama.ptrace_scope (sysctl); or start the "
			"server with CUDA_INJECTION64_PATH");
		return -EPERM;
	}
	if (!cap && !inject_check__read_ids(0, &me) && !inject_check__same_user(&me, &them)) {
		SAY(r, "PID %d runs as uid %u, this ttftrace as uid %u without CAP_SYS_PTRACE: "
		    "ptrace is not allowed", (int)pid, them.uid[1], me.uid[0]);
		HINT(r, "run as root or as the server's user, or grant CAP_SYS_PTRACE");
		return -EPERM;
	}
	for (const char *const *ns = (const char *const[]){ "pid", "mnt", NULL }; *ns; ns++) {
		same = inject_check__same_ns(pid, *ns);
		if (same < 0) {
			SAY(r, "cannot read /proc/%d/ns/%s: %s", (int)pid, *ns, strerror(-same));
			HINT(r, "run as root or as the server's user, or grant CAP_SYS_PTRACE");
			return same == -ENOENT ? -ESRCH : -EPERM;
		}
		if (!same) {
			SAY(r, "PID %d is in another %s namespace (a container): the library path "
			    "and its pid would not mean the same there", (int)pid, *ns);
			HINT(r, "run ttftrace inside the container, or start the server with "
				"CUDA_INJECTION64_PATH");
			return -EXDEV;
		}
	}
	snprintf(path, sizeof(path), "/proc/%d/status", (int)pid);
	f = fopen(path, "re");
	if (!f) {
		SAY(r, "no process %d", (int)pid);
		HINT(r, "check the PID: `pgrep -f NAME` lists the server's");
		return -ESRCH;
	}
	buf[fread(buf, 1, sizeof(buf) - 1, f)] = '\0';
	fclose(f);
	tracer = inject_check__parse_tracer(buf);
	if (tracer > 0) {
		SAY(r, "PID %d is traced already by PID %d (a debugger or strace)", (int)pid, tracer);
		HINT(r, "detach the other tracer first");
		return -EBUSY;
	}
	return 0;
}

/* dlopen() and dlerror() in the process: libc.so.6 (glibc >= 2.34), else libdl.so.2. */
static int find_dl(pid_t pid, const struct proc_maps *pm, uint64_t *dlopen_at,
		   uint64_t *dlerror_at, struct inject_lib_result *r)
{
	static const char *const libs[] = { "libc.so.6", "libdl.so.2" };
	char path[PATH_MAX];
	int err = -ENOENT;

	for (size_t i = 0; i < sizeof(libs) / sizeof(libs[0]); i++) {
		err = remote_sym__find(pid, pm, libs[i], "dlopen", dlopen_at, path, sizeof(path));
		if (!err) {
			if (remote_sym__find(pid, pm, libs[i], "dlerror", dlerror_at, NULL, 0))
				*dlerror_at = 0;
			return 0;
		}
	}
	SAY(r, "cannot resolve dlopen() in PID %d: neither libc.so.6 (glibc >= 2.34) nor "
	    "libdl.so.2 that exports it is mapped (last: %s)", (int)pid, strerror(-err));
	HINT(r, "a static binary, musl or glibc < 2.34 without libdl cannot be attached to; "
		"start it with CUDA_INJECTION64_PATH");
	return -ENOSYS;
}

/* One attach per process at a time: an abstract socket name held while we work. */
static int take_lock(pid_t pid)
{
	struct sockaddr_un a = { .sun_family = AF_UNIX };
	int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
	int n;

	if (fd < 0)
		return -errno;
	n = snprintf(a.sun_path + 1, sizeof(a.sun_path) - 1, "ttftrace-attach-%d", (int)pid);
	if (bind(fd, (struct sockaddr *)&a, offsetof(struct sockaddr_un, sun_path) + 1 + n)) {
		n = -errno;
		close(fd);
		return n == -EADDRINUSE ? -EBUSY : n;
	}
	return fd;
}

static bool alive(pid_t pid)
{
	char path[64];

	snprintf(path, sizeof(path), "/proc/%d/stat", (int)pid);
	return !access(path, F_OK) && inject_check__thread_state(pid, pid) != 'Z';
}

static int cmp_tid(const void *a, const void *b)
{
	return *(const pid_t *)a - *(const pid_t *)b;
}

/*
 * Threads of pid in state S, the main thread first, then by tid; at most max
 * of the first INJECT_MAX_THREADS_SEEN. -EAGAIN when one is stopped (T).
 */
static int sleeping_threads(pid_t pid, pid_t *tids, int max, struct inject_lib_result *r)
{
	pid_t *all = calloc(INJECT_MAX_THREADS_SEEN, sizeof(*all));
	char path[64];
	struct dirent *de;
	int n = 0, st;
	DIR *d;

	if (!all)
		return -ENOMEM;
	snprintf(path, sizeof(path), "/proc/%d/task", (int)pid);
	d = opendir(path);
	if (!d) {
		free(all);
		return errno == ENOENT ? -ESRCH : -errno;
	}
	while ((de = readdir(d)) && n < INJECT_MAX_THREADS_SEEN) {
		pid_t tid = (pid_t)atoi(de->d_name);

		if (tid <= 0)
			continue;
		st = inject_check__thread_state(pid, tid);
		if (st == 'T') {
			closedir(d);
			free(all);
			SAY(r, "PID %d is stopped (SIGSTOP or a job-control stop)", (int)pid);
			HINT(r, "continue it (kill -CONT %d) and try again", (int)pid);
			return -EAGAIN;
		}
		if (st == 'S')
			all[n++] = tid;
	}
	closedir(d);
	qsort(all, n, sizeof(*all), cmp_tid);
	for (int i = 0; i < n; i++)
		if (all[i] == pid) {
			memmove(all + 1, all, i * sizeof(*all));
			all[0] = pid;
		}
	if (n > max)
		n = max;
	memcpy(tids, all, n * sizeof(*tids));
	free(all);
	return n;
}

/* Hold one thread blocked in a system call. 0, or an inject_lib__load error. */
static int hold_thread(pid_t pid, int timeout_ms, int yama, struct inject_thread *t,
		       struct inject_lib_result *r)
{
	pid_t tids[INJECT_MAX_THREADS_TRIED];
	int n = sleeping_threads(pid, tids, INJECT_MAX_THREADS_TRIED, r), err;

	if (n == -ESRCH) {
		SAY(r, "no process %d", (int)pid);
		HINT(r, "check the PID: `pgrep -f NAME` lists the server's");
		return -ESRCH;
	}
	if (n < 0)
		return n;
	for (int i = 0; i < n; i++) {
		err = inject_ptrace__seize(tids[i], timeout_ms, t);
		if (err == -EPERM || err == -EACCES) {
			SAY(r, "ptrace of PID %d is not allowed (%s)%s", (int)pid, strerror(-err),
			    yama == 1 ? ": Yama's ptrace_scope is 1, only descendants may be traced"
				      : "");
			HINT(r, "run as root or grant CAP_SYS_PTRACE%s",
			     yama == 1 ? " (or set kernel.yama.ptrace_scope=0)" : "");
			return -EPERM;
		}
		if (err == -ESRCH || err == -ECHILD)
			continue; /* that thread exited meanwhile */
		if (err == -EAGAIN) {
			SAY(r, "PID %d is stopped (SIGSTOP or a job-control stop)", (int)pid);
			HINT(r, "continue it (kill -CONT %d) and try again", (int)pid);
			return -EAGAIN;
		}
		if (err) {
			SAY(r, "thread %d of PID %d: %s", (int)tids[i], (int)pid, strerror(-err));
			return err == -ETIMEDOUT ? -ETIMEDOUT : -EIO;
		}
		r->threads_tried++;
		if (inject_ptrace__in_blocking_syscall(t, &r->syscall_nr)) {
			r->tid = tids[i];
			return 0;
		}
		inject_ptrace__release(t); /* in user code: nothing changed, let it go */
	}
	if (!alive(pid)) {
		SAY(r, "no process %d", (int)pid);
		HINT(r, "check the PID: `pgrep -f NAME` lists the server's");
		return -ESRCH;
	}
	SAY(r, "no thread of PID %d was blocked in a system call (%d sleeping, %d stopped and "
	    "let go): a call in a thread running user code could land inside malloc() or the "
	    "loader", (int)pid, n, r->threads_tried);
	HINT(r, "try again when the process is less busy");
	return -EAGAIN;
}

/* Why a call failed, in words; returns err. */
static int call_failed(pid_t pid, const char *what, int err, struct inject_lib_result *r)
{
	if (err == -ECHILD)
		SAY(r, "PID %d exited during the attach (in %s)", (int)pid, what);
	else if (err == -ETIMEDOUT)
		SAY(r, "%s did not return in PID %d in time: the thread was interrupted and "
		    "restored; the half-loaded library stays mapped", what, (int)pid);
	else if (err == -EFAULT)
		SAY(r, "%s faulted in PID %d: the fault was suppressed and the thread restored",
		    what, (int)pid);
	else
		SAY(r, "%s in PID %d: %s", what, (int)pid, strerror(-err));
	return err == -ECHILD || err == -ETIMEDOUT || err == -EFAULT ? err : -EIO;
}

/* The calls, on a held thread. */
static int load_in(pid_t pid, const struct inject_lib_opts *o, struct inject_thread *t,
		   uint64_t dlopen_at, uint64_t dlerror_at, struct inject_lib_result *r)
{
	struct inject_call c = { .timeout_ms = o->timeout_ms };
	const char *arg = o->entry_arg ? o->entry_arg : "";
	struct proc_maps pm = { 0 };
	char msg[256];
	uint64_t handle = 0, ret = 0, entry_at;
	int err;

	c.fn = dlopen_at;
	c.blob = o->lib_path;
	c.blob_bytes = strlen(o->lib_path) + 1;
	c.blob_args = 1u << 0;
	c.args[0] = 0;
	c.args[1] = RTLD_NOW;
	err = inject_ptrace__call(t, &c, &handle);
	if (err)
		return call_failed(pid, "dlopen()", err, r);
	if (!handle) {
		struct inject_call e = { .fn = dlerror_at, .timeout_ms = o->timeout_ms };
		uint64_t s = 0;

		strcpy(msg, "no reason given");
		if (dlerror_at && !inject_ptrace__call(t, &e, &s) && s)
			inject_ptrace__read_str(t, s, msg, sizeof(msg));
		SAY(r, "dlopen() failed in PID %d: %s", (int)pid, msg);
		HINT(r, "the library must be readable by the server's user, at the same path");
		return -EIO;
	}
	if (!o->entry)
		return 0;
	err = proc_maps__read(pid, &pm);
	if (!err)
		err = remote_sym__find(pid, &pm, o->lib_path, o->entry, &entry_at, NULL, 0);
	proc_maps__free(&pm);
	if (err) {
		SAY(r, "%s() of %.300s not found in PID %d after dlopen(): %s", o->entry, o->lib_path,
		    (int)pid, strerror(-err));
		return -EIO;
	}
	c = (struct inject_call){ .fn = entry_at, .blob = arg, .blob_bytes = strlen(arg) + 1,
				  .blob_args = 1u << 0, .timeout_ms = o->timeout_ms };
	err = inject_ptrace__call(t, &c, &ret);
	if (err) {
		snprintf(msg, sizeof(msg), "%s()", o->entry);
		return call_failed(pid, msg, err, r);
	}
	r->entry_ret = (int)(int32_t)ret;
	return 0;
}

int inject_lib__load(pid_t pid, const struct inject_lib_opts *opts, struct inject_lib_result *r)
{
	struct inject_lib_opts o = { 0 };
	struct proc_maps pm = { 0 };
	struct inject_thread *t;
	uint64_t dlopen_at = 0, dlerror_at = 0;
	sigset_t block, old;
	char found[PATH_MAX];
	int err, lock, rerr;

	memset(r, 0, sizeof(*r));
	memcpy(&o, opts, opts->sz < sizeof(o) ? opts->sz : sizeof(o));
	if (!o.timeout_ms)
		o.timeout_ms = INJECT_DEFAULT_TIMEOUT_MS;
#if !defined(__x86_64__)
	SAY(r, "gpu-attach calls functions in the process by the x86-64 calling convention only");
	return -EOPNOTSUPP;
#endif
	err = preflight(pid, &o, r);
	if (err)
		return err;
	err = proc_maps__read(pid, &pm);
	if (err) {
		SAY(r, "cannot read /proc/%d/maps: %s", (int)pid, strerror(-err));
		return err == -ENOENT || err == -ESRCH ? -ESRCH : -EPERM;
	}
	if (lib_mapped(&pm, o.lib_path, found, sizeof(found))) {
		proc_maps__free(&pm);
		SAY(r, "PID %d has %.300s mapped already: never loaded twice", (int)pid, found);
		HINT(r, "its collector reports to whichever ttftrace listens (`ttftrace -p %d`)",
		     (int)pid);
		return -EEXIST;
	}
	err = find_dl(pid, &pm, &dlopen_at, &dlerror_at, r);
	proc_maps__free(&pm);
	if (err)
		return err;
	lock = take_lock(pid);
	if (lock < 0) {
		SAY(r, "another ttftrace is attaching to PID %d now", (int)pid);
		return lock == -EBUSY ? -EBUSY : -EIO;
	}
	t = calloc(1, sizeof(*t));
	if (!t) {
		close(lock);
		return -ENOMEM;
	}
	sigemptyset(&block);
	sigaddset(&block, SIGINT);
	sigaddset(&block, SIGTERM);
	sigaddset(&block, SIGHUP);
	sigaddset(&block, SIGQUIT);
	sigprocmask(SIG_BLOCK, &block, &old);
	err = hold_thread(pid, o.timeout_ms, inject_check__yama_scope(o.yama_path), t, r);
	if (!err) {
		/* The same check, now that a thread is held: another loader may have won. */
		err = proc_maps__read(pid, &pm);
		if (!err && lib_mapped(&pm, o.lib_path, found, sizeof(found))) {
			SAY(r, "PID %d has %.300s mapped already: never loaded twice", (int)pid, found);
			err = -EEXIST;
		} else if (err) {
			SAY(r, "cannot read /proc/%d/maps: %s", (int)pid, strerror(-err));
			err = -EIO;
		}
		proc_maps__free(&pm);
	}
	if (!err)
		err = load_in(pid, &o, t, dlopen_at, dlerror_at, r);
	rerr = inject_ptrace__release(t);
	r->held_ns = t->held_ns;
	if (t->gone && err != -ECHILD) {
		SAY(r, "PID %d exited during the attach", (int)pid);
		err = -ECHILD;
	} else if (rerr && !err) {
		SAY(r, "restoring thread %d of PID %d: %s", (int)r->tid, (int)pid, strerror(-rerr));
		err = -EIO;
	}
	sigprocmask(SIG_SETMASK, &old, NULL);
	free(t);
	close(lock);
	return err;
}
