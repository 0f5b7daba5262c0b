// SPDX-License-Identifier: GPL-2.0-only
/* OTLP/JSON spans of a run, written to a file at its end (otlp_file.h). */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "user/export/otlp/otlp.h"
#include "user/export/otlp/otlp_file.h"
#include "user/lib/log.h"

struct otlp_file {
	char *path;
	uint64_t seed;
	int64_t off_ns;
	struct otlp_span_src *s;
	int n, cap;
	uint64_t over;		/* requests past OTLP_FILE_MAX, not written */
};

static void on_request(void *ctx, const struct ttf_request *r, const struct ttf_req_metrics *m,
		       const struct ttf_attrib *a)
{
	struct otlp_file *of = ctx;

	if (!m)
		return;
	if (of->n == OTLP_FILE_MAX) {
		of->over++;
		return;
	}
	if (of->n == of->cap) {
		int cap = of->cap ? 2 * of->cap : 64;
		struct otlp_span_src *p;

		cap = cap > OTLP_FILE_MAX ? OTLP_FILE_MAX : cap;
		p = realloc(of->s, (size_t)cap * sizeof(*p));
		if (!p) {
			of->over++;
			return;
		}
		of->s = p;
		of->cap = cap;
	}
	otlp_span_src__fill(&of->s[of->n++], r, m, a);
}

/* FILE ending in ".pb": protobuf, else JSON. */
static enum otlp_proto proto_of(const char *path)
{
	size_t n = strlen(path);

	return n > 3 && !strcmp(path + n - 3, ".pb") ? OTLP_PROTO_PROTOBUF : OTLP_PROTO_JSON;
}

static int on_finish(void *ctx, const struct report_counter *c, int n)
{
	struct otlp_file *of = ctx;
	enum otlp_proto proto = proto_of(of->path);
	char *body = NULL;
	size_t len = 0;
	FILE *f;
	int err = 0;

	(void)c;
	(void)n;
	if (of->n && otlp__build_traces(proto, of->s, of->n, NULL, NULL, of->seed, of->off_ns,
					&body, &len))
		return -ENOMEM;
	f = fopen(of->path, "w");
	if (!f)
		err = -errno;
	else if (body && fwrite(body, 1, len, f) != len)
		err = -errno;
	else if (!body && proto == OTLP_PROTO_JSON && fputs("{\"resourceSpans\":[]}", f) < 0)
		err = -errno;
	if (f && fclose(f) && !err)
		err = -errno;
	if (err)
		ttf_error("check that the directory exists and is writable", "cannot write %s: %s",
			  of->path, strerror(-err));
	if (of->over)
		ttf_warn("%s holds the first %d requests; %llu more were not written", of->path,
			 of->n, (unsigned long long)of->over);
	free(body);
	return err;
}

static void on_destroy(void *ctx)
{
	struct otlp_file *of = ctx;

	free(of->s);
	free(of->path);
	free(of);
}

int otlp_file_sink__new(const char *path, uint64_t seed, int64_t mono_to_unix_ns,
			struct ttf_sink *out)
{
	struct otlp_file *of = calloc(1, sizeof(*of));

	if (!of || !(of->path = strdup(path))) {
		free(of);
		return -ENOMEM;
	}
	of->seed = seed;
	of->off_ns = mono_to_unix_ns;
	*out = (struct ttf_sink){ .name = "otlp-file", .ctx = of, .request = on_request,
				  .finish = on_finish, .destroy = on_destroy };
	return 0;
}
