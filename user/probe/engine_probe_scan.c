// SPDX-License-Identifier: GPL-2.0-only
/* Which files of a traced process the probe specs want, offered to each spec once. */
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "user/lib/log.h"
#include "user/probe/engine_probe_int.h"
#include "user/probe/proc_root.h"

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

/*
 * Offer file (fd, path, st; mapped as name, NULL for a --probe path) to every
 * spec in wants[]. Returns attachments made or <0.
 */
static int offer_file(struct engine_probe *ep, const bool *wants, const char *name,
		      const char *path, int fd, const struct stat *st, int *last_target)
{
	int ti = ep_find_target(ep, st, path, fd), made = 0;

	*last_target = ti;
	if (ti == -ENOEXEC || ti == -EBADMSG) {
		/* skipped; a --probe path (no name) is warned about by scan_explicit */
		if (name)
			ep_warn_bad_elf(ep, st, name, path, ti, wants);
		return 0;
	}
	if (ti < 0)
		return ti;
	for (int si = 0; si < ep->n_specs; si++) {
		int r;

		if (!wants[si])
			continue;
		r = ep_try_attach(ep, si, ti, fd);
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

/* met[si]: spec si has no only_with globs, or one of them matches a file pm maps. */
static void gates_met(const struct engine_probe *ep, const struct proc_maps *pm, bool *met)
{
	for (int si = 0; si < ep->n_specs; si++) {
		const struct probe_spec *sp = &ep->specs[si].spec;

		met[si] = !sp->n_only_with;
		for (int i = 0; i < pm->n && !met[si]; i++)
			for (int g = 0; g < sp->n_only_with && !met[si]; g++)
				met[si] = pm->v[i].path[0] && proc_map__matches(&pm->v[i], sp->only_with[g]);
	}
}

/*
 * Which specs want mapping m (wants[]); true when any does. *retry: a gated
 * spec not attached yet wants it, so a file seen before (when its gate was
 * shut) is offered again: ep_try_attach searches each file once per spec.
 */
static bool specs_wanting(const struct engine_probe *ep, const struct proc_map *m,
			  const bool *met, bool *wants, bool *retry)
{
	bool any = false;

	*retry = false;
	for (int si = 0; si < ep->n_specs; si++) {
		const struct ep_spec *s = &ep->specs[si];

		wants[si] = met[si] && spec_wants(s, m);
		any |= wants[si];
		*retry |= wants[si] && s->spec.n_only_with && !s->n_attached;
	}
	return any;
}

int ep_scan_pid(struct engine_probe *ep, uint32_t tgid)
{
	struct proc_maps pm = { 0 };
	bool wants[MAX_SPECS], met[MAX_SPECS];
	int err, made = 0;

	err = proc_maps__read(tgid, &pm);
	if (err)
		return err == -ENOENT ? -ESRCH : err;
	gates_met(ep, &pm, met);
	for (int i = 0; i < pm.n; i++) {
		const struct proc_map *m = &pm.v[i];
		char path[PATH_MAX];
		bool retry;
		struct stat st;
		int fd, r, ti;

		if (m->path_too_long && m->perms[2] == 'x' && m->inode && !seen_before(ep, tgid, m))
			ttf_warn("PID %u maps an executable file (inode %llu) whose path is longer "
				 "than PATH_MAX: not searched for probes", tgid,
				 (unsigned long long)m->inode);
		if (!proc_map__is_exec_file(m))
			continue;
		if (!specs_wanting(ep, m, met, wants, &retry) || (seen_before(ep, tgid, m) && !retry))
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
int ep_scan_explicit(struct engine_probe *ep, uint32_t tgid)
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
				 ep_role_loss(s->spec.role));
		}
	}
	return made;
}

