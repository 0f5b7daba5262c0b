// SPDX-License-Identifier: GPL-2.0-only
/* /metrics over HTTP: the listen address, the socket and libmicrohttpd's handler. */
#include <arpa/inet.h>
#include <errno.h>
#include <microhttpd.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "user/export/prom/prom_pcie.h"
#include "user/export/prom/prom_int.h"

int prom__parse_listen(const char *spec, struct sockaddr_storage *sa, socklen_t *sa_len)
{
	char host[64] = "127.0.0.1";
	const char *port_s = spec, *colon;
	char *end;
	long port;

	if (!spec || !*spec)
		return -EINVAL;
	if (spec[0] == '[') {
		const char *rb = strchr(spec, ']');

		if (!rb || rb[1] != ':' || (size_t)(rb - spec - 1) >= sizeof(host))
			return -EINVAL;
		memcpy(host, spec + 1, rb - spec - 1);
		host[rb - spec - 1] = '\0';
		port_s = rb + 2;
	} else if ((colon = strrchr(spec, ':'))) {
		if ((size_t)(colon - spec) >= sizeof(host) || colon == spec)
			return -EINVAL;
		memcpy(host, spec, colon - spec);
		host[colon - spec] = '\0';
		port_s = colon + 1;
	}
	errno = 0;
	port = strtol(port_s, &end, 10);
	if (errno || end == port_s || *end || port < 0 || port > 65535)
		return -EINVAL;
	if (!strcmp(host, "localhost"))
		strcpy(host, "127.0.0.1");
	memset(sa, 0, sizeof(*sa));
	if (spec[0] == '[') {
		struct sockaddr_in6 *s6 = (struct sockaddr_in6 *)sa;

		s6->sin6_family = AF_INET6;
		s6->sin6_port = htons(port);
		if (inet_pton(AF_INET6, host, &s6->sin6_addr) != 1)
			return -EINVAL;
		*sa_len = sizeof(*s6);
	} else {
		struct sockaddr_in *s4 = (struct sockaddr_in *)sa;

		s4->sin_family = AF_INET;
		s4->sin_port = htons(port);
		if (inet_pton(AF_INET, host, &s4->sin_addr) != 1)
			return -EINVAL;
		*sa_len = sizeof(*s4);
	}
	return 0;
}

/* The request metrics, then the PCIe gauges read now (outside the lock). */
static char *scrape(struct prom_sink *ps, size_t *len)
{
	char *text, *all = NULL;
	size_t text_len = 0, sz = 0;
	FILE *f;

	pthread_mutex_lock(&ps->lock);
	text = prom_metrics__render(ps->pm, &text_len);
	pthread_mutex_unlock(&ps->lock);
	if (!text)
		return NULL;
	f = open_memstream(&all, &sz);
	if (!f) {
		free(text);
		return NULL;
	}
	fwrite(text, 1, text_len, f);
	free(text);
	prom_pcie__render(f, ps->sysfs_root);
	if (fclose(f)) {
		free(all);
		return NULL;
	}
	*len = sz;
	return all;
}

static enum MHD_Result on_http(void *cls, struct MHD_Connection *conn, const char *url,
			       const char *method, const char *version, const char *upload_data,
			       size_t *upload_data_size, void **con_cls)
{
	struct prom_sink *ps = cls;
	struct MHD_Response *resp;
	unsigned int code = MHD_HTTP_OK;
	enum MHD_Result ret;
	size_t len = 0;
	char *text;

	if (strcmp(method, "GET") && strcmp(method, "HEAD")) {
		static char msg[] = "only GET\n";

		resp = MHD_create_response_from_buffer(strlen(msg), msg, MHD_RESPMEM_PERSISTENT);
		code = MHD_HTTP_METHOD_NOT_ALLOWED;
	} else if (strcmp(url, "/metrics")) {
		static char msg[] = "ttftrace serves /metrics\n";

		resp = MHD_create_response_from_buffer(strlen(msg), msg, MHD_RESPMEM_PERSISTENT);
		code = MHD_HTTP_NOT_FOUND;
	} else {
		text = scrape(ps, &len);
		if (!text)
			return MHD_NO;
		resp = MHD_create_response_from_buffer(len, text, MHD_RESPMEM_MUST_FREE);
		if (!resp)
			free(text);
	}
	if (!resp)
		return MHD_NO;
	MHD_add_response_header(resp, MHD_HTTP_HEADER_CONTENT_TYPE,
				code == MHD_HTTP_OK ? "text/plain; version=0.0.4; charset=utf-8"
						    : "text/plain");
	ret = MHD_queue_response(conn, code, resp);
	MHD_destroy_response(resp);
	return ret;
}

/* Our own listening socket: bind errors keep their errno, and port 0 can be read back. */
static int open_listener(const struct sockaddr_storage *sa, socklen_t sa_len)
{
	int one = 1, fd = socket(sa->ss_family, SOCK_STREAM | SOCK_CLOEXEC, 0), err;

	if (fd < 0)
		return -errno;
	setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
	if (bind(fd, (const struct sockaddr *)sa, sa_len) || listen(fd, 16)) {
		err = -errno;
		close(fd);
		return err;
	}
	return fd;
}

static void print_url(int fd)
{
	struct sockaddr_storage sa;
	socklen_t len = sizeof(sa);
	char host[INET6_ADDRSTRLEN] = "?";
	int port = 0;

	if (getsockname(fd, (struct sockaddr *)&sa, &len))
		return;
	if (sa.ss_family == AF_INET6) {
		struct sockaddr_in6 *s6 = (struct sockaddr_in6 *)&sa;

		inet_ntop(AF_INET6, &s6->sin6_addr, host, sizeof(host));
		port = ntohs(s6->sin6_port);
		fprintf(stderr, "Serving Prometheus metrics on http://[%s]:%d/metrics\n", host,
			port);
	} else {
		struct sockaddr_in *s4 = (struct sockaddr_in *)&sa;

		inet_ntop(AF_INET, &s4->sin_addr, host, sizeof(host));
		port = ntohs(s4->sin_port);
		fprintf(stderr, "Serving Prometheus metrics on http://%s:%d/metrics\n", host, port);
	}
}


int prom_http__start(struct prom_sink *ps, const struct sockaddr_storage *sa, socklen_t sa_len)
{
	unsigned int flags = MHD_USE_INTERNAL_POLLING_THREAD;
	int fd = open_listener(sa, sa_len);

	if (fd < 0)
		return fd;
	if (sa->ss_family == AF_INET6)
		flags |= MHD_USE_IPv6;
	ps->mhd = MHD_start_daemon(flags, 0, NULL, NULL, on_http, ps,
				   MHD_OPTION_LISTEN_SOCKET, fd,
				   MHD_OPTION_CONNECTION_LIMIT, (unsigned int)16,
				   MHD_OPTION_CONNECTION_TIMEOUT, (unsigned int)10,
				   MHD_OPTION_END);
	if (!ps->mhd) {
		int err = errno ? -errno : -EIO;

		close(fd);
		return err;
	}
	print_url(fd);
	return 0;
}

void prom_http__stop(struct prom_sink *ps)
{
	if (ps->mhd)
		MHD_stop_daemon(ps->mhd);
}
