// SPDX-License-Identifier: GPL-2.0-only
/*
 * Perfetto timeline sink (user/export/perfetto/perfetto.c): synthetic taps in, the written
 * trace-event JSON parsed back with cJSON and compared with hand-computed
 * slices, stages and counters.
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
#include "user/model/hops/view.h"
#include "user/export/perfetto/perfetto.h"

#define US 1000ull
#define MS 1000000ull
#define TID 4242	/* not a live thread of this machine in a test container: name "thread" */

static char path[256];

static int setup(void **state)
{
	snprintf(path, sizeof(path), "/tmp/test_perfetto_%d.json", getpid());
	unlink(path);
	return 0;
}

static int teardown(void **state)
{
	unlink(path);
	return 0;
}

static cJSON *load(void)
{
	FILE *f = fopen(path, "r");
	static char buf[1 << 20];
	size_t n;

	assert_non_null(f);
	n = fread(buf, 1, sizeof(buf) - 1, f);
	fclose(f);
	buf[n] = 0;
	return cJSON_Parse(buf);
}

/* The i-th event with this ph, cat and pid (i from 0); NULL when there are fewer. */
static const cJSON *nth(const cJSON *evs, const char *ph, const char *cat, double pid, int i)
{
	const cJSON *e;

	cJSON_ArrayForEach(e, evs)
		if (!strcmp(str(e, "ph"), ph) && (!cat || !strcmp(str(e, "cat"), cat)) &&
		    num(e, "pid") == pid && i-- == 0)
			return e;
	return NULL;
}

static void sched(struct ttf_sink *s, uint64_t ts, uint8_t type)
{
	struct ttf_sched_event e = { .ts_ns = ts, .tid = TID, .tgid = TID, .type = type };

	s->sched_event(s->ctx, &e);
}

static void assert_slice(const cJSON *e, const char *name, double ts_us, double dur_us)
{
	assert_non_null(e);
	assert_string_equal(str(e, "name"), name);
	assert_true(fabs(num(e, "ts") - ts_us) < 1e-6);
	assert_true(fabs(num(e, "dur") - dur_us) < 1e-6);
}

/* --perfetto-sched all: IN 1us, OUT_BLOCKED 5us, WAKEUP 9us, IN 10us, OUT_RUNNABLE 12us, IN 15us. */
static void test_thread_states(void **state)
{
	struct perfetto_opts o = { .sched_mode = PERFETTO_SCHED_ALL };
	struct ttf_sink s;
	cJSON *j, *evs;

	assert_int_equal(perfetto_sink__new_opts(path, &o, &s), 0);
	sched(&s, 1 * US, TTF_SCHED_IN);
	sched(&s, 5 * US, TTF_SCHED_OUT_BLOCKED);
	sched(&s, 9 * US, TTF_SCHED_WAKEUP);
	sched(&s, 10 * US, TTF_SCHED_IN);
	sched(&s, 12 * US, TTF_SCHED_OUT_RUNNABLE);
	sched(&s, 11 * US, TTF_SCHED_WAKEUP);	/* runnable already: no new slice */
	sched(&s, 15 * US, TTF_SCHED_IN);
	assert_int_equal(access(path, F_OK), -1);	/* only the temporary file until finish */
	assert_int_equal(s.finish(s.ctx, NULL, 0), 0);
	s.destroy(s.ctx);

	j = load();
	assert_non_null(j);
	assert_string_equal(str(j, "displayTimeUnit"), "ms");
	evs = cJSON_GetObjectItemCaseSensitive(j, "traceEvents");
	assert_true(cJSON_IsArray(evs));
	assert_slice(nth(evs, "X", "sched", TID, 0), "running", 1, 4);
	assert_slice(nth(evs, "X", "sched", TID, 1), "blocked", 5, 4);
	assert_slice(nth(evs, "X", "sched", TID, 2), "runnable", 9, 1);
	assert_slice(nth(evs, "X", "sched", TID, 3), "running", 10, 2);
	assert_slice(nth(evs, "X", "sched", TID, 4), "runnable", 12, 3);
	assert_null(nth(evs, "X", "sched", TID, 5));	/* the open running slice is not drawn */
	assert_non_null(nth(evs, "M", NULL, TID, 0));
	cJSON_Delete(j);
}

/* A RECV of 300 bytes (syscall 100..101.5 us), a SEND of 50 (200..200.5 us). */
static void test_connection_bytes(void **state)
{
	struct ttf_net_event e = { .sock_cookie = 77, .family = TTF_AF_INET, .lport = 8080,
				   .rport = 5555, .laddr = { 127, 0, 0, 1 },
				   .raddr = { 127, 0, 0, 1 } };
	struct ttf_sink s;
	const cJSON *c;
	cJSON *j, *evs;

	assert_int_equal(perfetto_sink__new(path, NULL, &s), 0);
	e.type = TTF_EV_RECV, e.enter_ns = 100 * US, e.ts_ns = 101500, e.bytes = 300;
	s.net_event(s.ctx, &e, sizeof(e));
	e.type = TTF_EV_SEND, e.enter_ns = 200 * US, e.ts_ns = 200500, e.bytes = 50;
	s.net_event(s.ctx, &e, sizeof(e));
	assert_int_equal(s.finish(s.ctx, NULL, 0), 0);
	s.destroy(s.ctx);

	j = load();
	evs = cJSON_GetObjectItemCaseSensitive(j, "traceEvents");
	assert_slice(nth(evs, "X", "net", PERFETTO_PID_CONNS, 0), "recv 300 B", 100, 1.5);
	assert_slice(nth(evs, "X", "net", PERFETTO_PID_CONNS, 1), "send 50 B", 200, 0.5);
	c = nth(evs, "C", "net", PERFETTO_PID_CONNS, 1);
	assert_non_null(c);
	assert_true(fabs(num(c, "ts") - 200.5) < 1e-6);
	assert_int_equal(num(cJSON_GetObjectItemCaseSensitive(c, "args"), "in"), 300);
	assert_int_equal(num(cJSON_GetObjectItemCaseSensitive(c, "args"), "out"), 50);
	c = nth(evs, "M", NULL, PERFETTO_PID_CONNS, 1);	/* after the process name */
	assert_string_equal(str(cJSON_GetObjectItemCaseSensitive(c, "args"), "name"),
			    "conn 1 127.0.0.1:8080<-127.0.0.1:5555");
	cJSON_Delete(j);
}

/*
 * Request 7 from t = 1 ms: net_in 0, read_wait 1 us, frontend 5 us (the
 * last 2 us of it tokenize), queue 3 us, prefill 10 us, emit 0.5 us,
 * net_out 0.5 us: TTFT 20 us. Tokens at 20 us and 30 us; end at 40 us.
 */
static void test_request_stages(void **state)
{
	struct ttf_token_event tev[2] = { { .write_ns = 1 * MS + 20 * US, .n_tokens = 1 },
					  { .write_ns = 1 * MS + 30 * US, .n_tokens = 1 } };
	struct ttf_request r = { .id = 7, .method = "POST", .path = "/v1/completions",
				 .events = tev, .n_events = 2 };
	struct ttf_req_metrics m = { .ttft_ns = 20 * US, .e2e_ns = 40 * US, .tpot_ns = 10 * US,
				     .n_tokens = 2, .grade = '-', .t_start_ns = 1 * MS,
				     .t_end_ns = 1 * MS + 40 * US };
	struct ttf_attrib a = { .valid = 1 };
	static const char *names[] = { "net_in", "read_wait", "frontend", "queue", "prefill",
				       "emit", "net_out" };
	static const double start_us[] = { 1000, 1000, 1001, 1006, 1009, 1019, 1019.5 };
	static const double dur_us[] = { 0, 1, 5, 3, 10, 0.5, 0.5 };
	double sum = 0;
	struct ttf_sink s;
	cJSON *j, *evs;

	for (int i = 0; i < TTF_ST__ALL; i++)
		a.stage_ns[i] = -1;
	a.stage_ns[TTF_ST_NET_IN] = 0;
	a.stage_ns[TTF_ST_READ_WAIT] = 1 * US;
	a.stage_ns[TTF_ST_FRONTEND] = 5 * US;
	a.stage_ns[TTF_ST_TOKENIZE] = 2 * US;
	a.stage_ns[TTF_ST_QUEUE] = 3 * US;
	a.stage_ns[TTF_ST_PREFILL] = 10 * US;
	a.stage_ns[TTF_ST_EMIT] = 500;
	a.stage_ns[TTF_ST_NET_OUT] = 500;
	assert_int_equal(perfetto_sink__new(path, NULL, &s), 0);
	s.request(s.ctx, &r, &m, &a);
	assert_int_equal(s.finish(s.ctx, NULL, 0), 0);
	s.destroy(s.ctx);

	j = load();
	evs = cJSON_GetObjectItemCaseSensitive(j, "traceEvents");
	assert_slice(nth(evs, "X", "request", PERFETTO_PID_REQUESTS, 0),
		     "req 7 POST /v1/completions", 1000, 40);
	for (int i = 0; i < 7; i++) {
		const cJSON *e = nth(evs, "X", "stage", PERFETTO_PID_REQUESTS, i);

		assert_slice(e, names[i], start_us[i], dur_us[i]);
		assert_int_equal(num(e, "tid"), 1);	/* lane 1: the first free one */
		sum += num(e, "dur");
	}
	assert_null(nth(evs, "X", "stage", PERFETTO_PID_REQUESTS, 7));
	assert_true(fabs(sum - 20) < 1e-6);	/* the stages sum to TTFT */
	assert_slice(nth(evs, "X", "substage", PERFETTO_PID_REQUESTS, 0), "tokenize", 1004, 2);
	assert_true(fabs(num(nth(evs, "i", "token", PERFETTO_PID_REQUESTS, 1), "ts") - 1030) <
		    1e-6);
	cJSON_Delete(j);
}

/*
 * Request 9 through a gateway (pid 300) to an upstream (pid 400): the
 * gateway's slice over the TTFT, the upstream's from where its request was
 * written (1 ms + 3 us) for 15 us, on each process's hop track, and one flow
 * gateway -> upstream -> gateway whose events sit at the starts of the
 * slices they bind to (the gateway's, the upstream's, and the mark where
 * the first token came back at 1 ms + 18 us).
 */
static void test_hop_slices(void **state)
{
	struct ttf_token_event tev[1] = { { .write_ns = 1 * MS + 20 * US, .n_tokens = 1 } };
	struct ttf_request r = { .id = 9, .method = "POST", .path = "/v1/completions",
				 .events = tev, .n_events = 1 };
	struct ttf_req_metrics m = { .ttft_ns = 20 * US, .e2e_ns = 20 * US, .tpot_ns = -1,
				     .n_tokens = 1, .grade = '-', .t_start_ns = 1 * MS,
				     .t_end_ns = 1 * MS + 20 * US };
	struct ttf_hop_chain c = { .gw_tgid = 300, .up_tgid = 400, .up_req_id = 10, .exact = 1,
				   .stage_ns = { [TTF_HS_READ_WAIT] = 1 * US,
						 [TTF_HS_GATEWAY_IN] = 2 * US,
						 [TTF_HS_UPSTREAM] = 15 * US,
						 [TTF_HS_UPSTREAM_OUT] = 1 * US,
						 [TTF_HS_GATEWAY_OUT] = 1 * US } };
	struct ttf_attrib a = { .valid = 1, .hops = &c };
	struct ttf_sink s;
	static const char phs[] = "stf";
	static const double flow_ts[] = { 1000, 1003, 1018 };
	static const double flow_pid[] = { 300, 400, 300 };
	cJSON *j, *evs, *e;
	int flows = 0;

	for (int i = 0; i < TTF_ST__ALL; i++)
		a.stage_ns[i] = -1;
	a.stage_ns[TTF_ST_NET_IN] = 0;
	a.stage_ns[TTF_ST_SERVER] = 20 * US;
	assert_int_equal(perfetto_sink__new(path, NULL, &s), 0);
	s.request(s.ctx, &r, &m, &a);
	assert_int_equal(s.finish(s.ctx, NULL, 0), 0);
	s.destroy(s.ctx);

	j = load();
	evs = cJSON_GetObjectItemCaseSensitive(j, "traceEvents");
	assert_slice(nth(evs, "X", "hop", 300, 0), "gateway: req 9", 1000, 20);
	assert_int_equal(num(nth(evs, "X", "hop", 300, 0), "tid"), PERFETTO_TID_HOPS + 300);
	assert_slice(nth(evs, "X", "hop", 400, 0), "upstream: req 9 (its 10)", 1003, 15);
	assert_int_equal(num(nth(evs, "X", "hop", 400, 0), "tid"), PERFETTO_TID_HOPS + 400);
	assert_slice(nth(evs, "X", "hop", 300, 1), "first token from upstream", 1018, 0);
	cJSON_ArrayForEach(e, evs) {
		const char *ph = str(e, "ph");

		if (strlen(ph) != 1 || !strchr(phs, ph[0]) || strcmp(str(e, "cat"), "hop"))
			continue;
		assert_int_equal(ph[0], phs[flows]);	/* written in flow order */
		assert_true(fabs(num(e, "ts") - flow_ts[flows]) < 1e-6);
		assert_int_equal(num(e, "pid"), flow_pid[flows]);
		assert_int_equal(num(e, "tid"), PERFETTO_TID_HOPS + flow_pid[flows]);
		assert_int_equal(num(e, "id"), 9);
		flows++;
	}
	assert_int_equal(flows, 3);
	cJSON_Delete(j);
}

/*
 * Two requests through one gateway at once (the second begins 5 us into the
 * first): their slices take two hop lanes of each process, so no track
 * holds slices that overlap without nesting; the upstream's second slice
 * is on its second lane too.
 */
static void test_hop_lanes(void **state)
{
	struct ttf_token_event tev[1] = { { .write_ns = 1 * MS + 20 * US, .n_tokens = 1 } };
	struct ttf_request r = { .id = 9, .method = "POST", .path = "/v1/completions",
				 .events = tev, .n_events = 1 };
	struct ttf_req_metrics m = { .ttft_ns = 20 * US, .e2e_ns = 20 * US, .tpot_ns = -1,
				     .n_tokens = 1, .grade = '-', .t_start_ns = 1 * MS,
				     .t_end_ns = 1 * MS + 20 * US };
	struct ttf_hop_chain c = { .gw_tgid = 300, .up_tgid = 400, .up_req_id = 10, .exact = 1,
				   .stage_ns = { [TTF_HS_GATEWAY_IN] = 2 * US,
						 [TTF_HS_UPSTREAM] = 16 * US,
						 [TTF_HS_UPSTREAM_OUT] = 1 * US,
						 [TTF_HS_GATEWAY_OUT] = 1 * US } };
	struct ttf_attrib a = { .valid = 1, .hops = &c };
	struct ttf_sink s;
	cJSON *j, *evs;

	for (int i = 0; i < TTF_ST__ALL; i++)
		a.stage_ns[i] = -1;
	a.stage_ns[TTF_ST_SERVER] = 20 * US;
	assert_int_equal(perfetto_sink__new(path, NULL, &s), 0);
	s.request(s.ctx, &r, &m, &a);
	r.id = 11;
	c.up_req_id = 12;
	m.t_start_ns += 5 * US;
	m.t_end_ns += 5 * US;
	tev[0].write_ns += 5 * US;
	s.request(s.ctx, &r, &m, &a);
	assert_int_equal(s.finish(s.ctx, NULL, 0), 0);
	s.destroy(s.ctx);

	j = load();
	evs = cJSON_GetObjectItemCaseSensitive(j, "traceEvents");
	assert_slice(nth(evs, "X", "hop", 300, 0), "gateway: req 9", 1000, 20);
	assert_int_equal(num(nth(evs, "X", "hop", 300, 0), "tid"), PERFETTO_TID_HOPS + 300);
	assert_slice(nth(evs, "X", "hop", 300, 2), "gateway: req 11", 1005, 20);
	assert_int_equal(num(nth(evs, "X", "hop", 300, 2), "tid"),
			 PERFETTO_TID_HOPS + 300 + 0x400000);
	assert_slice(nth(evs, "X", "hop", 400, 1), "upstream: req 11 (its 12)", 1007, 16);
	assert_int_equal(num(nth(evs, "X", "hop", 400, 1), "tid"),
			 PERFETTO_TID_HOPS + 400 + 0x400000);
	assert_int_equal(num(cJSON_GetObjectItemCaseSensitive(j, "otherData"),
			     "hop_slices_over_lanes"), 0);
	cJSON_Delete(j);
}

static void gpu_rec(struct gpu_store *g, uint8_t type, uint64_t start_us, uint64_t end_us)
{
	struct ttf_gpu_rec r = { .type = type, .start_ns = start_us * US, .end_ns = end_us * US,
				 .device_id = 1, .stream_id = 7, .copy_kind = TTF_GPU_COPY_HTOD };

	if (type == TTF_GPU_REC_KERNEL)
		r.kernel.name_id = 42;
	else
		r.copy.bytes = 1000000;
	assert_int_equal(gpu_store__add(g, 500, &r), 0);
}

/*
 * GPU stream 7 of device 1: a 1 MB HtoD copy 900..1000 us, kernels 1000..1200 us
 * and 2000..2050 us. A tick at 1100 us + lag writes the first two; finish the
 * third, each once.
 */
static void test_gpu_tracks(void **state)
{
	struct gpu_store *g = gpu_store__new();
	uint32_t pid = PERFETTO_PID_GPU + 1;
	struct ttf_sink s;
	const cJSON *c;
	cJSON *j, *evs;

	assert_non_null(g);
	assert_int_equal(gpu_store__add_name(g, 500, 42, "gemm_kernel", 11), 0);
	gpu_rec(g, TTF_GPU_REC_MEMCPY, 900, 1000);
	gpu_rec(g, TTF_GPU_REC_KERNEL, 1000, 1200);
	gpu_rec(g, TTF_GPU_REC_KERNEL, 2000, 2050);
	assert_int_equal(perfetto_sink__new(path, g, &s), 0);
	s.tick(s.ctx, 1100 * US + PERFETTO_GPU_LAG_NS);
	s.tick(s.ctx, 1150 * US + PERFETTO_GPU_LAG_NS);	/* within a second: no read */
	assert_int_equal(s.finish(s.ctx, NULL, 0), 0);
	s.destroy(s.ctx);
	gpu_store__free(g);

	j = load();
	evs = cJSON_GetObjectItemCaseSensitive(j, "traceEvents");
	assert_slice(nth(evs, "X", "kernel", pid, 0), "gemm_kernel", 1000, 200);
	assert_slice(nth(evs, "X", "kernel", pid, 1), "gemm_kernel", 2000, 50);
	assert_null(nth(evs, "X", "kernel", pid, 2));
	c = nth(evs, "X", "copy", pid, 0);
	assert_slice(c, "copy HtoD", 900, 100);
	assert_int_equal(num(cJSON_GetObjectItemCaseSensitive(c, "args"), "bytes"), 1000000);
	assert_true(fabs(num(cJSON_GetObjectItemCaseSensitive(c, "args"), "gbps") - 10) < 1e-9);
	assert_null(nth(evs, "X", "copy", pid, 1));
	assert_int_equal(num(nth(evs, "X", "kernel", pid, 0), "tid"), 7);
	assert_string_equal(str(cJSON_GetObjectItemCaseSensitive(nth(evs, "M", NULL, pid, 1),
								   "args"), "name"), "stream 7");
	cJSON_Delete(j);
}

/* Without finish (a crash, or an error before the end), no file is left at path. */
static void test_destroy_without_finish(void **state)
{
	struct ttf_sink s;

	assert_int_equal(perfetto_sink__new(path, NULL, &s), 0);
	sched(&s, 1 * US, TTF_SCHED_IN);
	s.destroy(s.ctx);
	assert_int_equal(access(path, F_OK), -1);
	assert_int_equal(perfetto_sink__new("/nonexistent-dir/x.json", NULL, &s), -ENOENT);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_thread_states, setup, teardown),
		cmocka_unit_test_setup_teardown(test_connection_bytes, setup, teardown),
		cmocka_unit_test_setup_teardown(test_request_stages, setup, teardown),
		cmocka_unit_test_setup_teardown(test_hop_slices, setup, teardown),
		cmocka_unit_test_setup_teardown(test_hop_lanes, setup, teardown),
		cmocka_unit_test_setup_teardown(test_gpu_tracks, setup, teardown),
		cmocka_unit_test_setup_teardown(test_destroy_without_finish, setup, teardown),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
