// SPDX-License-Identifier: GPL-2.0-only
/* Engine uprobes (engine_probe.h): the object, its specs, the ring buffer, and the entry points. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <bpf/bpf.h>
#include <bpf/libbpf.h>
#include "user/probe/bpf_util.h"
#include "engine.skel.h"
#include "user/probe/engine_probe_int.h"

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
	/* 1 present, 0 absent, < 0 could not tell (then the load will say) */
	if (libbpf_probe_bpf_helper(BPF_PROG_TYPE_KPROBE, BPF_FUNC_get_attach_cookie, NULL) == 0) {
		*err = -EOPNOTSUPP;	/* Linux 5.15 (docs/kernel.md B8) */
		return NULL;
	}
	ep = calloc(1, sizeof(*ep));
	if (!ep) {
		*err = -ENOMEM;
		return NULL;
	}
	ep->on_event = opts->on_event;
	ep->ctx = opts->ctx;
	ep->t_start_ns = ep_now_ns();
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

int engine_probe__attach_pid(struct engine_probe *ep, uint32_t tgid)
{
	int made, r;

	if (!tgid_traced(ep, tgid)) {
		if (ep->n_tgids == MAX_TGIDS)
			return -E2BIG;
		ep->tgids[ep->n_tgids++] = tgid;
	}
	maps_watch__changed(&ep->watch, tgid, ep_now_ns());	/* scanned now: the baseline */
	made = ep_scan_pid(ep, tgid);
	if (made < 0)
		return made;
	r = ep_scan_explicit(ep, tgid);
	ep_check_missing(ep);
	return r < 0 ? r : made + r;
}

int engine_probe__rescan(struct engine_probe *ep, uint64_t now)
{
	int made = 0;

	if (!now)
		now = ep_now_ns();

	for (int i = 0; i < ep->n_tgids; i++) {
		int r;

		if (!maps_watch__changed(&ep->watch, ep->tgids[i], now))
			continue;	/* no executable mapping came or went (maps_watch.h) */
		r = ep_scan_pid(ep, ep->tgids[i]);

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
	ep_check_missing(ep);
	return made;
}

int engine_probe__poll(struct engine_probe *ep, int timeout_ms)
{
	/* timeout 0: the tracer's own epoll already waited; no syscall for nothing */
	int n = timeout_ms > 0 ? ring_buffer__poll(ep->rb, timeout_ms) : 0;

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

