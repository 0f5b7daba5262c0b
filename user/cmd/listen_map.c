// SPDX-License-Identifier: GPL-2.0-only
/* The listener map: listening sockets, their holders, and workers started later (listen_map.h). */
#include "user/cmd/listen_map.h"

/* "PID a (comm), PID b (comm)..." of a listener's holders into buf. */
static void holders_str(const struct target_set *ts, const struct target_listener *l, char *buf,
			size_t len)
{
	size_t off = 0;

	buf[0] = '\0';
	for (size_t i = 0; i < l->n_holders && i < TARGET_MAX_HOLDERS && off < len; i++) {
		char comm[32];
		int traced = 0;

		for (size_t k = 0; k < ts->n; k++)
			traced |= ts->tgids[k] == l->holders[i];
		target__comm(l->holders[i], comm, sizeof(comm));
		off += snprintf(buf + off, len - off, "%sPID %u (%s%s)", i ? ", " : "",
				l->holders[i], comm, traced ? "" : ", not traced");
	}
	if (l->n_holders > TARGET_MAX_HOLDERS && off < len)
		snprintf(buf + off, len - off, " and %zu more",
			 l->n_holders - TARGET_MAX_HOLDERS);
}

void listen_map__print(struct listen_map *m, const struct target_set *ts, FILE *out)
{
	char who[TARGET_MAX_HOLDERS * 48], ns[32];
	uint32_t own = target__netns("self");

	if (target__listeners(ts, m->listeners, sizeof(m->listeners) / sizeof(m->listeners[0]),
			      &m->n_listeners))
		m->n_listeners = 0;
	for (size_t i = 0; i < m->n_listeners; i++) {
		const struct target_listener *l = &m->listeners[i];

		holders_str(ts, l, who, sizeof(who));
		ns[0] = '\0';
		if (l->netns != own)	/* another network namespace than this process's (a container) */
			snprintf(ns, sizeof(ns), " in net:[%u]", l->netns);
		fprintf(out, "Listener port %u%s (socket:[%llu]): held by %s\n", l->port, ns,
			(unsigned long long)l->inode, who);
	}
}

void listen_map__forked(struct listen_map *m, uint32_t parent, uint32_t child, uint64_t ts_ns)
{
	if (!m->n_listeners)
		return;
	if (m->n_forked == (int)(sizeof(m->forked) / sizeof(m->forked[0]))) {
		if (!m->forked_unchecked++)
			fprintf(stderr, "Listener map: over %d new processes within %llu s: PID %u and "
				"those after it while so many are pending are traced, not named.\n",
				m->n_forked, LISTEN_MAP_FORKED_NS / 1000000000ull, child);
		return;
	}
	m->forked[m->n_forked].tgid = child;
	m->forked[m->n_forked].parent = parent;
	m->forked[m->n_forked++].until_ns = ts_ns + LISTEN_MAP_FORKED_NS;
}

void listen_map__check(struct listen_map *m, uint64_t now_ns, FILE *out)
{
	for (int i = 0; i < m->n_forked;) {
		size_t which;
		char comm[32];

		if (target__holds_listener(m->forked[i].tgid, m->listeners, m->n_listeners,
					   &which)) {
			target__comm(m->forked[i].tgid, comm, sizeof(comm));
			fprintf(out, "Listener port %u (socket:[%llu]): PID %u (%s), forked by "
				"PID %u, holds it too: traced.\n", m->listeners[which].port,
				(unsigned long long)m->listeners[which].inode,
				m->forked[i].tgid, comm, m->forked[i].parent);
		} else if (now_ns < m->forked[i].until_ns && target__alive(m->forked[i].tgid)) {
			i++;
			continue;
		}
		m->forked[i] = m->forked[--m->n_forked];
	}
}
