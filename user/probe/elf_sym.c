// SPDX-License-Identifier: GPL-2.0-only
#include <errno.h>
#include <fcntl.h>
#include <gelf.h>
#include <libelf.h>
#include <stdlib.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
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

/* off + len within a file of sz bytes, without overflow. */
static bool in_file(uint64_t off, uint64_t len, uint64_t sz)
{
	return off <= sz && len <= sz - off;
}

#define WHY(...) (why && why_sz ? (void)snprintf(why, why_sz, __VA_ARGS__) : (void)0)

/*
 * Headers that the rest of this file relies on, checked once against the
 * file's size: every program header, and every section with file contents,
 * inside the file (a truncated copy fails here, not later as a missing symbol).
 */
static int check_layout(struct elf_file *ef, const GElf_Ehdr *eh, uint64_t sz, char *why,
			size_t why_sz)
{
	Elf_Scn *scn = NULL;
	size_t n_shdrs = 0;

	/* the header tables themselves (libelf reads them lazily, and may accept a short one) */
	if ((eh->e_phnum != PN_XNUM && ef->n_phdrs != eh->e_phnum) ||
	    (ef->n_phdrs && !in_file(eh->e_phoff, (uint64_t)ef->n_phdrs * eh->e_phentsize, sz))) {
		WHY("program headers (offset 0x%llx) end past the end of the file (0x%llx bytes): "
		    "truncated", (unsigned long long)eh->e_phoff, (unsigned long long)sz);
		return -EBADMSG;
	}
	/*
	 * e_shnum as the header says: libelf counts 0 sections when their table
	 * is cut short. 0 there: extended numbering (the count in section 0).
	 */
	if (elf_getshdrnum(ef->elf, &n_shdrs) || (eh->e_shnum && n_shdrs != eh->e_shnum) ||
	    (n_shdrs && !in_file(eh->e_shoff, (uint64_t)n_shdrs * eh->e_shentsize, sz))) {
		n_shdrs = eh->e_shnum ? eh->e_shnum : n_shdrs;
		WHY("section headers (offset 0x%llx, %zu) end past the end of the file (0x%llx "
		    "bytes): truncated", (unsigned long long)eh->e_shoff, n_shdrs,
		    (unsigned long long)sz);
		return -EBADMSG;
	}

	for (size_t i = 0; i < ef->n_phdrs; i++) {
		const GElf_Phdr *ph = &ef->phdrs[i];

		if (ph->p_type == PT_LOAD && !in_file(ph->p_offset, ph->p_filesz, sz)) {
			WHY("PT_LOAD segment %zu (offset 0x%llx, 0x%llx bytes) ends past the end of "
			    "the file (0x%llx bytes): truncated", i, (unsigned long long)ph->p_offset,
			    (unsigned long long)ph->p_filesz, (unsigned long long)sz);
			return -EBADMSG;
		}
	}
	while ((scn = elf_nextscn(ef->elf, scn))) {
		GElf_Shdr sh;

		if (!gelf_getshdr(scn, &sh)) {
			WHY("section header %zu unreadable: %s", elf_ndxscn(scn), elf_errmsg(-1));
			return -EBADMSG;
		}
		if (sh.sh_type != SHT_NOBITS && !in_file(sh.sh_offset, sh.sh_size, sz)) {
			WHY("section %zu (offset 0x%llx, 0x%llx bytes) ends past the end of the file "
			    "(0x%llx bytes): truncated", elf_ndxscn(scn),
			    (unsigned long long)sh.sh_offset, (unsigned long long)sh.sh_size,
			    (unsigned long long)sz);
			return -EBADMSG;
		}
	}
	return 0;
}

struct elf_file *elf_file__open_fd_why(int fd, int *err, char *why, size_t why_sz)
{
	struct elf_file *ef = NULL;
	struct stat st;
	GElf_Ehdr eh;
	char id[EI_NIDENT];

	if (why && why_sz)
		why[0] = '\0';
	if (elf_version(EV_CURRENT) == EV_NONE) {
		*err = -ENOSYS;
		return NULL;
	}
	if (fstat(fd, &st)) {
		*err = -errno;
		return NULL;
	}
	if (!S_ISREG(st.st_mode)) {
		WHY("not a regular file");
		*err = -ENOEXEC;
		return NULL;
	}
	if (pread(fd, id, sizeof(id), 0) != (ssize_t)sizeof(id) || memcmp(id, ELFMAG, SELFMAG)) {
		WHY("no ELF header");
		*err = -ENOEXEC;
		return NULL;
	}
	ef = calloc(1, sizeof(*ef));
	if (!ef) {
		*err = -ENOMEM;
		return NULL;
	}
	ef->fd = fd;
	/*
	 * ELF_C_READ, not ELF_C_READ_MMAP: libelf then pread()s what it needs.
	 * A mapping of a file that its owner (a container) truncates while we
	 * read would fault with SIGBUS in this process.
	 */
	ef->elf = elf_begin(fd, ELF_C_READ, NULL);
	if (!ef->elf || elf_kind(ef->elf) != ELF_K_ELF || !gelf_getehdr(ef->elf, &eh) ||
	    elf_getphdrnum(ef->elf, &ef->n_phdrs)) {
		WHY("bad ELF header: %s", elf_errmsg(-1));
		*err = -EBADMSG;
		goto fail;
	}
	ef->phdrs = calloc(ef->n_phdrs ? ef->n_phdrs : 1, sizeof(*ef->phdrs));
	if (!ef->phdrs) {
		*err = -ENOMEM;
		goto fail;
	}
	for (size_t i = 0; i < ef->n_phdrs; i++)
		if (!gelf_getphdr(ef->elf, i, &ef->phdrs[i])) {
			WHY("program header %zu unreadable: %s", i, elf_errmsg(-1));
			*err = -EBADMSG;
			goto fail;
		}
	*err = check_layout(ef, &eh, (uint64_t)st.st_size, why, why_sz);
	if (*err)
		goto fail;
	return ef;
fail:
	elf_file__close(ef);
	return NULL;
}

struct elf_file *elf_file__open_fd(int fd, int *err)
{
	return elf_file__open_fd_why(fd, err, NULL, 0);
}

const char *elf_file__strerror(int err)
{
	switch (err) {
	case -ENOEXEC:
		return "not an ELF file";
	case -EBADMSG:
		return "malformed or truncated ELF file";
	default:
		return strerror(-err);
	}
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

		/* vaddr - p_vaddr < p_filesz: no overflow near the top of the address space */
		if (ph->p_type != PT_LOAD || vaddr < ph->p_vaddr ||
		    vaddr - ph->p_vaddr >= ph->p_filesz)
			continue;
		*off = vaddr - ph->p_vaddr + ph->p_offset;
		return 0;
	}
	return -ERANGE;
}

int elf_file__read(struct elf_file *ef, uint64_t off, void *buf, size_t n)
{
	ssize_t r;

	if (off > (uint64_t)INT64_MAX - n)
		return -EIO;
	r = pread(ef->fd, buf, n, (off_t)off);
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

/*
 * Search one symbol table section; 0 found, -ENOENT. funcs: only defined
 * functions (STT_FUNC, STT_GNU_IFUNC) with a value count. The entry count
 * comes from the data libelf read, not from the header's sh_size/sh_entsize.
 */
static int find_in(struct elf_file *ef, Elf_Scn *scn, const GElf_Shdr *sh, const char *name,
		   bool funcs, GElf_Sym *out)
{
	Elf_Data *data = elf_getdata(scn, NULL);
	size_t ent = gelf_fsize(ef->elf, ELF_T_SYM, 1, EV_CURRENT);
	size_t n = data && ent ? data->d_size / ent : 0;

	for (size_t i = 0; i < n; i++) {
		GElf_Sym sym;
		const char *s;
		int type;

		if (!gelf_getsym(data, i, &sym))
			continue;
		type = GELF_ST_TYPE(sym.st_info);
		if (funcs && ((type != STT_FUNC && type != STT_GNU_IFUNC) ||
			      sym.st_shndx == SHN_UNDEF || !sym.st_value))
			continue;
		s = elf_strptr(ef->elf, sh->sh_link, sym.st_name);
		if (s && (funcs ? name_matches(s, name) : !strcmp(s, name))) {
			*out = sym;
			return 0;
		}
	}
	return -ENOENT;
}

static int find_sym(struct elf_file *ef, const char *name, Elf64_Word type, bool funcs,
		    GElf_Sym *out)
{
	Elf_Scn *scn = NULL;

	while ((scn = elf_nextscn(ef->elf, scn))) {
		GElf_Shdr sh;

		if (gelf_getshdr(scn, &sh) && sh.sh_type == type &&
		    !find_in(ef, scn, &sh, name, funcs, out))
			return 0;
	}
	return -ENOENT;
}

int elf_file__find_func(struct elf_file *ef, const char *name, struct elf_sym_info *out)
{
	GElf_Sym sym;
	int err;

	memset(out, 0, sizeof(*out));
	if (find_sym(ef, name, SHT_SYMTAB, true, &sym)) {
		if (find_sym(ef, name, SHT_DYNSYM, true, &sym))
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
	return !find_sym(ef, "runtime.buildVersion", SHT_SYMTAB, false, &sym);
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

/*
 * A linear sweep of one function, one instruction at a time (cs_disasm_iter:
 * memory stays constant; disassembling a whole hostile 4 MiB "function" at
 * once would hold ~1M decoded instructions with details, gigabytes).
 */
struct sweep {
	csh h;
	cs_insn *ci;
	uint8_t *code;
	const uint8_t *p;
	size_t left;
	uint64_t addr;
};

static void sweep_close(struct sweep *w)
{
	if (w->ci)
		cs_free(w->ci, 1);
	if (w->h)
		cs_close(&w->h);
	free(w->code);
	memset(w, 0, sizeof(*w));
}

/* 0, -ENOENT (no size), -EFBIG, -EIO, -ENOMEM. */
static int sweep_open(struct elf_file *ef, const struct elf_sym_info *sym, struct sweep *w)
{
	memset(w, 0, sizeof(*w));
	if (!sym->size)
		return -ENOENT;
	if (sym->size > MAX_DISASM_BYTES)
		return -EFBIG;
	w->code = malloc(sym->size);
	if (!w->code)
		return -ENOMEM;
	if (elf_file__read(ef, sym->file_offset, w->code, sym->size)) {
		sweep_close(w);
		return -EIO;
	}
	if (cs_open(CS_ARCH_X86, CS_MODE_64, &w->h) != CS_ERR_OK) {
		w->h = 0;
		sweep_close(w);
		return -ENOMEM;
	}
	cs_option(w->h, CS_OPT_DETAIL, CS_OPT_ON);
	/* Padding or data inside the function must not end the sweep early. */
	cs_option(w->h, CS_OPT_SKIPDATA, CS_OPT_ON);
	w->ci = cs_malloc(w->h);
	if (!w->ci) {
		sweep_close(w);
		return -ENOMEM;
	}
	w->p = w->code;
	w->left = sym->size;
	w->addr = sym->vaddr;
	return 0;
}

/* The next instruction into w->ci (valid until the next call), or false at the end. */
static bool sweep_next(struct sweep *w)
{
	return w->left && cs_disasm_iter(w->h, &w->p, &w->left, &w->addr, w->ci);
}

static bool is_ret(const cs_insn *ci)
{
	return ci->id == X86_INS_RET;
}

int elf_file__ret_offsets(struct elf_file *ef, const struct elf_sym_info *sym, uint32_t *offs,
			  int max)
{
	struct sweep w;
	int n = 0, found = 0;
	int err = sweep_open(ef, sym, &w);

	if (err)
		return err;
	for (; sweep_next(&w); n++)
		if (is_ret(w.ci) && found < max)
			offs[found++] = (uint32_t)(w.ci->address - sym->vaddr);
	sweep_close(&w);
	return n ? found : -EIO;
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

/* What the entry-site choice needs of the first few instructions. */
#define HEAD_INSNS 5
struct head_insn {
	unsigned int id;
	uint64_t address;
	uint8_t bytes[ELF_CODE_BYTES];
	uint16_t size;
	uint64_t target;	/* branch_target() */
};

uint32_t elf_file__entry_offset(struct elf_file *ef, const struct elf_sym_info *sym, bool go,
				int *insn_class)
{
	struct head_insn hd[HEAD_INSNS];
	bool loops_back = false;
	struct sweep w;
	int n = 0, k = -1;
	uint64_t addr;

	*insn_class = sym->insn_class;
	if (sweep_open(ef, sym, &w))
		return 0;
	for (; n < HEAD_INSNS && sweep_next(&w); n++) {
		hd[n] = (struct head_insn){ .id = w.ci->id, .address = w.ci->address,
					    .size = w.ci->size, .target = branch_target(w.ci) };
		memcpy(hd[n].bytes, w.ci->bytes,
		       w.ci->size < ELF_CODE_BYTES ? w.ci->size : ELF_CODE_BYTES);
		if (hd[n].size > ELF_CODE_BYTES)
			hd[n].size = ELF_CODE_BYTES;
	}
	sweep_close(&w);
	if (n < 2)
		return 0;	/* one instruction: nothing to move to */
	if (go) {
		/* cmp %rsp,16(%r14) or lea+cmp, then a jcc to the morestack call. */
		for (int i = 0; i < n - 1 && i < 4; i++)
			if (hd[i].target && hd[i].id != X86_INS_JMP) {
				k = i + 1;
				break;
			}
	} else if (hd[0].id == X86_INS_ENDBR64 &&
		   classify_bytes(hd[1].bytes, hd[1].size) == ELF_INSN_EMULATED) {
		k = 1;
	}
	if (k < 0)
		return 0;
	/*
	 * The whole function: Go's site needs the morestack path's jump back to
	 * the start; no branch may target the new site.
	 */
	addr = hd[k].address;
	if (sweep_open(ef, sym, &w))
		return 0;
	while (sweep_next(&w)) {
		uint64_t t = branch_target(w.ci);

		if (t == addr)
			k = -1;
		if (w.ci->id == X86_INS_JMP && t == sym->vaddr)
			loops_back = true;
	}
	sweep_close(&w);
	if (k < 0 || (go && !loops_back))
		return 0;
	*insn_class = classify_bytes(hd[k].bytes, hd[k].size);
	return (uint32_t)(hd[k].address - sym->vaddr);
}

int elf_file__bias_for_mapping(struct elf_file *ef, uint64_t start, uint64_t end, uint64_t pgoff,
			       uint64_t *bias)
{
	for (size_t i = 0; i < ef->n_phdrs; i++) {
		const GElf_Phdr *ph = &ef->phdrs[i];
		uint64_t seg_pg = ph->p_offset & ~(uint64_t)(PAGE_SIZE_BYTES - 1);

		if (ph->p_type != PT_LOAD || !(ph->p_flags & PF_X) || pgoff != seg_pg)
			continue;
		if (end <= start || end - start < ph->p_offset - seg_pg + ph->p_filesz)
			continue;
		*bias = start - ph->p_vaddr + (ph->p_offset - seg_pg);
		return 0;
	}
	return -ENOENT;
}
