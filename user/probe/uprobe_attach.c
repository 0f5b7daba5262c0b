// SPDX-License-Identifier: GPL-2.0-only
/* A uprobe via the perf PMU, or a tracefs uprobe event where the PMU refuses: uprobe_attach.h. */
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <linux/perf_event.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <bpf/libbpf.h>
#include "user/lib/log.h"
#include "user/probe/tracefs.h"
#include "user/probe/uprobe_attach.h"

/* How long the exit-time cleaner retries events still held open (bpf_util__destroy_links). */
#define CLEAN_RETRY_NS (20ull * 1000000000ull)

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static int pmu_refused;		/* -EACCES/-EPERM of the first refusal, else 0 */
static pid_t owner;		/* the events' group is ttftrace_<owner> (not the cleaner's pid) */
static int n_events;		/* event names used, ttftrace_<pid>/u0 .. u<n_events-1> */
static bool *live;		/* live[i]: event u<i> exists in uprobe_events */
static const char *root;	/* the tracefs mount with uprobe_events */
static char tracefs_why[400];	/* why the tracefs path failed, for the warning */
static bool fallback_warned;	/* the tracefs path's failure was said */

static int write_events(const char *line)
{
	char path[256];
	ssize_t n;
	int fd, err = 0;

	snprintf(path, sizeof(path), "%s/uprobe_events", root);
	fd = open(path, O_WRONLY | O_APPEND | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	n = write(fd, line, strlen(line));
	if (n < 0)
		err = -errno;
	close(fd);
	return err;
}

static void remove_event(int i)
{
	char line[64];

	snprintf(line, sizeof(line), "-:ttftrace_%d/u%d", (int)owner, i);
	if (!write_events(line))
		live[i] = false;
}

/*
 * Remove what a ttftrace that has since died left (it was killed before its
 * exit-time cleaner ran): events of group ttftrace_<pid> with no such
 * process. The kernel refuses (EBUSY) one still open, which is left alone.
 */
static void remove_stale(void)
{
	char path[256], line[512], del[128];
	FILE *f;

	snprintf(path, sizeof(path), "%s/uprobe_events", root);
	f = fopen(path, "re");
	if (!f)
		return;
	while (fgets(line, sizeof(line), f)) {
		int pid, ev;

		if (sscanf(line, "%*c:ttftrace_%d/u%d", &pid, &ev) != 2 || pid == owner)
			continue;
		if (kill(pid, 0) == 0 || errno != ESRCH)
			continue;
		snprintf(del, sizeof(del), "-:ttftrace_%d/u%d", pid, ev);
		write_events(del);
	}
	fclose(f);
}

/*
 * Remove this process's events. The perf events on them are closed by the
 * grandchild of bpf_util__destroy_links, up to about 0.1 s each, and until
 * then the kernel answers EBUSY: a detached grandchild of ours retries for
 * CLEAN_RETRY_NS, so that ttftrace's own exit does not wait.
 */
static void remove_all_at_exit(void)
{
	struct timespec t0, now, pause = { 0, 50 * 1000000 };
	pid_t pid;
	int left;

	pid = fork();
	if (pid < 0)
		return;
	if (pid > 0) {
		while (waitpid(pid, NULL, 0) < 0 && errno == EINTR)
			;
		return;
	}
	if (fork() != 0)
		_exit(0);
	closefrom(0);	/* hold nothing of ttftrace's: no perf event, no socket */
	clock_gettime(CLOCK_MONOTONIC, &t0);
	do {
		left = 0;
		for (int i = 0; i < n_events; i++) {
			if (live[i])
				remove_event(i);
			left += live[i];
		}
		if (left)
			nanosleep(&pause, NULL);
		clock_gettime(CLOCK_MONOTONIC, &now);
	} while (left && (uint64_t)(now.tv_sec - t0.tv_sec) * 1000000000ull +
				 now.tv_nsec - t0.tv_nsec < CLEAN_RETRY_NS);
	_exit(0);
}

/* Find tracefs and say once that uprobes go through it. 0 or -errno (tracefs_why set). */
static int tracefs_setup(void)
{
	static bool done;

	if (done)
		return root ? 0 : -ENOENT;
	done = true;
	root = tracefs__root("uprobe_events");
	if (!root) {
		snprintf(tracefs_why, sizeof(tracefs_why),
			 "tracefs with uprobe_events is not mounted at /sys/kernel/tracing or "
			 "/sys/kernel/debug/tracing (mounting it needs CAP_SYS_ADMIN)");
		return -ENOENT;
	}
	owner = getpid();
	remove_stale();
	atexit(remove_all_at_exit);
	fprintf(stderr, "Uprobes: the kernel refused perf uprobes (%s: it requires CAP_SYS_ADMIN "
		"for them); attaching them as tracefs uprobe events in %s/uprobe_events instead\n",
		strerrorname_np(-pmu_refused) ?: "?", root);
	return 0;
}

/* The tracefs event u<i>: created, its id into *id. 0 or -errno. */
static int create_event(int i, int fd, uint64_t off, bool retprobe, long *id)
{
	char line[160], path[256];
	FILE *f;
	int err;

	snprintf(line, sizeof(line), "%c:ttftrace_%d/u%d /proc/self/fd/%d:0x%llx",
		 retprobe ? 'r' : 'p', (int)owner, i, fd, (unsigned long long)off);
	err = write_events(line);
	if (err) {
		snprintf(tracefs_why, sizeof(tracefs_why), "writing %s/uprobe_events: %s%s", root,
			 strerror(-err), err == -EACCES ?
			 " (the file is root's, mode 0640: run as UID 0)" : "");
		return err;
	}
	live[i] = true;
	snprintf(path, sizeof(path), "%s/events/ttftrace_%d/u%d/id", root, (int)owner, i);
	f = fopen(path, "re");
	err = !f ? -errno : fscanf(f, "%ld", id) == 1 ? 0 : -EINVAL;
	if (f)
		fclose(f);
	if (err)
		snprintf(tracefs_why, sizeof(tracefs_why), "reading %s: %s", path, strerror(-err));
	return err;
}

/*
 * The tracefs path: event, PERF_TYPE_TRACEPOINT perf event (pid -1 with
 * cpu 0, as libbpf opens its own legacy uprobes: the BPF program runs on
 * every CPU, the perf event is only its handle), BPF link.
 */
static struct bpf_link *attach_tracefs(struct bpf_program *prog, int fd, uint64_t off,
				       uint64_t cookie, bool retprobe)
{
	LIBBPF_OPTS(bpf_perf_event_opts, po, .bpf_cookie = cookie);
	struct perf_event_attr attr = { .type = PERF_TYPE_TRACEPOINT, .size = sizeof(attr) };
	struct bpf_link *l;
	bool *grown;
	long id;
	int i, pfd, err;

	err = tracefs_setup();
	if (err) {
		errno = -err;
		return NULL;
	}
	grown = realloc(live, (n_events + 1) * sizeof(*live));
	if (!grown)
		return NULL;
	live = grown;
	i = n_events++;
	live[i] = false;
	err = create_event(i, fd, off, retprobe, &id);
	if (err)
		goto fail;
	attr.config = id;
	pfd = syscall(SYS_perf_event_open, &attr, -1, 0, -1, PERF_FLAG_FD_CLOEXEC);
	if (pfd < 0) {
		err = -errno;
		snprintf(tracefs_why, sizeof(tracefs_why), "perf_event_open of tracefs event "
			 "ttftrace_%d/u%d: %s", (int)owner, i, strerror(-err));
		goto fail;
	}
	l = bpf_program__attach_perf_event_opts(prog, pfd, &po);
	if (!l) {
		err = -errno;
		close(pfd);
		snprintf(tracefs_why, sizeof(tracefs_why), "BPF link on tracefs event: %s",
			 strerror(-err));
		goto fail;
	}
	return l;
fail:
	if (live[i])
		remove_event(i);
	errno = -err;
	return NULL;
}

/* libbpf's own warning about the refusal would read as a failure: the fallback decides. */
static int quiet(enum libbpf_print_level level, const char *fmt, va_list ap)
{
	return 0;
}

struct bpf_link *uprobe_attach(struct bpf_program *prog, int fd, uint64_t off, uint64_t cookie,
			       bool retprobe)
{
	LIBBPF_OPTS(bpf_uprobe_opts, o, .bpf_cookie = cookie, .retprobe = retprobe);
	struct bpf_link *l = NULL;
	libbpf_print_fn_t prev;
	char path[32];
	int err;

	snprintf(path, sizeof(path), "/proc/self/fd/%d", fd);
	pthread_mutex_lock(&lock);
	if (!pmu_refused) {
		prev = libbpf_set_print(quiet);
		l = bpf_program__attach_uprobe_opts(prog, -1, path, off, &o);
		err = -errno;
		libbpf_set_print(prev);
		if (l || (err != -EACCES && err != -EPERM)) {
			pthread_mutex_unlock(&lock);
			errno = -err;
			return l;
		}
		pmu_refused = err;
	}
	l = attach_tracefs(prog, fd, off, cookie, retprobe);
	pthread_mutex_unlock(&lock);
	/* the refusal is what the caller reports; the fallback's failure is said once, here */
	if (!l) {
		if (!fallback_warned)
			ttf_warn("uprobes refused: the kernel creates perf uprobes only with "
				 "CAP_SYS_ADMIN (%s), and the tracefs uprobe events that stand in "
				 "failed: %s; engine and TLS library probes are lost "
				 "(docs/deploy.md)", strerrorname_np(-pmu_refused) ?: "?",
				 tracefs_why[0] ? tracefs_why : strerror(ENOMEM));
		fallback_warned = true;
		errno = -pmu_refused;
	}
	return l;
}

bool uprobe_attach__refused(int err)
{
	return pmu_refused && (err == -EACCES || err == -EPERM);
}

const char *uprobe_attach__why(int err)
{
	static __thread char why[160];

	if (!uprobe_attach__refused(err))
		return strerror(-err);
	snprintf(why, sizeof(why), "attach refused (%s): needs CAP_SYS_ADMIN on this kernel, "
		 "or tracefs (see above)", strerrorname_np(-err) ?: "?");
	return why;
}
