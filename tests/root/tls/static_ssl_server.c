// SPDX-License-Identifier: GPL-2.0-only
/*
 * A streaming SSE server with OpenSSL linked in statically (libssl.a,
 * libcrypto.a): the TLS tier's fixture for a static copy found by symbol in
 * the main executable (docs/tls.md T3). One connection at a time; per
 * request: the response head at once, the first token event (content
 * "FIRST") TTFT_MS after the read returned, then one every ITL_MS, each in
 * its own SSL_write. Logs one JSON line per request (CLOCK_MONOTONIC ns).
 *
 * usage: static_ssl_server CERT KEY LOG TTFT_MS ITL_MS TOKENS
 * prints "listening on 127.0.0.1:PORT"
 */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <openssl/ssl.h>

static uint64_t mono_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + ts.tv_nsec;
}

static void sleep_until(uint64_t t)
{
	struct timespec ts = { .tv_sec = t / 1000000000ull, .tv_nsec = t % 1000000000ull };

	clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &ts, NULL);
}

static int write_all(SSL *ssl, const char *p, int n)
{
	return SSL_write(ssl, p, n) == n ? 0 : -1;
}

/* One request on ssl: 0, or -1 when the connection ended. */
static int serve_one(SSL *ssl, int rport, long ttft_ms, long itl_ms, int tokens, FILE *log)
{
	char req[16384], ev[256], chunk[300];
	uint64_t t_read, ts[64] = { 0 }, pre[64] = { 0 };
	int got = 0, n;
	char *end;
	long clen = 0;

	for (;;) {
		n = SSL_read(ssl, req + got, sizeof(req) - 1 - got);
		if (n <= 0)
			return -1;
		got += n;
		req[got] = 0;
		end = strstr(req, "\r\n\r\n");
		if (!end)
			continue;
		char *cl = strcasestr(req, "content-length:");
		clen = cl && cl < end ? strtol(cl + 15, NULL, 10) : 0;
		if (got >= end + 4 - req + clen)
			break;
	}
	t_read = mono_ns();
	static const char head[] = "HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\n"
				   "Transfer-Encoding: chunked\r\n\r\n";
	static const char tail[] = "e\r\ndata: [DONE]\n\n\r\n0\r\n\r\n";

	if (write_all(ssl, head, sizeof(head) - 1))
		return -1;
	for (int i = 0; i < tokens && i < 64; i++) {
		char text[16];

		sleep_until(t_read + (uint64_t)(ttft_ms + i * itl_ms) * 1000000ull);
		snprintf(text, sizeof(text), i ? "t%d" : "FIRST", i);
		n = snprintf(ev, sizeof(ev),
			     "data: {\"choices\":[{\"index\":0,\"delta\":{\"content\":\"%s\"}}]}\n\n",
			     text);
		n = snprintf(chunk, sizeof(chunk), "%x\r\n%s\r\n", n, ev);
		pre[i] = mono_ns();
		if (write_all(ssl, chunk, n))
			return -1;
		ts[i] = mono_ns();
	}
	if (write_all(ssl, tail, sizeof(tail) - 1))
		return -1;
	fprintf(log, "{\"rport\":%d,\"t_read_ns\":%llu,\"t_first_ns\":%llu,\"t_token_ns\":[", rport,
		(unsigned long long)t_read, (unsigned long long)ts[0]);
	for (int i = 0; i < tokens && i < 64; i++)
		fprintf(log, "%s%llu", i ? "," : "", (unsigned long long)ts[i]);
	fprintf(log, "],\"t_token_pre_ns\":[");
	for (int i = 0; i < tokens && i < 64; i++)
		fprintf(log, "%s%llu", i ? "," : "", (unsigned long long)pre[i]);
	fprintf(log, "],\"t_end_ns\":%llu,\"tokens\":%d}\n", (unsigned long long)mono_ns(), tokens);
	fflush(log);
	return 0;
}

int main(int argc, char **argv)
{
	struct sockaddr_in a = { .sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
	socklen_t alen = sizeof(a);
	SSL_CTX *ctx;
	FILE *log;
	int ls, one = 1;

	if (argc != 7) {
		fprintf(stderr, "usage: %s CERT KEY LOG TTFT_MS ITL_MS TOKENS\n", argv[0]);
		return 2;
	}
	signal(SIGPIPE, SIG_IGN);	/* a client gone mid-stream ends its connection only */
	ctx = SSL_CTX_new(TLS_server_method());
	if (!ctx || SSL_CTX_use_certificate_file(ctx, argv[1], SSL_FILETYPE_PEM) != 1 ||
	    SSL_CTX_use_PrivateKey_file(ctx, argv[2], SSL_FILETYPE_PEM) != 1) {
		fprintf(stderr, "cannot load the certificate\n");
		return 1;
	}
	log = fopen(argv[3], "a");
	ls = socket(AF_INET, SOCK_STREAM, 0);
	if (!log || ls < 0 || bind(ls, (struct sockaddr *)&a, sizeof(a)) || listen(ls, 16) ||
	    getsockname(ls, (struct sockaddr *)&a, &alen)) {
		perror("listen");
		return 1;
	}
	printf("listening on 127.0.0.1:%d\n", ntohs(a.sin_port));
	fflush(stdout);
	for (;;) {
		struct sockaddr_in peer;
		socklen_t plen = sizeof(peer);
		int fd = accept(ls, (struct sockaddr *)&peer, &plen);
		SSL *ssl;

		if (fd < 0)
			continue;
		setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
		ssl = SSL_new(ctx);
		SSL_set_fd(ssl, fd);
		if (SSL_accept(ssl) == 1)
			while (!serve_one(ssl, ntohs(peer.sin_port), atol(argv[4]), atol(argv[5]),
					  atoi(argv[6]), log))
				;
		SSL_free(ssl);
		close(fd);
	}
}
