// SPDX-License-Identifier: GPL-2.0-only
/*
 * Hop discovery's look-ups (user/probe/follow.h): an upstream is looked up
 * once, not again within a second, and again after that only when the
 * process found there is gone. The listeners are child processes of this
 * test on loopback and on a unix path (no root needed).
 */
#include <errno.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <cmocka.h>
#include "bpf/net.h"
#include "user/probe/follow.h"

#define SEC 1000000000ull

struct listener {
	pid_t pid;
	int stop_fd;		/* closing it ends the child */
};

/*
 * A child that listens on fd (bound here) until stop: the parent closes its
 * copy once the child holds it, so the child alone listens there.
 */
static struct listener spawn_listener(int fd)
{
	struct listener l;
	int stop[2];
	char c;

	assert_int_equal(listen(fd, 4), 0);
	assert_int_equal(pipe(stop), 0);
	l.pid = fork();
	assert_true(l.pid >= 0);
	if (l.pid == 0) {
		close(stop[1]);
		while (read(stop[0], &c, 1) > 0)
			;
		_exit(0);
	}
	close(stop[0]);
	close(fd);
	l.stop_fd = stop[1];
	return l;
}

static void stop_listener(struct listener *l)
{
	close(l->stop_fd);
	assert_int_equal(waitpid(l->pid, NULL, 0), l->pid);
}

/* A loopback TCP socket bound to port (0: any); *port: the one it got. */
static int tcp_socket(uint16_t *port)
{
	struct sockaddr_in a = { .sin_family = AF_INET, .sin_port = htons(*port),
				 .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
	socklen_t len = sizeof(a);
	int fd = socket(AF_INET, SOCK_STREAM, 0), one = 1;

	assert_true(fd >= 0);
	setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
	assert_int_equal(bind(fd, (struct sockaddr *)&a, sizeof(a)), 0);
	assert_int_equal(getsockname(fd, (struct sockaddr *)&a, &len), 0);
	*port = ntohs(a.sin_port);
	return fd;
}

static int has(const struct target_set *ts, pid_t pid)
{
	for (size_t i = 0; i < ts->n; i++)
		if (ts->tgids[i] == (uint32_t)pid)
			return 1;
	return 0;
}

static struct follow_upstream tcp_call(uint16_t port, uint64_t t_ns)
{
	struct follow_upstream u = { .family = TTF_AF_INET, .rport = port,
				     .tgid = (uint32_t)getpid(), .comm = "gateway",
				     .read_first_ns = t_ns };

	u.raddr[0] = 127;
	u.raddr[3] = 1;
	u.laddr[0] = 127;
	u.laddr[3] = 1;
	return u;
}

static void test_tcp_once_a_second_and_after_an_exit(void **state)
{
	struct follow *f = follow__new();
	struct follow_req req;
	struct follow_upstream u;
	struct listener l1, l2;
	uint16_t port = 0;
	char line[256];
	FILE *out;

	assert_non_null(f);
	l1 = spawn_listener(tcp_socket(&port));
	u = tcp_call(port, 10 * SEC);
	/* first call: trace the port, and its listener */
	assert_int_equal(follow__upstream(f, &u, &req), 1);
	assert_int_equal(req.trace_port, 1);
	assert_int_equal(req.port, port);
	assert_true(has(&req.found, l1.pid));
	out = fmemopen(line, sizeof(line), "w");
	follow_req__say(&req, l1.pid, out);
	fclose(out);
	assert_non_null(strstr(line, "calls port "));
	assert_non_null(strstr(line, "which listens there, too."));
	follow_req__free(&req);
	/* within a second: not looked up again */
	u.read_first_ns = 10 * SEC + SEC / 2;
	assert_int_equal(follow__upstream(f, &u, &req), 0);
	/* a second later, its listener still runs: not again either */
	u.read_first_ns = 12 * SEC;
	assert_int_equal(follow__upstream(f, &u, &req), 0);
	/* its listener exited, another took the port: looked up again, the port already traced */
	stop_listener(&l1);
	l2 = spawn_listener(tcp_socket(&port));
	u.read_first_ns = 14 * SEC;
	assert_int_equal(follow__upstream(f, &u, &req), 1);
	assert_int_equal(req.trace_port, 0);
	assert_true(has(&req.found, l2.pid));
	follow_req__free(&req);
	stop_listener(&l2);
	follow__free(f);
}

static void test_tcp_not_this_host(void **state)
{
	struct follow *f = follow__new();
	struct follow_upstream u = tcp_call(8000, SEC);
	struct follow_req req;

	u.raddr[0] = 10;	/* 10.0.0.1: another host */
	assert_int_equal(follow__upstream(f, &u, &req), 0);
	follow__free(f);
}

static void test_unix_path(void **state)
{
	struct sockaddr_un a = { .sun_family = AF_UNIX };
	struct follow_upstream u = { .family = TTF_AF_UNIX, .tgid = (uint32_t)getpid(),
				     .comm = "gateway", .read_first_ns = SEC };
	struct follow *f = follow__new();
	struct follow_req req;
	struct listener l;
	struct stat st;
	uint64_t ino;
	int fd = socket(AF_UNIX, SOCK_STREAM, 0);

	snprintf(a.sun_path, sizeof(a.sun_path), "/tmp/ttf-follow-%d.sock", (int)getpid());
	unlink(a.sun_path);
	assert_int_equal(bind(fd, (struct sockaddr *)&a, sizeof(a)), 0);
	assert_int_equal(stat(a.sun_path, &st), 0);
	ino = st.st_ino;
	memcpy(u.raddr + 8, &ino, sizeof(ino));
	l = spawn_listener(fd);
	assert_int_equal(follow__upstream(f, &u, &req), 1);
	assert_int_equal(req.trace_port, 0);
	assert_true(has(&req.found, l.pid));
	assert_non_null(strstr(req.where, a.sun_path));
	follow_req__free(&req);
	u.read_first_ns = SEC + SEC / 2;
	assert_int_equal(follow__upstream(f, &u, &req), 0);
	stop_listener(&l);
	unlink(a.sun_path);
	follow__free(f);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_tcp_once_a_second_and_after_an_exit),
		cmocka_unit_test(test_tcp_not_this_host),
		cmocka_unit_test(test_unix_path),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
