// SPDX-License-Identifier: GPL-2.0-only
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "user/probe/engine_probe.h"
#include "user/probe/engine_setup.h"
#include "user/probe/maps_watch.h"
#include "user/lib/log.h"
#include "user/probe/proc_maps.h"
#include "user/probe/profile.h"

#define RESCAN_NS 1000000000ull
#define MAX_TGIDS 256

static const char *const builtin_profiles[] = { "llamacpp" };
#define N_BUILTIN (sizeof(builtin_profiles) / sizeof(builtin_profiles[0]))

struct engine_setup {
	struct ttf_records out;
	struct engine_probe *ep;
	/* auto mode: profiles that attach only where their files are mapped */
	struct engine_profile autos[N_BUILTIN];
	int auto_added[N_BUILTIN];
	int n_autos;
	uint32_t tgids[MAX_TGIDS];	/* traced processes */
	int n_tgids;
	uint64_t next_rescan_ns;
	struct maps_watch watch;	/* auto profiles: skip maps that did not change */
	char names[128];		/* profiles in use, for the attach line */
};

/* Remember a profile's name (or "--probe") for the line that says what attached. */
static void note_name(struct engine_setup *es, const char *name)
{
	size_t len = strlen(es->names);

	if (strstr(es->names, name))
		return;
	snprintf(es->names + len, sizeof(es->names) - len, "%s%s", len ? ", " : "", name);
}

static int on_hit(void *ctx, const struct ttf_engine_event *e)
{
	struct engine_setup *es = ctx;

	/* a refused hit is counted by the receiver */
	if (es->out.engine)
		es->out.engine(es->out.ctx, e);
	return 0;
}

static int ensure_probe(struct engine_setup *es)
{
	struct engine_probe_opts o = { .sz = sizeof(o), .on_event = on_hit, .ctx = es };
	int err = 0;

	if (es->ep)
		return 0;
	es->ep = engine_probe__new(&o, &err);
	if (!es->ep && err == -EOPNOTSUPP)
		ttf_warn("engine uprobes unavailable: this kernel has no bpf_get_attach_cookie "
			 "(Linux 5.15): stages merge into 'server'");
	else if (!es->ep)
		ttf_warn("engine uprobes unavailable (%s): stages merge into 'server'",
			 strerror(-err));
	return es->ep ? 0 : err;
}

#define PROFILE_HINT "see profiles/llamacpp.ini for the format"
#define PROBE_HINT "expected PATH:SYMBOL=ROLE[:ARGSPEC], ROLE one of step, tokenize, sample, " \
		   "sync, detokenize; ARGSPEC none, reg:N, stack:OFF or llama_batch:OFF"

/* A --profile argument loaded into *p; else the error printed and -EINVAL or -errno. */
static int load_profile_arg(const char *arg, struct engine_profile *p)
{
	char msg[512];
	int err = profile__load(arg, p, msg, sizeof(msg));

	if (!err)
		return 0;
	if (err != -EINVAL && err != -ENOENT)
		snprintf(msg, sizeof(msg), "%s", strerror(-err));
	if (!strncmp(msg, arg, strlen(arg)) && msg[strlen(arg)] == ':')	/* "PATH: why" */
		ttf_error(PROFILE_HINT, "profile %s", msg);
	else
		ttf_error(PROFILE_HINT, "profile %s: %s", arg, msg);
	return err == -ENOENT || err == -EISDIR ? -EINVAL : err;	/* no such profile */
}

/* A --probe argument parsed into *spec; else the error printed and -EINVAL. */
static int parse_probe_arg(const char *arg, struct probe_spec *spec)
{
	char msg[512];
	int err = probe_spec__parse(arg, spec, msg, sizeof(msg));

	if (err)
		ttf_error(PROBE_HINT, "%s", err == -EINVAL ? msg : strerror(-err));
	return err;
}

int engine_setup__check_args(const struct engine_setup_opts *opts)
{
	struct engine_profile p;
	struct probe_spec spec;
	int err;

	for (int i = 0; i < opts->n_profiles; i++)
		if ((err = load_profile_arg(opts->profiles[i], &p)))
			return err;
	for (int i = 0; i < opts->n_probes; i++)
		if ((err = parse_probe_arg(opts->probes[i], &spec)))
			return err;
	return 0;
}

int engine_setup__new(const struct engine_setup_opts *opts, struct engine_setup **out)
{
	struct engine_setup *es;
	char msg[512];
	int err;

	*out = NULL;
	if (!opts->n_profiles && !opts->n_probes && !opts->auto_profiles)
		return 0;
	es = calloc(1, sizeof(*es));
	if (!es)
		return -ENOMEM;
	es->out = opts->out;
	for (int i = 0; i < opts->n_profiles || i < opts->n_probes; i++) {
		struct engine_profile p;
		struct probe_spec spec;

		if ((err = ensure_probe(es))) {
			/* -EINVAL tells the caller "bad command line"; a refused load is not one */
			err = err == -EINVAL ? -ENOEXEC : err;
			goto fail;
		}
		if (i < opts->n_profiles) {
			if ((err = load_profile_arg(opts->profiles[i], &p)))
				goto fail;
			if ((err = engine_probe__add_profile(es->ep, &p))) {
				ttf_error(PROFILE_HINT, "profile %s: %s", opts->profiles[i],
					  strerror(-err));
				goto fail;
			}
			note_name(es, p.name);
		}
		if (i < opts->n_probes) {
			if ((err = parse_probe_arg(opts->probes[i], &spec)))
				goto fail;
			if ((err = engine_probe__add_spec(es->ep, &spec, NULL, 0))) {
				ttf_error(PROBE_HINT, "%s", strerror(-err));
				goto fail;
			}
			note_name(es, "--probe");
		}
	}
	if (!opts->n_profiles && !opts->n_probes) {
		for (size_t i = 0; i < N_BUILTIN; i++) {
			if (profile__load(builtin_profiles[i], &es->autos[es->n_autos], msg,
					  sizeof(msg)) == 0)
				es->n_autos++;
			else	/* a copied binary without profiles/: never silent */
				ttf_warn("built-in engine profile not loaded, its engine gets no "
					 "uprobes (stages merge into 'server'): %s", msg);
		}
	}
	*out = es;
	return 0;
fail:
	engine_setup__free(es);
	return err;
}

void engine_setup__free(struct engine_setup *es)
{
	if (!es)
		return;
	engine_probe__destroy(es->ep);
	free(es);
}

/* Auto mode: add a built-in profile once some traced process maps one of its files. */
static void try_autos(struct engine_setup *es, uint32_t tgid)
{
	struct proc_maps pm = { 0 };

	if (!es->n_autos || proc_maps__read(tgid, &pm))
		return;
	for (int i = 0; i < es->n_autos; i++) {
		const struct engine_profile *p = &es->autos[i];

		if (es->auto_added[i])
			continue;
		for (int k = 0; k < p->n_match; k++) {
			if (proc_maps__find_exec(&pm, p->match[k], 0) < 0)
				continue;
			if (ensure_probe(es) == 0 && engine_probe__add_profile(es->ep, p) == 0) {
				es->auto_added[i] = 1;
				note_name(es, p->name);
				ttf_info("engine profile %s: PID %u maps a matching file", p->name, tgid);
			}
			break;
		}
	}
	proc_maps__free(&pm);
}

/* The roles of the probes in use, once each ("step, sync"), into buf. */
static const char *signal_list(struct engine_probe *ep, char *buf, size_t len)
{
	struct engine_probe_stat st[32];
	int n = engine_probe__stats(ep, st, 32);
	size_t off = 0;

	buf[0] = '\0';
	for (int i = 0; i < n; i++) {
		const char *r = ttf_role__name(st[i].role);
		bool seen = false;

		for (int k = 0; k < i; k++)
			seen |= st[k].role == st[i].role;
		if (!seen && off < len)
			off += snprintf(buf + off, len - off, "%s%s", off ? ", " : "", r);
	}
	return buf[0] ? buf : "?";
}

void engine_setup__attach(struct engine_setup *es, uint32_t tgid)
{
	if (!es)
		return;
	for (int i = 0; i < es->n_tgids; i++)
		if (es->tgids[i] == tgid)
			return;
	if (es->n_tgids < MAX_TGIDS)
		es->tgids[es->n_tgids++] = tgid;
	engine_setup__look(es, tgid);
}

void engine_setup__look(struct engine_setup *es, uint32_t tgid)
{
	int n;

	if (!es)
		return;
	try_autos(es, tgid);
	if (!es->ep)
		return;
	n = engine_probe__attach_pid(es->ep, tgid);
	/* always said: which engine the stage split comes from (prefill, decode) */
	if (n > 0) {
		char roles[128], held[256], why[384] = "";

		if (engine_probe__held_back(es->ep, held, sizeof(held)))
			snprintf(why, sizeof(why), "; not attached: %s, no file its only_with names "
				 "is mapped (docs/engines.md)", held);
		fprintf(stderr, "PID %u: engine profile %s: %d uprobe(s) attached (signals: %s%s; "
			"each call traps into the kernel, the table at exit says what it cost)\n",
			tgid, es->names[0] ? es->names : "?", n,
			signal_list(es->ep, roles, sizeof(roles)), why);
	}
}

void engine_setup__tick(struct engine_setup *es, uint64_t now_ns)
{
	int pending = 0;

	if (!es || now_ns < es->next_rescan_ns)
		return;
	es->next_rescan_ns = now_ns + RESCAN_NS;
	for (int i = 0; i < es->n_autos; i++)
		pending |= !es->auto_added[i];
	if (pending) {
		/* A library matching a built-in profile may have been dlopen'ed since. */
		for (int i = 0; i < es->n_tgids; i++) {
			int had = es->ep != NULL;

			if (!maps_watch__changed(&es->watch, es->tgids[i], now_ns))
				continue;	/* no executable mapping came or went */
			try_autos(es, es->tgids[i]);
			if (!had && es->ep)
				for (int k = 0; k < es->n_tgids; k++)
					engine_probe__attach_pid(es->ep, es->tgids[k]);
		}
	}
	if (es->ep)
		engine_probe__rescan(es->ep, now_ns);
}

int engine_setup__poll(struct engine_setup *es)
{
	return es && es->ep ? engine_probe__poll(es->ep, 0) : 0;
}

int engine_setup__counters(void *ctx, struct report_counter *c, int cap)
{
	struct engine_setup *es = ctx;

	uint64_t bpf[TTF_ENG_CNT__MAX];

	if (!es || !es->ep || cap < 5)
		return 0;
	engine_probe__counters(es->ep, bpf);
	c[0] = (struct report_counter){ "engine_ringbuf_full", engine_probe__drops(es->ep) };
	c[1] = (struct report_counter){ "engine_foreign_hits", engine_probe__foreign(es->ep) };
	/* batches whose walk could not read user memory: steps without counts */
	c[2] = (struct report_counter){ "engine_arg_faults", bpf[TTF_ENG_CNT_ARG_FAULT] };
	/* batch tokens counted by the run bisection, unread; batches it refused (B7.1) */
	c[3] = (struct report_counter){ "engine_walk_tokens_skipped",
					bpf[TTF_ENG_CNT_WALK_SKIPPED] };
	c[4] = (struct report_counter){ "engine_walk_interleaved",
					bpf[TTF_ENG_CNT_WALK_INTERLEAVED] };
	return 5;
}

void engine_setup__summary(struct engine_setup *es, FILE *f)
{
	if (es && es->ep)
		engine_probe__print_summary(es->ep, f);
}

/* ---- as a probe source (user/probe/source.h) ---- */

static int src_poll(void *ctx, int timeout_ms)
{
	return engine_setup__poll(ctx);
}

static void src_tick(void *ctx, uint64_t now_ns)
{
	engine_setup__tick(ctx, now_ns);
}

void engine_setup__source(struct engine_setup *es, struct ttf_probe_source *out)
{
	*out = (struct ttf_probe_source){ .name = "engine", .ctx = es, .poll = src_poll,
					  .tick = src_tick, .counters = engine_setup__counters };
}
