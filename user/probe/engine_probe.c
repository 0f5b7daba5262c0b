// SPDX-License-Identifier: GPL-2.0-only
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <sys/stat.h>
#include <bpf/bpf.h>
#include <bpf/libbpf.h>
#include "user/probe/bpf_util.h"
#include "engine.skel.h"
#include "user/probe/elf_sym.h"
#include "user/probe/engine_probe.h"
#include "user/lib/log.h"
#include "user/probe/maps_watch.h"
#include "user/probe/proc_maps.h"
#include "user/probe/proc_root.h"

#define MAX_SPECS 32
#define MAX_TARGETS 64
#define MAX_TGIDS 256
#define MAX_SEEN 4096
#define MAX_RET_SITES 64
#define MAX_MISSING 32

struct ep_spec {
	struct probe_spec spec;
	char match[PROFILE_MAX_MATCH][128];
	int n_match;
	int n_searched;		/* candidate files whose symbols were searched */
	int n_attached;
	bool warned;
	int last_target;	/* last file searched, for the warning */
};

/* One ELF file, by inode. */
struct ep_target {
	dev_t dev;
	ino_t ino;
	char path[PATH_MAX];	/* as opened: /proc/PID/root/... or /proc/PID/map_files/... */
	bool go;
	uint64_t tried;		/* bit per spec: searched in this file */
};

struct ep_attach {
	int spec;
	int target;
	struct elf_sym_info sym;
	uint32_t entry_offset;
	int entry_class;
	int n_ret_sites;
	struct bpf_link **links;
	int n_links;
	uint64_t hits;
	uint64_t returns;
};

/* A file mapping of a traced process already looked at: (tgid, maps dev, inode). */
struct ep_seen {
	uint32_t tgid;
	uint32_t dev_major, dev_minor;
	uint64_t inode;
};

struct engine_probe {
	struct engine_bpf *skel;
	struct ring_buffer *rb;
	engine_event_cb on_event;
	void *ctx;
	struct ep_spec specs[MAX_SPECS];
	int n_specs;
	struct ep_target targets[MAX_TARGETS];
	int n_targets;
	struct ep_attach attaches[TTF_ENGINE_MAX_PROBES];
	int n_attaches;
	uint32_t tgids[MAX_TGIDS];
	int n_tgids;
	struct ep_seen *seen;
	int n_seen;
	char *missing[MAX_MISSING];
	int n_missing;
	struct { dev_t dev; ino_t ino; } bad[MAX_TARGETS];	/* files skipped as bad ELF */
	int n_bad;
	char bad_why[256];	/* what was wrong with the last file find_target refused */
	uint64_t foreign;
	uint64_t t_start_ns;
	struct maps_watch watch;	/* rescans skip a process whose mappings did not change */
};

static uint64_t now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + ts.tv_nsec;
}

static bool tgid_traced(const struct engine_probe *ep, uint32_t tgid)
{
	for (int i = 0; i < ep->n_tgids; i++)
		if (ep->tgids[i] == tgid)
			return true;
	return false;
}

static int ring_cb(void *ctx, void *data, size_t len)
{
	struct engine_probe *ep = ctx;
	const struct ttf_engine_event *r = data;

	/* the BPF side bounds n_seq and sets role from the cookie */
	if (len < sizeof(*r) || r->probe_id >= (uint32_t)ep->n_attaches ||
	    r->n_seq > TTF_ENGINE_MAX_SEQ)
		return 0;
	if (!tgid_traced(ep, r->tgid)) {
		ep->foreign++;
		return 0;
	}
	if (r->type == TTF_ENG_RETURN)
		ep->attaches[r->probe_id].returns++;
	else
		ep->attaches[r->probe_id].hits++;
	return ep->on_event ? ep->on_event(ep->ctx, r) : 0;
}

struct engine_probe *engine_probe__new(const struct engine_probe_opts *opts, int *err)
{
	struct engine_probe *ep;

	if (!opts || opts->sz < sizeof(*opts)) {
		*err = -EINVAL;
		return NULL;
	}
	ep = calloc(1, sizeof(*ep));
	if (!ep) {
		*err = -ENOMEM;
		return NULL;
	}
	ep->on_event = opts->on_event;
	ep->ctx = opts->ctx;
	ep->t_start_ns = now_ns();
	ep->skel = engine_bpf__open();
	if (!ep->skel) {
		*err = -errno;
		goto fail;
	}
	if (opts->ringbuf_bytes) {
		*err = bpf_map__set_max_entries(ep->skel->maps.engine_events, opts->ringbuf_bytes);
		if (*err)
			goto fail;
	}
	*err = engine_bpf__load(ep->skel);
	if (*err)
		goto fail;
	ep->rb = ring_buffer__new(bpf_map__fd(ep->skel->maps.engine_events), ring_cb, ep, NULL);
	if (!ep->rb) {
		*err = -errno;
		goto fail;
	}
	return ep;
fail:
	engine_probe__destroy(ep);
	return NULL;
}

void engine_probe__destroy(struct engine_probe *ep)
{
	if (!ep)
		return;
	for (int i = 0; i < ep->n_attaches; i++) {
		bpf_util__destroy_links(ep->attaches[i].links, ep->attaches[i].n_links);
		free(ep->attaches[i].links);
	}
	for (int i = 0; i < ep->n_missing; i++)
		free(ep->missing[i]);
	ring_buffer__free(ep->rb);
	engine_bpf__destroy(ep->skel);
	free(ep->seen);
	free(ep);
}

int engine_probe__add_spec(struct engine_probe *ep, const struct probe_spec *spec,
			   const char (*match)[128], int n_match)
{
	struct ep_spec *s;

	if (ep->n_specs == MAX_SPECS)
		return -E2BIG;
	if (!spec->symbol[0] || spec->role < TTF_ROLE_STEP || spec->role >= TTF_ROLE__MAX ||
	    n_match > PROFILE_MAX_MATCH || (!spec->path[0] && n_match <= 0))
		return -EINVAL;
	s = &ep->specs[ep->n_specs++];
	/* a new spec may match files mapped already: the next rescan reads every maps */
	memset(&ep->watch, 0, sizeof(ep->watch));
	memset(s, 0, sizeof(*s));
	s->spec = *spec;
	for (int i = 0; i < n_match; i++)
		memcpy(s->match[i], match[i], sizeof(s->match[i]));
	s->n_match = n_match;
	return 0;
}

int engine_probe__add_profile(struct engine_probe *ep, const struct engine_profile *p)
{
	for (int i = 0; i < p->n_probes; i++) {
		int err = engine_probe__add_spec(ep, &p->probes[i], p->match, p->n_match);

		if (err)
			return err;
	}
	return 0;
}

/* Whether mapping m is a candidate file for spec s. */
static bool spec_wants(const struct ep_spec *s, const struct proc_map *m)
{
	if (s->spec.path[0] == '/')
		return !strcmp(s->spec.path, m->path);
	if (s->spec.path[0])
		return proc_map__matches(m, s->spec.path);
	for (int i = 0; i < s->n_match; i++)
		if (proc_map__matches(m, s->match[i]))
			return true;
	return false;
}

static const char *role_loss(int role)
{
	switch (role) {
	case TTF_ROLE_STEP: return "no engine steps: queue and prefill merge";
	case TTF_ROLE_TOKENIZE: return "tokenize stage merges into frontend";
	case TTF_ROLE_SAMPLE: return "sampling merges into the step";
	case TTF_ROLE_SYNC: return "step end is the host return of the step call (docs/cases.md #17)";
	case TTF_ROLE_DETOKENIZE: return "detokenize merges into emit";
	}
	return "?";
}

static void remember_missing(struct engine_probe *ep, const char *msg)
{
	if (ep->n_missing < MAX_MISSING)
		ep->missing[ep->n_missing++] = strdup(msg);
}

/* Warn once per spec searched in some file but attached in none. */
static void check_missing(struct engine_probe *ep)
{
	char msg[PATH_MAX + 256];

	for (int i = 0; i < ep->n_specs; i++) {
		struct ep_spec *s = &ep->specs[i];

		if (s->warned || s->n_attached || !s->n_searched)
			continue;
		s->warned = true;
		snprintf(msg, sizeof(msg), "%s not found in %s%s: %s", s->spec.symbol,
			 ep->targets[s->last_target].path,
			 s->n_searched > 1 ? " (nor in other candidates)" : "",
			 role_loss(s->spec.role));
		ttf_warn("%s", msg);
		remember_missing(ep, msg);
	}
}

/*
 * A mapped file that is no usable ELF file (ep->bad_why says why): warn
 * once per inode, naming it and what is lost. name: as the process maps it,
 * path: as opened.
 */
static void warn_bad_elf(struct engine_probe *ep, const struct stat *st, const char *name,
			 const char *path, int err, const bool *wants)
{
	const char *why = ep->bad_why;
	char msg[PATH_MAX + 512];
	int si = 0, more = 0;

	for (int i = 0; i < ep->n_bad; i++)
		if (ep->bad[i].dev == st->st_dev && ep->bad[i].ino == st->st_ino)
			return;
	if (ep->n_bad < MAX_TARGETS) {
		ep->bad[ep->n_bad].dev = st->st_dev;
		ep->bad[ep->n_bad++].ino = st->st_ino;
	}
	while (si < ep->n_specs && !wants[si])
		si++;
	for (int i = si + 1; i < ep->n_specs; i++)
		more += wants[i];
	if (si == ep->n_specs)
		return;
	snprintf(msg, sizeof(msg), "skipping %s%s%s%s: %s%s%s%s; %s%s not probed there: %s", name,
		 strcmp(name, path) ? " (opened as " : "", strcmp(name, path) ? path : "",
		 strcmp(name, path) ? ")" : "", elf_file__strerror(err), why[0] ? " (" : "",
		 why, why[0] ? ")" : "", ep->specs[si].spec.symbol,
		 more ? " (and other probes)" : "", role_loss(ep->specs[si].spec.role));
	ttf_warn("%s", msg);
	remember_missing(ep, msg);
}

/* The target index of the file open as fd, or negative errno (a bad ELF file: ep->bad_why). */
static int find_target(struct engine_probe *ep, const struct stat *st, const char *path, int fd)
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
	LIBBPF_OPTS(bpf_uprobe_opts, o, .bpf_cookie = cookie, .retprobe = ret);
	char path[32];

	snprintf(path, sizeof(path), "/proc/self/fd/%d", fd);
	return bpf_program__attach_uprobe_opts(prog, -1, path, off, &o);
}

static int add_link(struct ep_attach *a, struct bpf_link *l)
{
	return bpf_util__push_link(&a->links, &a->n_links, l);
}

/* Resolve spec si in target ti (file fd) and attach. 1 attached, 0 not found, <0 error. */
static int try_attach(struct engine_probe *ep, int si, int ti, int fd)
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
		ttf_warn("could not attach %s in %s: %s", s->spec.symbol, t->path, strerror(-err));
		return err;
	}
	ep->n_attaches++;
	err = add_link(a, l);
	for (int i = 0; !err && i < n_rets; i++) {
		l = attach_one(ep->skel->progs.handle_entry, fd, sym.file_offset + rets[i],
			       cookie_of(s, id) | TTF_ENGINE_COOKIE_RET_SITE, false);
		if (!l) {
			err = -errno;
			break;
		}
		err = add_link(a, l);
		a->n_ret_sites++;
	}
	if (!err && s->spec.want_return && !t->go) {
		l = attach_one(ep->skel->progs.handle_return, fd, sym.file_offset, cookie_of(s, id),
			       true);
		err = l ? add_link(a, l) : -errno;
	}
	if (err)
		ttf_warn("return probe of %s in %s: %s", s->spec.symbol, t->path, strerror(-err));
	s->n_attached++;
	ttf_info("attached %s (%s) in %s at file offset 0x%llx+%u, first insn '%s'%s",
		 s->spec.symbol, ttf_role__name(s->spec.role), t->path,
		 (unsigned long long)sym.file_offset, a->entry_offset, sym.insn,
		 a->n_ret_sites ? ", RET-site return probes" : "");
	return 1;
}

/*
 * Offer file (fd, path, st; mapped as name, NULL for a --probe path) to every
 * spec in wants[]. Returns attachments made or <0.
 */
static int offer_file(struct engine_probe *ep, const bool *wants, const char *name,
		      const char *path, int fd, const struct stat *st, int *last_target)
{
	int ti = find_target(ep, st, path, fd), made = 0;

	*last_target = ti;
	if (ti == -ENOEXEC || ti == -EBADMSG) {
		/* skipped; a --probe path (no name) is warned about by scan_explicit */
		if (name)
			warn_bad_elf(ep, st, name, path, ti, wants);
		return 0;
	}
	if (ti < 0)
		return ti;
	for (int si = 0; si < ep->n_specs; si++) {
		int r;

		if (!wants[si])
			continue;
		r = try_attach(ep, si, ti, fd);
		if (r == -E2BIG)
			return r;
		if (r > 0)
			made++;
	}
	return made;
}

static bool seen_before(struct engine_probe *ep, uint32_t tgid, const struct proc_map *m)
{
	struct ep_seen *v;

	for (int i = 0; i < ep->n_seen; i++)
		if (ep->seen[i].tgid == tgid && ep->seen[i].inode == m->inode &&
		    ep->seen[i].dev_major == m->dev_major && ep->seen[i].dev_minor == m->dev_minor)
			return true;
	if (ep->n_seen == MAX_SEEN)
		return false;
	v = realloc(ep->seen, (ep->n_seen + 1) * sizeof(*v));
	if (!v)
		return false;
	ep->seen = v;
	ep->seen[ep->n_seen++] = (struct ep_seen){ tgid, m->dev_major, m->dev_minor, m->inode };
	return false;
}

static int scan_pid(struct engine_probe *ep, uint32_t tgid)
{
	struct proc_maps pm = { 0 };
	bool wants[MAX_SPECS];
	int err, made = 0;

	err = proc_maps__read(tgid, &pm);
	if (err)
		return err == -ENOENT ? -ESRCH : err;
	for (int i = 0; i < pm.n; i++) {
		const struct proc_map *m = &pm.v[i];
		char path[PATH_MAX];
		bool any = false;
		struct stat st;
		int fd, r, ti;

		if (m->path_too_long && m->perms[2] == 'x' && m->inode && !seen_before(ep, tgid, m))
			ttf_warn("PID %u maps an executable file (inode %llu) whose path is longer "
				 "than PATH_MAX: not searched for probes", tgid,
				 (unsigned long long)m->inode);
		if (!proc_map__is_exec_file(m))
			continue;
		for (int si = 0; si < ep->n_specs; si++)
			any |= wants[si] = spec_wants(&ep->specs[si], m);
		if (!any || seen_before(ep, tgid, m))
			continue;
		fd = proc_map__open(tgid, m, path, sizeof(path), &st);
		if (fd < 0) {
			ttf_warn("cannot open %s of pid %u: %s", m->path, tgid, strerror(-fd));
			continue;
		}
		r = offer_file(ep, wants, m->path, path, fd, &st, &ti);
		close(fd);
		if (r < 0) {
			made = r;
			break;
		}
		made += r;
	}
	proc_maps__free(&pm);
	return made;
}

/* Specs with an absolute path: resolve it inside the process's root even when not mapped yet. */
static int scan_explicit(struct engine_probe *ep, uint32_t tgid)
{
	int made = 0;

	for (int si = 0; si < ep->n_specs; si++) {
		struct ep_spec *s = &ep->specs[si];
		bool wants[MAX_SPECS] = { 0 };
		char path[PATH_MAX];
		struct stat st;
		int fd, r, ti, err;

		if (s->spec.path[0] != '/' || s->n_attached)
			continue;
		if (proc_path__in_root(tgid, s->spec.path, path, sizeof(path)))
			continue;
		/* resolved inside the process's root: no symlink of its leads out (proc_root.h) */
		fd = proc_root__open(tgid, s->spec.path);
		if (fd < 0 || fstat(fd, &st)) {
			err = fd < 0 ? -fd : errno;
			if (!s->warned)
				ttf_warn("--probe %s:%s: cannot open %s inside the root of PID %u (%s)",
					 s->spec.path, s->spec.symbol, s->spec.path, tgid,
					 strerror(err));
			s->warned = true;
			if (fd >= 0)
				close(fd);
			continue;
		}
		wants[si] = S_ISREG(st.st_mode);
		r = wants[si] ? offer_file(ep, wants, NULL, path, fd, &st, &ti) : 0;
		close(fd);
		if (r < 0)
			return r;
		made += r;
		if ((!wants[si] || ti == -ENOEXEC || ti == -EBADMSG) && !s->warned) {
			s->warned = true;
			ttf_warn("--probe %s:%s: %s is not an ELF executable or library (%s%s%s): %s",
				 s->spec.path, s->spec.symbol, path,
				 wants[si] ? elf_file__strerror(ti) : "not a regular file",
				 wants[si] && ep->bad_why[0] ? ": " : "", wants[si] ? ep->bad_why : "",
				 role_loss(s->spec.role));
		}
	}
	return made;
}

int engine_probe__attach_pid(struct engine_probe *ep, uint32_t tgid)
{
	int made, r;

	if (!tgid_traced(ep, tgid)) {
		if (ep->n_tgids == MAX_TGIDS)
			return -E2BIG;
		ep->tgids[ep->n_tgids++] = tgid;
	}
	maps_watch__changed(&ep->watch, tgid, now_ns());	/* scanned now: the baseline */
	made = scan_pid(ep, tgid);
	if (made < 0)
		return made;
	r = scan_explicit(ep, tgid);
	check_missing(ep);
	return r < 0 ? r : made + r;
}

int engine_probe__rescan(struct engine_probe *ep)
{
	uint64_t now = now_ns();
	int made = 0;

	for (int i = 0; i < ep->n_tgids; i++) {
		int r;

		if (!maps_watch__changed(&ep->watch, ep->tgids[i], now))
			continue;	/* no executable mapping came or went (maps_watch.h) */
		r = scan_pid(ep, ep->tgids[i]);

		if (r == -ESRCH) {
			/* Gone: its links stay (other processes may map the same inodes). */
			ep->tgids[i--] = ep->tgids[--ep->n_tgids];
			continue;
		}
		if (r == -E2BIG)
			return r;
		if (r > 0)
			made += r;
	}
	check_missing(ep);
	return made;
}

int engine_probe__poll(struct engine_probe *ep, int timeout_ms)
{
	int n = ring_buffer__poll(ep->rb, timeout_ms);

	if (n < 0)
		return n;
	/* Records are submitted with BPF_RB_NO_WAKEUP: poll alone would not see them. */
	return ring_buffer__consume(ep->rb);
}

void engine_probe__counters(struct engine_probe *ep, uint64_t *out)
{
	bpf_util__sum_percpu(ep->skel->maps.engine_counters, TTF_ENG_CNT__MAX, out);
}

uint64_t engine_probe__drops(struct engine_probe *ep)
{
	uint64_t c[TTF_ENG_CNT__MAX];

	engine_probe__counters(ep, c);
	return c[TTF_ENG_CNT_RINGBUF_FULL];
}

uint64_t engine_probe__foreign(struct engine_probe *ep)
{
	return ep->foreign;
}

int engine_probe__stats(struct engine_probe *ep, struct engine_probe_stat *out, int max)
{
	double run_s = (now_ns() - ep->t_start_ns) / 1e9;

	for (int i = 0; i < ep->n_attaches && i < max; i++) {
		const struct ep_attach *a = &ep->attaches[i];
		const struct ep_spec *s = &ep->specs[a->spec];
		struct engine_probe_stat *o = &out[i];
		double ret_us = a->n_ret_sites ? ELF_COST_EMULATED_US : ELF_COST_URETPROBE_US;
		double entry_us = elf_insn__cost_us(a->entry_class);

		memset(o, 0, sizeof(*o));
		o->probe = s->spec.name;
		o->symbol = s->spec.symbol;
		o->path = ep->targets[a->target].path;
		o->role = s->spec.role;
		o->go = ep->targets[a->target].go;
		o->n_ret_sites = a->n_ret_sites;
		o->entry_offset = a->entry_offset;
		snprintf(o->insn, sizeof(o->insn), "%s", a->sym.insn);
		o->insn_class = a->entry_class;
		o->hits = a->hits;
		o->returns = a->returns;
		o->hits_per_s = run_s > 0 ? a->hits / run_s : 0;
		o->cost_us_per_hit = entry_us + (s->spec.want_return ? ret_us : 0);
		o->total_cost_ms = (a->hits * entry_us + a->returns * ret_us) / 1e3;
		o->cpu_pct = run_s > 0 ? o->total_cost_ms / (run_s * 1e3) * 100 : 0;
	}
	return ep->n_attaches;
}

const char *engine_probe__missing(struct engine_probe *ep, int i)
{
	return i >= 0 && i < ep->n_missing ? ep->missing[i] : NULL;
}

void engine_probe__print_summary(struct engine_probe *ep, FILE *f)
{
	struct engine_probe_stat st[TTF_ENGINE_MAX_PROBES];
	int n = engine_probe__stats(ep, st, TTF_ENGINE_MAX_PROBES);
	uint64_t c[TTF_ENG_CNT__MAX];
	const char *m;

	engine_probe__counters(ep, c);
	fprintf(f, "Engine probes (cost per hit estimated from the probed instruction):\n");
	fprintf(f, "  %-22s %-10s %10s %9s %9s %10s %6s  %s\n", "probe", "role", "hits", "hits/s",
		"us/hit", "cost_ms", "%cpu", "path");
	for (int i = 0; i < n; i++)
		fprintf(f, "  %-22s %-10s %10llu %9.1f %9.1f %10.2f %6.3f  %s%s\n", st[i].probe,
			ttf_role__name(st[i].role), (unsigned long long)st[i].hits,
			st[i].hits_per_s, st[i].cost_us_per_hit, st[i].total_cost_ms,
			st[i].cpu_pct, st[i].path, st[i].go ? " (Go: RET-site returns)" : "");
	fprintf(f, "  dropped (ring buffer full): %llu, argument read faults: %llu, "
		"other processes: %llu\n", (unsigned long long)c[TTF_ENG_CNT_RINGBUF_FULL],
		(unsigned long long)c[TTF_ENG_CNT_ARG_FAULT], (unsigned long long)ep->foreign);
	for (int i = 0; (m = engine_probe__missing(ep, i)); i++)
		fprintf(f, "  missing: %s\n", m);
	for (int i = 0; i < n; i++)
		if (!st[i].hits)
			fprintf(f, "  %s: attached, but the engine never called it in this run (it "
				"does that work elsewhere, or had no requests)\n", st[i].probe);
}
