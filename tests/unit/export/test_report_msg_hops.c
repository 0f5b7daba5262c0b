// SPDX-License-Identifier: GPL-2.0-only
/* The live text line of a message-hop chain (user/export/report/report_msg_hops.h). */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <setjmp.h>
#include <cmocka.h>
#include "user/export/report/report_msg_hops.h"
#include "user/model/attrib.h"
#include "user/model/hops/view.h"

static char *line_of(const struct ttf_msg_chain *c)
{
	struct ttf_attrib a = { .valid = 1, .msg = c };
	char *buf = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&buf, &len);

	assert_non_null(f);
	report_msg_hops__text_line(f, &a);
	fclose(f);
	return buf;
}

static void chain(struct ttf_msg_chain *c, int n_procs)
{
	static const char *const roles[] = { "tokenizer_manager", "scheduler", "detokenizer" };

	memset(c, 0, sizeof(*c));
	c->n_procs = (uint8_t)n_procs;
	for (int k = 0; k < n_procs; k++) {
		snprintf(c->role[k], sizeof(c->role[k]), "%s", n_procs == 3 ? roles[k] :
			 k ? "engine" : "frontend");
		c->tgid[k] = 100 * (k + 1);
	}
	c->stage_ns[TTF_MS_FRONTEND] = 1000000;
	c->stage_ns[TTF_MS_IPC_IN] = 40000;
	c->stage_ns[TTF_MS_QUEUE] = 1500000;
	c->stage_ns[TTF_MS_PREFILL] = 8090000;
	c->stage_ns[TTF_MS_IPC_OUT] = 60000;
	c->stage_ns[TTF_MS_DETOKENIZE] = 760000;
	c->stage_ns[TTF_MS_IPC_BACK] = 50000;
	c->stage_ns[TTF_MS_EMIT] = 650000;
}

/* Every process by its role, name and pid; the name left out where it is unknown. */
static void test_three_processes(void **state)
{
	struct ttf_msg_chain c;
	char *l;

	(void)state;
	chain(&c, 3);
	snprintf(c.comm[0], sizeof(c.comm[0]), "python3");
	snprintf(c.comm[1], sizeof(c.comm[1]), "sglang::schedul");
	l = line_of(&c);
	assert_string_equal(l, "    hops(ms): tokenizer_manager (python3 pid 100) frontend 1.00 | "
			    "ipc_in 0.04 | scheduler (sglang::schedul pid 200) queue 1.50 "
			    "prefill 8.09 | ipc_out 0.06 | detokenizer (pid 300) detokenize 0.76 | "
			    "ipc_back 0.05 | emit 0.65 [join exact, queue/prefill inferred]\n");
	free(l);
}

/* Two processes: no detokenizer part. */
static void test_two_processes(void **state)
{
	struct ttf_msg_chain c;
	char *l;

	(void)state;
	chain(&c, 2);
	snprintf(c.comm[1], sizeof(c.comm[1]), "EngineCore_0");
	l = line_of(&c);
	assert_string_equal(l, "    hops(ms): frontend (pid 100) frontend 1.00 | ipc_in 0.04 | "
			    "engine (EngineCore_0 pid 200) queue 1.50 prefill 8.09 | ipc_out 0.06 | "
			    "emit 0.65 [join exact, queue/prefill inferred]\n");
	free(l);
}

/* No chain, or one an HTTP hop split already: no line. */
static void test_none(void **state)
{
	char *buf = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&buf, &len);
	struct ttf_attrib a = { .valid = 1 };

	(void)state;
	report_msg_hops__text_line(f, &a);
	report_msg_hops__text_line(f, NULL);
	fclose(f);
	assert_int_equal(len, 0);
	free(buf);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_three_processes),
		cmocka_unit_test(test_two_processes),
		cmocka_unit_test(test_none),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
