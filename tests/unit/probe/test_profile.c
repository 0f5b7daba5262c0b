// SPDX-License-Identifier: GPL-2.0-only
/* profile.c: profiles/llamacpp.ini, profile errors with line numbers, --probe specs. */
#include <errno.h>
#include <limits.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <setjmp.h>
#include <string.h>
#include <unistd.h>
#include <cmocka.h>
#include "user/probe/profile.h"

static struct engine_profile prof;

/* The source tree's profiles/: the binary is .output/tests/unit/probe/test_profile. */
static void set_profile_dir(void)
{
	char exe[PATH_MAX], dir[PATH_MAX + 32];
	ssize_t n = readlink("/proc/self/exe", exe, sizeof(exe) - 1);

	assert_true(n > 0);
	exe[n] = '\0';
	*strrchr(exe, '/') = '\0';
	snprintf(dir, sizeof(dir), "%s/../../../../profiles", exe);
	setenv("TTFTRACE_PROFILE_DIR", dir, 1);
}

static const struct probe_spec *probe(const char *name)
{
	for (int i = 0; i < prof.n_probes; i++)
		if (!strcmp(prof.probes[i].name, name))
			return &prof.probes[i];
	fail_msg("no probe %s", name);
	return NULL;
}

static void test_llamacpp_profile(void **state)
{
	const struct probe_spec *p;
	char err[512];

	set_profile_dir();
	assert_int_equal(profile__load("llamacpp", &prof, err, sizeof(err)), 0);
	assert_string_equal(prof.name, "llama.cpp");
	assert_int_equal(prof.n_match, 4);
	assert_string_equal(prof.match[0], "libllama.so*");
	assert_string_equal(prof.match[1], "libllama.v*.so");
	assert_int_equal(prof.n_probes, 4);
	p = probe("llama_decode");
	assert_string_equal(p->symbol, "llama_decode");
	assert_int_equal(p->role, TTF_ROLE_STEP);
	assert_true(p->want_return);
	assert_int_equal(p->arg.arg_kind, TTF_ARG_LLAMA_BATCH);
	assert_int_equal(p->arg.arg_offset, 8);
	assert_int_equal(p->arg.batch.n_tokens, 0);	/* llama_batch's fields */
	assert_int_equal(p->arg.batch.pos, 24);
	assert_int_equal(p->arg.batch.n_seq_id, 32);
	assert_int_equal(p->arg.batch.seq_id, 40);
	assert_int_equal(p->arg.batch.logits, 48);
	assert_int_equal(probe("llama_tokenize")->role, TTF_ROLE_TOKENIZE);
	assert_int_equal(probe("llama_sampler_sample")->role, TTF_ROLE_SAMPLE);
	p = probe("llama_synchronize");
	assert_int_equal(p->role, TTF_ROLE_SYNC);
	assert_int_equal(p->arg.arg_kind, TTF_ARG_NONE);
	/* only where a GPU backend is mapped; every other probe always */
	assert_true(p->n_only_with >= 8);
	assert_string_equal(p->only_with[0], "libggml-cuda*");
	assert_int_equal(probe("llama_decode")->n_only_with, 0);
	assert_int_equal(profile__load("no_such_engine", &prof, err, sizeof(err)), -ENOENT);
	assert_non_null(strstr(err, "no_such_engine"));
}

static void expect_error(const char *text, const char *what)
{
	char err[512];

	assert_int_equal(profile__parse_string(text, "t.ini", &prof, err, sizeof(err)), -EINVAL);
	if (!strstr(err, what))
		fail_msg("error '%s' lacks '%s'", err, what);
}

static void test_profile_errors(void **state)
{
	const char *head = "[engine]\nmatch = libx.so\n";
	char text[512];

	snprintf(text, sizeof(text), "%s[probe a]\nsymbol = a\nrole = stepp\n", head);
	expect_error(text, "t.ini:5: unknown role 'stepp'");
	snprintf(text, sizeof(text), "%s[probe a]\nsymbol = a\nrole = step\nwant_return = maybe\n",
		 head);
	expect_error(text, "t.ini:6: want_return must be yes or no");
	snprintf(text, sizeof(text), "%s\n[probe a]\nrole = step\narg = reg:9\n", head);
	expect_error(text, "t.ini:6: bad arg 'reg:9'");
	snprintf(text, sizeof(text), "%s[probe a]\nrole = step\ncolour = red\n", head);
	expect_error(text, "t.ini:5: unknown key 'colour' in [probe a]");
	snprintf(text, sizeof(text), "%s[probe a]\nrole = step\n", head);
	expect_error(text, "t.ini:3: [probe a] needs symbol and role");
	snprintf(text, sizeof(text), "%s[probe a]\nsymbol = a\nrole = sync\nonly_with = "
		 "%070d\n", head, 0);
	expect_error(text, "t.ini:6: bad or too many only_with entries");
	expect_error("[engine]\nname = x\n", "needs at least one match");
	expect_error("[engine]\nmatch = a\n[other]\nk = v\n", "t.ini:4: unknown section [other]");
	expect_error("[engine]\nmatch = a\nno equals sign here\n", "t.ini:3: syntax error");
	/* a header without ']': its line, not the key the handler then saw in no section */
	expect_error("[engine\nmatch = a\n", "t.ini:1: syntax error");
}

/* Another engine's batch struct: its layout from the profile, before or after arg =. */
static void test_batch_layout(void **state)
{
	char err[512];
	const char *text = "[engine]\nmatch = libx.so\n[probe s]\nsymbol = x_step\nrole = step\n"
			   "batch = n_tokens:8, seq_id:16,pos:24\narg = llama_batch:16\n";

	(void)state;
	assert_int_equal(profile__parse_string(text, "t.ini", &prof, err, sizeof(err)), 0);
	assert_int_equal(prof.probes[0].arg.arg_kind, TTF_ARG_LLAMA_BATCH);
	assert_int_equal(prof.probes[0].arg.arg_offset, 16);
	assert_int_equal(prof.probes[0].arg.batch.n_tokens, 8);
	assert_int_equal(prof.probes[0].arg.batch.seq_id, 16);
	assert_int_equal(prof.probes[0].arg.batch.pos, 24);
	assert_int_equal(prof.probes[0].arg.batch.logits, 48);	/* unnamed: llama.cpp's */
	expect_error("[engine]\nmatch = x\n[probe s]\nsymbol = a\nrole = step\n"
		     "batch = tokens:8\n", "t.ini:6: bad batch 'tokens:8'");
	expect_error("[engine]\nmatch = x\n[probe s]\nsymbol = a\nrole = step\n"
		     "batch = pos:300\n", "bad batch 'pos:300'");
}

static void test_probe_spec(void **state)
{
	struct probe_spec s;
	char err[512];

	assert_int_equal(probe_spec__parse("/usr/lib/libfoo.so:foo_step=step:llama_batch:8", &s,
					   err, sizeof(err)), 0);
	assert_string_equal(s.path, "/usr/lib/libfoo.so");
	assert_string_equal(s.symbol, "foo_step");
	assert_string_equal(s.name, "foo_step");
	assert_int_equal(s.role, TTF_ROLE_STEP);
	assert_true(s.want_return);
	assert_int_equal(s.arg.arg_kind, TTF_ARG_LLAMA_BATCH);
	assert_int_equal(s.arg.arg_offset, 8);

	assert_int_equal(probe_spec__parse("libfoo.so*:f=sample", &s, err, sizeof(err)), 0);
	assert_string_equal(s.path, "libfoo.so*");
	assert_int_equal(s.role, TTF_ROLE_SAMPLE);
	assert_int_equal(s.arg.arg_kind, TTF_ARG_NONE);

	assert_int_equal(probe_spec__parse("/bin/x:f=tokenize:reg:2", &s, err, sizeof(err)), 0);
	assert_int_equal(s.arg.arg_kind, TTF_ARG_REG_I32);
	assert_int_equal(s.arg.arg_index, 2);
	assert_int_equal(probe_spec__parse("/bin/x:f=sync:stack:16", &s, err, sizeof(err)), 0);
	assert_int_equal(s.arg.arg_kind, TTF_ARG_STACK_I32);
	assert_int_equal(s.arg.arg_offset, 16);

	assert_int_equal(probe_spec__parse("nocolon=step", &s, err, sizeof(err)), -EINVAL);
	assert_non_null(strstr(err, "expected PATH:SYMBOL=ROLE[:ARGSPEC]"));
	assert_int_equal(probe_spec__parse("/x:=step", &s, err, sizeof(err)), -EINVAL);
	assert_int_equal(probe_spec__parse("/x:f", &s, err, sizeof(err)), -EINVAL);
	assert_int_equal(probe_spec__parse("/x:f=bogus", &s, err, sizeof(err)), -EINVAL);
	assert_non_null(strstr(err, "unknown role 'bogus'"));
	assert_int_equal(probe_spec__parse("/x:f=step:reg:0", &s, err, sizeof(err)), -EINVAL);
	assert_non_null(strstr(err, "bad ARGSPEC 'reg:0'"));
	assert_int_equal(probe_spec__parse("/x:f=step:heap:8", &s, err, sizeof(err)), -EINVAL);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_llamacpp_profile),
		cmocka_unit_test(test_profile_errors),
		cmocka_unit_test(test_batch_layout),
		cmocka_unit_test(test_probe_spec),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
