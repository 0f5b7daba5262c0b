// SPDX-License-Identifier: GPL-2.0-only
/* Unit tests: PCIe speed parsing, bandwidth table, path/link logic, copybw argument parsing. */
#include <errno.h>
#include <limits.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <cmocka.h>

#include "user/hw/copybw.h"
#include "user/hw/pcie.h"
#include "user/cmd/subcmd.h"

static char trees[PATH_MAX / 2];

/* tests/noroot/pcie/trees, found from .output/tests/unit/hw/test_pcie so any cwd works. */
static const char *tree(const char *name, char *buf, size_t len)
{
	snprintf(buf, len, "%s/%s", trees, name);
	return buf;
}

static void test_parse_speed(void **state)
{
	assert_int_equal(pcie__parse_speed_mts("2.5 GT/s PCIe"), 2500);
	assert_int_equal(pcie__parse_speed_mts("2.5 GT/s"), 2500);
	assert_int_equal(pcie__parse_speed_mts("5.0 GT/s PCIe"), 5000);
	assert_int_equal(pcie__parse_speed_mts("5 GT/s"), 5000);
	assert_int_equal(pcie__parse_speed_mts("8.0 GT/s PCIe\n"), 8000);
	assert_int_equal(pcie__parse_speed_mts("8 GT/s"), 8000);
	assert_int_equal(pcie__parse_speed_mts("16.0 GT/s PCIe"), 16000);
	assert_int_equal(pcie__parse_speed_mts("16 GT/s"), 16000);
	assert_int_equal(pcie__parse_speed_mts("32.0 GT/s PCIe"), 32000);
	assert_int_equal(pcie__parse_speed_mts("64.0 GT/s PCIe"), 64000);
	assert_int_equal(pcie__parse_speed_mts("Unknown"), 0);
	assert_int_equal(pcie__parse_speed_mts("Unknown speed"), 0);
	assert_int_equal(pcie__parse_speed_mts("8.0"), -EINVAL);
	assert_int_equal(pcie__parse_speed_mts("fast"), -EINVAL);
	assert_int_equal(pcie__parse_speed_mts(""), -EINVAL);
	assert_int_equal(pcie__parse_speed_mts("-8 GT/s"), -EINVAL);
}

static void test_gen(void **state)
{
	assert_int_equal(pcie__gen_from_mts(2500), 1);
	assert_int_equal(pcie__gen_from_mts(5000), 2);
	assert_int_equal(pcie__gen_from_mts(8000), 3);
	assert_int_equal(pcie__gen_from_mts(16000), 4);
	assert_int_equal(pcie__gen_from_mts(32000), 5);
	assert_int_equal(pcie__gen_from_mts(64000), 6);
	assert_int_equal(pcie__gen_from_mts(0), 0);
	assert_int_equal(pcie__gen_from_mts(10000), 0);
}

#define assert_gbps(got, want) assert_true((got) > (want) - 0.001 && (got) < (want) + 0.001)

static void test_link_gbps(void **state)
{
	/* hand-computed: rate(GT/s) x lanes x encoding / 8 */
	assert_gbps(pcie__link_gbps(2500, 1), 0.25);		/* 2.5 x 0.8 / 8 */
	assert_gbps(pcie__link_gbps(2500, 16), 4.0);
	assert_gbps(pcie__link_gbps(5000, 16), 8.0);
	assert_gbps(pcie__link_gbps(8000, 16), 15.7538);	/* 8 x 16 x 128/130 / 8 */
	assert_gbps(pcie__link_gbps(16000, 16), 31.5077);
	assert_gbps(pcie__link_gbps(16000, 8), 15.7538);
	assert_gbps(pcie__link_gbps(16000, 4), 7.8769);
	assert_gbps(pcie__link_gbps(32000, 16), 63.0154);
	assert_gbps(pcie__link_gbps(64000, 16), 121.0);		/* 64 x 16 x 242/256 / 8 */
	assert_gbps(pcie__link_gbps(0, 16), 0.0);
	assert_gbps(pcie__link_gbps(16000, 0), 0.0);
	assert_gbps(pcie__link_gbps(12345, 16), 0.0);
}

static void test_normalize_bdf(void **state)
{
	char b[PCIE_BDF_LEN];

	assert_int_equal(pcie__normalize_bdf("0000:3B:00.0", b, sizeof(b)), 0);
	assert_string_equal(b, "0000:3b:00.0");
	assert_int_equal(pcie__normalize_bdf("00000000:3B:00.1", b, sizeof(b)), 0);
	assert_string_equal(b, "0000:3b:00.1");
	assert_int_equal(pcie__normalize_bdf("3b:1f.7", b, sizeof(b)), 0);
	assert_string_equal(b, "0000:3b:1f.7");
	assert_int_equal(pcie__normalize_bdf("3b:20.0", b, sizeof(b)), -EINVAL);
	assert_int_equal(pcie__normalize_bdf("0000:3b:00.0x", b, sizeof(b)), -EINVAL);
	assert_int_equal(pcie__normalize_bdf("gpu0", b, sizeof(b)), -EINVAL);
}

static void set_port(struct pcie_port *p, const char *bdf, unsigned int cur, unsigned int curw,
		     unsigned int max, unsigned int maxw)
{
	snprintf(p->bdf, sizeof(p->bdf), "%s", bdf);
	p->cur_speed_mts = cur;
	p->cur_width = curw;
	p->max_speed_mts = max;
	p->max_width = maxw;
}

/* root port -> switch up (x4 link) -> switch down -> GPU (x16 link) */
static void switch_gpu(struct pcie_gpu *g)
{
	memset(g, 0, sizeof(*g));
	g->nr_path = 4;
	set_port(&g->path[0], "0000:00:01.0", 16000, 4, 16000, 16);
	set_port(&g->path[1], "0000:01:00.0", 16000, 4, 16000, 16);
	set_port(&g->path[2], "0000:02:00.0", 16000, 16, 16000, 16);
	set_port(&g->path[3], "0000:03:00.0", 16000, 16, 16000, 16);
	pcie__build_links(g);
}

static void test_links_switch(void **state)
{
	struct pcie_gpu g;
	int worst;

	switch_gpu(&g);
	/* real links pair upwards from the GPU; 01:00.0 -> 02:00.0 is switch-internal */
	assert_int_equal(g.nr_links, 2);
	assert_int_equal(g.links[0].parent, 2);
	assert_int_equal(g.links[0].child, 3);
	assert_int_equal(g.links[1].parent, 0);
	assert_int_equal(g.links[1].child, 1);
	assert_int_equal(g.links[1].cur_width, 4);
	assert_int_equal(g.links[1].cap_width, 16);
	assert_int_equal(pcie__bottleneck(&g, false), 1);
	assert_int_equal(pcie__judge(&g, false, &worst), PCIE_IDLE_NOT_JUDGED);
	assert_int_equal(worst, -1);
	assert_int_equal(pcie__judge(&g, true, &worst), PCIE_DOWNTRAINED);
	assert_int_equal(worst, 1);
	assert_string_equal(g.path[g.links[worst].child].bdf, "0000:01:00.0");
}

static void test_links_capability(void **state)
{
	struct pcie_gpu g;
	int worst;

	/* Gen4 card in a Gen3-max slot, running Gen3: capability is the lower end (docs/cases.md #25) */
	memset(&g, 0, sizeof(g));
	g.nr_path = 2;
	set_port(&g.path[0], "0000:00:01.0", 8000, 16, 8000, 16);
	set_port(&g.path[1], "0000:01:00.0", 8000, 16, 16000, 16);
	pcie__build_links(&g);
	assert_int_equal(g.links[0].cap_speed_mts, 8000);
	assert_int_equal(pcie__judge(&g, true, &worst), PCIE_OK);

	/* the slot runs Gen3 x8 of Gen3 x16: downtrained */
	g.path[0].cur_width = g.path[1].cur_width = 8;
	pcie__build_links(&g);
	assert_int_equal(pcie__judge(&g, true, &worst), PCIE_DOWNTRAINED);
	assert_int_equal(worst, 0);

	/* no attributes at all: nothing to judge */
	memset(&g, 0, sizeof(g));
	g.nr_path = 1;
	set_port(&g.path[0], "0000:00:05.0", 0, 0, 0, 0);
	pcie__build_links(&g);
	assert_int_equal(g.links[0].parent, -1);
	assert_int_equal(pcie__judge(&g, true, &worst), PCIE_NO_LINK_INFO);
	assert_int_equal(pcie__bottleneck(&g, true), -1);
}

static void test_find_gpus_switch(void **state)
{
	struct pcie_gpu *g = calloc(4, sizeof(*g));
	char dir[PATH_MAX];
	int worst;

	assert_int_equal(pcie__find_gpus(tree("switch_x4", dir, sizeof(dir)), g, 4), 2);
	assert_string_equal(g[0].bdf, "0000:03:00.0");
	assert_string_equal(g[1].bdf, "0000:04:00.0");
	assert_int_equal(g[1].nr_path, 4);
	assert_string_equal(g[1].path[0].bdf, "0000:00:01.0");
	assert_string_equal(g[1].path[2].bdf, "0000:02:01.0");
	assert_int_equal(g[1].class_code, 0x030200);
	assert_int_equal(g[1].numa_node, 1);
	assert_string_equal(g[1].local_cpulist, "4-7");
	assert_int_equal(pcie__judge(&g[1], true, &worst), PCIE_DOWNTRAINED);
	assert_string_equal(g[1].path[g[1].links[worst].child].bdf, "0000:01:00.0");
	assert_int_equal(pcie__sample_best(dir, &g[1]), 0);
	assert_int_equal(g[1].links[1].cur_width, 4);
	free(g);
}

static void test_find_gpus_filters(void **state)
{
	struct pcie_gpu *g = calloc(4, sizeof(*g));
	char dir[PATH_MAX];

	/* the NVIDIA HDMI audio function (class 0x0403) is not a GPU */
	assert_int_equal(pcie__find_gpus(tree("no_gpu", dir, sizeof(dir)), g, 4), 0);
	assert_int_equal(pcie__find_gpus(tree("idle_gen1", dir, sizeof(dir)), g, 4), 1);
	assert_string_equal(g[0].bdf, "0000:01:00.0");
	assert_int_equal(g[0].links[0].cur_speed_mts, 2500);
	assert_int_equal(g[0].links[0].cap_speed_mts, 16000);
	assert_int_equal(pcie__find_gpus(tree("riser_x8", dir, sizeof(dir)), g, 4), 1);
	assert_int_equal(g[0].class_code, 0x030000);
	assert_int_equal(g[0].links[0].cur_width, 8);
	assert_int_equal(pcie__find_gpus(tree("old_format", dir, sizeof(dir)), g, 4), 1);
	assert_int_equal(g[0].path[0].cur_speed_mts, 8000);	/* "8 GT/s" */
	assert_int_equal(g[0].path[1].cur_speed_mts, 8000);	/* "8.0 GT/s PCIe" */
	assert_int_equal(pcie__find_gpus("/nonexistent-sysfs", g, 4), -ENOENT);
	free(g);
}

static void test_path_gbps(void **state)
{
	char dir[PATH_MAX];

	assert_gbps(pcie__path_gbps(tree("gen3_slot", dir, sizeof(dir)), "01:00.0"), 15.7538);
	/* capability, not the x4 reading: the share of what the path should give */
	assert_gbps(pcie__path_gbps(tree("switch_x4", dir, sizeof(dir)), "0000:04:00.0"), 31.5077);
	assert_gbps(pcie__path_gbps(tree("switch_x4", dir, sizeof(dir)), "09:00.0"), -ENOENT);
	assert_gbps(pcie__path_gbps(tree("no_link", dir, sizeof(dir)), "00:05.0"), -ENODATA);
	assert_gbps(pcie__path_gbps(dir, "bogus"), -EINVAL);
}

static void test_cpulist(void **state)
{
	struct pcie_cpuset a, b;

	assert_int_equal(pcie__parse_cpulist("0-3,8,10-11\n", &a), 0);
	assert_true(pcie__cpuset_has(&a, 0));
	assert_true(pcie__cpuset_has(&a, 3));
	assert_false(pcie__cpuset_has(&a, 4));
	assert_true(pcie__cpuset_has(&a, 8));
	assert_true(pcie__cpuset_has(&a, 11));
	assert_false(pcie__cpuset_has(&a, 12));
	assert_int_equal(pcie__parse_cpulist("2-3", &b), 0);
	assert_true(pcie__cpuset_subset(&b, &a));
	assert_false(pcie__cpuset_subset(&a, &b));
	assert_int_equal(pcie__parse_cpulist("", &b), 0);
	assert_true(pcie__cpuset_subset(&b, &a));
	assert_int_equal(pcie__parse_cpulist("3-1", &b), -EINVAL);
	assert_int_equal(pcie__parse_cpulist("0-3x", &b), -EINVAL);
	assert_int_equal(pcie__parse_cpulist("9000", &b), -EINVAL);
}

static void test_stat_last_cpu(void **state)
{
	/* comm with ") " inside: field counting must start after the last ')' */
	const char *line = "42 (a) b) S 1 2 3 4 5 6 7 8 9 10 11 12 13 14 15 16 17 18 19 20 21 22 "
			   "23 24 25 26 27 28 29 30 31 32 33 34 35 17 0 0\n";

	assert_int_equal(pcie__stat_last_cpu(line), 17);
	assert_int_equal(pcie__stat_last_cpu("42 (x) S 1 2"), -EINVAL);
	assert_int_equal(pcie__stat_last_cpu("no paren"), -EINVAL);
}

static void test_thread_locality(void **state)
{
	struct pcie_locality loc;
	struct pcie_cpuset local;
	char dir[PATH_MAX];

	/* threads: allowed 0-7 last 2; allowed 0-3 last 1; allowed 4-7 last 5 */
	assert_int_equal(pcie__parse_cpulist("0-3", &local), 0);
	assert_int_equal(pcie__thread_locality(tree("proc", dir, sizeof(dir)), 1234, &local, &loc),
			 0);
	assert_int_equal(loc.nr_threads, 3);
	assert_int_equal(loc.allowed_local, 1);
	assert_int_equal(loc.last_local, 2);
	assert_int_equal(pcie__thread_locality(dir, 99, &local, &loc), -ESRCH);
}

static void test_copybw_sizes(void **state)
{
	size_t s[COPYBW_MAX_SIZES];
	char buf[32];

	assert_int_equal(copybw__parse_size("64K", &s[0]), 0);
	assert_int_equal(s[0], 65536);
	assert_int_equal(copybw__parse_size("64KiB", &s[0]), 0);
	assert_int_equal(s[0], 65536);
	assert_int_equal(copybw__parse_size("256m", &s[0]), 0);
	assert_int_equal(s[0], 268435456);
	assert_int_equal(copybw__parse_size("4G", &s[0]), 0);
	assert_int_equal(s[0], 4294967296ULL);
	assert_int_equal(copybw__parse_size("12B", &s[0]), 0);
	assert_int_equal(s[0], 12);
	assert_int_equal(copybw__parse_size("5G", &s[0]), -EINVAL);
	assert_int_equal(copybw__parse_size("0", &s[0]), -EINVAL);
	assert_int_equal(copybw__parse_size("1.5M", &s[0]), -EINVAL);
	assert_int_equal(copybw__parse_size("-1K", &s[0]), -EINVAL);
	assert_int_equal(copybw__parse_size("8X", &s[0]), -EINVAL);
	assert_int_equal(copybw__parse_sizes("64K,1M,256M", s, COPYBW_MAX_SIZES), 3);
	assert_int_equal(s[2], 268435456);
	assert_int_equal(copybw__parse_sizes("64K,1M", s, 1), -EINVAL);
	assert_int_equal(copybw__parse_sizes("", s, COPYBW_MAX_SIZES), -EINVAL);
	assert_int_equal(copybw__parse_sizes("64K,bad", s, COPYBW_MAX_SIZES), -EINVAL);
	assert_string_equal(copybw__fmt_size(65536, buf, sizeof(buf)), "64KiB");
	assert_string_equal(copybw__fmt_size(256u << 20, buf, sizeof(buf)), "256MiB");
	assert_string_equal(copybw__fmt_size(1000, buf, sizeof(buf)), "1000B");
}

static void test_copybw_no_runtime(void **state)
{
	struct copybw_cuda *cu = (void *)1;
	const char *why = NULL;

	assert_int_equal(copybw__open("/nonexistent/libcudart.so", &cu, &why), -ENOENT);
	assert_null(cu);
	assert_non_null(why);
}

static void test_cli_exit_codes(void **state)
{
	char dir[PATH_MAX], p1[] = "pcie", p2[] = "--sysfs-root", p3[] = "-n", p4[] = "1",
	     p5[] = "--busy", p6[PATH_MAX];
	char *argv[] = { p1, p2, p6, p3, p4, p5, NULL };
	char c1[] = "copybw", c2[] = "--sizes", c3[] = "0";
	char *cargv[] = { c1, c2, c3, NULL };

	snprintf(p6, sizeof(p6), "%s", tree("riser_x8", dir, sizeof(dir)));
	assert_int_equal(pcie_main(6, argv), 1);
	assert_int_equal(pcie_main(5, argv), 0);	/* without --busy: idle, not judged */
	snprintf(p6, sizeof(p6), "%s", tree("no_gpu", dir, sizeof(dir)));
	assert_int_equal(pcie_main(6, argv), 5);	/* nothing to work on: no NVIDIA GPU */
	snprintf(p6, sizeof(p6), "/nonexistent-sysfs");
	assert_int_equal(pcie_main(6, argv), 4);
	assert_int_equal(pcie_main(2, argv), 2);	/* --sysfs-root without its value */
	assert_int_equal(copybw_main(3, cargv), 2);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_parse_speed),
		cmocka_unit_test(test_gen),
		cmocka_unit_test(test_link_gbps),
		cmocka_unit_test(test_normalize_bdf),
		cmocka_unit_test(test_links_switch),
		cmocka_unit_test(test_links_capability),
		cmocka_unit_test(test_find_gpus_switch),
		cmocka_unit_test(test_find_gpus_filters),
		cmocka_unit_test(test_path_gbps),
		cmocka_unit_test(test_cpulist),
		cmocka_unit_test(test_stat_last_cpu),
		cmocka_unit_test(test_thread_locality),
		cmocka_unit_test(test_copybw_sizes),
		cmocka_unit_test(test_copybw_no_runtime),
		cmocka_unit_test(test_cli_exit_codes),
	};
	char exe[PATH_MAX / 4];
	ssize_t n = readlink("/proc/self/exe", exe, sizeof(exe) - 1);
	char *p;
	int i;

	if (n <= 0)
		return 1;
	exe[n] = '\0';
	/* <root>/.output/tests/unit/hw/test_pcie -> <root>/tests/noroot/pcie/trees */
	for (i = 0; i < 5 && (p = strrchr(exe, '/')); i++)
		*p = '\0';
	snprintf(trees, sizeof(trees), "%s/tests/noroot/pcie/trees", exe);
	return cmocka_run_group_tests(tests, NULL, NULL);
}
