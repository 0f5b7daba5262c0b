// SPDX-License-Identifier: GPL-2.0-only
/*
 * The NOTICE message of a collector loaded into a running process
 * (cupti/gpu_wire.h): sent by cupti_sender__send_notice, handed to the
 * receiver's notice hook by gpu_rx with its text NUL-terminated; malformed
 * ones are counted, never passed on.
 */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <cmocka.h>
#include "cupti/sender.h"
#include "user/probe/gpu_rx.h"

struct seen {
	int n;
	uint32_t pid, code;
	char text[TTF_GPU_NOTICE_MAX + 1];
};

static void on_notice(void *ctx, uint32_t pid, uint32_t code, const char *text)
{
	struct seen *s = ctx;

	s->n++;
	s->pid = pid;
	s->code = code;
	snprintf(s->text, sizeof(s->text), "%s", text);
}

static int no_records(void *ctx, uint32_t pid, uint32_t kind, const void *body, size_t len)
{
	fail_msg("a notice reached the records hook (kind %u)", kind);
	return 0;
}

static const struct ttf_records recs = { .gpu = no_records };

static struct gpu_rx *listen_at(const char *sock, struct seen *s)
{
	struct gpu_rx_opts ro = { .sz = sizeof(ro), .sock_path = sock, .notice = on_notice,
				  .notice_ctx = s };

	return gpu_rx__new(&ro);
}

static void test_notice_round_trip(void **state)
{
	char sock[64], long_text[400];
	struct ttf_gpu_stats stats = { 0 };
	struct cupti_sender *tx = calloc(1, sizeof(*tx));
	struct seen s = { 0 };
	struct gpu_rx *rx;

	snprintf(sock, sizeof(sock), "@ttftrace-notice-test-%d", (int)getpid());
	rx = listen_at(sock, &s);
	assert_non_null(rx);
	assert_int_equal(cupti_sender__init(tx, sock, 4242, &stats), 0);
	assert_true(cupti_sender__send_notice(tx, TTF_GPU_NOTICE_NO_CUDA, "no CUDA in this process"));
	assert_true(gpu_rx__poll(rx, &recs) >= 0);
	assert_int_equal(s.n, 1);
	assert_int_equal(s.code, TTF_GPU_NOTICE_NO_CUDA);
	assert_int_equal(s.pid, getpid()); /* SO_PEERCRED, not the header's 4242 */
	assert_string_equal(s.text, "no CUDA in this process");
	/* Longer than the wire allows: cut at TTF_GPU_NOTICE_MAX bytes, still delivered. */
	memset(long_text, 'x', sizeof(long_text) - 1);
	long_text[sizeof(long_text) - 1] = '\0';
	assert_true(cupti_sender__send_notice(tx, TTF_GPU_NOTICE_ENABLED, long_text));
	gpu_rx__poll(rx, &recs);
	assert_int_equal(s.n, 2);
	assert_int_equal(s.code, TTF_GPU_NOTICE_ENABLED);
	assert_int_equal(strlen(s.text), TTF_GPU_NOTICE_MAX);
	assert_int_equal(gpu_rx__bad_msgs(rx), 0);
	cupti_sender__close(tx);
	gpu_rx__free(rx);
	free(tx);
}

static void test_malformed_notice_is_counted(void **state)
{
	struct {
		struct ttf_gpu_msg_hdr h;
		struct ttf_gpu_notice n;
		char text[8];
	} m = { .h = { .magic = TTF_GPU_WIRE_MAGIC, .version = TTF_GPU_WIRE_VERSION,
		       .type = TTF_GPU_MSG_NOTICE, .count = 1 },
		.n = { .code = 1, .len = 9 }, .text = "abcdefgh" }; /* len says 9, 8 follow */
	struct sockaddr_un a = { .sun_family = AF_UNIX };
	struct seen s = { 0 };
	char sock[64];
	struct gpu_rx *rx;
	int fd;

	snprintf(sock, sizeof(sock), "@ttftrace-notice-bad-%d", (int)getpid());
	rx = listen_at(sock, &s);
	assert_non_null(rx);
	fd = socket(AF_UNIX, SOCK_SEQPACKET, 0);
	memcpy(a.sun_path + 1, sock + 1, strlen(sock) - 1);
	assert_int_equal(connect(fd, (struct sockaddr *)&a,
				 offsetof(struct sockaddr_un, sun_path) + strlen(sock)), 0);
	assert_int_equal(send(fd, &m, sizeof(m), 0), sizeof(m));
	m.n.len = TTF_GPU_NOTICE_MAX + 1; /* over the limit */
	assert_int_equal(send(fd, &m, sizeof(m), 0), sizeof(m));
	m.n.len = 8; /* a good one last */
	assert_int_equal(send(fd, &m, sizeof(m), 0), sizeof(m));
	gpu_rx__poll(rx, &recs);
	assert_int_equal(gpu_rx__bad_msgs(rx), 2);
	assert_int_equal(s.n, 1);
	assert_string_equal(s.text, "abcdefgh");
	close(fd);
	gpu_rx__free(rx);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_notice_round_trip),
		cmocka_unit_test(test_malformed_notice_is_counted),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
