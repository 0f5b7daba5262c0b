// SPDX-License-Identifier: GPL-2.0-only
/*
 * elf_sym.c against this test binary and libc: symbol -> file offset
 * (checked against the bytes the loader mapped), .dynsym fallback,
 * instruction classes, RET sites and entry sites of hand-assembled
 * functions, and the load bias from the right mapping.
 */
#include <dlfcn.h>
#include <errno.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>
#include <cmocka.h>
#include "user/probe/elf_sym.h"
#include "user/probe/proc_maps.h"

/*
 * Hand-assembled functions with known layouts (offsets in the comments).
 * ttf_t_plain:  push %rbp(0) mov %rsp,%rbp(1) test %edi,%edi(4) je(6) pop(8) ret(9)
 *               pop(10) ret(11)
 * ttf_t_endbr:  endbr64(0) push %rbx(4) pop %rbx(5) ret(6)
 * ttf_t_loop:   endbr64(0) push %rbx(4) dec %edi(5) jne -> 4 (7) pop %rbx(9) ret(10)
 * ttf_t_go:     lea -0x808(%rsp),%r12(0) cmp 0x10(%r14),%r12(8) jbe(12) sub $8,%rsp(14)
 *               add $8,%rsp(18) ret(22) call ttf_t_plain(23) jmp ttf_t_go(28)
 */
__asm__(".text\n"
	".globl ttf_t_plain\n.type ttf_t_plain,@function\nttf_t_plain:\n"
	"push %rbp\nmov %rsp,%rbp\ntest %edi,%edi\nje 1f\npop %rbp\nret\n1: pop %rbp\nret\n"
	".size ttf_t_plain,.-ttf_t_plain\n"
	".globl ttf_t_endbr\n.type ttf_t_endbr,@function\nttf_t_endbr:\n"
	"endbr64\npush %rbx\npop %rbx\nret\n.size ttf_t_endbr,.-ttf_t_endbr\n"
	".globl ttf_t_loop\n.type ttf_t_loop,@function\nttf_t_loop:\n"
	"endbr64\n2: push %rbx\ndec %edi\njne 2b\npop %rbx\nret\n.size ttf_t_loop,.-ttf_t_loop\n"
	".globl ttf_t_go\n.type ttf_t_go,@function\nttf_t_go:\n"
	"lea -0x808(%rsp),%r12\ncmp 0x10(%r14),%r12\njbe 3f\nsub $8,%rsp\nadd $8,%rsp\nret\n"
	"3: call ttf_t_plain\njmp ttf_t_go\n.size ttf_t_go,.-ttf_t_go\n");

void ttf_t_plain(void);

static struct elf_file *open_self(void)
{
	int err;
	struct elf_file *ef = elf_file__open("/proc/self/exe", &err);

	assert_non_null(ef);
	return ef;
}

static void test_offset_matches_mapped_bytes(void **state)
{
	struct elf_file *ef = open_self();
	struct elf_sym_info s;

	assert_int_equal(elf_file__find_func(ef, "ttf_t_plain", &s), 0);
	assert_false(s.from_dynsym);
	assert_true(s.size == 12);
	/* The bytes at the file offset are the bytes the loader mapped at the function. */
	assert_int_equal(s.n_code, 12);
	assert_memory_equal(s.code, (const void *)ttf_t_plain, 12);
	assert_int_equal(s.code[0], 0x55);
	assert_int_equal(s.insn_class, ELF_INSN_EMULATED);
	assert_string_equal(s.insn, "push rbp");
	assert_int_equal(elf_file__find_func(ef, "no_such_function_xyz", &s), -ENOENT);
	/* an import (undefined here, defined in libcmocka) is not a function of this file */
	assert_int_equal(elf_file__find_func(ef, "_cmocka_run_group_tests", &s), -ENOENT);
	elf_file__close(ef);
}

static void test_libc_dynsym(void **state)
{
	void *h = dlopen("libc.so.6", RTLD_NOW | RTLD_NOLOAD);
	void *addr = h ? dlsym(h, "getppid") : NULL;
	struct elf_sym_info s;
	struct elf_file *ef;
	Dl_info info;
	int err;

	assert_non_null(addr);
	assert_true(dladdr(addr, &info) && info.dli_fname);
	ef = elf_file__open(info.dli_fname, &err);
	assert_non_null(ef);
	assert_int_equal(elf_file__find_func(ef, "getppid", &s), 0);
	/* shared object: vaddr is relative to the load base */
	assert_ptr_equal((char *)info.dli_fbase + s.vaddr, addr);
	assert_memory_equal(s.code, addr, s.n_code);
	assert_false(elf_file__is_go(ef));
	elf_file__close(ef);
	dlclose(h);
}

static void test_classify(void **state)
{
	static const struct {
		uint8_t code[8];
		int n, cls, len;
		const char *insn;
	} cases[] = {
		{ { 0x90 }, 1, ELF_INSN_EMULATED, 1, "nop" },
		{ { 0x0f, 0x1f, 0x44, 0x00, 0x00 }, 5, ELF_INSN_EMULATED, 5, NULL },
		{ { 0x55 }, 1, ELF_INSN_EMULATED, 1, "push rbp" },
		{ { 0x41, 0x54 }, 2, ELF_INSN_EMULATED, 2, "push r12" },
		{ { 0xe9, 0x27, 0x42, 0xfb, 0xff }, 5, ELF_INSN_EMULATED, 5, NULL },
		{ { 0xc3 }, 1, ELF_INSN_EMULATED, 1, "ret" },
		{ { 0xf3, 0x0f, 0x1e, 0xfa }, 4, ELF_INSN_SSTEP, 4, "endbr64" },
		{ { 0x48, 0x89, 0xf8 }, 3, ELF_INSN_SSTEP, 3, "mov rax, rdi" },
		{ { 0x48, 0x83, 0xec, 0x08 }, 4, ELF_INSN_SSTEP, 4, "sub rsp, 8" },
		{ { 0x8d, 0x47, 0x01 }, 3, ELF_INSN_SSTEP, 3, "lea eax, [rdi + 1]" },
		/* a 0x66 prefix: not emulated */
		{ { 0x66, 0x90 }, 2, ELF_INSN_SSTEP, 2, NULL },
	};

	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		char insn[32];
		int len;

		assert_int_equal(elf_insn__classify(cases[i].code, cases[i].n, &len, insn,
						    sizeof(insn)), cases[i].cls);
		assert_int_equal(len, cases[i].len);
		if (cases[i].insn)
			assert_string_equal(insn, cases[i].insn);
	}
	assert_true(elf_insn__cost_us(ELF_INSN_EMULATED) == ELF_COST_EMULATED_US);
	assert_true(elf_insn__cost_us(ELF_INSN_SSTEP) == ELF_COST_SSTEP_US);
}

static void test_ret_and_entry_sites(void **state)
{
	struct elf_file *ef = open_self();
	struct elf_sym_info s;
	uint32_t rets[8];
	int cls;

	assert_int_equal(elf_file__find_func(ef, "ttf_t_plain", &s), 0);
	assert_int_equal(elf_file__ret_offsets(ef, &s, rets, 8), 2);
	assert_int_equal(rets[0], 9);
	assert_int_equal(rets[1], 11);
	assert_int_equal(elf_file__entry_offset(ef, &s, false, &cls), 0);
	assert_int_equal(cls, ELF_INSN_EMULATED);

	/* endbr64 then push: the probe moves to the push (emulated) */
	assert_int_equal(elf_file__find_func(ef, "ttf_t_endbr", &s), 0);
	assert_int_equal(s.insn_class, ELF_INSN_SSTEP);
	assert_int_equal(elf_file__entry_offset(ef, &s, false, &cls), 4);
	assert_int_equal(cls, ELF_INSN_EMULATED);
	assert_int_equal(elf_file__ret_offsets(ef, &s, rets, 8), 1);
	assert_int_equal(rets[0], 6);

	/* ... unless +4 is a loop header: then it would count every iteration */
	assert_int_equal(elf_file__find_func(ef, "ttf_t_loop", &s), 0);
	assert_int_equal(elf_file__entry_offset(ef, &s, false, &cls), 0);
	assert_int_equal(cls, ELF_INSN_SSTEP);

	/* Go: after the stack check, whose morestack path jumps back to the start */
	assert_int_equal(elf_file__find_func(ef, "ttf_t_go", &s), 0);
	assert_int_equal(elf_file__entry_offset(ef, &s, true, &cls), 14);
	assert_int_equal(cls, ELF_INSN_SSTEP);	/* sub $8,%rsp */
	assert_int_equal(elf_file__entry_offset(ef, &s, false, &cls), 0);
	assert_int_equal(elf_file__ret_offsets(ef, &s, rets, 8), 1);
	assert_int_equal(rets[0], 22);
	assert_false(elf_file__is_go(ef));
	elf_file__close(ef);
}

static void test_load_bias(void **state)
{
	struct elf_file *ef = open_self();
	struct proc_maps pm = { 0 };
	struct elf_sym_info s;
	char exe[PATH_MAX];
	ssize_t n = readlink("/proc/self/exe", exe, sizeof(exe) - 1);
	uint64_t bias = 0, fake;
	int found = 0, i = -1;

	assert_true(n > 0);
	exe[n] = '\0';
	assert_int_equal(elf_file__find_func(ef, "ttf_t_plain", &s), 0);
	assert_int_equal(proc_maps__read(getpid(), &pm), 0);
	while ((i = proc_maps__find_exec(&pm, exe, i + 1)) >= 0) {
		const struct proc_map *m = &pm.v[i];

		if (elf_file__bias_for_mapping(ef, m->start, m->end, m->pgoff, &bias) == 0) {
			found++;
			assert_ptr_equal((void *)(uintptr_t)(bias + s.vaddr), (void *)ttf_t_plain);
			/* one page of the text remapped elsewhere (libffi trampolines): ignored */
			assert_int_equal(elf_file__bias_for_mapping(ef, 0x10000, 0x11000,
								    m->pgoff + 0x1000, &fake),
					 -ENOENT);
			/* the segment's offset but not the whole segment: ignored */
			assert_int_equal(elf_file__bias_for_mapping(ef, 0x10000, 0x11000, m->pgoff,
								    &fake), -ENOENT);
		}
	}
	assert_int_equal(found, 1);
	proc_maps__free(&pm);
	elf_file__close(ef);
}

/* A memfd holding n bytes of data, for elf_file__open_fd_why. */
static int memfd_of(const void *data, size_t n)
{
	int fd = memfd_create("elf", MFD_CLOEXEC);

	assert_true(fd >= 0);
	assert_int_equal(write(fd, data, n), (ssize_t)n);
	return fd;
}

/* Truncated, corrupted and foreign files: refused at open, with what is wrong. */
static void test_bad_files_refused(void **state)
{
	struct elf_file *ef;
	char why[256];
	size_t n = 0, cap = 1 << 16;
	uint8_t *img = malloc(cap);
	FILE *f = fopen("/proc/self/exe", "rb");
	int fd, err;

	assert_non_null(f);
	for (size_t r; (r = fread(img + n, 1, cap - n, f)) > 0;) {
		n += r;
		if (n == cap)
			assert_non_null(img = realloc(img, cap *= 2));
	}
	fclose(f);
	/* whole: opens */
	fd = memfd_of(img, n);
	ef = elf_file__open_fd_why(fd, &err, why, sizeof(why));
	assert_non_null(ef);
	assert_string_equal(why, "");
	elf_file__close(ef);
	close(fd);
	/* cut in half: the section headers (at the end) or a segment are past the end */
	fd = memfd_of(img, n / 2);
	assert_null(elf_file__open_fd_why(fd, &err, why, sizeof(why)));
	assert_int_equal(err, -EBADMSG);
	assert_non_null(strstr(why, "ELF header") ? why : strstr(why, "truncated"));
	assert_string_equal(elf_file__strerror(err), "malformed or truncated ELF file");
	close(fd);
	/* headers intact, the last section cut: named as truncated */
	fd = memfd_of(img, n - 64);
	assert_null(elf_file__open_fd_why(fd, &err, why, sizeof(why)));
	assert_int_equal(err, -EBADMSG);
	close(fd);
	/* e_phoff pointing far past the end */
	memset(img + 0x20, 0x7f, 8);
	fd = memfd_of(img, n);
	assert_null(elf_file__open_fd_why(fd, &err, why, sizeof(why)));
	assert_int_equal(err, -EBADMSG);
	close(fd);
	/* no ELF magic */
	fd = memfd_of("#!/bin/sh\necho hi\n", 18);
	assert_null(elf_file__open_fd_why(fd, &err, why, sizeof(why)));
	assert_int_equal(err, -ENOEXEC);
	assert_string_equal(elf_file__strerror(err), "not an ELF file");
	close(fd);
	free(img);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_offset_matches_mapped_bytes),
		cmocka_unit_test(test_libc_dynsym),
		cmocka_unit_test(test_classify),
		cmocka_unit_test(test_ret_and_entry_sites),
		cmocka_unit_test(test_load_bias),
		cmocka_unit_test(test_bad_files_refused),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
