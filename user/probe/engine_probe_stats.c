// SPDX-License-Identifier: GPL-2.0-only
/* Per attachment hits, rates and estimated costs, and the summary table. */
#include <stdio.h>
#include <string.h>
#include "user/probe/engine_probe_int.h"

int engine_probe__stats(struct engine_probe *ep, struct engine_probe_stat *out, int max)
{
	double run_s = (ep_now_ns() - ep->t_start_ns) / 1e9;

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

int engine_probe__held_back(const struct engine_probe *ep, char *buf, size_t len)
{
	size_t off = 0;
	int n = 0;

	if (len)
		buf[0] = '\0';
	for (int i = 0; i < ep->n_specs; i++) {
		const struct ep_spec *s = &ep->specs[i];

		if (!s->spec.n_only_with || s->n_attached)
			continue;
		n++;
		if (off < len)
			off += snprintf(buf + off, len - off, "%s%s", off ? ", " : "", s->spec.name);
	}
	return n;
}

void engine_probe__print_summary(struct engine_probe *ep, FILE *f)
{
	char held[256];
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
	if (!n)
		fprintf(f, "  none attached: no traced process mapped a file a profile's `match` "
			"names, nor one a --probe names (docs/engines.md)\n");
	for (int i = 0; (m = engine_probe__missing(ep, i)); i++)
		fprintf(f, "  missing: %s\n", m);
	if (engine_probe__held_back(ep, held, sizeof(held)))
		fprintf(f, "  not attached (their profile's only_with names no file these processes "
			"map): %s\n", held);
	for (int i = 0; i < n; i++)
		if (!st[i].hits)
			fprintf(f, "  %s: attached, but the engine never called it in this run (it "
				"does that work elsewhere, or had no requests)\n", st[i].probe);
}
