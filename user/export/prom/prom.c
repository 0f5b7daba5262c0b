// SPDX-License-Identifier: GPL-2.0-only
/* The Prometheus sink: the pipeline's hooks, under the lock the server thread shares. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "user/lib/log.h"
#include "user/export/prom/prom_int.h"

static void sink_request(void *ctx, const struct ttf_request *r, const struct ttf_req_metrics *m,
			 const struct ttf_attrib *a)
{
	struct prom_sink *ps = ctx;

	pthread_mutex_lock(&ps->lock);
	prom_metrics__observe(ps->pm, r, m, a);
	pthread_mutex_unlock(&ps->lock);
}

static void sink_request_read(void *ctx, const struct ttf_request *r)
{
	struct prom_sink *ps = ctx;

	pthread_mutex_lock(&ps->lock);
	prom_metrics__read(ps->pm, r);
	pthread_mutex_unlock(&ps->lock);
}

static void sink_rejected(void *ctx, const struct ttf_request *r)
{
	struct prom_sink *ps = ctx;

	pthread_mutex_lock(&ps->lock);
	prom_metrics__rejected(ps->pm, r);
	pthread_mutex_unlock(&ps->lock);
}

static void sink_engine_event(void *ctx, const struct ttf_engine_event *e)
{
	struct prom_sink *ps = ctx;

	pthread_mutex_lock(&ps->lock);
	prom_metrics__add_uprobe_hits(ps->pm, 1);
	pthread_mutex_unlock(&ps->lock);
}

static void sink_counters(void *ctx, const struct report_counter *c, int n)
{
	struct prom_sink *ps = ctx;

	pthread_mutex_lock(&ps->lock);
	prom_metrics__set_counters(ps->pm, c, n);
	pthread_mutex_unlock(&ps->lock);
}

static int sink_finish(void *ctx, const struct report_counter *c, int n)
{
	struct prom_sink *ps = ctx;
	char *text;
	size_t len;
	FILE *f;
	int err = 0;

	sink_counters(ctx, c, n);
	if (!ps->out_path)
		return 0;
	text = prom_metrics__render(ps->pm, &len);	/* the tracer's thread: no lock needed */
	if (!text)
		return -ENOMEM;
	f = fopen(ps->out_path, "w");
	if (!f || fwrite(text, 1, len, f) != len)
		err = -errno;
	if (f && fclose(f) && !err)
		err = -errno;
	if (err)
		ttf_error("check that the directory exists and is writable", "cannot write %s: %s",
			  ps->out_path, strerror(-err));
	free(text);
	return err;
}

static void sink_destroy(void *ctx)
{
	struct prom_sink *ps = ctx;

	prom_http__stop(ps);
	pthread_mutex_destroy(&ps->lock);
	prom_metrics__free(ps->pm);
	free(ps->sysfs_root);
	free(ps->out_path);
	free(ps);
}

static void sink_of(struct prom_sink *ps, struct ttf_sink *out)
{
	*out = (struct ttf_sink){
		.name = "prometheus", .ctx = ps, .request = sink_request,
		.request_read = sink_request_read, .rejected = sink_rejected,
		.engine_event = sink_engine_event, .counters = sink_counters,
		.finish = sink_finish, .destroy = sink_destroy,
	};
}

int prom_sink__new(const char *spec, const char *sysfs_root, const struct prom_buckets *b,
		   struct ttf_sink *out)
{
	struct sockaddr_storage sa;
	struct prom_sink *ps;
	socklen_t sa_len;
	int err;

	err = prom__parse_listen(spec, &sa, &sa_len);
	if (err)
		return err;
	ps = calloc(1, sizeof(*ps));
	if (!ps)
		return -ENOMEM;
	pthread_mutex_init(&ps->lock, NULL);
	ps->pm = prom_metrics__new(b);
	if (sysfs_root)
		ps->sysfs_root = strdup(sysfs_root);
	if (!ps->pm || (sysfs_root && !ps->sysfs_root)) {
		err = -ENOMEM;
		goto cleanup;
	}
	err = prom_http__start(ps, &sa, sa_len);
	if (err)
		goto cleanup;
	sink_of(ps, out);
	return 0;
cleanup:
	sink_destroy(ps);
	return err;
}

int prom_file_sink__new(const char *path, const struct prom_buckets *b, struct ttf_sink *out)
{
	struct prom_sink *ps = calloc(1, sizeof(*ps));

	if (!ps)
		return -ENOMEM;
	pthread_mutex_init(&ps->lock, NULL);
	ps->pm = prom_metrics__new(b);
	ps->out_path = strdup(path);
	if (!ps->pm || !ps->out_path) {
		sink_destroy(ps);
		return -ENOMEM;
	}
	sink_of(ps, out);
	return 0;
}
