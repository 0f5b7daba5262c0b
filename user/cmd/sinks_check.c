// SPDX-License-Identifier: GPL-2.0-only
/*
 * Outputs checked before the BPF programs load: a busy --metrics port, an
 * OTLP variable with a value the exporter does not take, or a --record or
 * --perfetto file that cannot be written fails in a second, not after the
 * probes attached. The sinks open for real later (sinks.c) and keep their
 * own errors for what changes in between.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/socket.h>
#include "user/lib/exit.h"
#include "user/lib/log.h"
#include "user/export/otlp/otlp_config.h"
#include "user/export/prom/prom.h"
#include "user/cmd/sinks.h"

/* Can something listen on spec now? The probe socket closes at once. */
static int check_metrics(const char *spec)
{
	struct sockaddr_storage sa;
	socklen_t sa_len;
	int one = 1, fd, err = 0;

	if (prom__parse_listen(spec, &sa, &sa_len))
		err = -EINVAL;
	fd = err ? -1 : socket(sa.ss_family, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (!err && fd < 0)
		err = -errno;
	if (fd >= 0) {
		/* as prom_http.c binds: a port in TIME_WAIT is free */
		setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
		if (bind(fd, (const struct sockaddr *)&sa, sa_len))
			err = -errno;
		close(fd);
	}
	if (!err)
		return 0;
	ttf_error("give a free port, or ADDR:PORT with an address of this host",
		  "cannot serve metrics on %s: %s", spec, strerror(-err));
	return err == -EINVAL ? TTF_EXIT_USAGE : TTF_EXIT_OUTPUT;
}

static int check_otlp(const char *url)
{
	static struct otlp_config oc;	/* large: not on the stack */
	char msg[256], hint[160];

	if (!otlp_config__load(&oc, url, getenv, msg, sizeof(msg), hint, sizeof(hint)))
		return 0;
	ttf_error(hint[0] ? hint : NULL, "%s", msg);
	return TTF_EXIT_USAGE;
}

/* The file is created as the sink will create it (and truncated: it would be). */
static int check_file(const char *path)
{
	int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);

	if (fd >= 0)
		return close(fd), 0;
	ttf_error(errno == ENOSPC ? "free space on that file system" :
		  "check that the directory exists and is writable",
		  "cannot write %s: %s", path, strerror(errno));
	return TTF_EXIT_OUTPUT;
}

int sinks__check_live(const struct ttf_opts *o)
{
	int code = 0;

	if (o->metrics)
		code = check_metrics(o->metrics);
	if (!code)
		code = check_otlp(o->otlp_url);
	if (!code && o->record)
		code = check_file(o->record);
	if (!code && o->perfetto)
		code = check_file(o->perfetto);
	return code;
}
