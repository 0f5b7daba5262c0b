// SPDX-License-Identifier: GPL-2.0-only
/*
 * Perfetto timeline sink (user/export/perfetto/perfetto.c), the parts that bound its
 * size and connect its tracks: request lanes, flows from a request to the
 * threads and GPU work that served it, the scheduler-slice modes, and gzip
 * output. Synthetic taps in, the written JSON parsed back with cJSON and
 * compared with hand-computed ids, timestamps and slices.
 */
#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <setjmp.h>
#include <cmocka.h>
#include <cjson/cJSON.h>
#include "tests/unit/export/cjson_fields.h"
#include <zlib.h>
#include "user/export/perfetto/perfetto.h"

#define US 1000ull
#define TGID 100
#define RX 101
#define TX 102
#define ENGINE_TGID 200
#define ENGINE 103
#define OTHER 150	/* a thread of the server that served no request */

static char path[256], path_gz[260];

static int setup(void **state)
{
	snprintf(path, sizeof(path), "/tmp/test_perfetto_flows_%d.json", getpid());
	snprintf(path_gz, sizeof(path_gz), "%s.gz", path);
	unlink(path);
	unlink(path_gz);
	return 0;
}

static int teardown(void **state)
{
	unlink(path);
	unlink(path_gz);
	return 0;
}

/* The whole file (gunzipped when it is gzip), NUL-terminated; *len its length. */
static char *slurp(const char *p, size_t *len)
{
	gzFile gz = gzopen(p, "rb");	/* reads plain files as they are too */
	size_t cap = 1 << 16, n = 0;
	char *buf = malloc(cap);
	int r;

	assert_non_null(gz);
	while ((r = gzread(gz, buf + n, (unsigned)(cap - n - 1))) > 0) {
		n += (size_t)r;
		if (cap - n < 2)
			buf = realloc(buf, cap *= 2);
	}
	gzclose(gz);
	buf[n] = 0;
	if (len)
		*len = n;
	return buf;
}

static cJSON *load(const char *p)
{
	char *s = slurp(p, NULL);
	cJSON *j = cJSON_Parse(s);

	free(s);
	assert_non_null(j);
	return j;
}

static int is(const cJSON *e, const char *ph, const char *cat)
{
	return !strcmp(str(e, "ph"), ph) && (!cat || !strcmp(str(e, "cat"), cat));
}

static const cJSON *other(const cJSON *j, const char *k)
{
	return cJSON_GetObjectItemCaseSensitive(cJSON_GetObjectItemCaseSensitive(j, "otherData"), k);
}

static void request(struct ttf_sink *s, uint64_t id, uint64_t start_ns, uint64_t end_ns)
{
	struct ttf_token_event tev[1] = { { .write_ns = end_ns, .n_tokens = 1 } };
	struct ttf_request r = { .id = id, .method = "POST", .path = "/v1/completions",
				 .events = tev, .n_events = 1 };
	struct ttf_req_metrics m = { .ttft_ns = end_ns - start_ns, .e2e_ns = end_ns - start_ns,
				     .tpot_ns = -1, .n_tokens = 1, .grade = '-',
				     .t_start_ns = start_ns, .t_end_ns = end_ns };

	s->request(s->ctx, &r, &m, NULL);
}

/* Lane (tid) of each request slice by request id; asserts that no two on a lane overlap. */
static int lanes_of(const cJSON *evs, int *lane, int n)
{
	double end[PERFETTO_MAX_LANES + 1] = { 0 };
	const cJSON *e;
	int drawn = 0;

	cJSON_ArrayForEach(e, evs) {
		const cJSON *args = cJSON_GetObjectItemCaseSensitive(e, "args");
		int id, l;

		if (!is(e, "X", "request") || num(e, "pid") != PERFETTO_PID_REQUESTS)
			continue;
		id = (int)num(args, "id");
		l = (int)num(e, "tid");
		assert_true(id >= 1 && id <= n);
		assert_in_range(l, 1, PERFETTO_MAX_LANES);
		assert_true(num(e, "ts") >= end[l] - 1e-6);	/* delivered in start order here */
		end[l] = num(e, "ts") + num(e, "dur");
		lane[id - 1] = l;
		drawn++;
	}
	return drawn;
}

/*
 * 1000 requests of 25 us starting every 10 us: at most 3 at once, so 3
 * lanes, taken lowest first (1, 2, 3, 1, ...). Then 300 at once: 256 lanes
 * and 44 requests counted, not drawn.
 */
static void test_lanes_bounded(void **state)
{
	static int lane[1000];
	struct ttf_sink s;
	cJSON *j;

	assert_int_equal(perfetto_sink__new(path, NULL, &s), 0);
	for (int i = 0; i < 1000; i++)
		request(&s, i + 1, 1000 * US + i * 10 * US, 1000 * US + i * 10 * US + 25 * US);
	assert_int_equal(s.finish(s.ctx, NULL, 0), 0);
	s.destroy(s.ctx);
	j = load(path);
	assert_int_equal(lanes_of(cJSON_GetObjectItemCaseSensitive(j, "traceEvents"), lane, 1000),
			 1000);
	for (int i = 0; i < 1000; i++)
		assert_int_equal(lane[i], i % 3 + 1);
	assert_int_equal(other(j, "lanes")->valueint, 3);
	assert_int_equal(other(j, "requests_over_lanes")->valueint, 0);
	cJSON_Delete(j);

	assert_int_equal(perfetto_sink__new(path, NULL, &s), 0);
	for (int i = 0; i < 300; i++)
		request(&s, i + 1, 1000 * US, 2000 * US);
	assert_int_equal(s.finish(s.ctx, NULL, 0), 0);
	s.destroy(s.ctx);
	j = load(path);
	assert_int_equal(lanes_of(cJSON_GetObjectItemCaseSensitive(j, "traceEvents"), lane, 300),
			 PERFETTO_MAX_LANES);
	for (int i = 0; i < PERFETTO_MAX_LANES; i++)
		assert_int_equal(lane[i], i + 1);
	assert_int_equal(other(j, "lanes")->valueint, PERFETTO_MAX_LANES);
	assert_int_equal(other(j, "requests_over_lanes")->valueint, 300 - PERFETTO_MAX_LANES);
	cJSON_Delete(j);
}

/*
 * Request @id of process TGID from 10 ms: read by RX (its last byte's read
 * returned at 10.1 ms), prefilled in engine steps of ENGINE (process
 * ENGINE_TGID) at 12 ms and 14 ms (step_at, 2 ms each), first token written
 * by TX from 25 ms (returned 25.01 ms), end at 40 ms.
 */
static void served_request(struct ttf_sink *s, uint64_t id, const uint64_t *step_at, int n_steps,
			   int gpu)
{
	struct ttf_token_event tev[2] = { { .write_start_ns = 25000 * US, .write_ns = 25010 * US,
					    .n_tokens = 1 },
					  { .write_ns = 30000 * US, .n_tokens = 1 } };
	struct ttf_request r = { .id = id, .tgid = TGID, .rx_tid = RX, .tx_tid = TX,
				 .method = "POST", .path = "/v1/completions", .events = tev,
				 .n_events = 2, .read_done_ns = 10100 * US };
	struct ttf_req_metrics m = { .ttft_ns = 15010 * US, .e2e_ns = 30000 * US, .tpot_ns = -1,
				     .n_tokens = 2, .grade = '-', .t_start_ns = 10000 * US,
				     .t_end_ns = 40000 * US };
	struct ttf_attrib a = { .valid = 1, .engine_tgid = ENGINE_TGID, .n_step_spans = n_steps,
				.bound_ns = { 10000 * US, 10000 * US, 10100 * US, 11000 * US,
					      12000 * US, 16000 * US, 25000 * US, 25010 * US } };

	for (int i = 0; i < TTF_ST__ALL; i++)
		a.stage_ns[i] = -1;
	for (int i = 0; i < n_steps; i++)
		a.step_spans[i] = (struct ttf_step_span){ .start_ns = step_at[i],
							  .end_ns = step_at[i] + 2000 * US,
							  .tid = ENGINE, .have_gpu = gpu };
	s->request(s->ctx, &r, &m, &a);
}

struct flow_end {
	double id, ts, pid, tid;
};

/* Each 'f' (cat request) with the mark it binds to: the X of its ts, pid, tid and cat. */
static int flow_ends(const cJSON *evs, struct flow_end *out, int max, int *marks_at_14ms)
{
	const cJSON *e, *m;
	int n = 0;

	*marks_at_14ms = 0;
	cJSON_ArrayForEach(e, evs) {
		int bound = 0;

		if (is(e, "X", "request") && num(e, "ts") == 14000 && num(e, "dur") == 0)
			(*marks_at_14ms)++;
		if (!is(e, "f", "request"))
			continue;
		assert_string_equal(str(e, "name"), "serve");
		assert_string_equal(str(e, "bp"), "e");
		cJSON_ArrayForEach(m, evs)
			bound += is(m, "X", "request") && num(m, "ts") == num(e, "ts") &&
				 num(m, "pid") == num(e, "pid") && num(m, "tid") == num(e, "tid") &&
				 num(m, "dur") == 0;
		assert_int_equal(bound, 1);
		assert_true(n < max);
		out[n++] = (struct flow_end){ num(e, "id"), num(e, "ts"), num(e, "pid"),
					      num(e, "tid") };
	}
	return n;
}

/*
 * Request 5 flows from its slice (lane 1, at 10 ms) to the read on RX, each
 * prefill step on ENGINE and the first-token write on TX. Request 6 shares
 * the 14 ms step: a second flow to the one mark there.
 */
static void test_flows_to_threads(void **state)
{
	static const uint64_t steps5[] = { 12000 * US, 14000 * US }, steps6[] = { 14000 * US };
	const struct flow_end want[] = {
		{ 5 * 64 + 0, 10100, TGID, RX },	/* read */
		{ 5 * 64 + 2, 12000, ENGINE_TGID, ENGINE },	/* steps */
		{ 5 * 64 + 3, 14000, ENGINE_TGID, ENGINE },
		{ 5 * 64 + 1, 25000, TGID, TX },	/* first-token write */
		{ 6 * 64 + 0, 10100, TGID, RX },
		{ 6 * 64 + 2, 14000, ENGINE_TGID, ENGINE },
		{ 6 * 64 + 1, 25000, TGID, TX },
	};
	struct flow_end got[16];
	struct ttf_sink s;
	const cJSON *e;
	int n, starts = 0, marks14;
	cJSON *j, *evs;

	assert_int_equal(perfetto_sink__new(path, NULL, &s), 0);
	served_request(&s, 5, steps5, 2, 0);
	served_request(&s, 6, steps6, 1, 0);
	assert_int_equal(s.finish(s.ctx, NULL, 0), 0);
	s.destroy(s.ctx);
	j = load(path);
	evs = cJSON_GetObjectItemCaseSensitive(j, "traceEvents");
	n = flow_ends(evs, got, 16, &marks14);
	assert_int_equal(n, 7);
	for (int i = 0; i < n; i++) {
		assert_true(got[i].id == want[i].id);
		assert_true(fabs(got[i].ts - want[i].ts) < 1e-6);
		assert_true(got[i].pid == want[i].pid);
		assert_true(got[i].tid == want[i].tid);
	}
	assert_int_equal(marks14, 1);	/* the shared step is marked once */
	/* each start: at its request slice's start, on its lane (5: lane 1, 6: lane 2) */
	cJSON_ArrayForEach(e, evs) {
		int req;

		if (!is(e, "s", "request"))
			continue;
		req = (int)num(e, "id") / 64;
		assert_true(req == 5 || req == 6);
		assert_true(fabs(num(e, "ts") - 10000) < 1e-6);
		assert_int_equal(num(e, "pid"), PERFETTO_PID_REQUESTS);
		assert_int_equal(num(e, "tid"), req - 4);
		starts++;
	}
	assert_int_equal(starts, 7);
	assert_int_equal(other(j, "flows")->valueint, 7);
	cJSON_Delete(j);
}

/*
 * A prefill step with GPU work: the flow goes to a mark at its first kernel
 * (stream 7 of device 0, 12.5 ms). The request comes before the GPU spans
 * are written (they lag), so its flow waits and follows the kernel's slice.
 */
static void test_flow_to_gpu(void **state)
{
	static const uint64_t steps[] = { 12000 * US };
	struct ttf_gpu_rec k = { .type = TTF_GPU_REC_KERNEL, .start_ns = 12500 * US,
				 .end_ns = 13000 * US, .device_id = 0, .stream_id = 7 };
	struct gpu_store *g = gpu_store__new();
	int i = 0, kernel_at = -1, mark_at = -1, end_at = -1, start_at = -1;
	struct ttf_sink s;
	const cJSON *e;
	cJSON *j;

	assert_non_null(g);
	assert_int_equal(gpu_store__add(g, ENGINE_TGID, &k), 0);
	assert_int_equal(perfetto_sink__new(path, g, &s), 0);
	served_request(&s, 5, steps, 1, 1);
	assert_int_equal(s.finish(s.ctx, NULL, 0), 0);
	s.destroy(s.ctx);
	gpu_store__free(g);
	j = load(path);
	cJSON_ArrayForEach(e, cJSON_GetObjectItemCaseSensitive(j, "traceEvents")) {
		int on_stream = num(e, "pid") == PERFETTO_PID_GPU && num(e, "tid") == 7 &&
				fabs(num(e, "ts") - 12500) < 1e-6;

		if (is(e, "X", "kernel") && on_stream)
			kernel_at = i;
		if (is(e, "X", "request") && on_stream && num(e, "dur") == 0)
			mark_at = i;
		if (is(e, "f", "request") && on_stream) {
			end_at = i;
			assert_int_equal(num(e, "id"), 5 * 64 + 2 + TTF_MAX_STEP_SPANS);
		}
		if (is(e, "s", "request") && num(e, "id") == 5 * 64 + 2 + TTF_MAX_STEP_SPANS) {
			start_at = i;
			assert_true(fabs(num(e, "ts") - 10000) < 1e-6);
		}
		i++;
	}
	assert_true(kernel_at >= 0 && kernel_at < mark_at && mark_at < end_at);
	assert_true(start_at > kernel_at);
	cJSON_Delete(j);
}

static void sched_ev(struct sched_view *v, struct ttf_sink *s, uint32_t tid, uint64_t ts_us,
		     uint8_t type)
{
	struct ttf_sched_event e = { .ts_ns = ts_us * US, .tid = tid, .tgid = TGID, .type = type };

	assert_true(sched__add(v, &e) >= 0);
	s->sched_event(s->ctx, &e);
}

/* One run of each mode over the same records; returns the parsed file. */
static cJSON *sched_run(enum perfetto_sched mode)
{
	struct sched_view *v = sched__new(NULL);
	struct perfetto_opts o = { .sched = v, .sched_mode = mode };
	struct ttf_sink s;

	assert_non_null(v);
	assert_int_equal(perfetto_sink__new_opts(path, &o, &s), 0);
	/* RX == TX here (as in a thread-per-connection server): windows [10, 25.01] ms */
	sched_ev(v, &s, RX, 5000, TTF_SCHED_IN);
	sched_ev(v, &s, RX, 9000, TTF_SCHED_OUT_BLOCKED);
	sched_ev(v, &s, OTHER, 5000, TTF_SCHED_IN);
	sched_ev(v, &s, OTHER, 6000, TTF_SCHED_OUT_BLOCKED);
	sched_ev(v, &s, RX, 10090, TTF_SCHED_WAKEUP);
	sched_ev(v, &s, RX, 10095, TTF_SCHED_IN);
	sched_ev(v, &s, RX, 10097, TTF_SCHED_OUT_RUNNABLE);
	sched_ev(v, &s, RX, 10099, TTF_SCHED_IN);
	sched_ev(v, &s, RX, 10110, TTF_SCHED_OUT_BLOCKED);
	sched_ev(v, &s, OTHER, 12000, TTF_SCHED_WAKEUP);
	sched_ev(v, &s, OTHER, 12001, TTF_SCHED_IN);
	sched_ev(v, &s, OTHER, 12002, TTF_SCHED_OUT_BLOCKED);
	sched_ev(v, &s, RX, 24990, TTF_SCHED_WAKEUP);
	sched_ev(v, &s, RX, 24995, TTF_SCHED_IN);
	sched_ev(v, &s, OTHER, 30000, TTF_SCHED_IN);
	{
		struct ttf_token_event tev[1] = { { .write_start_ns = 25000 * US,
						    .write_ns = 25010 * US, .n_tokens = 1 } };
		struct ttf_request r = { .id = 1, .tgid = TGID, .rx_tid = RX, .tx_tid = RX,
					 .method = "POST", .path = "/v1/completions",
					 .events = tev, .n_events = 1,
					 .read_done_ns = 10100 * US };
		struct ttf_req_metrics m = { .ttft_ns = 15010 * US, .e2e_ns = 15010 * US,
					     .tpot_ns = -1, .n_tokens = 1, .grade = '-',
					     .t_start_ns = 10000 * US, .t_end_ns = 25010 * US };
		struct ttf_attrib a = { .valid = 1,
					.bound_ns = { 10000 * US, 10000 * US, 10100 * US,
						      10100 * US, 10100 * US, 10100 * US,
						      25000 * US, 25010 * US } };

		s.request(s.ctx, &r, &m, &a);
	}
	assert_int_equal(s.finish(s.ctx, NULL, 0), 0);
	s.destroy(s.ctx);
	sched__free(v);
	return load(path);
}

static int sched_slices(const cJSON *j, uint32_t tid, const cJSON **out, int max)
{
	const cJSON *e;
	int n = 0;

	cJSON_ArrayForEach(e, cJSON_GetObjectItemCaseSensitive(j, "traceEvents"))
		if (is(e, "X", "sched") && (!tid || num(e, "tid") == tid)) {
			if (n < max)
				out[n] = e;
			n++;
		}
	return n;
}

static void assert_sched(const cJSON *e, const char *name, double ts_us, double dur_us, int n)
{
	const cJSON *args = cJSON_GetObjectItemCaseSensitive(e, "args");

	assert_string_equal(str(e, "name"), name);
	assert_int_equal(num(e, "pid"), TGID);
	assert_true(fabs(num(e, "ts") - ts_us) < 1e-6);
	assert_true(fabs(num(e, "dur") - dur_us) < 1e-6);
	if (n > 1)
		assert_int_equal(num(args, "n"), n);
	else
		assert_null(args);
}

/*
 * SERVED: only RX, only inside [10, 25.01] ms, the 90 us blocked and the
 * switches after it merged into one slice (its main state: blocked), then
 * the long blocked one, then runnable + running merged (running). ALL: both
 * threads, every switch, as they came. NONE: no scheduler slice.
 */
static void test_sched_modes(void **state)
{
	const cJSON *sl[32];
	const cJSON *args;
	cJSON *j;

	j = sched_run(PERFETTO_SCHED_SERVED);
	assert_int_equal(sched_slices(j, 0, sl, 32), 3);
	assert_int_equal(sched_slices(j, RX, sl, 32), 3);
	assert_sched(sl[0], "blocked", 10000, 110, 5);
	args = cJSON_GetObjectItemCaseSensitive(sl[0], "args");
	assert_true(fabs(num(args, "blocked_us") - 90) < 1e-6);
	assert_true(fabs(num(args, "runnable_us") - 7) < 1e-6);
	assert_true(fabs(num(args, "on_cpu_us") - 13) < 1e-6);
	assert_sched(sl[1], "blocked", 10110, 14880, 1);
	assert_sched(sl[2], "running", 24990, 20, 2);
	assert_string_equal(str(cJSON_GetObjectItemCaseSensitive(j, "otherData"), "sched"),
			    "served");
	cJSON_Delete(j);

	j = sched_run(PERFETTO_SCHED_ALL);
	assert_int_equal(sched_slices(j, RX, sl, 32), 8);	/* the open running one is not drawn */
	assert_sched(sl[0], "running", 5000, 4000, 1);
	assert_sched(sl[1], "blocked", 9000, 1090, 1);
	assert_sched(sl[6], "blocked", 10110, 14880, 1);
	assert_sched(sl[7], "runnable", 24990, 5, 1);
	assert_int_equal(sched_slices(j, OTHER, sl, 32), 5);
	assert_sched(sl[4], "blocked", 12002, 17998, 1);
	cJSON_Delete(j);

	j = sched_run(PERFETTO_SCHED_NONE);
	assert_int_equal(sched_slices(j, 0, sl, 32), 0);
	cJSON_Delete(j);
}

/* The same taps into FILE.json.gz: a gzip stream that decodes to the plain file, byte for byte. */
static void test_gzip_equals_plain(void **state)
{
	static const uint64_t steps[] = { 12000 * US, 14000 * US };
	const char *paths[2] = { path, path_gz };
	unsigned char magic[2] = { 0 };
	char *text[2];
	size_t len[2];
	FILE *f;

	assert_int_equal(perfetto_sched__parse("served", &(enum perfetto_sched){ 0 }), 0);
	assert_int_equal(perfetto_sched__parse("some", &(enum perfetto_sched){ 0 }), -EINVAL);
	for (int i = 0; i < 2; i++) {
		struct ttf_sink s;

		assert_int_equal(perfetto_sink__new(paths[i], NULL, &s), 0);
		served_request(&s, 5, steps, 2, 0);
		assert_int_equal(s.finish(s.ctx, NULL, 0), 0);
		s.destroy(s.ctx);
		text[i] = slurp(paths[i], &len[i]);
	}
	f = fopen(path_gz, "rb");
	assert_non_null(f);
	assert_int_equal(fread(magic, 1, 2, f), 2);
	fclose(f);
	assert_true(magic[0] == 0x1f && magic[1] == 0x8b);
	assert_true(len[0] > 1000);
	assert_int_equal(len[0], len[1]);
	assert_memory_equal(text[0], text[1], len[0]);
	free(text[0]);
	free(text[1]);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_lanes_bounded, setup, teardown),
		cmocka_unit_test_setup_teardown(test_flows_to_threads, setup, teardown),
		cmocka_unit_test_setup_teardown(test_flow_to_gpu, setup, teardown),
		cmocka_unit_test_setup_teardown(test_sched_modes, setup, teardown),
		cmocka_unit_test_setup_teardown(test_gzip_equals_plain, setup, teardown),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
