// SPDX-License-Identifier: GPL-2.0-only
/*
 * loadgen: send N streamed completion requests at a fixed concurrency and
 * time each one from the client (libcurl multi interface).
 */
#include <argp.h>
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <math.h>

#include "user/lib/progress.h"
#include "user/lib/stats.h"
#include "tools/loadgen/loadgen.h"

static const char doc[] =
"Stream completion requests to an LLM server and time them from the client.\n"
"\n"
"Each request gets a prompt of P printable characters (a different one per\n"
"request) and asks for M tokens with stream: true. Per request it records,\n"
"in CLOCK_MONOTONIC ns (the clock ttftrace uses): when it began sending\n"
"the request, when the first and last token events arrived, and the client's\n"
"local port, which is the remote port in ttftrace's \"conn\" field.\n"
"\n"
"  TTFT = first token event received - request's send begun\n"
"  TPOT = (last token - first token) / (tokens - 1)\n"
"  tokens = usage.completion_tokens (llama.cpp: tokens_predicted) when the\n"
"           server reports it, else the token events' count\n"
"\n"
"Output: JSON {\"requests\": [...], \"summary\": {...}} on stdout or -o FILE;\n"
"a short summary on stderr.\n"
"\n"
"Sweeps (--sweep[=LIST], default 1,4,8,16,32,64): per step, W warm-up\n"
"requests (--warmup, default C; excluded) then N measured ones (-n, default\n"
"max(16, 4 x C)) at concurrency C on kept-alive connections; a table of\n"
"client P50/P95/P99 TTFT and TPOT per step on stderr, JSON with each step's\n"
"CLOCK_MONOTONIC window on stdout or -o. Run ttftrace --json -o RUN.ndjson\n"
"during the sweep, stop it, then --sweep-result SWEEP.json --ttftrace-ndjson\n"
"RUN.ndjson prints client and ttftrace numbers side by side (bench/sweep.sh\n"
"does all of it).\n"
"\n"
"--slo SPEC (e.g. ttft_p95=2s,tpot_p95=100ms; metrics ttft, tpot, e2e) is\n"
"checked on the client's numbers: of the run, or of each step of a sweep,\n"
"which then reports the highest concurrency that meets it.\n"
"\n"
"Exit status: 0 all requests succeeded (and the SLO was met), 1 runtime\n"
"error, 2 usage error (bad --slo included), 3 some requests failed (HTTP\n"
"error, transport error, error event, or no token events), 4 the SLO was\n"
"not met (a sweep: at no step).\n"
"\n"
"EXAMPLES:\n"
"  loadgen -u http://127.0.0.1:8080/v1/chat/completions -n 8 -c 2\n"
"        8 chat requests, 2 at a time, 64-character prompts, 32 tokens each\n"
"  loadgen -u http://127.0.0.1:8080/v1/completions -n 100 -c 8 -P 512 -m 128 \\\n"
"          --include-usage -o run.json\n"
"        legacy completions API, token counts from the usage chunk\n"
"  loadgen -u http://127.0.0.1:8080/completion --api llamacpp -n 4\n"
"        llama.cpp's native streaming endpoint\n"
"  loadgen -u http://127.0.0.1:8080/v1/chat/completions --sweep=1,4,8 -P 256 \\\n"
"          --slo ttft_p95=2s,tpot_p95=100ms -o sweep.json\n"
"        stepped concurrency; the highest step that meets the SLO\n";

enum { OPT_INCLUDE_USAGE = 0x100, OPT_IGNORE_EOS, OPT_TIMEOUT, OPT_MODEL, OPT_SWEEP, OPT_WARMUP,
       OPT_SLO, OPT_SWEEP_RESULT, OPT_TTFTRACE_NDJSON };

static const struct argp_option options[] = {
	{ "url", 'u', "URL", 0, "Endpoint (required), e.g. http://127.0.0.1:8080/v1/chat/completions" },
	{ "requests", 'n', "N", 0, "Requests to send (default 8)" },
	{ "concurrency", 'c', "C", 0, "Requests in flight at once (default 1)" },
	{ "prompt-tokens", 'P', "P", 0, "Prompt length in printable characters (default 64)" },
	{ "max-tokens", 'm', "M", 0, "max_tokens / n_predict per request (default 32)" },
	{ "api", 'a', "API", 0,
	  "chat, completion or llamacpp (default: from the URL path, else chat)" },
	{ "include-usage", OPT_INCLUDE_USAGE, NULL, 0,
	  "Ask for a usage chunk (stream_options.include_usage)" },
	{ "ignore-eos", OPT_IGNORE_EOS, NULL, 0,
	  "Send ignore_eos: true (vLLM, llama.cpp) so every request yields M tokens" },
	{ "model", OPT_MODEL, "NAME", 0, "\"model\" field of OpenAI requests (default demo)" },
	{ "timeout", OPT_TIMEOUT, "SECONDS", 0, "Per-request timeout (default 300)" },
	{ "output", 'o', "FILE", 0, "Write the JSON result to FILE instead of stdout" },
	{ "seed", 's', "S", 0, "Seed for prompts and the request's \"seed\" field (default 1)" },
	{ "quiet", 'q', NULL, 0, "No summary on stderr" },
	{ "sweep", OPT_SWEEP, "LIST", OPTION_ARG_OPTIONAL,
	  "Step concurrency through LIST (default 1,4,8,16,32,64)" },
	{ "warmup", OPT_WARMUP, "W", 0, "Sweep: unmeasured requests per step (default C)" },
	{ "slo", OPT_SLO, "SPEC", 0, "e.g. ttft_p95=2s,tpot_p95=100ms; exit 4 when not met" },
	{ "sweep-result", OPT_SWEEP_RESULT, "FILE", 0,
	  "Print a sweep's table from its JSON (with --ttftrace-ndjson: side by side)" },
	{ "ttftrace-ndjson", OPT_TTFTRACE_NDJSON, "FILE", 0,
	  "ttftrace --json output recorded during the sweep" },
	{},
};

static int parse_uint(const char *s, unsigned min, unsigned max, unsigned *out)
{
	char *end;
	unsigned long v;

	errno = 0;
	v = strtoul(s, &end, 10);
	if (errno || end == s || *end || s[0] == '-' || v < min || v > max)
		return -EINVAL;
	*out = v;
	return 0;
}

/* "1,4,8" -> steps; strictly increasing, each 1..10000. */
static int parse_steps(const char *s, struct lg_opts *o)
{
	const char *p = s;
	char *end;

	o->n_steps = 0;
	for (;;) {
		unsigned long v;

		errno = 0;
		v = strtoul(p, &end, 10);
		if (errno || end == p || *p == '-' || v < 1 || v > 10000 ||
		    o->n_steps == LG_MAX_STEPS || (o->n_steps && v <= o->steps[o->n_steps - 1]))
			return -EINVAL;
		o->steps[o->n_steps++] = v;
		if (!*end)
			return 0;
		if (*end != ',')
			return -EINVAL;
		p = end + 1;
	}
}

static bool looks_like_steps(const char *s)
{
	return *s && strspn(s, "0123456789,") == strlen(s);
}

/* --sweep was given without "=LIST": a later "1,2,4" argument is its list. */
static bool sweep_bare;

static error_t parse_opt(int key, char *arg, struct argp_state *state)
{
	struct lg_opts *o = state->input;
	int err = 0;

	switch (key) {
	case 'u':
		o->url = arg;
		break;
	case 'n':
		err = parse_uint(arg, 1, 1000000, &o->n_requests);
		o->n_set = true;
		break;
	case 'c':
		err = parse_uint(arg, 1, 10000, &o->concurrency);
		break;
	case 'P':
		err = parse_uint(arg, 1, 10000000, &o->prompt_tokens);
		break;
	case 'm':
		err = parse_uint(arg, 1, 10000000, &o->max_tokens);
		break;
	case 's':
		err = parse_uint(arg, 0, UINT_MAX / 2, &o->seed);
		break;
	case OPT_TIMEOUT:
		err = parse_uint(arg, 1, 86400, &o->timeout_s);
		break;
	case 'a':
		o->api_set = true;
		if (!strcmp(arg, "chat"))
			o->api = LG_API_CHAT;
		else if (!strcmp(arg, "completion"))
			o->api = LG_API_COMPLETION;
		else if (!strcmp(arg, "llamacpp"))
			o->api = LG_API_LLAMACPP;
		else
			argp_error(state, "--api must be chat, completion or llamacpp, not '%s'", arg);
		break;
	case 'o':
		o->output = arg;
		break;
	case 'q':
		o->quiet = true;
		break;
	case OPT_MODEL:
		o->model = arg;
		break;
	case OPT_INCLUDE_USAGE:
		o->include_usage = true;
		break;
	case OPT_IGNORE_EOS:
		o->ignore_eos = true;
		break;
	case OPT_SWEEP:
		sweep_bare = !arg;
		if (parse_steps(arg ? arg : "1,4,8,16,32,64", o))
			argp_error(state, "--sweep LIST: increasing concurrencies 1..10000 separated by "
				   "commas, at most %d, not '%s'", LG_MAX_STEPS, arg);
		break;
	case OPT_WARMUP:
		err = parse_uint(arg, 0, 1000000, &o->warmup);
		o->warmup_set = true;
		break;
	case OPT_SLO: {
		char msg[160];

		if (slo__parse(arg, &o->slo, msg, sizeof(msg))) {
			fprintf(stderr, "Error: --slo: %s\nHINT: %s\n", msg, SLO_HINT);
			exit(LG_EXIT_USAGE);
		}
		for (int i = 0; i < o->slo.n; i++) {
			enum slo_metric m = o->slo.items[i].metric;

			if (m != SLO_TTFT && m != SLO_TPOT && m != SLO_E2E) {
				fprintf(stderr, "Error: --slo: loadgen does not measure %s\n"
					"HINT: the client measures ttft, tpot and e2e; check %s with "
					"ttftrace --slo\n", slo__metric_name(m), slo__metric_name(m));
				exit(LG_EXIT_USAGE);
			}
		}
		o->slo_spec = arg;
		break;
	}
	case OPT_SWEEP_RESULT:
		o->sweep_result = arg;
		break;
	case OPT_TTFTRACE_NDJSON:
		o->ttftrace_ndjson = arg;
		break;
	case ARGP_KEY_ARG:
		/* "--sweep 1,2": argp gives an optional argument only as "--sweep=1,2" */
		if (sweep_bare && looks_like_steps(arg)) {
			sweep_bare = false;
			if (parse_steps(arg, o))
				argp_error(state, "--sweep LIST: increasing concurrencies 1..10000 "
					   "separated by commas, not '%s'", arg);
			break;
		}
		argp_error(state, "unexpected argument '%s'", arg);
		break;
	case ARGP_KEY_END:
		if (!o->url && !o->sweep_result)
			argp_error(state, "--url is required");
		if (o->ttftrace_ndjson && !o->sweep_result)
			argp_error(state, "--ttftrace-ndjson goes with --sweep-result (stop ttftrace "
				   "first so that its file is complete)");
		break;
	default:
		return ARGP_ERR_UNKNOWN;
	}
	if (err)
		argp_error(state, "invalid value '%s' for %s%c", arg,
			   key < 0x100 ? "-" : key == OPT_WARMUP ? "--warmup" : "--timeout",
			   key < 0x100 ? key : ' ');
	return 0;
}

/* /v1/chat/completions -> chat, /v1/completions -> completion, /completion -> llamacpp */
static enum lg_api api_from_url(const char *url)
{
	const char *p = strstr(url, "://");
	const char *q;
	size_t n;

	p = p ? strchr(p + 3, '/') : NULL;
	if (!p)
		return LG_API_CHAT;
	q = strchr(p, '?');
	n = q ? (size_t)(q - p) : strlen(p);
	if (n >= 17 && !strncmp(p + n - 17, "/chat/completions", 17))
		return LG_API_CHAT;
	if (n >= 15 && !strncmp(p, "/v1/completions", 15))
		return LG_API_COMPLETION;
	if ((n == 11 && !strncmp(p, "/completion", 11)) ||
	    (n == 12 && !strncmp(p, "/completions", 12)))
		return LG_API_LLAMACPP;
	return LG_API_CHAT;
}

static int start_next(CURLM *multi, struct lg_req *reqs, unsigned *next, const struct lg_opts *o)
{
	struct lg_req *r = &reqs[*next];
	int err = lg_req__init(r, o->idx0 + *next, o);

	if (err)
		return err;
	if (curl_multi_add_handle(multi, r->easy) != CURLM_OK)
		return -EIO;
	(*next)++;
	return 0;
}

int lg_run(const struct lg_opts *o, struct lg_req *reqs, uint64_t *wall_ns)
{
	CURLM *multi = curl_multi_init();
	unsigned next = 0, done = 0;
	uint64_t t0 = lg_now_ns();
	int running = 0, err = 0;
	CURLMsg *msg;
	int left;

	if (!multi)
		return -ENOMEM;
	/* One connection per in-flight request; kept alive and reused after. */
	curl_multi_setopt(multi, CURLMOPT_MAX_HOST_CONNECTIONS, (long)o->concurrency);
	curl_multi_setopt(multi, CURLMOPT_MAXCONNECTS, (long)o->concurrency);
	while (next < o->concurrency && next < o->n_requests) {
		err = start_next(multi, reqs, &next, o);
		if (err)
			goto cleanup;
	}
	while (done < o->n_requests) {
		if (curl_multi_perform(multi, &running) != CURLM_OK) {
			err = -EIO;
			goto cleanup;
		}
		while ((msg = curl_multi_info_read(multi, &left))) {
			struct lg_req *r;

			if (msg->msg != CURLMSG_DONE)
				continue;
			curl_easy_getinfo(msg->easy_handle, CURLINFO_PRIVATE, (char **)&r);
			lg_req__finish(r, msg->data.result);
			curl_multi_remove_handle(multi, r->easy);
			done++;
			progress__request(o->progress, lg_req__failure(r) ? NAN : lg_req__ttft_ms(r));
			if (next < o->n_requests) {
				err = start_next(multi, reqs, &next, o);
				if (err)
					goto cleanup;
			}
		}
		progress__tick(o->progress, lg_now_ns());
		if (done < o->n_requests &&
		    curl_multi_poll(multi, NULL, 0, 100, NULL) != CURLM_OK) {
			err = -EIO;
			goto cleanup;
		}
	}
cleanup:
	*wall_ns = lg_now_ns() - t0;
	for (unsigned i = 0; i < next; i++) {
		if (reqs[i].easy && !reqs[i].finished)
			curl_multi_remove_handle(multi, reqs[i].easy);
	}
	curl_multi_cleanup(multi);
	return err;
}

int main(int argc, char **argv)
{
	struct lg_opts o = {
		.model = "demo", .n_requests = 8, .concurrency = 1, .prompt_tokens = 64,
		.max_tokens = 32, .seed = 1, .timeout_s = 300,
	};
	const struct argp argp = { options, parse_opt, NULL, doc };
	struct lg_req *reqs = NULL;
	uint64_t wall_ns = 0;
	unsigned failed = 0;
	int err, ret = 1;

	argp_err_exit_status = LG_EXIT_USAGE;
	if (argp_parse(&argp, argc, argv, 0, NULL, &o))
		return LG_EXIT_USAGE;
	if (o.sweep_result)
		return lg_sweep_result(&o);
	if (!o.api_set)
		o.api = api_from_url(o.url);
	if (curl_global_init(CURL_GLOBAL_DEFAULT)) {
		fprintf(stderr, "Error: libcurl initialisation failed\n");
		return 1;
	}
	if (o.n_steps) {
		ret = lg_sweep(&o);
		curl_global_cleanup();
		return ret;
	}
	o.progress = progress__new(stderr, "loadgen");
	progress__set_step(o.progress, NULL, o.n_requests);
	reqs = calloc(o.n_requests, sizeof(*reqs));
	if (!reqs) {
		fprintf(stderr, "Error: out of memory for %u requests\n", o.n_requests);
		goto cleanup;
	}
	err = lg_run(&o, reqs, &wall_ns);
	progress__free(o.progress);
	o.progress = NULL;
	if (err) {
		fprintf(stderr, "Error: load loop failed: %s\n", strerror(-err));
		goto cleanup;
	}
	if (lg_output(&o, reqs, o.n_requests, wall_ns))
		goto cleanup;
	for (unsigned i = 0; i < o.n_requests; i++)
		failed += lg_req__failure(&reqs[i]) != NULL;
	if (failed) {
		fprintf(stderr, "Error: %u of %u requests failed\n", failed, o.n_requests);
		fprintf(stderr, "HINT: is the server up at %s and does it speak the %s API? "
			"See \"error\" in the JSON result\n", o.url,
			o.api == LG_API_CHAT ? "chat" : o.api == LG_API_COMPLETION ?
			"completion" : "llamacpp");
		ret = LG_EXIT_FAILED;
	} else {
		ret = o.slo_spec ? lg_slo_check_run(&o, reqs, o.n_requests) : LG_EXIT_OK;
	}
cleanup:
	progress__free(o.progress);
	if (reqs) {
		for (unsigned i = 0; i < o.n_requests; i++)
			lg_req__cleanup(&reqs[i]);
	}
	free(reqs);
	curl_global_cleanup();
	return ret;
}
