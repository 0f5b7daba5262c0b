// SPDX-License-Identifier: GPL-2.0-only
/* Stack profiles (user/model/stack_profile.h, docs/design.md D16). */
#include <errno.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <cmocka.h>
#include "user/model/stack_profile.h"

#define HEX "0123456789abcdef0123456789abcdef"

/* The repository's own profiles load and tell vLLM's ids from SGLang's. */
static void test_repo_profiles(void **state)
{
	struct stack_profiles sp = { 0 };
	const struct stack_profile *p;
	char err[512] = "";

	(void)state;
	assert_int_equal(stack_profiles__load_dir(&sp, "profiles/stacks", err, sizeof(err)), 0);
	assert_int_equal(sp.n, 2);
	p = stack_profiles__match(&sp, 2, "chatcmpl-" HEX);
	assert_non_null(p);
	assert_string_equal(p->name, "vllm");
	assert_string_equal(p->role[1], "engine");
	assert_string_equal(p->socket[0], "router>dealer");
	assert_non_null(stack_profiles__match(&sp, 2, "cmpl-" HEX "-0"));
	p = stack_profiles__match(&sp, 3, HEX);
	assert_non_null(p);
	assert_string_equal(p->name, "sglang");
	assert_string_equal(p->role[0], "tokenizer_manager");
	assert_int_equal(p->transports, 1u << STACK_IPC | 1u << STACK_TCP);
	assert_int_equal(p->id_in, 1u << STACK_SSE_ID | 1u << STACK_ZMQ_PICKLE |
				   1u << STACK_ZMQ_MSGPACK);
	/* the role count and the id must both fit */
	assert_null(stack_profiles__match(&sp, 2, HEX));
	assert_null(stack_profiles__match(&sp, 3, "cmpl-" HEX));
	assert_null(stack_profiles__match(&sp, 3, "0123456789abcdef0123456789abcde"));
	assert_int_equal(stack_profiles__load_dir(&sp, "no/such/dir", err, sizeof(err)), 0);
	assert_int_equal(sp.n, 2);
}

static void bad(const char *text, const char *want)
{
	struct stack_profile p;
	char err[256];

	assert_int_equal(stack_profile__parse_string(text, "x.ini", &p, err, sizeof(err)), -EINVAL);
	if (!strstr(err, want))
		fail_msg("error '%s' lacks '%s'", err, want);
}

static void test_bad(void **state)
{
	static const char head[] = "[stack]\nname = s\nrole = a\nrole = b\n";
	char text[512];

	(void)state;
	snprintf(text, sizeof(text), "%ssocket = push>pull\nsocket = push>bogus\nid = <hex32>\n",
		 head);
	bad(text, "x.ini:6: bad or too many sockets");
	snprintf(text, sizeof(text), "%ssocket = push>pull\nsocket = push>pull\nid = x<hex32>y\n",
		 head);
	bad(text, "x.ini:7: bad or too many ids");
	snprintf(text, sizeof(text), "%ssocket = push>pull\nid = <hex32>\n", head);
	bad(text, "one socket per role");
	snprintf(text, sizeof(text), "%ssocket = push>pull\nsocket = push>pull\nid = <hex32>\n"
		 "transport = ipc udp\n", head);
	bad(text, "x.ini:8: bad transport (ipc, tcp): ipc udp");
	bad("[engine]\nname = x\n", "x.ini:2: unknown section");
	bad("[stack]\nname = s\nrole = a\nrole = b\nrole = c\nrole = d\n", "x.ini:6: bad or too many roles");
	bad("[stack]\nname = s\nweird = 1\n", "unknown key: weird");
}

/* A directory with a bad file: the files before it stay, its error is said. */
static void test_bad_file(void **state)
{
	char dir[] = "/tmp/ttf-stacks-XXXXXX", path[64], err[512] = "";
	struct stack_profiles sp = { 0 };
	FILE *f;

	(void)state;
	assert_non_null(mkdtemp(dir));
	snprintf(path, sizeof(path), "%s/a.ini", dir);
	f = fopen(path, "w");
	assert_non_null(f);
	fputs("[stack]\nname = a\nrole = x\nrole = y\nsocket = push>pull\n"
	      "socket = push>pull\nid = <hex32>\n", f);
	fclose(f);
	snprintf(path, sizeof(path), "%s/b.ini", dir);
	f = fopen(path, "w");
	assert_non_null(f);
	fputs("[stack]\nname = b\nrole = x\n", f);
	fclose(f);
	assert_int_equal(stack_profiles__load_dir(&sp, dir, err, sizeof(err)), -EINVAL);
	assert_int_equal(sp.n, 1);
	assert_string_equal(sp.p[0].name, "a");
	assert_non_null(strstr(err, "b.ini: [stack] needs a name, 2 to 3 roles"));
	unlink(path);
	snprintf(path, sizeof(path), "%s/a.ini", dir);
	unlink(path);
	rmdir(dir);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_repo_profiles),
		cmocka_unit_test(test_bad),
		cmocka_unit_test(test_bad_file),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
