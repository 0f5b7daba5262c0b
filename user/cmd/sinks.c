// SPDX-License-Identifier: GPL-2.0-only
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include "user/lib/exit.h"
#include "user/lib/log.h"
#include "user/export/otlp.h"
#include "user/export/perfetto.h"
#include "user/export/prom.h"
#include "user/export/record.h"
#include "user/cmd/sinks.h"

static int add(struct pipeline *p, struct ttf_sink *s)
{
	if (pipeline__add_sink(p, s)) {
		s->destroy(s->ctx);
		ttf_error(NULL, "too many outputs");
		return TTF_EXIT_USAGE;
	}
	return 0;
}

int sinks__open(const struct ttf_opts *o, struct pipeline *p)
{
	struct ttf_sink s;
	int err, code;

	if (o->record) {
		const struct pipeline_opts *po = pipeline__opts(p);
		uint32_t flags = (po->xmit_expected ? REC_F_XMIT : 0) |
				 (po->attribution ? REC_F_ATTRIBUTION : 0) |
				 (po->sched ? REC_F_SCHED : 0) | (po->gpu ? REC_F_GPU : 0);

		err = record_sink__new(o->record, flags, &s);
		if (err) {
			ttf_error(err == -ENOSPC ? "free space on that file system" :
				  "check that the directory exists and is writable",
				  "cannot write %s: %s", o->record, strerror(-err));
			return TTF_EXIT_OUTPUT;
		}
		code = add(p, &s);
		if (code)
			return code;
	}

	if (o->perfetto) {
		struct perfetto_opts po = { .gpu = pipeline__gpu(p), .sched = pipeline__sched(p),
					    .sched_mode = o->perfetto_sched };

		err = perfetto_sink__new_opts(o->perfetto, &po, &s);
		if (err) {
			ttf_error(err == -ENOSPC ? "free space on that file system" :
				  "check that the directory exists and is writable",
				  "cannot write %s: %s", o->perfetto, strerror(-err));
			return TTF_EXIT_OUTPUT;
		}
		code = add(p, &s);
		if (code)
			return code;
	}
	if (o->metrics) {
		err = prom_sink__new(o->metrics, o->sysfs_root, &o->buckets, &s);
		if (err) {
			ttf_error("give a free port, or ADDR:PORT with an address of this host",
				  "cannot serve metrics on %s: %s", o->metrics, strerror(-err));
			return err == -EINVAL ? TTF_EXIT_USAGE : TTF_EXIT_OUTPUT;
		}
		code = add(p, &s);
		if (code)
			return code;
	}
	{
		/* --otlp URL or the OTEL_EXPORTER_OTLP_* variables (otlp_config.h) */
		static struct otlp_config oc;
		char msg[256], hint[160];

		if (otlp_config__load(&oc, o->otlp_url, getenv, msg, sizeof(msg), hint,
				      sizeof(hint))) {
			ttf_error(hint[0] ? hint : NULL, "%s", msg);
			return TTF_EXIT_USAGE;
		}
		if (otlp_config__enabled(&oc)) {
			err = otlp_sink__new(&oc, &s);
			if (err) {
				ttf_error(NULL, "cannot start the OTLP export: %s", strerror(-err));
				return TTF_EXIT_INTERNAL;
			}
			code = add(p, &s);
			if (code)
				return code;
		}
	}
	return 0;
}
