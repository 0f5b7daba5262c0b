// SPDX-License-Identifier: GPL-2.0-only
/* Message hops by request id (user/model/hops/msg.h, docs/design.md D15). */
#include <errno.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <stdio.h>
#include <string.h>
#include <cmocka.h>
#include "user/model/hops/msg.h"
#include "tests/unit/model/msg_hops_fix.h"

#define MS 1000000ull
#define FE 100
#define ENG 200
#define DET 300
#define RID "0123456789abcdef0123456789abcdef"
#define ID_A "cmpl-0123456789abcdef0123456789abcdef"
#define ID_B "cmpl-fedcba9876543210fedcba9876543210"

static void msg(struct msg_hops *mh, uint32_t tgid, uint8_t dir, uint64_t ts, const char *a,
		const char *b)
{
	struct ttf_zmtp_msg m = { .tgid = tgid, .dir = dir, .ts_ns = ts };

	if (a)
		snprintf(m.ids[m.n_ids++], ZMTP_ID_BYTES, "%s", a);
	if (b)
		snprintf(m.ids[m.n_ids++], ZMTP_ID_BYTES, "%s", b);
	assert_int_equal(msg_hops__on_msg(mh, &m), 0);
}

/* A request read at 10 ms (its wait from 9.5), its first token written at 26, its token time 26.05. */
static void req_fix(struct req_fix *f, const char *id)
{
	memset(f, 0, sizeof(*f));
	f->ev = (struct ttf_token_event){ .write_ns = 26 * MS, .n_tokens = 1 };
	f->r = (struct ttf_request){ .id = 1, .tgid = FE, .tx_tid = 7, .n_events = 1,
				     .events = &f->ev };
	f->m = (struct ttf_req_metrics){ .t_start_ns = 9 * MS, .t_first_token_ns = 26050000,
					 .ttft_ns = 17050000 };
	f->a.valid = 1;
	f->a.bound_ns[1] = 9500000;
	f->a.bound_ns[2] = 10 * MS;
	snprintf(f->r.resp_id, sizeof(f->r.resp_id), "%s", id);
}

static int64_t sum(const struct ttf_msg_chain *c)
{
	int64_t n = 0;

	for (int i = 0; i < TTF_MS__MAX; i++)
		n += c->stage_ns[i];
	return n;
}

/*
 * Request A read at 10 ms; its message leaves the frontend at 11, reaches
 * the engine at 11.1; the engine's step for B ends (output naming B) at 15;
 * A's first output at 25 reaches the frontend at 25.2; A's first token write
 * at 26, its token time 26.05. At 18.5 the engine writes a message naming no
 * request (vLLM under data parallel: its counts to the coordinator, after
 * the step's outputs): the step that gave A's first token began at 15.
 */
static void test_split(void **state)
{
	struct msg_hops *mh = msg_hops__new();
	struct req_fix f;
	struct ttf_msg_chain c;

	(void)state;
	req_fix(&f, ID_A);
	msg(mh, FE, ZMTP_DIR_OUT, 11 * MS, ID_A, NULL);
	msg(mh, ENG, ZMTP_DIR_IN, 11100000, ID_A, NULL);
	msg(mh, ENG, ZMTP_DIR_OUT, 15 * MS, ID_B, NULL);
	msg(mh, ENG, ZMTP_DIR_OUT, 18500000, NULL, NULL);
	msg(mh, ENG, ZMTP_DIR_OUT, 25 * MS, ID_A, ID_B);
	msg(mh, ENG, ZMTP_DIR_OUT, 30 * MS, ID_A, ID_B);
	msg(mh, FE, ZMTP_DIR_IN, 25200000, ID_A, ID_B);
	assert_int_equal(msg_hops__join(mh, &f.r, &f.m, &f.a, &c), 1);
	assert_int_equal(sum(&c), f.m.ttft_ns);
	assert_int_equal(c.eng_tgid, ENG);
	assert_int_equal(c.stage_ns[TTF_MS_READ_WAIT], 500000);
	assert_int_equal(c.stage_ns[TTF_MS_FRONTEND], 1 * MS);
	assert_int_equal(c.stage_ns[TTF_MS_IPC_IN], 100000);
	assert_int_equal(c.stage_ns[TTF_MS_QUEUE], 15 * MS - 11100000);
	assert_int_equal(c.stage_ns[TTF_MS_PREFILL], 10 * MS);
	assert_int_equal(c.stage_ns[TTF_MS_IPC_OUT], 200000);
	assert_int_equal(c.stage_ns[TTF_MS_EMIT], 800000);
	assert_int_equal(c.stage_ns[TTF_MS_NET_OUT], 50000);
	assert_int_equal(c.out_msgs, 2);
	assert_int_equal(c.id_rule, TTF_MID_EXACT);
	/* two processes: the vLLM-shaped stages only, in time order */
	assert_int_equal(c.n_procs, 2);
	assert_int_equal(c.n_stages, 9);
	assert_int_equal(c.stage[6], TTF_MS_IPC_OUT);
	assert_int_equal(c.stage[7], TTF_MS_EMIT);
	assert_int_equal(c.stage_ns[TTF_MS_DETOKENIZE], 0);
	assert_string_equal(c.role[0], "frontend");
	assert_string_equal(c.role[1], "engine");
	assert_string_equal(c.stack, "");
	/* take windows: emit on the first token's writer, queue on the engine's main thread */
	assert_int_equal(c.take[TTF_MT_FRONTEND].tid, 7);
	assert_int_equal(c.take[TTF_MT_FRONTEND].start_ns, 25200000);
	assert_int_equal(c.take[TTF_MT_FRONTEND].end_ns, 26 * MS);
	assert_int_equal(c.take[TTF_MT_ENGINE].tid, ENG);
	assert_int_equal(c.take[TTF_MT_ENGINE].start_ns, 11100000);
	assert_int_equal(c.take[TTF_MT_ENGINE].end_ns, 15 * MS);
	assert_int_equal(c.take[TTF_MT_ENGINE].valid, 0);
	/* joined once: the id is forgotten */
	assert_int_equal(msg_hops__join(mh, &f.r, &f.m, &f.a, &c), 0);
	assert_int_equal(msg_hops__stats(mh)->joined, 1);
	msg_hops__free(mh);
}

/*
 * test_split with vLLM's ids since its PR #27987: the messages name the
 * response id plus "-0-" and 8 hex (completions), the request message also
 * the unsuffixed id (external_req_id, late in its array); an n>1 child
 * ("1_" before it) and an id sharing only the core join the same way, each
 * named by its rule.
 */
static void suffixed_case(const char *resp, const char *wire, const char *extra,
			  enum ttf_msg_id_rule want)
{
	struct msg_hops *mh = msg_hops__new();
	struct req_fix f;
	struct ttf_msg_chain c;

	req_fix(&f, resp);
	msg(mh, FE, ZMTP_DIR_OUT, 11 * MS, wire, extra);
	msg(mh, ENG, ZMTP_DIR_IN, 11100000, wire, extra);
	msg(mh, ENG, ZMTP_DIR_OUT, 15 * MS, ID_B "-0-9a8b7c6d", NULL);
	msg(mh, ENG, ZMTP_DIR_OUT, 25 * MS, wire, ID_B "-0-9a8b7c6d");
	msg(mh, ENG, ZMTP_DIR_OUT, 30 * MS, wire, ID_B "-0-9a8b7c6d");
	msg(mh, FE, ZMTP_DIR_IN, 25200000, wire, ID_B "-0-9a8b7c6d");
	assert_int_equal(msg_hops__join(mh, &f.r, &f.m, &f.a, &c), 1);
	assert_int_equal(c.inferred, 0);
	assert_int_equal(c.id_rule, want);
	assert_int_equal(sum(&c), f.m.ttft_ns);
	assert_int_equal(c.stage_ns[TTF_MS_FRONTEND], 1 * MS);
	assert_int_equal(c.stage_ns[TTF_MS_IPC_IN], 100000);
	assert_int_equal(c.stage_ns[TTF_MS_QUEUE], 15 * MS - 11100000);
	assert_int_equal(c.stage_ns[TTF_MS_PREFILL], 10 * MS);
	assert_int_equal(c.stage_ns[TTF_MS_EMIT], 800000);
	assert_int_equal(c.out_msgs, 2);
	assert_int_equal(msg_hops__stats(mh)->joined_by_rule[want], 1);
	assert_int_equal(msg_hops__stats(mh)->unjoined, 0);
	msg_hops__free(mh);
}

static void test_suffixed(void **state)
{
	(void)state;
	suffixed_case(ID_A, ID_A "-0-1a2b3c4d", ID_A, TTF_MID_SUFFIX);
	suffixed_case("chat" ID_A, "chat" ID_A "-1a2b3c4d", NULL, TTF_MID_SUFFIX);
	suffixed_case(ID_A, "1_" ID_A "-0-1a2b3c4d", NULL, TTF_MID_CHILD);
	suffixed_case(ID_A, "1_" ID_A, NULL, TTF_MID_CHILD);
	suffixed_case(ID_A, "req-0123456789ABCDEF0123456789abcdef", NULL, TTF_MID_CORE);
	suffixed_case(ID_A, ID_A, ID_A, TTF_MID_EXACT);
}

static const char sglang_ini[] =
	"[stack]\nname = sglang\nrole = tokenizer_manager\nrole = scheduler\n"
	"role = detokenizer\nsocket = push>pull\nsocket = push>pull\nsocket = push>pull\n"
	"id = <hex32>\n";

/*
 * SGLang-shaped: the tokenizer manager writes at 11 ms, the scheduler reads
 * at 11.1, its previous batch's output leaves at 15, the first naming the
 * request at 25; the detokenizer reads it at 25.1 (and a later one at 30)
 * and writes its text at 25.6; the tokenizer manager reads that at 25.7 and
 * writes the first token at 26.
 */
static void test_three(void **state)
{
	struct msg_hops *mh = msg_hops__new();
	struct req_fix f;
	struct stack_profiles sp = { .n = 1 };
	struct ttf_msg_chain c;
	char err[256];

	(void)state;
	assert_int_equal(stack_profile__parse_string(sglang_ini, "sglang.ini", &sp.p[0], err,
						     sizeof(err)), 0);
	msg_hops__set_stacks(mh, &sp);
	req_fix(&f, RID);
	msg(mh, FE, ZMTP_DIR_OUT, 11 * MS, RID, NULL);
	msg(mh, ENG, ZMTP_DIR_IN, 11100000, RID, NULL);
	msg(mh, ENG, ZMTP_DIR_OUT, 15 * MS, ID_B, NULL);
	msg(mh, ENG, ZMTP_DIR_OUT, 25 * MS, RID, ID_B);
	msg(mh, DET, ZMTP_DIR_IN, 25100000, RID, ID_B);
	msg(mh, DET, ZMTP_DIR_IN, 30 * MS, RID, ID_B);
	msg(mh, DET, ZMTP_DIR_OUT, 25600000, RID, ID_B);
	msg(mh, FE, ZMTP_DIR_IN, 25700000, RID, ID_B);
	assert_int_equal(msg_hops__join(mh, &f.r, &f.m, &f.a, &c), 1);
	assert_int_equal(sum(&c), f.m.ttft_ns);
	assert_int_equal(c.n_procs, 3);
	assert_int_equal(c.tgid[1], ENG);
	assert_int_equal(c.tgid[2], DET);
	assert_int_equal(c.n_stages, TTF_MS__MAX);
	assert_int_equal(c.stage[7], TTF_MS_DETOKENIZE);
	assert_int_equal(c.stage[8], TTF_MS_IPC_BACK);
	assert_int_equal(c.stage_ns[TTF_MS_QUEUE], 15 * MS - 11100000);
	assert_int_equal(c.stage_ns[TTF_MS_PREFILL], 10 * MS);
	assert_int_equal(c.stage_ns[TTF_MS_IPC_OUT], 100000);
	assert_int_equal(c.stage_ns[TTF_MS_DETOKENIZE], 500000);
	assert_int_equal(c.stage_ns[TTF_MS_IPC_BACK], 100000);
	assert_int_equal(c.stage_ns[TTF_MS_EMIT], 300000);
	assert_string_equal(c.role[1], "scheduler");
	assert_string_equal(c.role[2], "detokenizer");
	assert_string_equal(c.stack, "sglang");
	assert_int_equal(msg_hops__stats(mh)->out_after_in, 0);
	/* the take windows: emit and the scheduler's queue, as with one process */
	assert_int_equal(c.take[TTF_MT_FRONTEND].start_ns, 25700000);
	assert_int_equal(c.take[TTF_MT_FRONTEND].end_ns, 26 * MS);
	assert_int_equal(c.take[TTF_MT_ENGINE].tid, ENG);
	assert_int_equal(c.take[TTF_MT_ENGINE].start_ns, 11100000);
	assert_int_equal(c.take[TTF_MT_ENGINE].end_ns, 15 * MS);
	/* a fourth process reading the id: more than a chain has, not split */
	msg(mh, FE, ZMTP_DIR_OUT, 40 * MS, RID, NULL);
	msg(mh, ENG, ZMTP_DIR_IN, 41 * MS, RID, NULL);
	msg(mh, ENG, ZMTP_DIR_OUT, 42 * MS, RID, NULL);
	msg(mh, DET, ZMTP_DIR_IN, 43 * MS, RID, NULL);
	msg(mh, DET, ZMTP_DIR_OUT, 44 * MS, RID, NULL);
	msg(mh, 400, ZMTP_DIR_IN, 44500000, RID, NULL);
	msg(mh, FE, ZMTP_DIR_IN, 45 * MS, RID, NULL);
	assert_int_equal(msg_hops__join(mh, &f.r, &f.m, &f.a, &c), 0);
	assert_int_equal(msg_hops__stats(mh)->unjoined, 1);
	msg_hops__free(mh);
}

/*
 * test_three's stack where the scheduler's first output naming the request
 * was stamped at 29 ms (its send returned late, or the one at 25 was
 * missed), after the detokenizer's read of it (25.1): the prefill ends at
 * that read, not 4 ms late with every later stage 0, and it is counted.
 */
static void test_out_after_in(void **state)
{
	struct msg_hops *mh = msg_hops__new();
	struct req_fix f;
	struct ttf_msg_chain c;

	(void)state;
	req_fix(&f, RID);
	msg(mh, FE, ZMTP_DIR_OUT, 11 * MS, RID, NULL);
	msg(mh, ENG, ZMTP_DIR_IN, 11100000, RID, NULL);
	msg(mh, ENG, ZMTP_DIR_OUT, 15 * MS, ID_B, NULL);
	msg(mh, ENG, ZMTP_DIR_OUT, 29 * MS, RID, ID_B);
	msg(mh, DET, ZMTP_DIR_IN, 25100000, RID, ID_B);
	msg(mh, DET, ZMTP_DIR_IN, 29100000, RID, ID_B);
	msg(mh, DET, ZMTP_DIR_OUT, 25600000, RID, ID_B);
	msg(mh, FE, ZMTP_DIR_IN, 25700000, RID, ID_B);
	assert_int_equal(msg_hops__join(mh, &f.r, &f.m, &f.a, &c), 1);
	assert_int_equal(sum(&c), f.m.ttft_ns);
	assert_int_equal(c.stage_ns[TTF_MS_PREFILL], 25100000 - 15 * MS);
	assert_int_equal(c.stage_ns[TTF_MS_IPC_OUT], 0);
	assert_int_equal(c.stage_ns[TTF_MS_DETOKENIZE], 500000);
	assert_int_equal(c.stage_ns[TTF_MS_IPC_BACK], 100000);
	assert_int_equal(c.stage_ns[TTF_MS_EMIT], 300000);
	assert_int_equal(msg_hops__stats(mh)->out_after_in, 1);
	/* the frontend's own first message out missed: its stage ends at the engine's read */
	msg(mh, FE, ZMTP_DIR_OUT, 12 * MS, RID, NULL);
	msg(mh, ENG, ZMTP_DIR_IN, 11100000, RID, NULL);
	msg(mh, ENG, ZMTP_DIR_OUT, 25 * MS, RID, NULL);
	msg(mh, FE, ZMTP_DIR_IN, 25200000, RID, NULL);
	assert_int_equal(msg_hops__join(mh, &f.r, &f.m, &f.a, &c), 1);
	assert_int_equal(c.stage_ns[TTF_MS_FRONTEND], 1100000);
	assert_int_equal(c.stage_ns[TTF_MS_IPC_IN], 0);
	assert_int_equal(sum(&c), f.m.ttft_ns);
	assert_int_equal(msg_hops__stats(mh)->out_after_in, 2);
	msg_hops__free(mh);
}

/* An id whose engine side was not seen: not split, counted. */
static void test_incomplete(void **state)
{
	struct msg_hops *mh = msg_hops__new();
	struct ttf_token_event ev = { .write_ns = 26 * MS, .n_tokens = 1 };
	struct ttf_request r = { .id = 1, .tgid = FE, .n_events = 1, .events = &ev };
	struct ttf_req_metrics m = { .t_start_ns = 9 * MS, .t_first_token_ns = 26 * MS,
				     .ttft_ns = 17 * MS };
	struct ttf_attrib a = { .valid = 1 };
	struct ttf_msg_chain c;

	(void)state;
	snprintf(r.resp_id, sizeof(r.resp_id), "%s", ID_A);
	msg(mh, FE, ZMTP_DIR_OUT, 11 * MS, ID_A, NULL);
	msg(mh, FE, ZMTP_DIR_IN, 25 * MS, ID_A, NULL);
	assert_int_equal(msg_hops__join(mh, &r, &m, &a, &c), 0);
	assert_int_equal(msg_hops__stats(mh)->unjoined, 1);
	r.resp_id[0] = '\0';
	assert_int_equal(msg_hops__join(mh, &r, &m, &a, &c), 0);
	msg_hops__free(mh);
}

/*
 * A step of 6 requests: its output message names A sixth, past the 4 ids
 * a message keeps (more_ids). A's first output is that message, not the
 * next step's (before, A took the next one: its crossings after its first
 * token on the vLLM-shaped stack, docs/design.md D15).
 */
static void test_more_ids(void **state)
{
	static const char more[2][ZMTP_ID_BYTES] = { "cmpl-11111111111111111111111111111111",
						      ID_A };
	struct msg_hops *mh = msg_hops__new();
	struct ttf_token_event ev = { .write_ns = 26 * MS, .n_tokens = 1 };
	struct ttf_request r = { .id = 1, .tgid = FE, .n_events = 1, .events = &ev };
	struct ttf_req_metrics m = { .t_start_ns = 9 * MS, .t_first_token_ns = 26 * MS,
				     .ttft_ns = 17 * MS };
	struct ttf_attrib a = { .valid = 1 };
	struct ttf_zmtp_msg o = { .tgid = ENG, .dir = ZMTP_DIR_OUT, .ts_ns = 20 * MS, .n_ids = 4,
				  .more_ids = more, .n_more_ids = 2 };
	struct ttf_msg_chain c;

	(void)state;
	for (int i = 0; i < 4; i++)
		snprintf(o.ids[i], ZMTP_ID_BYTES, "cmpl-%032x", i + 100);
	snprintf(r.resp_id, sizeof(r.resp_id), "%s", ID_A);
	a.bound_ns[1] = a.bound_ns[2] = 10 * MS;
	msg(mh, FE, ZMTP_DIR_OUT, 11 * MS, ID_A, NULL);
	msg(mh, ENG, ZMTP_DIR_IN, 12 * MS, ID_A, NULL);
	assert_int_equal(msg_hops__on_msg(mh, &o), 0);
	o.dir = ZMTP_DIR_IN;
	o.tgid = FE;
	o.ts_ns = 20100000;
	assert_int_equal(msg_hops__on_msg(mh, &o), 0);
	msg(mh, ENG, ZMTP_DIR_OUT, 30 * MS, ID_A, NULL);
	msg(mh, FE, ZMTP_DIR_IN, 30100000, ID_A, NULL);
	assert_int_equal(msg_hops__join(mh, &r, &m, &a, &c), 1);
	assert_int_equal(c.stage_ns[TTF_MS_IPC_OUT], 100000);
	assert_int_equal(c.stage_ns[TTF_MS_EMIT], 5900000);
	assert_int_equal(c.out_msgs, 2);
	msg_hops__free(mh);
}

/* Bounded: the oldest ids go first, counted. */
static void test_bounded(void **state)
{
	struct msg_hops *mh = msg_hops__new();
	char id[64];

	(void)state;
	for (int i = 0; i < MSG_HOPS_IDS + 5; i++) {
		snprintf(id, sizeof(id), "cmpl-%032x", i);
		msg(mh, FE, ZMTP_DIR_OUT, (uint64_t)i, id, NULL);
	}
	assert_int_equal(msg_hops__stats(mh)->ids_evicted, 5);
	assert_int_equal(msg_hops__stats(mh)->ids, MSG_HOPS_IDS + 5);
	msg_hops__free(mh);
}

/*
 * No ids in the messages (D17): requests A (read at 10 ms) and B (read at
 * 12) of the frontend; its request messages (connection 11 <-> 12) at 11
 * and 12.5, each read by the engine 0.1 ms later; the engine's outputs
 * (22 <-> 21) at 9, 15, 25 and 30, each read by the frontend 0.2 ms later;
 * A's first token written at 26, B's at 31. Joined B first: by order.
 */
static void test_inferred(void **state)
{
	struct msg_hops *mh = msg_hops__new();
	struct req_fix fa, fb;
	struct ttf_msg_chain c;

	(void)state;
	req_fix(&fa, ID_A);
	req_fix(&fb, "");
	fb.r.id = 2;
	fb.ev.write_ns = 27 * MS;
	fb.m = (struct ttf_req_metrics){ .t_start_ns = 11 * MS, .t_first_token_ns = 27050000,
					 .ttft_ns = 16050000 };
	fb.a.bound_ns[1] = 11500000;
	fb.a.bound_ns[2] = 12 * MS;
	/* the engine is busy: an output at 9 ms, 2.1 ms before it reads A */
	cross(mh, ENG, ZMTP_DIR_OUT, 9 * MS, 49, 22, 21);
	cross(mh, FE, ZMTP_DIR_IN, 9200000, 49, 21, 22);
	msg_hops__on_read(mh, FE, 1, 10 * MS);
	msg_hops__on_read(mh, FE, 2, 12 * MS);
	cross(mh, FE, ZMTP_DIR_OUT, 11 * MS, 100, 11, 12);
	cross(mh, ENG, ZMTP_DIR_IN, 11100000, 100, 12, 11);
	cross(mh, FE, ZMTP_DIR_OUT, 12500000, 100, 11, 12);
	cross(mh, ENG, ZMTP_DIR_IN, 12600000, 100, 12, 11);
	for (int k = 0; k < 3; k++) {
		uint64_t t = (k == 0 ? 15 : k == 1 ? 25 : 30) * MS;

		cross(mh, ENG, ZMTP_DIR_OUT, t, 50 + k, 22, 21);
		/* a message on another connection, of the same size: not its other end */
		cross(mh, FE, ZMTP_DIR_IN, t + 100000, 50 + k, 31, 32);
		cross(mh, FE, ZMTP_DIR_IN, t + 200000, 50 + k, 21, 22);
	}
	assert_int_equal(msg_hops__join(mh, &fb.r, &fb.m, &fb.a, &c), 1);
	assert_int_equal(c.inferred, 1);
	assert_int_equal(sum(&c), fb.m.ttft_ns);
	assert_int_equal(c.eng_tgid, ENG);
	/* busy: the step in flight at its read (ending at 15) was not its, the next one was */
	assert_int_equal(c.stage_ns[TTF_MS_FRONTEND], 500000);
	assert_int_equal(c.stage_ns[TTF_MS_IPC_IN], 100000);
	assert_int_equal(c.stage_ns[TTF_MS_QUEUE], 15 * MS - 12600000);
	assert_int_equal(c.stage_ns[TTF_MS_PREFILL], 10 * MS);
	assert_int_equal(c.stage_ns[TTF_MS_IPC_OUT], 200000);
	assert_int_equal(c.stage_ns[TTF_MS_EMIT], 27 * MS - 25200000);
	assert_int_equal(c.out_msgs, 0);
	/* A: no message names its id, so by order too; the same split as test_split */
	assert_int_equal(msg_hops__join(mh, &fa.r, &fa.m, &fa.a, &c), 1);
	assert_int_equal(c.inferred, 1);
	assert_int_equal(sum(&c), fa.m.ttft_ns);
	assert_int_equal(c.stage_ns[TTF_MS_FRONTEND], 1 * MS);
	assert_int_equal(c.stage_ns[TTF_MS_IPC_IN], 100000);
	assert_int_equal(c.stage_ns[TTF_MS_QUEUE], 15 * MS - 11100000);
	assert_int_equal(c.stage_ns[TTF_MS_PREFILL], 10 * MS);
	assert_int_equal(c.stage_ns[TTF_MS_IPC_OUT], 200000);
	assert_int_equal(c.stage_ns[TTF_MS_EMIT], 800000);
	assert_int_equal(msg_hops__stats(mh)->joined_inferred, 2);
	assert_int_equal(msg_hops__stats(mh)->joined, 0);
	msg_hops__free(mh);
}

/*
 * Request 1 read at 10 ms, its message out at 11 and in at 11.1; an engine
 * with no output before, then n_out outputs from 25 ms on, 5 ms apart, each
 * read by the frontend 0.2 ms later.
 */
static void idle_engine(struct msg_hops *mh, int n_out)
{
	msg_hops__on_read(mh, FE, 1, 10 * MS);
	cross(mh, FE, ZMTP_DIR_OUT, 11 * MS, 100, 11, 12);
	cross(mh, ENG, ZMTP_DIR_IN, 11100000, 100, 12, 11);
	for (int k = 0; k < n_out; k++) {
		cross(mh, ENG, ZMTP_DIR_OUT, (25 + 5 * k) * MS, 50, 22, 21);
		cross(mh, FE, ZMTP_DIR_IN, (25 + 5 * k) * MS + 200000, 50, 21, 22);
	}
}

/* An engine with no output before the request's read had stopped: its next step is the request's. */
static void test_inferred_idle(void **state)
{
	struct msg_hops *mh = msg_hops__new();
	struct req_fix f;
	struct ttf_msg_chain c;

	(void)state;
	req_fix(&f, "");
	idle_engine(mh, 2);
	assert_int_equal(msg_hops__join(mh, &f.r, &f.m, &f.a, &c), 1);
	assert_int_equal(c.stage_ns[TTF_MS_QUEUE], 0);
	assert_int_equal(c.stage_ns[TTF_MS_PREFILL], 25 * MS - 11100000);
	assert_int_equal(c.stage_ns[TTF_MS_IPC_OUT], 200000);
	assert_int_equal(c.stage_ns[TTF_MS_EMIT], 800000);
	msg_hops__free(mh);
}

/*
 * The engine took the request a step late (its input thread handed it over
 * after the next step began): the timing says the output at 25, but the
 * frontend read the one at 30 too before it wrote the first token at 31.
 */
static void test_inferred_late_handover(void **state)
{
	struct msg_hops *mh = msg_hops__new();
	struct req_fix f;
	struct ttf_msg_chain c;

	(void)state;
	req_fix(&f, "");
	f.ev.write_ns = 31 * MS;
	f.m.t_first_token_ns = 31050000;
	f.m.ttft_ns = 22050000;
	idle_engine(mh, 3);	/* the output at 35 is read after the token */
	assert_int_equal(msg_hops__join(mh, &f.r, &f.m, &f.a, &c), 1);
	assert_int_equal(sum(&c), f.m.ttft_ns);
	/* it waited through the step that ended at 25 (D15: queue ends at the
	 * engine's output before the one with its first token) */
	assert_int_equal(c.stage_ns[TTF_MS_QUEUE], 25 * MS - 11100000);
	assert_int_equal(c.stage_ns[TTF_MS_PREFILL], 5 * MS);
	assert_int_equal(c.stage_ns[TTF_MS_IPC_OUT], 200000);
	assert_int_equal(c.stage_ns[TTF_MS_EMIT], 800000);
	msg_hops__free(mh);
}

/* A request whose message has no other end (no engine read it), or that no message took. */
static void test_inferred_incomplete(void **state)
{
	struct msg_hops *mh = msg_hops__new();
	struct req_fix f;
	struct ttf_msg_chain c;

	(void)state;
	req_fix(&f, "");
	msg_hops__on_read(mh, FE, 1, 10 * MS);
	assert_int_equal(msg_hops__join(mh, &f.r, &f.m, &f.a, &c), 0);
	cross(mh, FE, ZMTP_DIR_OUT, 11 * MS, 100, 11, 12);
	cross(mh, ENG, ZMTP_DIR_IN, 11100000, 99, 12, 11);	/* another size: not its end */
	cross(mh, ENG, ZMTP_DIR_OUT, 25 * MS, 50, 22, 21);
	cross(mh, FE, ZMTP_DIR_IN, 25200000, 50, 21, 22);
	assert_int_equal(msg_hops__join(mh, &f.r, &f.m, &f.a, &c), 0);
	/* a read no message took is forgotten when its request ends */
	msg_hops__on_read(mh, FE, 2, 30 * MS);
	msg_hops__request_done(mh, 2);
	cross(mh, FE, ZMTP_DIR_OUT, 31 * MS, 100, 11, 12);
	f.r.id = 2;
	assert_int_equal(msg_hops__join(mh, &f.r, &f.m, &f.a, &c), 0);
	assert_int_equal(msg_hops__stats(mh)->joined_inferred, 0);
	msg_hops__free(mh);
}

/* A message with an id on a unix connection (own inode lo, peer inode hi). */
static void bare_id(struct msg_hops *mh, uint32_t tgid, uint8_t dir, uint64_t ts,
		    uint64_t bytes, uint64_t own_ino, uint64_t peer_ino, const char *id)
{
	struct ttf_zmtp_msg m = { .tgid = tgid, .dir = dir, .ts_ns = ts, .bytes = bytes,
				  .n_ids = 1 };

	m.addr.family = 1;
	memcpy(m.addr.laddr, &own_ino, sizeof(own_ino));
	memcpy(m.addr.raddr, &peer_ino, sizeof(peer_ino));
	snprintf(m.ids[0], ZMTP_ID_BYTES, "%s", id);
	assert_int_equal(msg_hops__on_msg(mh, &m), 0);
}

/* test_inferred_idle's messages; the request's two carry id when it is not NULL. */
static void idle_messages(struct msg_hops *mh, const char *id)
{
	msg_hops__on_read(mh, FE, 1, 10 * MS);
	if (id) {
		bare_id(mh, FE, ZMTP_DIR_OUT, 11 * MS, 100, 11, 12, id);
		bare_id(mh, ENG, ZMTP_DIR_IN, 11100000, 100, 12, 11, id);
	} else {
		cross(mh, FE, ZMTP_DIR_OUT, 11 * MS, 100, 11, 12);
		cross(mh, ENG, ZMTP_DIR_IN, 11100000, 100, 12, 11);
	}
	cross(mh, ENG, ZMTP_DIR_OUT, 15 * MS, 50, 22, 21);
	cross(mh, FE, ZMTP_DIR_IN, 15200000, 50, 21, 22);
	cross(mh, ENG, ZMTP_DIR_OUT, 25 * MS, 51, 22, 21);
	cross(mh, FE, ZMTP_DIR_IN, 25200000, 51, 21, 22);
}

/*
 * Its id in the request message only (vLLM's external_req_id seen, the
 * outputs naming ids of another shape): not straight to unjoined, the
 * order-and-timing join splits it, marked so, as it splits the same
 * messages without any id.
 */
static void test_incomplete_id_inferred(void **state)
{
	struct msg_hops *mh = msg_hops__new(), *plain = msg_hops__new();
	struct ttf_msg_chain c, want;
	struct req_fix f;

	(void)state;
	req_fix(&f, ID_A);
	idle_messages(plain, NULL);
	assert_int_equal(msg_hops__join(plain, &f.r, &f.m, &f.a, &want), 1);
	idle_messages(mh, ID_A);
	assert_int_equal(msg_hops__join(mh, &f.r, &f.m, &f.a, &c), 1);
	assert_int_equal(c.inferred, 1);
	assert_int_equal(c.id_incomplete, 1);
	assert_int_equal(want.id_incomplete, 0);
	assert_int_equal(sum(&c), f.m.ttft_ns);
	assert_int_equal(c.stage_ns[TTF_MS_FRONTEND], 1 * MS);
	assert_memory_equal(c.stage_ns, want.stage_ns, sizeof(c.stage_ns));
	assert_int_equal(msg_hops__stats(mh)->inferred_id_incomplete, 1);
	assert_int_equal(msg_hops__stats(mh)->joined_inferred, 1);
	assert_int_equal(msg_hops__stats(mh)->unjoined, 0);
	msg_hops__free(mh);
	msg_hops__free(plain);
}

/*
 * A chain of three without ids (SGLang-shaped, D17): the tokenizer manager
 * (FE) writes the request at 11 ms (connection 11 <-> 12), the scheduler
 * reads it at 11.1; its outputs to the detokenizer (41 <-> 42) at 9, 25
 * and 30, read 0.1 ms later; the detokenizer, slow, writes to FE (51 <->
 * 52) at 25.3 (answering 9), 25.6 (25) and 30.5 (30), each read 0.1 ms
 * later; the first token is written at 26. The scheduler was busy (its
 * output at 9, 2.1 ms before the read) but the frontend wrote the token
 * before it read the answer to 30, so the step is 25's; the answer to it
 * is the detokenizer's second write after reading it (the one at 9 was
 * still unanswered), not its first.
 */
static void test_inferred_three(void **state)
{
	struct msg_hops *mh = msg_hops__new();
	struct req_fix f;
	struct ttf_msg_chain c;

	(void)state;
	req_fix(&f, "");
	cross(mh, ENG, ZMTP_DIR_OUT, 9 * MS, 60, 41, 42);
	cross(mh, DET, ZMTP_DIR_IN, 9100000, 60, 42, 41);
	msg_hops__on_read(mh, FE, 1, 10 * MS);
	cross(mh, FE, ZMTP_DIR_OUT, 11 * MS, 100, 11, 12);
	cross(mh, ENG, ZMTP_DIR_IN, 11100000, 100, 12, 11);
	cross(mh, ENG, ZMTP_DIR_OUT, 25 * MS, 61, 41, 42);
	cross(mh, DET, ZMTP_DIR_IN, 25100000, 61, 42, 41);
	cross(mh, DET, ZMTP_DIR_OUT, 25300000, 70, 51, 52);
	cross(mh, FE, ZMTP_DIR_IN, 25400000, 70, 52, 51);
	cross(mh, DET, ZMTP_DIR_OUT, 25600000, 71, 51, 52);
	cross(mh, FE, ZMTP_DIR_IN, 25700000, 71, 52, 51);
	cross(mh, ENG, ZMTP_DIR_OUT, 30 * MS, 62, 41, 42);
	cross(mh, DET, ZMTP_DIR_IN, 30100000, 62, 42, 41);
	cross(mh, DET, ZMTP_DIR_OUT, 30500000, 72, 51, 52);
	cross(mh, FE, ZMTP_DIR_IN, 30600000, 72, 52, 51);
	assert_int_equal(msg_hops__join(mh, &f.r, &f.m, &f.a, &c), 1);
	assert_int_equal(c.inferred, 1);
	assert_int_equal(sum(&c), f.m.ttft_ns);
	assert_int_equal(c.n_procs, 3);
	assert_int_equal(c.tgid[1], ENG);
	assert_int_equal(c.tgid[2], DET);
	assert_int_equal(c.stage_ns[TTF_MS_FRONTEND], 1 * MS);
	assert_int_equal(c.stage_ns[TTF_MS_IPC_IN], 100000);
	assert_int_equal(c.stage_ns[TTF_MS_QUEUE], 0);
	assert_int_equal(c.stage_ns[TTF_MS_PREFILL], 25 * MS - 11100000);
	assert_int_equal(c.stage_ns[TTF_MS_IPC_OUT], 100000);
	assert_int_equal(c.stage_ns[TTF_MS_DETOKENIZE], 500000);
	assert_int_equal(c.stage_ns[TTF_MS_IPC_BACK], 100000);
	assert_int_equal(c.stage_ns[TTF_MS_EMIT], 300000);
	assert_int_equal(msg_hops__stats(mh)->joined_inferred, 1);
	msg_hops__free(mh);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_split),
		cmocka_unit_test(test_three),
		cmocka_unit_test(test_out_after_in),
		cmocka_unit_test(test_incomplete),
		cmocka_unit_test(test_bounded),
		cmocka_unit_test(test_more_ids),
		cmocka_unit_test(test_inferred),
		cmocka_unit_test(test_inferred_idle),
		cmocka_unit_test(test_inferred_late_handover),
		cmocka_unit_test(test_inferred_incomplete),
		cmocka_unit_test(test_inferred_three),
		cmocka_unit_test(test_suffixed),
		cmocka_unit_test(test_incomplete_id_inferred),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
