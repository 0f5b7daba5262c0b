// SPDX-License-Identifier: GPL-2.0-only
/*
 * libFuzzer harness: the ELF symbol resolver (user/probe/elf_sym.c) on a
 * hostile file, the way the tracer meets one: written to a memfd and opened
 * with elf_file__open_fd. Input: the file itself (seeds are real ELF files,
 * tests/noroot/fuzz/make_elf_seeds.py).
 *
 * Per input: Go detection; the entry point's file offset; symbol lookup of
 * every NUL-terminated name-like string in the file (so the names of its own
 * .symtab/.dynsym are tried) and a few fixed ones; for each function found,
 * vaddr -> offset, the first instruction's class, the RET sites, the entry
 * site and the load bias of a mapping at its segment; the instruction
 * classifier on raw bytes of the file too. Checks (abort): what the resolver
 * returns stays inside the file and the function.
 *
 * FUZZ_ELF_VERBOSE=1 prints what was found (tests/noroot/fuzz/test_fuzz.py checks
 * it on real files).
 */
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "user/probe/elf_sym.h"

#define MAX_NAMES 64
#define NAME_MAX_LEN 80
#define MAX_RETS 64

static int mfd = -1;
static int verbose;

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
	(void)argc;
	(void)argv;
	mfd = memfd_create("fuzz_elf_sym", MFD_CLOEXEC);
	if (mfd < 0)
		abort();
	verbose = getenv("FUZZ_ELF_VERBOSE") != NULL;
	return 0;
}

#define NAME_CHARS "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_.@/()*"

/*
 * Name-like NUL-terminated strings of data (a string table's entries), up to
 * max, after a few fixed names. memchr/strspn: the harness's own scan of every
 * byte must not dominate the cost or the coverage feedback.
 */
static int collect_names(const uint8_t *d, size_t n, char names[][NAME_MAX_LEN], int max)
{
	static const char *const fixed[] = { "main", "main.main", "runtime.buildVersion",
					     "SSL_write", "_start" };
	const uint8_t *p = d, *end = d + n, *nul;
	int k = 0;

	for (size_t i = 0; i < sizeof(fixed) / sizeof(fixed[0]) && k < max; i++)
		snprintf(names[k++], NAME_MAX_LEN, "%s", fixed[i]);
	for (; k < max && p < end && (nul = memchr(p, 0, end - p)); p = nul + 1) {
		size_t len = nul - p;
		bool dup = false;

		if (len < 2 || len >= NAME_MAX_LEN || strspn((const char *)p, NAME_CHARS) != len)
			continue;
		memcpy(names[k], p, len + 1);
		for (int m = 0; m < k && !dup; m++)
			dup = !strcmp(names[m], names[k]);
		k += !dup;
	}
	return k;
}

static void check_func(struct elf_file *ef, const char *name, size_t file_sz, bool go)
{
	struct elf_sym_info s;
	uint32_t rets[MAX_RETS];
	uint64_t off, bias;
	int cls = -1, n, err;
	uint32_t site;

	err = elf_file__find_func(ef, name, &s);
	if (err) {
		if (err != -ENOENT && err != -ERANGE && err != -EIO)
			abort();
		return;
	}
	/* the first bytes were read from the file: they are inside it */
	if (s.n_code < 1 || s.n_code > ELF_CODE_BYTES || s.file_offset > file_sz ||
	    file_sz - s.file_offset < (uint64_t)s.n_code)
		abort();
	if (s.insn_class < ELF_INSN_UNKNOWN || s.insn_class > ELF_INSN_SSTEP ||
	    memchr(s.insn, '\0', sizeof(s.insn)) == NULL)
		abort();
	if (elf_file__vaddr_to_offset(ef, s.vaddr, &off) || off != s.file_offset)
		abort();
	n = elf_file__ret_offsets(ef, &s, rets, MAX_RETS);
	if (n > MAX_RETS)
		abort();
	for (int i = 0; i < n; i++)
		if (rets[i] >= s.size)
			abort();
	site = elf_file__entry_offset(ef, &s, go, &cls);
	if ((site && site >= s.size) || cls < ELF_INSN_UNKNOWN || cls > ELF_INSN_SSTEP)
		abort();
	/* a mapping that starts at the page of the function's file offset */
	if (!elf_file__bias_for_mapping(ef, 0x7f0000000000ull + (s.vaddr & ~0xfffull),
					0x7f0000100000ull + (s.vaddr & ~0xfffull),
					s.file_offset & ~0xfffull, &bias) && verbose)
		fprintf(stderr, "bias %s 0x%llx\n", name, (unsigned long long)bias);
	if (verbose)
		fprintf(stderr, "func %s vaddr 0x%llx size %llu off 0x%llx%s insn '%s' class %d "
			"rets %d entry +%u\n", name, (unsigned long long)s.vaddr,
			(unsigned long long)s.size, (unsigned long long)s.file_offset,
			s.from_dynsym ? " dynsym" : "", s.insn, s.insn_class, n, site);
}

static void classify_raw(const uint8_t *d, size_t n)
{
	char insn[32];
	int len, cls;

	if (!n)
		return;
	cls = elf_insn__classify(d, n < ELF_CODE_BYTES ? n : ELF_CODE_BYTES, &len, insn,
				 sizeof(insn));
	if (cls < ELF_INSN_UNKNOWN || cls > ELF_INSN_SSTEP || len < 0 || len > ELF_CODE_BYTES ||
	    (size_t)len > n || (cls == ELF_INSN_UNKNOWN) != (len == 0))
		abort();
	(void)elf_insn__cost_us(cls);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static char names[MAX_NAMES][NAME_MAX_LEN];
	struct elf_file *ef;
	uint64_t entry, off;
	int err = 0, k;
	bool go;

	/* write, then cut to size: the memfd's pages are reused, not freed and zeroed per run */
	if ((size && pwrite(mfd, data, size, 0) != (ssize_t)size) || ftruncate(mfd, size))
		abort();
	classify_raw(size > ELF_CODE_BYTES ? data + size - ELF_CODE_BYTES : data, size);
	ef = elf_file__open_fd(mfd, &err);
	if (!ef) {
		if (err >= 0)
			abort();
		if (verbose)
			fprintf(stderr, "open: %s\n", strerror(-err));
		return 0;
	}
	go = elf_file__is_go(ef);
	if (verbose)
		fprintf(stderr, "go %d\n", go);
	/* e_entry of an ELF64 header */
	if (size >= 32) {
		memcpy(&entry, data + 24, sizeof(entry));
		if (!elf_file__vaddr_to_offset(ef, entry, &off)) {
			uint8_t code[ELF_CODE_BYTES];

			if (!elf_file__read(ef, off, code, sizeof(code)))
				classify_raw(code, sizeof(code));
		}
	}
	k = collect_names(data, size, names, MAX_NAMES);
	for (int i = 0; i < k; i++)
		check_func(ef, names[i], size, go);
	elf_file__close(ef);
	return 0;
}
