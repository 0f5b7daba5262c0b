// SPDX-License-Identifier: GPL-2.0-only
/* Process names by tgid (proc_names.h). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <uthash.h>
#include "user/model/proc_names.h"

struct proc_name {
	uint32_t tgid;
	char comm[16];
	UT_hash_handle hh;
};

struct proc_names {
	struct proc_name *by_tgid;	/* uthash over e */
	struct proc_name e[PROC_NAMES_MAX];
	size_t n, next;		/* entries used; the next to overwrite once full */
};

struct proc_names *proc_names__new(void)
{
	return calloc(1, sizeof(struct proc_names));
}

void proc_names__free(struct proc_names *pn)
{
	if (pn)
		HASH_CLEAR(hh, pn->by_tgid);
	free(pn);
}

void proc_names__set(struct proc_names *pn, uint32_t tgid, const char *comm)
{
	struct proc_name *p;

	if (!pn || !tgid || !comm[0])
		return;
	HASH_FIND(hh, pn->by_tgid, &tgid, sizeof(tgid), p);
	if (!p) {
		if (pn->n < PROC_NAMES_MAX) {
			p = &pn->e[pn->n++];
		} else {
			p = &pn->e[pn->next];
			pn->next = (pn->next + 1) % PROC_NAMES_MAX;
			HASH_DEL(pn->by_tgid, p);
		}
		p->tgid = tgid;
		HASH_ADD(hh, pn->by_tgid, tgid, sizeof(p->tgid), p);
	} else if (!strncmp(p->comm, comm, sizeof(p->comm) - 1)) {
		return;
	}
	snprintf(p->comm, sizeof(p->comm), "%.15s", comm);
}

int proc_names__get(const struct proc_names *pn, uint32_t tgid, char *buf, size_t sz)
{
	struct proc_name *p = NULL;

	if (pn)
		HASH_FIND(hh, pn->by_tgid, &tgid, sizeof(tgid), p);
	snprintf(buf, sz, "%s", p ? p->comm : "");
	return p != NULL;
}
