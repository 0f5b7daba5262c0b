// SPDX-License-Identifier: GPL-2.0-only
#include <errno.h>
#include <fcntl.h>
#include <gelf.h>
#include <libelf.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <capstone/capstone.h>
#include "user/probe/elf_sym.h"

/* Functions larger than this are not disassembled for RET sites. */
#define MAX_DISASM_BYTES (4u << 20)
#define PAGE_SIZE_BYTES 4096u

struct elf_file {
	int fd;
	bool own_fd;
	Elf *elf;
	GElf_Phdr *phdrs;
	size_t n_phdrs;
};

struct elf_file *elf_file__open_fd(int fd, int *err)
{
	struct elf_file *ef = NULL;
	GElf_Ehdr eh;

	if (elf_version(EV_CURRENT) == EV_NONE) {
		*err = -ENOSYS;
		return NULL;
	}
	ef = calloc(1, sizeof(*ef));
	if (!ef) {
		*err = -ENOMEM;
		return NULL;
	}
	ef->fd = fd;
	ef->elf = elf_begin(fd, ELF_C_READ_MMAP, NULL);
	if (!ef->elf || elf_kind(ef->elf) != ELF_K_ELF || !gelf_getehdr(ef->elf, &eh) ||
	    elf_getphdrnum(ef->elf, &ef->n_phdrs)) {
		*err = -ENOEXEC;
		goto fail;
	}
	ef->phdrs = calloc(ef->n_phdrs ? ef->n_phdrs : 1, sizeof(*ef->phdrs));
	if (!ef->phdrs) {
		*err = -ENOMEM;
		goto fail;
	}
	for (size_t i = 0; i < ef->n_phdrs; i++)
		if (!gelf_getphdr(ef->elf, i, &ef->phdrs[i])) {
			*err = -ENOEXEC;
			goto fail;
		}
	return ef;
fail:
	elf_file__close(ef);
	return NULL;
}

struct elf_file *elf_file__open(const char *path, int *err)
{
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	struct elf_file *ef;

	if (fd < 0) {
		*err = -errno;
		return NULL;
	}
	ef = elf_file__open_fd(fd, err);
	if (!ef) {
		close(fd);
		return NULL;
	}
	ef->own_fd = true;
	return ef;
}

void elf_file__close(struct elf_file *ef)
{
	if (!ef)
		return;
	if (ef->elf)
		elf_end(ef->elf);
	if (ef->own_fd)
		close(ef->fd);
	free(ef->phdrs);
	free(ef);
}

int elf_file__vaddr_to_offset(struct elf_file *ef, uint64_t vaddr, uint64_t *off)
{
	for (size_t i = 0; i < ef->n_phdrs; i++) {
		const GElf_Phdr *ph = &ef->phdrs[i];

		if (ph->p_type != PT_LOAD || vaddr < ph->p_vaddr ||
		    vaddr >= ph->p_vaddr + ph->p_filesz)
			continue;
		*off = vaddr - ph->p_vaddr + ph->p_offset;
		return 0;
	}
	return -ERANGE;
}

int elf_file__read(struct elf_file *ef, uint64_t off, void *buf, size_t n)
{
	ssize_t r = pread(ef->fd, buf, n, (off_t)off);

	return r == (ssize_t)n ? 0 : -EIO;
}

static bool name_matches(const char *symname, const char *want)
{
	size_t n = strlen(want);

	if (strncmp(symname, want, n))
		return false;
	/* "sym@VER" / "sym@@VER" in .symtab match "sym". */
	return symname[n] == '\0' || (symname[n] == '@' && !strchr(want, '@'));
}

/* Search one symbol table section; 0 found, -ENOENT. */
static int find_in(struct elf_file *ef, Elf_Scn *scn, const GElf_Shdr *sh, const char *name,
		   GElf_Sym *out)
{
	Elf_Data *data = elf_getdata(scn, NULL);
	size_t n = sh->sh_entsize ? sh->sh_size / sh->sh_entsize : 0;

	for (size_t i = 0; data && i < n; i++) {
		GElf_Sym sym;
		const char *s;
		int type;

		if (!gelf_getsym(data, i, &sym))
			continue;
		type = GELF_ST_TYPE(sym.st_info);
		if ((type != STT_FUNC && type != STT_GNU_IFUNC) || sym.st_shndx == SHN_UNDEF ||
		    !sym.st_value)
			continue;
		s = elf_strptr(ef->elf, sh->sh_link, sym.st_name);
		if (s && name_matches(s, name)) {
			*out = sym;
			return 0;
		}
	}
	return -ENOENT;
}

static int find_sym(struct elf_file *ef, const char *name, Elf64_Word type, GElf_Sym *out)
{
	Elf_Scn *scn = NULL;

	while ((scn = elf_nextscn(ef->elf, scn))) {
		GElf_Shdr sh;

		if (gelf_getshdr(scn, &sh) && sh.sh_type == type &&
		    !find_in(ef, scn, &sh, name, out))
			return 0;
	}
	return -ENOENT;
}

int elf_file__find_func(struct elf_file *ef, const char *name, struct elf_sym_info *out)
{
	GElf_Sym sym;
	int err;

	memset(out, 0, sizeof(*out));
	if (find_sym(ef, name, SHT_SYMTAB, &sym)) {
		if (find_sym(ef, name, SHT_DYNSYM, &sym))
			return -ENOENT;
		out->from_dynsym = true;
	}
	out->vaddr = sym.st_value;
	out->size = sym.st_size;
	out->ifunc = GELF_ST_TYPE(sym.st_info) == STT_GNU_IFUNC;
	err = elf_file__vaddr_to_offset(ef, out->vaddr, &out->file_offset);
	if (err)
		return err;
	out->n_code = ELF_CODE_BYTES;
	if (out->size && out->size < ELF_CODE_BYTES)
		out->n_code = (int)out->size;
	if (elf_file__read(ef, out->file_offset, out->code, out->n_code))
		return -EIO;
	out->insn_class = elf_insn__classify(out->code, out->n_code, NULL, out->insn,
					     sizeof(out->insn));
	out->cost_us = elf_insn__cost_us(out->insn_class);
	return 0;
}

bool elf_file__is_go(struct elf_file *ef)
{
	Elf_Scn *scn = NULL;
	size_t shstrndx;
	GElf_Sym sym;

	if (!elf_getshdrstrndx(ef->elf, &shstrndx)) {
		while ((scn = elf_nextscn(ef->elf, scn))) {
			GElf_Shdr sh;
			const char *n;

			if (!gelf_getshdr(scn, &sh))
				continue;
			n = elf_strptr(ef->elf, shstrndx, sh.sh_name);
			if (n && !strcmp(n, ".go.buildinfo"))
				return true;
		}
	}
	/* runtime.buildVersion is a data symbol: look it up without the FUNC filter. */
	scn = NULL;
	while ((scn = elf_nextscn(ef->elf, scn))) {
		GElf_Shdr sh;
		Elf_Data *data;
		size_t n;

		if (!gelf_getshdr(scn, &sh) || sh.sh_type != SHT_SYMTAB || !sh.sh_entsize)
			continue;
		data = elf_getdata(scn, NULL);
		n = sh.sh_size / sh.sh_entsize;
		for (size_t i = 0; data && i < n; i++) {
			const char *s;

			if (!gelf_getsym(data, i, &sym))
				continue;
			s = elf_strptr(ef->elf, sh.sh_link, sym.st_name);
			if (s && !strcmp(s, "runtime.buildVersion"))
				return true;
		}
	}
	return false;
}

/*
 * Instructions the x86-64 uprobe code emulates in the trap handler
 * (branch_setup_xol_ops, push_setup_xol_ops in arch/x86/kernel/uprobes.c):
 * nop (0x90, 0f 1f), push reg (50-57, with REX.B 41), jmp/call rel,
 * jcc, ret (c3). An operand-size prefix (0x66) disables emulation there.
 */
static int classify_bytes(const uint8_t *c, int len)
{
	int i = 0;

	if (len == 4 && c[0] == 0xf3 && c[1] == 0x0f && c[2] == 0x1e)
		return ELF_INSN_SSTEP;	/* endbr64/endbr32 */
	while (i < len && (c[i] == 0xf3 || c[i] == 0xf2 || c[i] == 0x2e || c[i] == 0x3e))
		i++;	/* rep/seg prefixes are accepted by the emulation */
	if (i >= len || c[i] == 0x66)
		return ELF_INSN_SSTEP;
	if (c[i] == 0x41 && i + 1 < len && c[i + 1] >= 0x50 && c[i + 1] <= 0x57)
		return ELF_INSN_EMULATED;	/* push %r8-%r15 */
	if (c[i] == 0x90 || (c[i] >= 0x50 && c[i] <= 0x57) || c[i] == 0xe8 || c[i] == 0xe9 ||
	    c[i] == 0xeb || c[i] == 0xc3 || (c[i] >= 0x70 && c[i] <= 0x7f))
		return ELF_INSN_EMULATED;
	if (c[i] == 0x0f && i + 1 < len &&
	    (c[i + 1] == 0x1f || (c[i + 1] >= 0x80 && c[i + 1] <= 0x8f)))
		return ELF_INSN_EMULATED;
	return ELF_INSN_SSTEP;
}

int elf_insn__classify(const uint8_t *code, size_t n, int *len, char *insn, size_t insn_sz)
{
	cs_insn *ci = NULL;
	int cls = ELF_INSN_UNKNOWN;
	csh h;

	if (len)
		*len = 0;
	if (insn && insn_sz)
		insn[0] = '\0';
	if (cs_open(CS_ARCH_X86, CS_MODE_64, &h) != CS_ERR_OK)
		return ELF_INSN_UNKNOWN;
	if (cs_disasm(h, code, n, 0, 1, &ci) == 1) {
		cls = classify_bytes(code, ci->size);
		if (len)
			*len = ci->size;
		if (insn && insn_sz)
			snprintf(insn, insn_sz, "%s%s%s", ci->mnemonic, ci->op_str[0] ? " " : "",
				 ci->op_str);
		cs_free(ci, 1);
	}
	cs_close(&h);
	return cls;
}

double elf_insn__cost_us(int insn_class)
{
	/* Unknown: assume the expensive case, so estimates err high. */
	return insn_class == ELF_INSN_EMULATED ? ELF_COST_EMULATED_US : ELF_COST_SSTEP_US;
}

/* Disassemble a whole function with details. Returns insn count, or negative errno. */
static int disasm_func(struct elf_file *ef, const struct elf_sym_info *sym, csh *h,
		       cs_insn **insns)
{
	uint8_t *code;
	size_t n;

	if (!sym->size)
		return -ENOENT;
	if (sym->size > MAX_DISASM_BYTES)
		return -EFBIG;
	code = malloc(sym->size);
	if (!code)
		return -ENOMEM;
	if (elf_file__read(ef, sym->file_offset, code, sym->size)) {
		free(code);
		return -EIO;
	}
	if (cs_open(CS_ARCH_X86, CS_MODE_64, h) != CS_ERR_OK) {
		free(code);
		return -ENOMEM;
	}
	cs_option(*h, CS_OPT_DETAIL, CS_OPT_ON);
	/* Padding or data inside the function must not end the sweep early. */
	cs_option(*h, CS_OPT_SKIPDATA, CS_OPT_ON);
	n = cs_disasm(*h, code, sym->size, sym->vaddr, 0, insns);
	free(code);
	if (!n) {
		cs_close(h);
		return -EIO;
	}
	return (int)n;
}

static bool is_ret(const cs_insn *ci)
{
	return ci->id == X86_INS_RET;
}

int elf_file__ret_offsets(struct elf_file *ef, const struct elf_sym_info *sym, uint32_t *offs,
			  int max)
{
	cs_insn *insns = NULL;
	int n, found = 0;
	csh h;

	n = disasm_func(ef, sym, &h, &insns);
	if (n < 0)
		return n;
	for (int i = 0; i < n; i++)
		if (is_ret(&insns[i]) && found < max)
			offs[found++] = (uint32_t)(insns[i].address - sym->vaddr);
	cs_free(insns, n);
	cs_close(&h);
	return found;
}

/* cs_insn_group() needs the handle; the detail's group list is enough here. */
static bool in_group(const cs_insn *ci, uint8_t group)
{
	for (int i = 0; i < ci->detail->groups_count; i++)
		if (ci->detail->groups[i] == group)
			return true;
	return false;
}

/* Target of a relative jump, or 0. */
static uint64_t branch_target(const cs_insn *ci)
{
	const cs_x86 *x;

	if (!ci->id || !ci->detail || !in_group(ci, CS_GRP_JUMP))
		return 0;
	x = &ci->detail->x86;
	if (x->op_count == 1 && x->operands[0].type == X86_OP_IMM)
		return (uint64_t)x->operands[0].imm;
	return 0;
}

static bool is_jcc(const cs_insn *ci)
{
	return branch_target(ci) && ci->id != X86_INS_JMP;
}

uint32_t elf_file__entry_offset(struct elf_file *ef, const struct elf_sym_info *sym, bool go,
				int *insn_class)
{
	cs_insn *insns = NULL;
	uint32_t site = 0;
	int n, k = -1;
	csh h;

	*insn_class = sym->insn_class;
	n = disasm_func(ef, sym, &h, &insns);
	if (n < 0)
		return 0;
	if (n < 2) {
		/* one instruction: nothing to move to */
	} else if (go) {
		bool loops_back = false;

		/* cmp %rsp,16(%r14) or lea+cmp, then a jcc to the morestack call. */
		for (int i = 0; i < n && i < 4; i++)
			if (is_jcc(&insns[i])) {
				k = i + 1;
				break;
			}
		for (int i = 0; k > 0 && i < n; i++)
			if (insns[i].id == X86_INS_JMP && branch_target(&insns[i]) == sym->vaddr)
				loops_back = true;
		if (!loops_back)
			k = -1;
	} else if (insns[0].id == X86_INS_ENDBR64 &&
		   classify_bytes(insns[1].bytes, insns[1].size) == ELF_INSN_EMULATED) {
		k = 1;
	}
	if (k > 0 && k < n) {
		uint64_t addr = insns[k].address;

		for (int i = 0; i < n; i++)
			if (branch_target(&insns[i]) == addr)
				k = -1;
	}
	if (k > 0 && k < n) {
		site = (uint32_t)(insns[k].address - sym->vaddr);
		*insn_class = classify_bytes(insns[k].bytes, insns[k].size);
	}
	cs_free(insns, n);
	cs_close(&h);
	return site;
}

int elf_file__bias_for_mapping(struct elf_file *ef, uint64_t start, uint64_t end, uint64_t pgoff,
			       uint64_t *bias)
{
	for (size_t i = 0; i < ef->n_phdrs; i++) {
		const GElf_Phdr *ph = &ef->phdrs[i];
		uint64_t seg_pg = ph->p_offset & ~(uint64_t)(PAGE_SIZE_BYTES - 1);

		if (ph->p_type != PT_LOAD || !(ph->p_flags & PF_X) || pgoff != seg_pg)
			continue;
		if (end - start < ph->p_offset - seg_pg + ph->p_filesz)
			continue;
		*bias = start - ph->p_vaddr + (ph->p_offset - seg_pg);
		return 0;
	}
	return -ENOENT;
}
