// SPDX-License-Identifier: GPL-2.0-only
/*
 * user/model/hops/view.c: a request's hops as one list, for either chain
 * kind: the stages in time order from the request's start, each in its hop
 * (a process, or the links ipc and net), the processes in order of first
 * appearance with their extent and summed time.
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <cmocka.h>
#include "user/model/hops/view.h"

/* A message chain: frontend 300 (python3) and engine 301 (EngineCore). */
static void test_msg_chain(void **state)
{
	static const int64_t ns[TTF_MS__MAX] = { [TTF_MS_NET_IN] = 10, [TTF_MS_READ_WAIT] = 20,
		[TTF_MS_FRONTEND] = 1000, [TTF_MS_IPC_IN] = 50, [TTF_MS_QUEUE] = 3000,
		[TTF_MS_PREFILL] = 7000, [TTF_MS_IPC_OUT] = 40, [TTF_MS_EMIT] = 500,
		[TTF_MS_NET_OUT] = 30 };
	static const uint8_t order[] = { TTF_MS_NET_IN, TTF_MS_READ_WAIT, TTF_MS_FRONTEND,
		TTF_MS_IPC_IN, TTF_MS_QUEUE, TTF_MS_PREFILL, TTF_MS_IPC_OUT, TTF_MS_EMIT,
		TTF_MS_NET_OUT };
	static const char *const hop[] = { "net", "frontend", "frontend", "ipc", "engine",
		"engine", "ipc", "frontend", "net" };
	struct ttf_msg_chain c = { .fe_tgid = 300, .eng_tgid = 301, .tgid = { 300, 301 },
				   .comm = { "python3", "EngineCore" }, .n_procs = 2,
				   .n_stages = sizeof(order) };
	struct ttf_attrib a = { .valid = 1, .msg = &c };
	struct ttf_hop_view v;
	uint64_t t = 1000000;

	memcpy(c.stage_ns, ns, sizeof(ns));
	memcpy(c.stage, order, sizeof(order));
	assert_int_equal(ttf_hop_view__build(&a, 1000000, &v), 1);
	assert_int_equal(v.kind, TTF_HOPV_MSG);
	assert_int_equal(v.n_stages, sizeof(order));
	for (size_t i = 0; i < sizeof(order); i++) {
		assert_string_equal(v.stages[i].name, ttf_msg_stage_name(order[i]));
		assert_string_equal(v.stages[i].hop, hop[i]);
		assert_int_equal(v.stages[i].start_ns, t);
		assert_int_equal(v.stages[i].ns, ns[order[i]]);
		assert_true(ttf_hop_view_hop_index(hop[i]) >= 0);
		t += ns[order[i]];
	}
	assert_int_equal(v.n_procs, 2);
	assert_string_equal(v.procs[0].hop, "frontend");
	assert_int_equal(v.procs[0].tgid, 300);
	assert_string_equal(v.procs[0].comm, "python3");
	assert_int_equal(v.procs[0].start_ns, 1000010);		/* read_wait */
	assert_int_equal(v.procs[0].end_ns, 1000000 + 11650 - 30);	/* emit's end */
	assert_int_equal(v.procs[0].ns, 20 + 1000 + 500);
	assert_string_equal(v.procs[1].comm, "EngineCore");
	assert_int_equal(v.procs[1].start_ns, 1000000 + 10 + 20 + 1000 + 50);
	assert_int_equal(v.procs[1].end_ns, v.procs[1].start_ns + 10000);
	assert_int_equal(v.stages[4].proc, 1);
	assert_int_equal(v.stages[3].proc, -1);	/* a link */
	a.valid = 0;
	assert_int_equal(ttf_hop_view__build(&a, 0, &v), 0);
}

/*
 * A three-process chain (SGLang: tokenizer manager -> scheduler ->
 * detokenizer -> tokenizer manager): the third process is the "output"
 * hop, whatever its role, with detokenize; ipc_back is a link.
 */
static void test_three_process_chain(void **state)
{
	static const uint8_t order[] = { TTF_MS_NET_IN, TTF_MS_READ_WAIT, TTF_MS_FRONTEND,
		TTF_MS_IPC_IN, TTF_MS_QUEUE, TTF_MS_PREFILL, TTF_MS_IPC_OUT, TTF_MS_DETOKENIZE,
		TTF_MS_IPC_BACK, TTF_MS_EMIT, TTF_MS_NET_OUT };
	struct ttf_msg_chain c = { .fe_tgid = 10, .eng_tgid = 11, .tgid = { 10, 11, 12 },
				   .comm = { "python3", "python3", "detok" }, .n_procs = 3,
				   .n_stages = sizeof(order),
				   .role = { "tokenizer_manager", "scheduler", "detokenizer" } };
	struct ttf_attrib a = { .valid = 1, .msg = &c };
	struct ttf_hop_view v;

	memcpy(c.stage, order, sizeof(order));
	for (int i = 0; i < TTF_MS__MAX; i++)
		c.stage_ns[i] = 100 + i;
	assert_int_equal(ttf_hop_view__build(&a, 0, &v), 1);
	assert_int_equal(v.n_stages, sizeof(order));
	assert_int_equal(v.n_procs, 3);
	assert_string_equal(v.procs[2].hop, "output");
	assert_int_equal(v.procs[2].tgid, 12);
	assert_string_equal(v.procs[2].comm, "detok");
	assert_int_equal(v.procs[2].ns, 100 + TTF_MS_DETOKENIZE);
	assert_string_equal(v.stages[7].name, "detokenize");
	assert_string_equal(v.stages[8].hop, "ipc");	/* ipc_back */
	assert_int_equal(v.procs[0].ns, 3 * 100 + TTF_MS_READ_WAIT + TTF_MS_FRONTEND + TTF_MS_EMIT);
}

/*
 * A gateway chain behind a PD proxy: its prefill server is a process hop of
 * its own; without a prefill call its two stages are left out.
 */
static void test_gateway_chain(void **state)
{
	struct ttf_hop_chain c = { .gw_tgid = 90, .gw_comm = "nginx", .up_tgid = 100,
				   .up_comm = "vllm" };
	struct ttf_attrib a = { .valid = 1, .hops = &c };
	struct ttf_hop_view v;

	for (int i = 0; i < TTF_HS__MAX; i++)
		c.stage_ns[i] = 100 * (i + 1);
	assert_int_equal(ttf_hop_view__build(&a, 0, &v), 1);
	assert_int_equal(v.kind, TTF_HOPV_GATEWAY);
	assert_int_equal(v.n_stages, TTF_HS__MAX - 2);
	assert_int_equal(v.n_procs, 2);
	assert_string_equal(v.procs[1].hop, "upstream");
	assert_int_equal(v.procs[1].tgid, 100);
	assert_int_equal(v.procs[1].ns, c.stage_ns[TTF_HS_UPSTREAM]);
	assert_string_equal(v.stages[4].hop, "ipc");	/* upstream_out */
	c.pd.seen = 1;
	c.pd.tgid = 110;
	snprintf(c.pd.comm, sizeof(c.pd.comm), "prefill-srv");
	assert_int_equal(ttf_hop_view__build(&a, 0, &v), 1);
	assert_int_equal(v.n_stages, TTF_HS__MAX);
	assert_int_equal(v.n_procs, 3);
	assert_string_equal(v.procs[1].hop, "prefill");
	assert_string_equal(v.procs[1].comm, "prefill-srv");
	assert_int_equal(v.procs[1].start_ns, 100 + 200 + 300);
	assert_string_equal(v.procs[2].hop, "upstream");
	/* the gateway holds read_wait, gateway_in, handoff, gateway_out */
	assert_int_equal(v.procs[0].ns, 200 + 300 + 500 + 800);
	assert_int_equal(ttf_hop_view_hop_index("nope"), -1);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_msg_chain),
		cmocka_unit_test(test_three_process_chain),
		cmocka_unit_test(test_gateway_chain),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
