// SPDX-License-Identifier: GPL-2.0-only
/* Stack profiles: profiles/stacks/NAME.ini (stack_profile.h). */
#include <dirent.h>
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <ini.h>
#include "user/model/stack_profile.h"

#define HEX32 "<hex32>"

static const char *const zmq_types[] = { "push", "pull", "router", "dealer", "pub", "sub",
					 "req", "rep", "pair" };

struct ctx {
	struct stack_profile *p;
	const char *what;	/* the first error, "" none */
	char bad[64];
};

static int fail(struct ctx *c, const char *what, const char *value)
{
	if (!c->what[0]) {
		c->what = what;
		snprintf(c->bad, sizeof(c->bad), "%s", value);
	}
	return 0;
}

static int copy(char *dst, const char *src)
{
	size_t n = strlen(src);

	if (!n || n >= STACK_NAME_BYTES)
		return -1;
	memcpy(dst, src, n + 1);
	return 0;
}

static int zmq_type(const char *s, size_t n)
{
	for (size_t i = 0; i < sizeof(zmq_types) / sizeof(zmq_types[0]); i++)
		if (strlen(zmq_types[i]) == n && !strncmp(s, zmq_types[i], n))
			return 1;
	return 0;
}

/* Space-separated words of value, each one of names[0 .. n): 1 << index each; -1 bad. */
static long words(const char *value, const char *const *names, int n)
{
	long bits = 0;

	for (const char *w = value; *w;) {
		size_t len = strcspn(w, " \t");
		int k;

		for (k = 0; k < n; k++)
			if (strlen(names[k]) == len && !strncmp(w, names[k], len))
				break;
		if (!len || k == n)
			return -1;
		bits |= 1L << k;
		w += len;
		w += strspn(w, " \t");
	}
	return bits ? bits : -1;
}

static int handler(void *user, const char *section, const char *key, const char *value)
{
	static const char *const transports[] = { "ipc", "tcp" };
	static const char *const id_in[] = { "sse_id", "zmq_msgpack", "zmq_pickle" };
	struct ctx *c = user;
	struct stack_profile *p = c->p;
	const char *gt, *hex;
	long bits;

	if (strcmp(section, "stack"))
		return fail(c, "unknown section (only [stack])", section);
	if (!strcmp(key, "name"))
		return copy(p->name, value) ? fail(c, "bad name", value) : 1;
	if (!strcmp(key, "role")) {
		if (p->n_roles == STACK_ROLES || copy(p->role[p->n_roles], value))
			return fail(c, "bad or too many roles", value);
		p->n_roles++;
		return 1;
	}
	if (!strcmp(key, "socket")) {
		gt = strchr(value, '>');
		if (p->n_sockets == STACK_ROLES || !gt || !zmq_type(value, gt - value) ||
		    !zmq_type(gt + 1, strlen(gt + 1)) || copy(p->socket[p->n_sockets], value))
			return fail(c, "bad or too many sockets (SENDER>RECEIVER, zmq socket types)",
				    value);
		p->n_sockets++;
		return 1;
	}
	if (!strcmp(key, "id")) {
		hex = strstr(value, HEX32);
		if (p->n_ids == STACK_IDS || !hex || strcmp(hex, HEX32) ||
		    (size_t)(hex - value) >= STACK_NAME_BYTES)
			return fail(c, "bad or too many ids (PREFIX" HEX32 ")", value);
		memcpy(p->id_prefix[p->n_ids], value, hex - value);
		p->id_prefix[p->n_ids][hex - value] = '\0';
		p->n_ids++;
		return 1;
	}
	if (!strcmp(key, "transport") || !strcmp(key, "id_in")) {
		int tr = !strcmp(key, "transport");

		bits = tr ? words(value, transports, 2) : words(value, id_in, 3);
		if (bits < 0)
			return fail(c, tr ? "bad transport (ipc, tcp)" :
				    "bad id_in (sse_id, zmq_msgpack, zmq_pickle)", value);
		*(tr ? &p->transports : &p->id_in) = (unsigned int)bits;
		return 1;
	}
	return fail(c, "unknown key", key);
}

/* What inih returned for the text (line: 0 ok, N the first bad line, -1 not opened). */
static int finish(int line, const struct ctx *c, const char *file_name, char *err, size_t err_sz)
{
	const struct stack_profile *p = c->p;

	if (line < 0) {
		snprintf(err, err_sz, "%s: cannot read it", file_name);
		return -EIO;
	}
	if (line) {
		snprintf(err, err_sz, "%s:%d: %s%s%s", file_name, line,
			 c->what[0] ? c->what : "syntax error", c->what[0] ? ": " : "", c->bad);
		return -EINVAL;
	}
	if (!p->name[0] || p->n_roles < 2 || p->n_sockets != p->n_roles || !p->n_ids) {
		snprintf(err, err_sz, "%s: [stack] needs a name, 2 to %d roles, one socket per "
			 "role and at least one id", file_name, STACK_ROLES);
		return -EINVAL;
	}
	return 0;
}

int stack_profile__parse_string(const char *text, const char *file_name,
				struct stack_profile *p, char *err, size_t err_sz)
{
	struct ctx c = { .p = p, .what = "" };

	memset(p, 0, sizeof(*p));
	return finish(ini_parse_string(text, handler, &c), &c, file_name, err, err_sz);
}

static int load_file(struct stack_profiles *sp, const char *path, char *err, size_t err_sz)
{
	struct ctx c = { .p = &sp->p[sp->n], .what = "" };
	int r;

	if (sp->n == STACK_PROFILES) {
		snprintf(err, err_sz, "%s: more than %d stack profiles", path, STACK_PROFILES);
		return -ENOSPC;
	}
	memset(c.p, 0, sizeof(*c.p));
	r = finish(ini_parse(path, handler, &c), &c, path, err, err_sz);
	if (!r)
		sp->n++;
	return r;
}

static int ini_file(const struct dirent *d)
{
	size_t n = strlen(d->d_name);

	return d->d_name[0] != '.' && n > 4 && !strcmp(d->d_name + n - 4, ".ini");
}

int stack_profiles__load_dir(struct stack_profiles *sp, const char *dir, char *err,
			     size_t err_sz)
{
	struct dirent **names;
	char path[PATH_MAX];
	int n, r = 0;

	n = scandir(dir, &names, ini_file, alphasort);
	if (n < 0)
		return 0;
	for (int i = 0; i < n; i++) {
		if (!r) {
			snprintf(path, sizeof(path), "%s/%s", dir, names[i]->d_name);
			r = load_file(sp, path, err, err_sz);
		}
		free(names[i]);
	}
	free(names);
	return r;
}

int stack_profiles__load_default(struct stack_profiles *sp, char *err, size_t err_sz)
{
	static const char *const from_bin[] = { "profiles/stacks", "../../profiles/stacks",
						"../share/ttftrace/profiles/stacks" };
	const char *env = getenv("TTFTRACE_PROFILE_DIR");
	char exe[PATH_MAX], dir[PATH_MAX + 64];
	char *slash = NULL;
	ssize_t n;

	if (env && *env) {
		snprintf(dir, sizeof(dir), "%s/stacks", env);
		if (access(dir, R_OK | X_OK) == 0)
			return stack_profiles__load_dir(sp, dir, err, err_sz);
	}
	n = readlink("/proc/self/exe", exe, sizeof(exe) - 1);
	if (n > 0) {
		exe[n] = '\0';
		slash = strrchr(exe, '/');
	}
	if (!slash)
		return 0;
	*slash = '\0';
	for (size_t i = 0; i < sizeof(from_bin) / sizeof(from_bin[0]); i++) {
		snprintf(dir, sizeof(dir), "%s/%s", exe, from_bin[i]);
		if (access(dir, R_OK | X_OK) == 0)
			return stack_profiles__load_dir(sp, dir, err, err_sz);
	}
	return 0;
}

static int hex_digits(const char *s, int n)
{
	for (int i = 0; i < n; i++)
		if (!((s[i] >= '0' && s[i] <= '9') || (s[i] >= 'a' && s[i] <= 'f') ||
		      (s[i] >= 'A' && s[i] <= 'F')))
			return 0;
	return 1;
}

const struct stack_profile *stack_profiles__match(const struct stack_profiles *sp, int n_roles,
						  const char *id)
{
	size_t len = strlen(id);

	for (int i = 0; sp && i < sp->n; i++) {
		const struct stack_profile *p = &sp->p[i];

		if (p->n_roles != n_roles)
			continue;
		for (int k = 0; k < p->n_ids; k++) {
			size_t pl = strlen(p->id_prefix[k]);

			if (len >= pl + 32 && !strncmp(id, p->id_prefix[k], pl) &&
			    hex_digits(id + pl, 32))
				return p;
		}
	}
	return NULL;
}
