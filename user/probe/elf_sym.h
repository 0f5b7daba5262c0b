/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * ELF symbol resolution for uprobes: symbol -> virtual address -> file offset
 * through the PT_LOAD segment that contains it (offset = vaddr - p_vaddr +
 * p_offset; docs/cases.md #1: correct for PIE, non-PIE and stripped
 * binaries that keep .dynsym). Also: classification of the probed
 * instruction (which sets the per-hit cost, docs/kernel.md B3), Go binary
 * detection and RET-site discovery for Go (docs/cases.md #4: never
 * uretprobe a Go function), and the load bias for address -> symbol.
 */
#ifndef TTFTRACE_ELF_SYM_H
#define TTFTRACE_ELF_SYM_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct elf_file;

/*
 * Per-hit cost classes of a uprobe's first instruction on x86-64. The kernel
 * emulates nop, push reg and relative jmp/call/jcc/ret without leaving the
 * trap handler; everything else is single-stepped out of line, with a
 * second trap (arch/x86/kernel/uprobes.c). Measured on the 2-vCPU test VM
 * (docs/kernel.md B3): emulated 0.53-0.99 us, single-stepped 10.1-13.0 us.
 */
enum elf_insn_class {
	ELF_INSN_UNKNOWN = 0,	/* could not decode */
	ELF_INSN_EMULATED,
	ELF_INSN_SSTEP,
};

#define ELF_COST_EMULATED_US	0.8	/* midpoint of 0.53-0.99 us */
#define ELF_COST_SSTEP_US	11.5	/* midpoint of 10.1-13.0 us */
#define ELF_COST_URETPROBE_US	1.5	/* uretprobe return, 1.3-1.6 us */

#define ELF_CODE_BYTES 16

struct elf_sym_info {
	uint64_t vaddr;		/* st_value */
	uint64_t size;		/* st_size, bytes (0 when the symbol has none) */
	uint64_t file_offset;	/* of vaddr: what a uprobe takes */
	bool from_dynsym;	/* found in .dynsym (no .symtab entry) */
	/*
	 * STT_GNU_IFUNC: vaddr is the resolver, which runs once at binding;
	 * the implementation it picks is not known from the file.
	 */
	bool ifunc;
	uint8_t code[ELF_CODE_BYTES];	/* first bytes at file_offset */
	int n_code;
	/* First instruction: class, estimated cost of a uprobe hit there, mnemonic. */
	int insn_class;
	double cost_us;
	char insn[32];
};

/*
 * Open path for reading. NULL with *err = negative errno: -ENOEXEC (not an
 * ELF file: no ELF magic, or not a regular file), -EBADMSG (malformed or
 * truncated: a header libelf rejects, or a PT_LOAD segment or a section
 * with contents that ends past the end of the file).
 *
 * The file may be hostile (a container's): it is read with pread (libelf's
 * ELF_C_READ; a mapping would fault with SIGBUS if its owner truncated it
 * meanwhile), every count and offset used comes from checked headers, and
 * disassembly holds one instruction at a time (tests/noroot/fuzz/fuzz_elf_sym.c).
 */
struct elf_file *elf_file__open(const char *path, int *err);
/* Same, on an fd the caller keeps open until elf_file__close. */
struct elf_file *elf_file__open_fd(int fd, int *err);
/* Same, with what is wrong written into why (a phrase; "" when open succeeds). */
struct elf_file *elf_file__open_fd_why(int fd, int *err, char *why, size_t why_sz);
/* "not an ELF file", "malformed or truncated ELF file", or strerror(-err). */
const char *elf_file__strerror(int err);
void elf_file__close(struct elf_file *ef);

/*
 * Look name up in .symtab, then .dynsym; only defined STT_FUNC or
 * STT_GNU_IFUNC symbols count (an undefined .dynsym import does not).
 * Versioned names "sym@VER" match their base name. Fills *out, including
 * the first instruction's class and cost. 0, -ENOENT (no such function),
 * -ERANGE (the address is in no PT_LOAD segment), -EIO.
 */
int elf_file__find_func(struct elf_file *ef, const char *name, struct elf_sym_info *out);
/* File offset of vaddr via its PT_LOAD segment. 0 or -ERANGE. */
int elf_file__vaddr_to_offset(struct elf_file *ef, uint64_t vaddr, uint64_t *off);
/* Read n bytes at file offset off. 0 or -EIO. */
int elf_file__read(struct elf_file *ef, uint64_t off, void *buf, size_t n);

/* A Go binary: has a .go.buildinfo section or a runtime.buildVersion symbol. */
bool elf_file__is_go(struct elf_file *ef);

/*
 * Decode the first instruction of code (n bytes, x86-64): returns its
 * enum elf_insn_class, *len its length (0 when undecodable), mnemonic into
 * insn (may be NULL).
 */
int elf_insn__classify(const uint8_t *code, size_t n, int *len, char *insn, size_t insn_sz);
double elf_insn__cost_us(int insn_class);

/*
 * Offsets (from the function's start, bytes) of every RET instruction in the
 * function, by linear disassembly of [vaddr, vaddr + size) with capstone.
 * Returns the number found (up to max), -ENOENT when the symbol has no size,
 * -EIO on read errors, -ENOMEM.
 */
int elf_file__ret_offsets(struct elf_file *ef, const struct elf_sym_info *sym, uint32_t *offs,
			  int max);

/*
 * Where to put a function's entry uprobe (an offset from its start, bytes)
 * so that it fires once per call at the lowest cost, filling *insn_class.
 *  - endbr64 first: the next instruction when that one is emulated (endbr64
 *    itself is single-stepped, ~11 us; it changes no register).
 *  - Go: the instruction after the stack-growth check. The morestack path
 *    jumps back to the function's start after growing the stack, which
 *    would report a second entry for one call.
 * Either move is skipped when a branch inside the function targets the new
 * site (a loop header would then count as entries). Returns 0 when the
 * start is kept.
 */
uint32_t elf_file__entry_offset(struct elf_file *ef, const struct elf_sym_info *sym, bool go,
				int *insn_class);

/*
 * Load bias (runtime address - ELF vaddr) from one mapping of this file:
 * [start, end) at file offset pgoff. Only a mapping whose pgoff is the
 * page-aligned start of an executable PT_LOAD segment, and which covers
 * that whole segment, counts (docs/cases.md #1: a partial remap of one text page,
 * such as libffi's trampolines, must not set the bias). 0 or -ENOENT.
 */
int elf_file__bias_for_mapping(struct elf_file *ef, uint64_t start, uint64_t end, uint64_t pgoff,
			       uint64_t *bias);

#endif /* TTFTRACE_ELF_SYM_H */
