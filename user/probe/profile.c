// SPDX-License-Identifier: GPL-2.0-only
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <unistd.h>
#include <ini.h>
#include "user/probe/profile.h"
#include "user/lib/install_paths.h"

static const char *const role_names[TTF_ROLE__MAX] = {
	[TTF_ROLE_STEP] = "step",
	[TTF_ROLE_TOKENIZE] = "tokenize",
	[TTF_ROLE_SAMPLE] = "sample",
	[TTF_ROLE_SYNC] = "sync",
	[TTF_ROLE_DETOKENIZE] = "detokenize",
};

const char *ttf_role__name(int role)
{
	return role >= TTF_ROLE_STEP && role < TTF_ROLE__MAX ? role_names[role] : "?";
}

int ttf_role__parse(const char *s)
{
	for (int i = TTF_ROLE_STEP; i < TTF_ROLE__MAX; i++)
		if (!strcmp(s, role_names[i]))
			return i;
	return -EINVAL;
}

/* A decimal integer in [lo, hi] that fills the whole string. */
static int parse_int(const char *s, long lo, long hi, long *out)
{
	char *end;
	long v;

	if (!*s)
		return -EINVAL;
	errno = 0;
	v = strtol(s, &end, 10);
	if (errno || *end || v < lo || v > hi)
		return -EINVAL;
	*out = v;
	return 0;
}

int probe_arg__parse(const char *s, struct ttf_engine_probe_cfg *cfg)
{
	const char *colon = strchr(s, ':');
	long v;

	memset(cfg, 0, sizeof(*cfg));
	if (!strcmp(s, "none"))
		return 0;
	if (!colon)
		return -EINVAL;
	if (!strncmp(s, "reg:", 4)) {
		if (parse_int(colon + 1, 1, 5, &v))
			return -EINVAL;
		cfg->arg_kind = TTF_ARG_REG_I32;
		cfg->arg_index = (int)v;
		return 0;
	}
	if (parse_int(colon + 1, 0, 4096, &v))
		return -EINVAL;
	cfg->arg_offset = (int)v;
	if (!strncmp(s, "stack:", 6))
		cfg->arg_kind = TTF_ARG_STACK_I32;
	else if (!strncmp(s, "llama_batch:", 12)) {
		cfg->arg_kind = TTF_ARG_LLAMA_BATCH;
		cfg->batch = (struct ttf_batch_layout)TTF_LLAMA_BATCH_LAYOUT;
	} else {
		return -EINVAL;
	}
	return 0;
}

int probe_batch__parse(const char *s, struct ttf_batch_layout *l)
{
	static const struct { const char *name; size_t off; } fields[] = {
		{ "n_tokens", offsetof(struct ttf_batch_layout, n_tokens) },
		{ "pos", offsetof(struct ttf_batch_layout, pos) },
		{ "n_seq_id", offsetof(struct ttf_batch_layout, n_seq_id) },
		{ "seq_id", offsetof(struct ttf_batch_layout, seq_id) },
		{ "logits", offsetof(struct ttf_batch_layout, logits) },
	};
	char buf[256], *save = NULL, *tok;
	struct ttf_batch_layout out = TTF_LLAMA_BATCH_LAYOUT;

	if (strlen(s) >= sizeof(buf))
		return -EINVAL;
	strcpy(buf, s);
	for (tok = strtok_r(buf, ", ", &save); tok; tok = strtok_r(NULL, ", ", &save)) {
		char *colon = strchr(tok, ':');
		size_t i;
		long v;

		if (!colon)
			return -EINVAL;
		*colon = '\0';
		for (i = 0; i < sizeof(fields) / sizeof(fields[0]); i++)
			if (!strcmp(tok, fields[i].name))
				break;
		/* pointers are 8 bytes: the struct prefix read is at most 256 bytes */
		if (i == sizeof(fields) / sizeof(fields[0]) || parse_int(colon + 1, 0, 248, &v))
			return -EINVAL;
		((uint8_t *)&out)[fields[i].off] = (uint8_t)v;
	}
	*l = out;
	return 0;
}

static int copy_str(char *dst, size_t sz, const char *src)
{
	size_t n = strlen(src);

	if (n == 0 || n >= sz)
		return -EINVAL;
	memcpy(dst, src, n + 1);
	return 0;
}

struct parse_ctx {
	struct engine_profile *p;
	const char *file;
	const char *text;	/* reader position */
	int line;		/* line the reader returned last */
	int section_line;	/* line of the last [section] header read */
	int probe_line[PROFILE_MAX_PROBES];
	char *err;
	size_t err_sz;
	bool failed;
	int failed_line;	/* the line fail() named */
};

/* ini_reader: one line per call, counting lines for error messages. */
static char *reader(char *buf, int size, void *stream)
{
	struct parse_ctx *c = stream;
	const char *nl;
	size_t n;

	if (!*c->text)
		return NULL;
	nl = strchr(c->text, '\n');
	n = nl ? (size_t)(nl - c->text) + 1 : strlen(c->text);
	if (n >= (size_t)size)
		n = size - 1;
	memcpy(buf, c->text, n);
	buf[n] = '\0';
	c->text += n;
	if (n && buf[n - 1] == '\n')
		c->line++;
	else if (!*c->text)
		c->line++;
	if (buf[strspn(buf, " \t")] == '[')
		c->section_line = c->line;
	return buf;
}

static int fail(struct parse_ctx *c, const char *fmt, const char *a, const char *b)
{
	if (!c->failed) {
		int n = snprintf(c->err, c->err_sz, "%s:%d: ", c->file, c->line);

		if (n > 0 && (size_t)n < c->err_sz)
			snprintf(c->err + n, c->err_sz - n, fmt, a, b);
		c->failed = true;
		c->failed_line = c->line;
	}
	return 0;
}

static struct probe_spec *probe_for(struct parse_ctx *c, const char *section)
{
	struct engine_profile *p = c->p;
	const char *name = section + strlen("probe ");

	for (int i = 0; i < p->n_probes; i++)
		if (!strcmp(p->probes[i].name, name))
			return &p->probes[i];
	if (p->n_probes == PROFILE_MAX_PROBES || copy_str(p->probes[p->n_probes].name,
							  PROBE_NAME_LEN, name))
		return NULL;
	c->probe_line[p->n_probes] = c->section_line;
	p->probes[p->n_probes].role = -1;
	return &p->probes[p->n_probes++];
}

static int handler(void *user, const char *section, const char *key, const char *value)
{
	struct parse_ctx *c = user;
	struct engine_profile *p = c->p;
	struct probe_spec *ps;
	int r;

	if (!strcmp(section, "engine")) {
		if (!strcmp(key, "name"))
			return copy_str(p->name, sizeof(p->name), value) ?
				fail(c, "bad engine name '%s'%s", value, "") : 1;
		if (!strcmp(key, "match")) {
			if (p->n_match == PROFILE_MAX_MATCH ||
			    copy_str(p->match[p->n_match], sizeof(p->match[0]), value))
				return fail(c, "bad or too many match entries ('%s')%s", value, "");
			p->n_match++;
			return 1;
		}
		return fail(c, "unknown key '%s' in [engine]%s", key, "");
	}
	if (strncmp(section, "probe ", 6))
		return fail(c, "unknown section [%s]%s", section, "");
	ps = probe_for(c, section);
	if (!ps)
		return fail(c, "bad or too many probe sections ([%s])%s", section, "");
	if (!strcmp(key, "symbol")) {
		if (copy_str(ps->symbol, sizeof(ps->symbol), value))
			return fail(c, "bad symbol '%s'%s", value, "");
	} else if (!strcmp(key, "role")) {
		r = ttf_role__parse(value);
		if (r < 0)
			return fail(c, "unknown role '%s' (one of: step, tokenize, sample, sync, "
				    "detokenize)%s", value, "");
		ps->role = r;
	} else if (!strcmp(key, "want_return")) {
		if (!strcasecmp(value, "yes"))
			ps->want_return = true;
		else if (!strcasecmp(value, "no"))
			ps->want_return = false;
		else
			return fail(c, "want_return must be yes or no, not '%s'%s", value, "");
	} else if (!strcmp(key, "arg")) {
		struct ttf_batch_layout keep = ps->arg.batch;
		int had = ps->has_batch;

		if (probe_arg__parse(value, &ps->arg))
			return fail(c, "bad arg '%s' (none | reg:N | stack:OFF | "
				    "llama_batch:OFF)%s", value, "");
		if (had)
			ps->arg.batch = keep;	/* a batch = line given before arg = */
	} else if (!strcmp(key, "batch")) {
		if (probe_batch__parse(value, &ps->arg.batch))
			return fail(c, "bad batch '%s' (FIELD:OFFSET,...; fields n_tokens, pos, "
				    "n_seq_id, seq_id, logits; offsets 0-248)%s", value, "");
		ps->has_batch = true;
	} else if (!strcmp(key, "only_with")) {
		if (ps->n_only_with == PROFILE_MAX_ONLY_WITH ||
		    copy_str(ps->only_with[ps->n_only_with], sizeof(ps->only_with[0]), value))
			return fail(c, "bad or too many only_with entries ('%s'; at most 16 globs, "
				    "each under 64 bytes)%s", value, "");
		ps->n_only_with++;
	} else {
		return fail(c, "unknown key '%s' in [%s]", key, section);
	}
	return 1;
}

int profile__parse_string(const char *text, const char *file_name, struct engine_profile *p,
			  char *err, size_t err_sz)
{
	struct parse_ctx c = {
		.p = p, .file = file_name, .text = text, .err = err, .err_sz = err_sz,
	};
	int r;

	memset(p, 0, sizeof(*p));
	if (err_sz)
		err[0] = '\0';
	r = ini_parse_stream(reader, &c, handler, &c);
	/* a syntax error first (a header without ']') explains what the handler saw after it */
	if (c.failed && !(r > 0 && r < c.failed_line))
		return -EINVAL;
	if (r) {
		snprintf(err, err_sz, "%s:%d: syntax error", file_name, r);
		return -EINVAL;
	}
	if (!p->n_match) {
		snprintf(err, err_sz, "%s: [engine] needs at least one match = GLOB", file_name);
		return -EINVAL;
	}
	for (int i = 0; i < p->n_probes; i++) {
		const struct probe_spec *ps = &p->probes[i];

		if (!ps->symbol[0] || ps->role < 0) {
			snprintf(err, err_sz, "%s:%d: [probe %s] needs symbol and role", file_name,
				 c.probe_line[i], ps->name);
			return -EINVAL;
		}
	}
	if (!p->name[0])
		snprintf(p->name, sizeof(p->name), "%s", file_name);
	return 0;
}

int profile__load_file(const char *path, struct engine_profile *p, char *err, size_t err_sz)
{
	char *text = NULL;
	size_t cap = 0;
	FILE *f = fopen(path, "re");
	ssize_t n;
	int r;

	if (!f) {
		r = -errno;
		snprintf(err, err_sz, "%s: %s", path, strerror(-r));
		return r;
	}
	/* Up to the first NUL byte: profile text has none. */
	n = getdelim(&text, &cap, '\0', f);
	if (n < 0 && ferror(f)) {
		r = errno == EISDIR ? -EISDIR : -EIO;
		fclose(f);
		free(text);
		snprintf(err, err_sz, "%s: %s", path, strerror(-r));
		return r;
	}
	fclose(f);
	/* An empty file: getdelim returns -1 and may leave an unterminated buffer. */
	r = profile__parse_string(n > 0 ? text : "", path, p, err, err_sz);
	free(text);
	return r;
}

int profile__load(const char *name_or_path, struct engine_profile *p, char *err, size_t err_sz)
{
	const char *env = getenv("TTFTRACE_PROFILE_DIR");
	char exe[PATH_MAX], dirs[5][PATH_MAX], path[PATH_MAX + 128];
	size_t nlen = strlen(name_or_path);
	int nd = 0;
	ssize_t n;

	if (strchr(name_or_path, '/') || (nlen > 4 && !strcmp(name_or_path + nlen - 4, ".ini")))
		return profile__load_file(name_or_path, p, err, err_sz);
	if (env && *env)
		snprintf(dirs[nd++], PATH_MAX, "%s", env);
	n = readlink("/proc/self/exe", exe, sizeof(exe) - 1);
	if (n > 0) {
		char *slash;

		exe[n] = '\0';
		slash = strrchr(exe, '/');
		if (slash) {
			*slash = '\0';
			snprintf(dirs[nd++], PATH_MAX, "%.*s/profiles", PATH_MAX - 10, exe);
			snprintf(dirs[nd++], PATH_MAX, "%.*s/../../profiles", PATH_MAX - 16, exe);
			/* an installed tree, wherever it lies (DESTDIR, moved) */
			snprintf(dirs[nd++], PATH_MAX, "%.*s/" TTF_PROFILE_DIR_FROM_BIN,
				 PATH_MAX - 32, exe);
		}
	}
	snprintf(dirs[nd++], PATH_MAX, "%s", TTF_PROFILE_DIR);
	for (int i = 0; i < nd; i++) {
		int len = snprintf(path, sizeof(path), "%s/%s.ini", dirs[i], name_or_path);

		if (len > 0 && (size_t)len < sizeof(path) && access(path, R_OK) == 0)
			return profile__load_file(path, p, err, err_sz);
	}
	snprintf(err, err_sz, "no profile named '%s' (looked for %s.ini in $TTFTRACE_PROFILE_DIR, "
		 "profiles/ next to the binary, " TTF_PROFILE_DIR_FROM_BIN " from it, "
		 TTF_PROFILE_DIR ")", name_or_path, name_or_path);
	return -ENOENT;
}

int probe_spec__parse(const char *s, struct probe_spec *out, char *err, size_t err_sz)
{
	char buf[PATH_MAX + 256], *colon, *eq, *role, *argspec;
	int r;

	memset(out, 0, sizeof(*out));
	if (strlen(s) >= sizeof(buf))
		goto bad;
	strcpy(buf, s);
	/* SYMBOL=ROLE[:ARGSPEC] follows the last ':' before the '='. */
	eq = strchr(buf, '=');
	if (!eq)
		goto bad;
	*eq = '\0';
	colon = strrchr(buf, ':');
	if (!colon || colon == buf)
		goto bad;
	*colon = '\0';
	role = eq + 1;
	argspec = strchr(role, ':');
	if (argspec)
		*argspec++ = '\0';
	if (copy_str(out->path, sizeof(out->path), buf) ||
	    copy_str(out->symbol, sizeof(out->symbol), colon + 1))
		goto bad;
	snprintf(out->name, sizeof(out->name), "%s", out->symbol);
	r = ttf_role__parse(role);
	if (r < 0) {
		snprintf(err, err_sz, "--probe '%s': unknown role '%s' (one of: step, tokenize, "
			 "sample, sync, detokenize)", s, role);
		return -EINVAL;
	}
	out->role = r;
	out->want_return = true;
	if (argspec && probe_arg__parse(argspec, &out->arg)) {
		snprintf(err, err_sz, "--probe '%s': bad ARGSPEC '%s' (none | reg:N | stack:OFF | "
			 "llama_batch:OFF)", s, argspec);
		return -EINVAL;
	}
	return 0;
bad:
	snprintf(err, err_sz, "--probe '%s': expected PATH:SYMBOL=ROLE[:ARGSPEC]", s);
	return -EINVAL;
}
