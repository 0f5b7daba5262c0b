// SPDX-License-Identifier: GPL-2.0-only
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <bpf/bpf.h>
#include <bpf/libbpf.h>
#include "user/probe/bpf_util.h"
#include "net.skel.h"
#include "user/lib/log.h"
#include "user/probe/net_probe.h"
#include "user/probe/tp_check.h"

#define MAX_LINKS 32

struct net_probe {
	struct net_bpf *skel;
	struct ring_buffer *rb;
	struct bpf_link *links[MAX_LINKS];
	int n_links;
	net_event_cb on_event;
	void *ctx;
	struct net_probe_status st;	/* as attach found it */
};

static const char *const counter_names[TTF_CNT__MAX] = {
	[TTF_CNT_RINGBUF_FULL] = "ringbuf_full",
	[TTF_CNT_ARGS_MISSING] = "payload_args_missing",
	[TTF_CNT_PEEK_SKIPPED] = "msg_peek_skipped",
	[TTF_CNT_ARRIVAL_MAP_FULL] = "arrival_map_full",
	[TTF_CNT_SOCK_MAP_FULL] = "sock_map_full",
	[TTF_CNT_TGID_MAP_FULL] = "tgid_map_full",
	[TTF_CNT_EVENTS] = "events",
};

static int ring_cb(void *ctx, void *data, size_t len)
{
	struct net_probe *np = ctx;

	if (len < sizeof(struct ttf_net_event))
		return 0;
	return np->on_event(np->ctx, data, len);
}

static int skipped(const char *list, const char *name)
{
	size_t n = strlen(name);

	if (!list)
		return 0;
	if (!strcmp(list, "all"))
		return 1;
	for (const char *p = list; (p = strstr(p, name)); p += n)
		if ((p == list || p[-1] == ',') && (p[n] == ',' || p[n] == '\0'))
			return 1;
	return 0;
}

/* Without these there is no request to see; the rest only add detail. */
static const char *const required_tps[] = {
	"sys_enter", "sock_recv_length", "sock_send_length", NULL,
};

struct net_probe *net_probe__open_load(const struct net_probe_opts *opts, int *err,
				       char *missing_tp, size_t missing_len)
{
	struct net_probe *np = calloc(1, sizeof(*np));
	struct bpf_program *prog;

	if (missing_len)
		missing_tp[0] = '\0';
	if (!np) {
		*err = -ENOMEM;
		return NULL;
	}
	np->on_event = opts->on_event;
	np->ctx = opts->ctx;
	np->skel = net_bpf__open();
	if (!np->skel) {
		*err = -errno;
		goto fail;
	}
	np->skel->rodata->targ_capture_bytes = opts->capture_bytes;
	np->skel->rodata->targ_capture_send_bytes = opts->capture_send_bytes ?
		opts->capture_send_bytes : TTF_CAPTURE_SEND_DEFAULT_BYTES;
	np->skel->rodata->targ_port = opts->port_filter;
	if (opts->follow_comm) {
		strncpy((char *)np->skel->rodata->targ_comm, opts->follow_comm, TTF_COMM_LEN - 1);
		np->skel->rodata->targ_follow_comm = true;
	}
	bpf_object__for_each_program(prog, np->skel->obj) {
		if (skipped(opts->skip_progs, bpf_program__name(prog)))
			bpf_program__set_autoload(prog, false);
	}
	if (opts->vmlinux_btf) {
		*err = tp_check__prune(np->skel->obj, opts->vmlinux_btf, required_tps, missing_tp,
				       missing_len);
		if (*err < 0)
			goto fail;
	}
	*err = bpf_map__set_max_entries(np->skel->maps.events, opts->ringbuf_bytes);
	if (*err)
		goto fail;
	/* A fixed 4 MiB never triggered in rings of 4 MiB and less (--ringbuf-mb). */
	np->skel->rodata->targ_wakeup_bytes = bpf_map__max_entries(np->skel->maps.events) / 4;
	*err = net_bpf__load(np->skel);
	if (*err)
		goto fail;
	np->rb = ring_buffer__new(bpf_map__fd(np->skel->maps.events), ring_cb, np, NULL);
	if (!np->rb) {
		*err = -errno;
		goto fail;
	}
	return np;
fail:
	net_probe__destroy(np);
	return NULL;
}

int net_probe__attach(struct net_probe *np, struct net_probe_status *st)
{
	struct bpf_program *prog;

	memset(st, 0, sizeof(*st));
	bpf_object__for_each_program(prog, np->skel->obj) {
		const char *name = bpf_program__name(prog);
		struct bpf_link *link;

		if (!bpf_program__autoload(prog))
			continue;
		link = bpf_program__attach(prog);
		if (!link) {
			st->n_failed++;
			ttf_warn("could not attach %s (%s)", name, strerror(errno));
			continue;
		}
		st->n_attached++;
		ttf_debug("attached %s", name);
		if (np->n_links < MAX_LINKS)
			np->links[np->n_links++] = link;
		if (!strcmp(name, "handle_recv") || !strcmp(name, "handle_send"))
			st->recv_send++;
		else if (!strcmp(name, "handle_xmit"))
			st->xmit = 1;
		else if (!strcmp(name, "handle_data_ready"))
			st->arrival = 1;
		else if (!strcmp(name, "handle_set_state"))
			st->close = 1;
		else if (!strcmp(name, "handle_fork"))
			st->follow = 1;
	}
	st->recv_send = st->recv_send == 2;
	np->st = *st;
	return st->recv_send ? 0 : -ENOENT;
}

int net_probe__trace_tgid(struct net_probe *np, uint32_t tgid)
{
	uint8_t one = 1;

	return bpf_map__update_elem(np->skel->maps.traced_tgids, &tgid, sizeof(tgid), &one,
				    sizeof(one), BPF_ANY);
}

int net_probe__trace_port(struct net_probe *np, uint16_t port)
{
	uint8_t one = 1;

	return bpf_map__update_elem(np->skel->maps.listen_ports, &port, sizeof(port), &one,
				    sizeof(one), BPF_ANY);
}

int net_probe__tgids_fd(struct net_probe *np)
{
	return bpf_map__fd(np->skel->maps.traced_tgids);
}

int net_probe__poll(struct net_probe *np, int timeout_ms)
{
	int n = ring_buffer__poll(np->rb, timeout_ms);

	if (n < 0)
		return n;
	/* Records submitted with BPF_RB_NO_WAKEUP raise no epoll event: drain them. */
	return ring_buffer__consume(np->rb);
}

void net_probe__counters(struct net_probe *np, uint64_t *out)
{
	bpf_util__sum_percpu(np->skel->maps.counters, TTF_CNT__MAX, out);
}

void net_probe__destroy(struct net_probe *np)
{
	if (!np)
		return;
	for (int i = 0; i < np->n_links; i++)
		bpf_link__destroy(np->links[i]);
	ring_buffer__free(np->rb);
	net_bpf__destroy(np->skel);
	free(np);
}

/* ---- as a probe source (user/probe/source.h) ---- */

static int src_poll(void *ctx, int timeout_ms)
{
	return net_probe__poll(ctx, timeout_ms);
}

int net_probe__counter_list(void *ctx, struct report_counter *c, int cap)
{
	uint64_t v[TTF_CNT__MAX];
	int n = 0;

	net_probe__counters(ctx, v);
	for (int i = 0; i < TTF_CNT__MAX && n < cap; i++)
		c[n++] = (struct report_counter){ counter_names[i], v[i] };
	return n;
}

static int src_wait_fd(void *ctx)
{
	const struct net_probe *np = ctx;

	return ring_buffer__epoll_fd(np->rb);
}

static int src_features(void *ctx, struct ttf_probe_feature *f, int cap)
{
	const struct net_probe *np = ctx;
	const struct ttf_probe_feature all[] = {
		{ "net_dev_start_xmit", np->st.xmit, "TTFT ends at the write, not at the device" },
		{ "sk_data_ready", np->st.arrival, "request arrival is taken at the read" },
		{ "inet_sock_set_state", np->st.close,
		  "connection closes are seen only when the process exits" },
		{ "sched_process_fork/exit", np->st.follow,
		  "children and exits of traced processes are not followed" },
	};
	int n = 0;

	for (size_t i = 0; i < sizeof(all) / sizeof(all[0]) && n < cap; i++)
		f[n++] = all[i];
	return n;
}

void net_probe__source(struct net_probe *np, struct ttf_probe_source *out)
{
	*out = (struct ttf_probe_source){ .name = "net", .ctx = np, .poll = src_poll,
					  .wait_fd = src_wait_fd,
					  .counters = net_probe__counter_list,
					  .features = src_features };
}
