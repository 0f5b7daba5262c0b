// SPDX-License-Identifier: GPL-2.0-only
/* Resolve a probe spec in an ELF file and attach its entry and return uprobes. */
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <bpf/bpf.h>
#include <bpf/libbpf.h>
#include "user/probe/bpf_util.h"
#include "engine.skel.h"
#include "user/lib/log.h"
#include "user/probe/engine_probe_int.h"
#include "user/probe/uprobe_attach.h"

/* The target index of the file open as fd, or negative errno (a bad ELF file: ep->bad_why). */
int ep_find_target(struct engine_probe *ep, const struct stat *st, const char *path, int fd)
{
	struct ep_target *t;
	struct elf_file *ef;
	int err;

	for (int i = 0; i < ep->n_targets; i++)
		if (ep->targets[i].dev == st->st_dev && ep->targets[i].ino == st->st_ino)
			return i;
	if (ep->n_targets == MAX_TARGETS)
		return -E2BIG;
	ef = elf_file__open_fd_why(fd, &err, ep->bad_why, sizeof(ep->bad_why));
	if (!ef)
		return err;
	t = &ep->targets[ep->n_targets];
	memset(t, 0, sizeof(*t));
	t->dev = st->st_dev;
	t->ino = st->st_ino;
	snprintf(t->path, sizeof(t->path), "%s", path);
	t->go = elf_file__is_go(ef);
	elf_file__close(ef);
	if (t->go)
		ttf_info("%s is a Go binary: return probes go on RET instructions", path);
	return ep->n_targets++;
}

/* The BPF cookie: attachment id and role (bpf/engine.h). */
static uint64_t cookie_of(const struct ep_spec *s, uint32_t id)
{
	return id | (uint64_t)s->spec.role << TTF_ENGINE_COOKIE_ROLE_SHIFT;
}

/*
 * Attach at file offset off of the file open as fd. Through /proc/self/fd/N,
 * not the file's name: the kernel resolves the uprobe's path again, with
 * this process's root, and the container could have re-pointed a symlink
 * on the name since (proc_root.h).
 */
static struct bpf_link *attach_one(struct bpf_program *prog, int fd, uint64_t off,
				   uint64_t cookie, bool ret)
{
	return uprobe_attach(prog, fd, off, cookie, ret);
}

static int add_link(struct ep_attach *a, struct bpf_link *l)
{
	return bpf_util__push_link(&a->links, &a->n_links, l);
}

/*
 * The return probes of attachment a (cookie: its entry's): a uprobe on each
 * RET site of a Go function, else one uretprobe. 0 or negative errno.
 */
static int attach_returns(struct engine_probe *ep, struct ep_attach *a, const struct ep_spec *s,
			  bool go, int fd, uint64_t cookie, const uint32_t *rets, int n_rets)
{
	struct bpf_link *l;
	int err = 0;

	for (int i = 0; !err && i < n_rets; i++) {
		l = attach_one(ep->skel->progs.handle_entry, fd, a->sym.file_offset + rets[i],
			       cookie | TTF_ENGINE_COOKIE_RET_SITE, false);
		if (!l) {
			err = -errno;
			break;
		}
		err = add_link(a, l);
		a->n_ret_sites++;
	}
	if (!err && s->spec.want_return && !go) {
		l = attach_one(ep->skel->progs.handle_return, fd, a->sym.file_offset, cookie, true);
		err = l ? add_link(a, l) : -errno;
	}
	return err;
}

/* Resolve spec si in target ti (file fd) and attach. 1 attached, 0 not found, <0 error. */
int ep_try_attach(struct engine_probe *ep, int si, int ti, int fd)
{
	struct ep_spec *s = &ep->specs[si];
	struct ep_target *t = &ep->targets[ti];
	uint32_t rets[MAX_RET_SITES];
	struct elf_sym_info sym;
	struct elf_file *ef;
	struct ep_attach *a;
	struct bpf_link *l;
	uint32_t id;
	int err, n_rets = 0;

	if (t->tried & (1ull << si))
		return 0;
	t->tried |= 1ull << si;
	s->n_searched++;
	s->last_target = ti;
	ef = elf_file__open_fd(fd, &err);
	if (!ef)
		return err;
	err = elf_file__find_func(ef, s->spec.symbol, &sym);
	if (err) {
		elf_file__close(ef);
		if (err != -ENOENT)
			ttf_warn("%s in %s: %s", s->spec.symbol, t->path, strerror(-err));
		return 0;
	}
	if (ep->n_attaches == TTF_ENGINE_MAX_PROBES) {
		elf_file__close(ef);
		return -E2BIG;
	}
	id = ep->n_attaches;
	a = &ep->attaches[id];
	memset(a, 0, sizeof(*a));
	a->spec = si;
	a->target = ti;
	a->sym = sym;
	a->entry_offset = elf_file__entry_offset(ef, &sym, t->go, &a->entry_class);
	if (sym.ifunc)
		ttf_warn("%s in %s is an IFUNC: the probe is on its resolver", s->spec.symbol,
			 t->path);
	if (s->spec.want_return && t->go) {
		n_rets = elf_file__ret_offsets(ef, &sym, rets, MAX_RET_SITES);
		if (n_rets <= 0) {
			ttf_warn("%s in %s (Go): no RET instruction found (%s); entry only",
				 s->spec.symbol, t->path, n_rets ? strerror(-n_rets) : "none");
			n_rets = 0;
		}
	}
	elf_file__close(ef);
	err = bpf_map__update_elem(ep->skel->maps.engine_probe_cfg, &id, sizeof(id), &s->spec.arg,
				   sizeof(s->spec.arg), BPF_ANY);
	if (err)
		return err;
	l = attach_one(ep->skel->progs.handle_entry, fd, sym.file_offset + a->entry_offset,
		       cookie_of(s, id), false);
	if (!l) {
		err = -errno;
		if (uprobe_attach__refused(err))
			s->refused = err;
		else
			ttf_warn("could not attach %s in %s: %s", s->spec.symbol, t->path,
				 strerror(-err));
		return err;
	}
	ep->n_attaches++;
	err = add_link(a, l);
	if (!err)
		err = attach_returns(ep, a, s, t->go, fd, cookie_of(s, id), rets, n_rets);
	if (err)
		ttf_warn("return probe of %s in %s: %s", s->spec.symbol, t->path,
			 uprobe_attach__why(err));
	s->n_attached++;
	ttf_info("attached %s (%s) in %s at file offset 0x%llx+%u, first insn '%s'%s",
		 s->spec.symbol, ttf_role__name(s->spec.role), t->path,
		 (unsigned long long)sym.file_offset, a->entry_offset, sym.insn,
		 a->n_ret_sites ? ", RET-site return probes" : "");
	return 1;
}

