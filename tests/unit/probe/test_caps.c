// SPDX-License-Identifier: GPL-2.0-only
/* Capability mask parsing and the BPF privilege rule (user/probe/caps.h). */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <errno.h>
#include <cmocka.h>
#include "user/probe/caps.h"

/* The shape of /proc/self/status on 6.18 (other lines trimmed). */
static const char status_root_in_container[] =
	"Name:\tcat\nUmask:\t0022\nState:\tR (running)\n"
	"CapInh:\t0000000000000000\nCapPrm:\t000001fffeffffff\n"
	"CapEff:\t000001fffeffffff\nCapBnd:\t000001fffeffffff\nCapAmb:\t0000000000000000\n"
	"NoNewPrivs:\t0\n";

static void test_parse_cap_eff(void **state)
{
	uint64_t mask = 0;

	assert_int_equal(caps__parse_status(status_root_in_container, &mask), 0);
	assert_true(mask == 0x000001fffeffffffULL);
	assert_true(caps__has(mask, TTF_CAP_BPF));
	assert_true(caps__has(mask, TTF_CAP_PERFMON));
	assert_true(caps__has(mask, TTF_CAP_SYS_PTRACE));
	assert_false(caps__has(mask, 24)); /* CAP_SYS_RESOURCE is cleared in that mask */
}

static void test_parse_rejects_missing_or_garbage(void **state)
{
	uint64_t mask = 7;

	assert_int_equal(caps__parse_status("Name:\tx\nCapPrm:\t0\n", &mask), -EINVAL);
	assert_int_equal(caps__parse_status("Name:\tx\nCapEff:\tzz\n", &mask), -EINVAL);
	assert_int_equal(caps__parse_status("Name:\tx\nCapEff:\t12g4\n", &mask), -EINVAL);
	assert_int_equal(caps__parse_status("CapEff:\t0000000000000001", &mask), 0);
	assert_true(mask == 1);
}

static void test_bpf_rule(void **state)
{
	char missing[64];
	uint64_t bpf = 1ULL << TTF_CAP_BPF, perfmon = 1ULL << TTF_CAP_PERFMON;

	assert_int_equal(caps__check_bpf(bpf | perfmon, missing, sizeof(missing)), 0);
	assert_int_equal(caps__check_bpf(1ULL << TTF_CAP_SYS_ADMIN, missing, sizeof(missing)), 0);
	assert_int_equal(caps__check_bpf(0, missing, sizeof(missing)), -EPERM);
	assert_string_equal(missing, "CAP_BPF, CAP_PERFMON");
	assert_int_equal(caps__check_bpf(bpf, missing, sizeof(missing)), -EPERM);
	assert_string_equal(missing, "CAP_PERFMON");
	assert_int_equal(caps__check_bpf(perfmon | (1ULL << TTF_CAP_SYS_PTRACE), missing,
					 sizeof(missing)), -EPERM);
	assert_string_equal(missing, "CAP_BPF");
}

static void test_effective_reads_proc(void **state)
{
	uint64_t mask = 0;

	/* Every process has a CapEff line in /proc/self/status. */
	assert_int_equal(caps__effective(&mask), 0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_parse_cap_eff),
		cmocka_unit_test(test_parse_rejects_missing_or_garbage),
		cmocka_unit_test(test_bpf_rule),
		cmocka_unit_test(test_effective_reads_proc),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
