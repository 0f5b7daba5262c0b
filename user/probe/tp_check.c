// SPDX-License-Identifier: GPL-2.0-only
/* Tracepoint presence check before load: see tp_check.h. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "user/lib/log.h"
#include "user/probe/tp_check.h"

#define TP_BTF_PREFIX "tp_btf/"

struct btf *tp_check__kernel_btf(void)
{
	const char *path = getenv("TTFTRACE_SYS_BTF");
	struct btf *btf = path ? btf__parse(path, NULL) : btf__load_vmlinux_btf();

	/* libbpf >= 1.0 returns NULL and sets errno. */
	return btf;
}

int tp_check__has(const struct btf *vmlinux, const char *tp)
{
	char name[128];

	if (snprintf(name, sizeof(name), "btf_trace_%s", tp) >= (int)sizeof(name))
		return 0;
	return btf__find_by_name_kind(vmlinux, name, BTF_KIND_TYPEDEF) > 0;
}

int tp_check__nargs(const struct btf *vmlinux, const char *tp)
{
	const struct btf_type *t;
	char name[128];
	int id;

	if (snprintf(name, sizeof(name), "btf_trace_%s", tp) >= (int)sizeof(name))
		return -ENOENT;
	id = btf__find_by_name_kind(vmlinux, name, BTF_KIND_TYPEDEF);
	if (id <= 0)
		return -ENOENT;
	t = btf__type_by_id(vmlinux, id);	/* typedef -> pointer -> func proto */
	t = t ? btf__type_by_id(vmlinux, t->type) : NULL;
	if (!t || !btf_is_ptr(t))
		return -EINVAL;
	t = btf__type_by_id(vmlinux, t->type);
	if (!t || !btf_is_func_proto(t) || btf_vlen(t) < 1)
		return -EINVAL;
	return btf_vlen(t) - 1;
}

static int is_required(const char *const *required, const char *tp)
{
	if (!required)
		return 1;
	for (; *required; required++)
		if (!strcmp(*required, tp))
			return 1;
	return 0;
}

int tp_check__prune(struct bpf_object *obj, const struct btf *vmlinux,
		    const char *const *required, char *missing, size_t missing_len)
{
	struct bpf_program *prog;
	int n_off = 0;

	bpf_object__for_each_program(prog, obj) {
		const char *sec = bpf_program__section_name(prog);
		const char *tp;

		if (!bpf_program__autoload(prog) ||
		    strncmp(sec, TP_BTF_PREFIX, strlen(TP_BTF_PREFIX)))
			continue;
		tp = sec + strlen(TP_BTF_PREFIX);
		if (tp_check__has(vmlinux, tp))
			continue;
		if (is_required(required, tp)) {
			snprintf(missing, missing_len, "%s", tp);
			return -ENOENT;
		}
		ttf_warn("this kernel has no %s tracepoint: %s not loaded", tp,
			 bpf_program__name(prog));
		bpf_program__set_autoload(prog, false);
		n_off++;
	}
	return n_off;
}
