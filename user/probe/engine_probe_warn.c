// SPDX-License-Identifier: GPL-2.0-only
/* What is not probed: missing symbols and unusable files, each warned about once with what it loses. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "user/lib/log.h"
#include "user/probe/engine_probe_int.h"
#include "user/probe/uprobe_attach.h"

const char *ep_role_loss(int role)
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

/* What spec si's missing probe loses: nothing where another probe of its role attached. */
static const char *spec_loss(const struct engine_probe *ep, int si)
{
	int role = ep->specs[si].spec.role;

	for (int i = 0; i < ep->n_specs; i++)
		if (i != si && ep->specs[i].spec.role == role && ep->specs[i].n_attached)
			return "another probe of its role is attached";
	return ep_role_loss(role);
}

/* Warn once per spec searched in some file but attached in none. */
void ep_check_missing(struct engine_probe *ep)
{
	char msg[PATH_MAX + 768];

	for (int i = 0; i < ep->n_specs; i++) {
		struct ep_spec *s = &ep->specs[i];

		if (s->warned || s->n_attached || !s->n_searched)
			continue;
		s->warned = true;
		if (s->refused)
			snprintf(msg, sizeof(msg), "%s found in %s, but %s: %s", s->spec.symbol,
				 ep->targets[s->last_target].path, uprobe_attach__why(s->refused),
				 spec_loss(ep, i));
		else
			snprintf(msg, sizeof(msg), "%s not found in %s%s: %s", s->spec.symbol,
				 ep->targets[s->last_target].path,
				 s->n_searched > 1 ? " (nor in other candidates)" : "",
				 spec_loss(ep, i));
		ttf_warn("%s", msg);
		remember_missing(ep, msg);
	}
}

/*
 * A mapped file that is no usable ELF file (ep->bad_why says why): warn
 * once per inode, naming it and what is lost. name: as the process maps it,
 * path: as opened.
 */
void ep_warn_bad_elf(struct engine_probe *ep, const struct stat *st, const char *name,
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
		 more ? " (and other probes)" : "", ep_role_loss(ep->specs[si].spec.role));
	ttf_warn("%s", msg);
	remember_missing(ep, msg);
}

