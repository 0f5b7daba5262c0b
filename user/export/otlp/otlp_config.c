// SPDX-License-Identifier: GPL-2.0-only
/* --otlp and OTEL_* exporter variables -> struct otlp_config (otlp_config.h). */
#include <ctype.h>
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "user/export/otlp/otlp_config.h"

struct ctx {
	char *(*get)(const char *name);
	char *err, *hint;
	size_t err_len, hint_len;
};

static int fail(struct ctx *x, const char *hint, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(x->err, x->err_len, fmt, ap);
	va_end(ap);
	snprintf(x->hint, x->hint_len, "%s", hint ? hint : "");
	return -EINVAL;
}

/* The variable, "" and unset alike read as NULL. */
static const char *var(struct ctx *x, const char *name)
{
	const char *v = x->get(name);

	return v && *v ? v : NULL;
}

/* OTEL_EXPORTER_OTLP_<SIGNAL>_<what>, else OTEL_EXPORTER_OTLP_<what>; *name: which one. */
static const char *signal_var(struct ctx *x, const char *signal, const char *what,
			      char *name, size_t len)
{
	const char *v;

	snprintf(name, len, "OTEL_EXPORTER_OTLP_%s_%s", signal, what);
	v = var(x, name);
	if (v)
		return v;
	snprintf(name, len, "OTEL_EXPORTER_OTLP_%s", what);
	return var(x, name);
}

static bool is_http_url(const char *u)
{
	return (!strncmp(u, "http://", 7) && u[7]) || (!strncmp(u, "https://", 8) && u[8]);
}

/* %XX -> byte, in place (W3C Baggage value encoding). false on a bad escape. */
static bool pct_decode(char *s)
{
	char *w = s;

	for (char *r = s; *r; r++) {
		if (*r != '%') {
			*w++ = *r;
			continue;
		}
		if (!isxdigit((unsigned char)r[1]) || !isxdigit((unsigned char)r[2]))
			return false;
		char h[3] = { r[1], r[2], 0 };

		*w++ = (char)strtol(h, NULL, 16);
		r += 2;
	}
	*w = '\0';
	return true;
}

static void trim(char **s)
{
	char *e;

	while (**s == ' ' || **s == '\t')
		(*s)++;
	e = *s + strlen(*s);
	while (e > *s && (e[-1] == ' ' || e[-1] == '\t'))
		*--e = '\0';
}

/*
 * k=v,k2=v2 into up to cap pairs. on_pair(k, v) stores one; returns 0 or
 * -EINVAL (reported by fail with the variable's name).
 */
static int parse_pairs(struct ctx *x, const char *name, const char *val, int cap,
		       void (*on_pair)(void *dst, int i, const char *k, const char *v), void *dst,
		       int *n)
{
	char buf[4096], *save = NULL, *item;

	*n = 0;
	if (strlen(val) >= sizeof(buf))
		return fail(x, NULL, "%s is longer than %zu bytes", name, sizeof(buf) - 1);
	strcpy(buf, val);
	for (item = strtok_r(buf, ",", &save); item; item = strtok_r(NULL, ",", &save)) {
		char *eq = strchr(item, '='), *k = item, *v;

		if (!eq)
			return fail(x, "write key=value pairs separated by commas, e.g. "
				    "api-key=secret,tenant=a", "%s: '%s' is not key=value", name, item);
		*eq = '\0';
		v = eq + 1;
		trim(&k);
		trim(&v);
		if (!*k)
			return fail(x, NULL, "%s: empty key", name);
		if (!pct_decode(v))
			return fail(x, "escape bytes as %%XX (two hex digits)",
				    "%s: bad %%-escape in the value of '%s'", name, k);
		if (*n == cap)
			return fail(x, NULL, "%s: more than %d pairs", name, cap);
		on_pair(dst, (*n)++, k, v);
	}
	return 0;
}

static void header_pair(void *dst, int i, const char *k, const char *v)
{
	struct otlp_signal_cfg *s = dst;

	snprintf(s->headers[i], sizeof(s->headers[i]), "%s: %s", k, v);
}

static void res_pair(void *dst, int i, const char *k, const char *v)
{
	struct otlp_config *c = dst;

	snprintf(c->res_key[i], sizeof(c->res_key[i]), "%s", k);
	snprintf(c->res_val[i], sizeof(c->res_val[i]), "%s", v);
}

/* base + "/v1/<signal>" without doubling a slash (the spec's endpoint URL rule). */
static int join(struct ctx *x, char *out, size_t len, const char *base, const char *path,
		const char *from)
{
	size_t bl = strlen(base);

	if (!is_http_url(base))
		return fail(x, "give an http:// or https:// URL, e.g. http://127.0.0.1:4318",
			    "%s '%s' is not an http:// or https:// URL", from, base);
	if (bl && base[bl - 1] == '/')
		bl--;
	if ((size_t)snprintf(out, len, "%.*s%s", (int)bl, base, path) >= len)
		return fail(x, NULL, "%s is too long", from);
	return 0;
}

static int load_signal(struct ctx *x, struct otlp_signal_cfg *s, const char *signal,
		       const char *path, const char *cli_url)
{
	char name[64], exp[64];
	const char *v, *base_from;
	const char *base = NULL;

	memset(s, 0, sizeof(*s));
	snprintf(exp, sizeof(exp), "OTEL_%s_EXPORTER", signal);
	v = var(x, exp);
	if (v && strcmp(v, "otlp") && strcmp(v, "none"))
		return fail(x, "otlp or none", "%s '%s' is not supported", exp, v);
	if (v && !strcmp(v, "none"))
		return 0;

	snprintf(name, sizeof(name), "OTEL_EXPORTER_OTLP_%s_ENDPOINT", signal);
	v = var(x, name);
	if (v) {
		if (!is_http_url(v))
			return fail(x, "give an http:// or https:// URL, e.g. "
				    "http://127.0.0.1:4318/v1/traces",
				    "%s '%s' is not an http:// or https:// URL", name, v);
		if (strlen(v) >= sizeof(s->url))
			return fail(x, NULL, "%s is too long", name);
		strcpy(s->url, v);
	} else if (cli_url) {
		size_t l = strlen(cli_url), tl = strlen("/v1/traces");

		if (l > tl && !strcmp(cli_url + l - tl, "/v1/traces")) {
			/* the traces URL itself: its sibling for the others */
			char b[512];

			snprintf(b, sizeof(b), "%.*s", (int)(l - tl), cli_url);
			if (join(x, s->url, sizeof(s->url), b, path, "--otlp"))
				return -EINVAL;
		} else {
			base = cli_url;
			base_from = "--otlp";
		}
	} else if ((v = var(x, "OTEL_EXPORTER_OTLP_ENDPOINT"))) {
		base = v;
		base_from = "OTEL_EXPORTER_OTLP_ENDPOINT";
	}
	if (base && join(x, s->url, sizeof(s->url), base, path, base_from))
		return -EINVAL;
	if (!s->url[0])
		return 0;

	v = signal_var(x, signal, "PROTOCOL", name, sizeof(name));
	if (!v || !strcmp(v, "http/protobuf"))
		s->proto = OTLP_PROTO_PROTOBUF;
	else if (!strcmp(v, "http/json"))
		s->proto = OTLP_PROTO_JSON;
	else if (!strcmp(v, "grpc"))
		return fail(x, "use http/protobuf (the collector's OTLP/HTTP receiver, port 4318)",
			    "%s 'grpc' is not supported", name);
	else
		return fail(x, "http/protobuf or http/json", "%s '%s' is not a protocol", name, v);

	v = signal_var(x, signal, "COMPRESSION", name, sizeof(name));
	if (v && strcmp(v, "gzip") && strcmp(v, "none"))
		return fail(x, "gzip or none", "%s '%s' is not a compression", name, v);
	s->gzip = v && !strcmp(v, "gzip");

	v = signal_var(x, signal, "HEADERS", name, sizeof(name));
	if (v && parse_pairs(x, name, v, OTLP_MAX_HEADERS, header_pair, s, &s->n_headers))
		return -EINVAL;
	return 0;
}

int otlp_config__load(struct otlp_config *c, const char *cli_url,
		      char *(*get)(const char *name), char *err, size_t err_len,
		      char *hint, size_t hint_len)
{
	struct ctx x = { get, err, hint, err_len, hint_len };
	const char *v;

	memset(c, 0, sizeof(*c));
	if (err_len)
		err[0] = '\0';
	if (hint_len)
		hint[0] = '\0';
	if (cli_url && !is_http_url(cli_url))
		return fail(&x, "give an http:// or https:// URL, e.g. "
			    "http://127.0.0.1:4318/v1/traces",
			    "--otlp '%s' is not an http:// or https:// URL", cli_url);
	if (load_signal(&x, &c->traces, "TRACES", "/v1/traces", cli_url) ||
	    load_signal(&x, &c->metrics, "METRICS", "/v1/metrics", cli_url))
		return -EINVAL;

	v = var(&x, "OTEL_RESOURCE_ATTRIBUTES");
	if (v && parse_pairs(&x, "OTEL_RESOURCE_ATTRIBUTES", v, OTLP_MAX_RES_ATTRS, res_pair, c,
			     &c->n_res_attrs))
		return -EINVAL;
	/* OTEL_SERVICE_NAME wins over service.name in OTEL_RESOURCE_ATTRIBUTES */
	for (int i = 0; i < c->n_res_attrs; i++)
		if (!strcmp(c->res_key[i], "service.name"))
			snprintf(c->service_name, sizeof(c->service_name), "%s", c->res_val[i]);
	/* a span and metric attribute: lifted off the resource */
	for (int i = 0; i < c->n_res_attrs; i++) {
		if (strcmp(c->res_key[i], "gen_ai.provider.name"))
			continue;
		snprintf(c->provider, sizeof(c->provider), "%s", c->res_val[i]);
		c->n_res_attrs--;
		memmove(c->res_key[i], c->res_key[i + 1], (c->n_res_attrs - i) * sizeof(c->res_key[0]));
		memmove(c->res_val[i], c->res_val[i + 1], (c->n_res_attrs - i) * sizeof(c->res_val[0]));
		i--;
	}
	v = var(&x, "OTEL_SERVICE_NAME");
	if (v)
		snprintf(c->service_name, sizeof(c->service_name), "%s", v);

	c->interval_ms = OTLP_DEFAULT_INTERVAL_MS;
	v = var(&x, "OTEL_METRIC_EXPORT_INTERVAL");
	if (v) {
		char *end;
		long ms;

		errno = 0;
		ms = strtol(v, &end, 10);
		if (errno || *end || ms <= 0 || ms > 86400000)
			return fail(&x, "milliseconds, 1..86400000, e.g. 10000",
				    "OTEL_METRIC_EXPORT_INTERVAL '%s' is not a period", v);
		c->interval_ms = ms;
	}
	if (c->traces.url[0])
		otlp_sampler__load(&c->sampler, get);
	return 0;
}

bool otlp_config__enabled(const struct otlp_config *c)
{
	return c->traces.url[0] || c->metrics.url[0];
}
