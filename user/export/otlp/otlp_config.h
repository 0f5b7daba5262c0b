/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * Where and how the OTLP export sends: `--otlp URL` and the OpenTelemetry
 * exporter environment variables (docs/otel.md has the rules and their
 * sources):
 *   OTEL_EXPORTER_OTLP_ENDPOINT                 base URL: /v1/traces and /v1/metrics
 *                                               are appended (traces and metrics on)
 *   OTEL_EXPORTER_OTLP_{TRACES,METRICS}_ENDPOINT that signal's URL, used as is (it on)
 *   OTEL_EXPORTER_OTLP[_SIGNAL]_HEADERS         k=v,k2=v2 (values %-decoded)
 *   OTEL_EXPORTER_OTLP[_SIGNAL]_PROTOCOL        http/protobuf (default) | http/json
 *   OTEL_EXPORTER_OTLP[_SIGNAL]_COMPRESSION     gzip | none (default)
 *   OTEL_{TRACES,METRICS}_EXPORTER              otlp (default) | none: that signal off
 *   OTEL_SERVICE_NAME, OTEL_RESOURCE_ATTRIBUTES resource (k=v,..., %-decoded)
 *   OTEL_METRIC_EXPORT_INTERVAL                 ms between metric exports (default 60000)
 *   OTEL_TRACES_SAMPLER, OTEL_TRACES_SAMPLER_ARG which traces are sent (otlp_sampler.h)
 * gen_ai.provider.name in OTEL_RESOURCE_ATTRIBUTES is not a resource
 * attribute: it names the provider on every span and metric point instead
 * of the one guessed from the server's process name (otlp__provider).
 * A signal-specific variable replaces the general one. `--otlp URL` is the
 * traces URL when its path ends in /v1/traces (metrics then go to the same
 * URL with /v1/metrics), else a base URL like OTEL_EXPORTER_OTLP_ENDPOINT;
 * it takes the place of OTEL_EXPORTER_OTLP_ENDPOINT.
 */
#ifndef TTFTRACE_OTLP_CONFIG_H
#define TTFTRACE_OTLP_CONFIG_H

#include <stdbool.h>
#include "user/export/otlp/otlp_enc.h"
#include "user/export/otlp/otlp_sampler.h"

#define OTLP_MAX_HEADERS 16
#define OTLP_MAX_RES_ATTRS 32
#define OTLP_DEFAULT_INTERVAL_MS 60000

struct otlp_signal_cfg {
	char url[512];		/* "" this signal is off */
	enum otlp_proto proto;
	bool gzip;
	int n_headers;
	char headers[OTLP_MAX_HEADERS][256];	/* "Name: value", for libcurl */
};

struct otlp_config {
	struct otlp_signal_cfg traces, metrics;
	char service_name[128];		/* "" each traced process's comm */
	int n_res_attrs;
	char res_key[OTLP_MAX_RES_ATTRS][64];
	char res_val[OTLP_MAX_RES_ATTRS][256];
	long interval_ms;		/* metric export period */
	struct otlp_sampler sampler;
	char provider[64];		/* gen_ai.provider.name given; "" guess per process */
};

/*
 * Fill c from cli_url (NULL: none) and the variables get() returns (NULL:
 * unset; pass getenv). Returns 0 (the export is on when either url is set),
 * or -EINVAL with err (what is wrong, naming the variable) and hint filled.
 */
int otlp_config__load(struct otlp_config *c, const char *cli_url,
		      char *(*get)(const char *name), char *err, size_t err_len,
		      char *hint, size_t hint_len);
/* Either signal is on. */
bool otlp_config__enabled(const struct otlp_config *c);

#endif /* TTFTRACE_OTLP_CONFIG_H */
