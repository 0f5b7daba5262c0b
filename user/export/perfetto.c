// SPDX-License-Identifier: GPL-2.0-only
/*
 * Chrome trace-event JSON timeline (see perfetto.h for the tracks).
 */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/stat.h>
#include "user/lib/log.h"
#include "user/model/hops.h"
#include "user/model/vocab.h"
#include "user/export/perfetto.h"

#define GPU_BATCH 4096

enum thr_state { THR_UNKNOWN = 0, THR_RUNNING, THR_RUNNABLE, THR_BLOCKED };

struct thr {
	uint32_t tid;		/* 0: free slot */
	uint32_t tgid;
	uint64_t since_ns;
	uint8_t state;		/* enum thr_state */
};

struct conn {
	uint64_t cookie;	/* 0: free slot */
	uint32_t seq;		/* tid on the Connections track */
	uint64_t in_bytes, out_bytes;
};

struct perfetto {
	FILE *f;
	char *path, *tmp_path;
	int first;		/* no event written yet (no comma before the next) */
	int io_error;
	int finished;
	struct gpu_store *gpu;
	uint64_t gpu_cursor_ns;	/* GPU spans starting before this were written */
	uint64_t gpu_next_ns;	/* next tick that reads the store */
	struct thr *thr;	/* open addressing on tid */
	struct conn *conns;	/* open addressing on cookie */
	uint32_t n_conns;
	uint32_t tgids[64];	/* processes already named */
	int n_tgids;
	uint64_t streams[64];	/* GPU device << 32 | stream already named */
	int n_streams;
	uint64_t events, threads_refused, conns_refused, sched_reordered, gpu_unread;
};

static void jstr(FILE *f, const char *s)
{
	fputc('"', f);
	for (; *s; s++) {
		unsigned char c = *s;

		if (c == '"' || c == '\\')
			fprintf(f, "\\%c", c);
		else if (c < 0x20 || c >= 0x7f)	/* also keeps the file ASCII for any byte */
			fprintf(f, "\\u%04x", c);
		else
			fputc(c, f);
	}
	fputc('"', f);
}

static void us(FILE *f, uint64_t ns)
{
	fprintf(f, "%" PRIu64 ".%03u", ns / 1000, (unsigned)(ns % 1000));
}

/* Starts an event object: ph, ts, pid, tid; the caller adds fields and ends it with '}'. */
static void ev_begin(struct perfetto *pf, char ph, uint64_t ts_ns, uint32_t pid, uint32_t tid)
{
	fputs(pf->first ? "\n" : ",\n", pf->f);
	pf->first = 0;
	pf->events++;
	fprintf(pf->f, "{\"ph\":\"%c\",\"ts\":", ph);
	us(pf->f, ts_ns);
	fprintf(pf->f, ",\"pid\":%u,\"tid\":%u", pid, tid);
}

static void ev_name(struct perfetto *pf, const char *name, const char *cat)
{
	fputs(",\"name\":", pf->f);
	jstr(pf->f, name);
	if (cat) {
		fputs(",\"cat\":", pf->f);
		jstr(pf->f, cat);
	}
}

static void complete(struct perfetto *pf, uint32_t pid, uint32_t tid, uint64_t start_ns,
		     uint64_t dur_ns, const char *name, const char *cat)
{
	ev_begin(pf, 'X', start_ns, pid, tid);
	fputs(",\"dur\":", pf->f);
	us(pf->f, dur_ns);
	ev_name(pf, name, cat);
}

static void meta(struct perfetto *pf, uint32_t pid, uint32_t tid, const char *what,
		 const char *name)
{
	ev_begin(pf, 'M', 0, pid, tid);
	fprintf(pf->f, ",\"name\":\"%s\",\"args\":{\"name\":", what);
	jstr(pf->f, name);
	fputs("}}", pf->f);
}

/* The comm of a live task, from procfs (named once per thread, so the read is rare). */
static void proc_comm(uint32_t tgid, uint32_t tid, char *buf, size_t sz)
{
	char path[64];
	ssize_t n;
	int fd;

	if (tid)
		snprintf(path, sizeof(path), "/proc/%u/task/%u/comm", tgid, tid);
	else
		snprintf(path, sizeof(path), "/proc/%u/comm", tgid);
	buf[0] = 0;
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return;
	n = read(fd, buf, sz - 1);
	close(fd);
	buf[n > 0 ? n : 0] = 0;
	buf[strcspn(buf, "\n")] = 0;
}

static void name_process(struct perfetto *pf, uint32_t tgid)
{
	char comm[32], name[64];

	for (int i = 0; i < pf->n_tgids; i++)
		if (pf->tgids[i] == tgid)
			return;
	if (pf->n_tgids < (int)(sizeof(pf->tgids) / sizeof(pf->tgids[0])))
		pf->tgids[pf->n_tgids++] = tgid;
	proc_comm(tgid, 0, comm, sizeof(comm));
	snprintf(name, sizeof(name), "%s %u (threads)", comm[0] ? comm : "process", tgid);
	meta(pf, tgid, 0, "process_name", name);
}

static struct thr *thr_get(struct perfetto *pf, uint32_t tid, uint32_t tgid)
{
	uint32_t h = tid * 2654435761u;

	for (uint32_t i = 0; i < PERFETTO_MAX_THREADS; i++) {
		struct thr *t = &pf->thr[(h + i) % PERFETTO_MAX_THREADS];
		char comm[32];

		if (t->tid == tid)
			return t;
		if (t->tid)
			continue;
		*t = (struct thr){ .tid = tid, .tgid = tgid };
		name_process(pf, tgid);
		proc_comm(tgid, tid, comm, sizeof(comm));
		meta(pf, tgid, tid, "thread_name", comm[0] ? comm : "thread");
		return t;
	}
	pf->threads_refused++;
	return NULL;
}

static const char *const thr_names[] = { "unknown", "running", "runnable", "blocked" };
/* Reserved trace-viewer colour names (catapult tracing/base/color_scheme.html). */
static const char *const thr_colors[] = { "grey", "thread_state_running",
					  "thread_state_runnable", "thread_state_sleeping" };

/* Ends the thread's current slice at ts_ns and starts state @next there. */
static void thr_switch(struct perfetto *pf, struct thr *t, uint64_t ts_ns, enum thr_state next)
{
	if (ts_ns < t->since_ns) {
		/* records of different CPUs reach the ring slightly out of order */
		pf->sched_reordered++;
		ts_ns = t->since_ns;
	}
	if (t->state != THR_UNKNOWN) {
		complete(pf, t->tgid, t->tid, t->since_ns, ts_ns - t->since_ns,
			 thr_names[t->state], "sched");
		fprintf(pf->f, ",\"cname\":\"%s\"}", thr_colors[t->state]);
	}
	t->state = next;
	t->since_ns = ts_ns;
}

static void on_sched(void *ctx, const struct ttf_sched_event *e)
{
	struct perfetto *pf = ctx;
	struct thr *t = thr_get(pf, e->tid, e->tgid);

	if (!t)
		return;
	switch (e->type) {
	case TTF_SCHED_IN:
		thr_switch(pf, t, e->ts_ns, THR_RUNNING);
		break;
	case TTF_SCHED_OUT_RUNNABLE:
		thr_switch(pf, t, e->ts_ns, THR_RUNNABLE);
		break;
	case TTF_SCHED_OUT_BLOCKED:
		thr_switch(pf, t, e->ts_ns, THR_BLOCKED);
		break;
	case TTF_SCHED_OUT_DEAD:
		thr_switch(pf, t, e->ts_ns, THR_UNKNOWN);
		break;
	case TTF_SCHED_WAKEUP:
	case TTF_SCHED_WAKEUP_NEW:
		if (t->state == THR_BLOCKED || t->state == THR_UNKNOWN)
			thr_switch(pf, t, e->ts_ns, THR_RUNNABLE);
		break;
	}
}

static void fmt_addr(char *buf, size_t sz, uint8_t family, const uint8_t *a, uint16_t port)
{
	if (family == TTF_AF_INET6)
		snprintf(buf, sz, "[%x:%x:..:%x]:%u", a[0] << 8 | a[1], a[2] << 8 | a[3],
			 a[14] << 8 | a[15], port);
	else
		snprintf(buf, sz, "%u.%u.%u.%u:%u", a[0], a[1], a[2], a[3], port);
}

static struct conn *conn_get(struct perfetto *pf, const struct ttf_net_event *e)
{
	uint32_t h = (uint32_t)(e->sock_cookie * 0x9e3779b97f4a7c15ull >> 32);

	for (uint32_t i = 0; i < PERFETTO_MAX_CONNS; i++) {
		struct conn *c = &pf->conns[(h + i) % PERFETTO_MAX_CONNS];
		char l[64], r[64], name[160];

		if (c->cookie == e->sock_cookie)
			return c;
		if (c->cookie)
			continue;
		*c = (struct conn){ .cookie = e->sock_cookie, .seq = ++pf->n_conns };
		fmt_addr(l, sizeof(l), e->family, e->laddr, e->lport);
		fmt_addr(r, sizeof(r), e->family, e->raddr, e->rport);
		snprintf(name, sizeof(name), "conn %u %s<-%s", c->seq, l, r);
		meta(pf, PERFETTO_PID_CONNS, c->seq, "thread_name", name);
		return c;
	}
	pf->conns_refused++;
	return NULL;
}

static void on_net(void *ctx, const struct ttf_net_event *e, size_t len)
{
	struct perfetto *pf = ctx;
	int recv = e->type == TTF_EV_RECV;
	char name[48];
	struct conn *c;

	if (len < sizeof(*e) || !(recv || e->type == TTF_EV_SEND || e->type == TTF_EV_CLOSE))
		return;
	c = conn_get(pf, e);
	if (!c)
		return;
	if (e->type == TTF_EV_CLOSE) {
		ev_begin(pf, 'i', e->ts_ns, PERFETTO_PID_CONNS, c->seq);
		ev_name(pf, e->flags & TTF_EVF_RESET ? "reset" : "close", "net");
		fputs(",\"s\":\"t\"}", pf->f);
		return;
	}
	if (recv)
		c->in_bytes += e->bytes;
	else
		c->out_bytes += e->bytes;
	snprintf(name, sizeof(name), "%s %u B", recv ? "recv" : "send", e->bytes);
	if (e->enter_ns && e->enter_ns <= e->ts_ns) {
		complete(pf, PERFETTO_PID_CONNS, c->seq, e->enter_ns, e->ts_ns - e->enter_ns,
			 name, "net");
	} else {
		ev_begin(pf, 'i', e->ts_ns, PERFETTO_PID_CONNS, c->seq);
		ev_name(pf, name, "net");
		fputs(",\"s\":\"t\"", pf->f);
	}
	fprintf(pf->f, ",\"args\":{\"bytes\":%u,\"tid\":%u}}", e->bytes, e->tid);
	ev_begin(pf, 'C', e->ts_ns, PERFETTO_PID_CONNS, 0);
	snprintf(name, sizeof(name), "conn %u bytes", c->seq);
	ev_name(pf, name, "net");
	fprintf(pf->f, ",\"args\":{\"in\":%" PRIu64 ",\"out\":%" PRIu64 "}}", c->in_bytes,
		c->out_bytes);
}

/* The request's flags as NDJSON names them (vocab.h): ,"flags":[...] inside args. */
static void flags_arg(struct perfetto *pf, const struct ttf_request *r,
		      const struct ttf_req_metrics *m)
{
	const char *names[TTF_VF__MAX];
	int n = ttf_vocab__flag_names(ttf_vocab__flags(r, m), names, TTF_VF__MAX);

	fputs(",\"flags\":[", pf->f);
	for (int i = 0; i < n; i++) {
		if (i)
			fputc(',', pf->f);
		jstr(pf->f, names[i]);
	}
	fputc(']', pf->f);
}

/* One end of a flow arrow (ph s/f) of request id's hop; binds to the slice around ts. */
static void flow(struct perfetto *pf, char ph, uint64_t ts_ns, uint32_t pid, uint64_t id)
{
	ev_begin(pf, ph, ts_ns, pid, pid);
	ev_name(pf, "hop", "hop");
	fprintf(pf->f, ",\"id\":%" PRIu64 "%s}", id, ph == 'f' ? ",\"bp\":\"e\"" : "");
}

/*
 * Through a gateway: its slice on its process's track over the TTFT, the
 * upstream's slice on the upstream's track (upstream request written ->
 * first token out), and flow arrows gateway -> upstream -> gateway.
 */
static void hop_slices(struct perfetto *pf, const struct ttf_request *r,
		       const struct ttf_req_metrics *m, const struct ttf_hop_chain *c)
{
	uint64_t t = m->t_start_ns, up_start, up_end;
	char name[64];

	for (int i = 0; i < TTF_HS_UPSTREAM; i++)
		t += c->stage_ns[i];
	up_start = t;
	up_end = t + c->stage_ns[TTF_HS_UPSTREAM];
	name_process(pf, c->gw_tgid);
	snprintf(name, sizeof(name), "gateway: req %" PRIu64, r->id);
	complete(pf, c->gw_tgid, c->gw_tgid, m->t_start_ns, m->ttft_ns > 0 ? m->ttft_ns : 0,
		 name, "hop");
	fprintf(pf->f, ",\"args\":{\"join\":\"%s\",\"buffering\":%s}}",
		c->exact ? "exact" : "inferred", c->buffering ? "true" : "false");
	if (!c->up_tgid)
		return;
	name_process(pf, c->up_tgid);
	snprintf(name, sizeof(name), "upstream: req %" PRIu64 " (its %" PRIu64 ")", r->id,
		 c->up_req_id);
	complete(pf, c->up_tgid, c->up_tgid, up_start, up_end - up_start, name, "hop");
	fputs("}", pf->f);
	flow(pf, 's', up_start, c->gw_tgid, 2 * r->id);
	flow(pf, 'f', up_start, c->up_tgid, 2 * r->id);
	flow(pf, 's', up_end, c->up_tgid, 2 * r->id + 1);
	flow(pf, 'f', up_end, c->gw_tgid, 2 * r->id + 1);
}

static void on_request(void *ctx, const struct ttf_request *r, const struct ttf_req_metrics *m,
		       const struct ttf_attrib *a)
{
	struct perfetto *pf = ctx;
	uint32_t tid = (uint32_t)r->id;
	uint64_t start = m->t_start_ns, end = m->t_end_ns, t;
	char name[160];

	if (!start)
		return;
	if (!end)
		end = r->closed_ns > m->t_last_token_ns ? r->closed_ns : m->t_last_token_ns;
	if (end < start)
		end = start;
	snprintf(name, sizeof(name), "req %" PRIu64 " %s %s", r->id, r->method, r->path);
	meta(pf, PERFETTO_PID_REQUESTS, tid, "thread_name", name);
	complete(pf, PERFETTO_PID_REQUESTS, tid, start, end - start, name, "request");
	fprintf(pf->f, ",\"args\":{\"ttft_ms\":%.3f,\"e2e_ms\":%.3f,\"tpot_ms\":%.3f,"
		"\"tokens\":%u,\"grade\":\"%c\",\"conn_cookie\":%" PRIu64,
		m->ttft_ns / 1e6, m->e2e_ns / 1e6, m->tpot_ns / 1e6, m->n_tokens, m->grade,
		r->sock_cookie);
	flags_arg(pf, r, m);
	fputs("}}", pf->f);
	t = start;
	/* stages in the order they follow each other inside [start, first token] (vocab.h) */
	for (size_t i = 0; a && a->valid && i < TTF_STAGE_ORDER_N; i++) {
		enum ttf_stage s = ttf_stage_time_order[i];
		int64_t d = a->stage_ns[s];

		/* tokenize is drawn inside frontend, below */
		if (s == TTF_ST_TOKENIZE || d < 0)
			continue;
		complete(pf, PERFETTO_PID_REQUESTS, tid, t, d, ttf_stage_name(s), "stage");
		fputs("}", pf->f);
		t += d;
		/* the engine has the request when tokenize returns: tokenize ends frontend */
		if (s == TTF_ST_FRONTEND && a->stage_ns[TTF_ST_TOKENIZE] > 0 &&
		    a->stage_ns[TTF_ST_TOKENIZE] <= d) {
			complete(pf, PERFETTO_PID_REQUESTS, tid, t - a->stage_ns[TTF_ST_TOKENIZE],
				 a->stage_ns[TTF_ST_TOKENIZE], ttf_stage_name(TTF_ST_TOKENIZE),
				 "substage");
			fputs("}", pf->f);
		}
	}
	if (a && a->valid && a->hops)
		hop_slices(pf, r, m, a->hops);
	for (uint32_t i = 0; i < r->n_events; i++) {
		ev_begin(pf, 'i', ttf_metrics__event_time(&r->events[i]), PERFETTO_PID_REQUESTS, tid);
		ev_name(pf, "token", "token");
		fprintf(pf->f, ",\"s\":\"t\",\"args\":{\"index\":%u,\"n_tokens\":%u}}", i,
			r->events[i].n_tokens);
	}
}

static const char *copy_name(const struct gpu_copy_span *c)
{
	if (c->memset)
		return "memset";
	switch (c->copy_kind) {
	case TTF_GPU_COPY_HTOD: return "copy HtoD";
	case TTF_GPU_COPY_DTOH: return "copy DtoH";
	case TTF_GPU_COPY_DTOD: return "copy DtoD";
	case TTF_GPU_COPY_HTOH: return "copy HtoH";
	case TTF_GPU_COPY_PTOP: return "copy PtoP";
	}
	return "copy";
}

static void gpu_track(struct perfetto *pf, uint32_t dev, uint32_t stream)
{
	uint64_t key = (uint64_t)dev << 32 | stream;
	char name[32];
	int i;

	for (i = 0; i < pf->n_streams; i++)
		if (pf->streams[i] == key)
			return;
	/* past the table, tracks are named again: duplicate metadata is harmless */
	if (pf->n_streams < (int)(sizeof(pf->streams) / sizeof(pf->streams[0])))
		pf->streams[pf->n_streams++] = key;
	snprintf(name, sizeof(name), "GPU %u (CUPTI)", dev);
	meta(pf, PERFETTO_PID_GPU + dev, 0, "process_name", name);
	snprintf(name, sizeof(name), "stream %u", stream);
	meta(pf, PERFETTO_PID_GPU + dev, stream, "thread_name", name);
}

/* Writes GPU spans starting in [gpu_cursor_ns, to_ns). */
static void gpu_flush(struct perfetto *pf, uint64_t to_ns)
{
	struct gpu_kernel_span *k = NULL;
	struct gpu_copy_span *c = NULL;
	size_t nk, nc;

	if (!pf->gpu || to_ns <= pf->gpu_cursor_ns)
		return;
	k = calloc(GPU_BATCH, sizeof(*k));
	c = calloc(GPU_BATCH, sizeof(*c));
	if (!k || !c) {
		pf->gpu_unread++;
		goto cleanup;
	}
	nk = gpu_store__kernels(pf->gpu, 0, pf->gpu_cursor_ns, to_ns, k, GPU_BATCH);
	nc = gpu_store__copies(pf->gpu, 0, pf->gpu_cursor_ns, to_ns, c, GPU_BATCH);
	if (nk > GPU_BATCH || nc > GPU_BATCH)
		pf->gpu_unread += (nk > GPU_BATCH ? nk - GPU_BATCH : 0) +
				  (nc > GPU_BATCH ? nc - GPU_BATCH : 0);
	for (size_t i = 0; i < nk && i < GPU_BATCH; i++) {
		if (k[i].start_ns < pf->gpu_cursor_ns || k[i].start_ns >= to_ns)
			continue;	/* overlaps the window but was (or will be) written in another */
		gpu_track(pf, k[i].device_id, k[i].stream_id);
		complete(pf, PERFETTO_PID_GPU + k[i].device_id, k[i].stream_id, k[i].start_ns,
			 k[i].end_ns > k[i].start_ns ? k[i].end_ns - k[i].start_ns : 0,
			 k[i].name ? k[i].name : "kernel", "kernel");
		fprintf(pf->f, ",\"args\":{\"grid\":[%u,%u,%u],\"block\":[%u,%u,%u],"
			"\"graph_id\":%u,\"host_tid\":%u,\"pid\":%u}}", k[i].grid[0], k[i].grid[1],
			k[i].grid[2], k[i].block[0], k[i].block[1], k[i].block[2], k[i].graph_id,
			k[i].tid, k[i].pid);
	}
	for (size_t i = 0; i < nc && i < GPU_BATCH; i++) {
		if (c[i].start_ns < pf->gpu_cursor_ns || c[i].start_ns >= to_ns)
			continue;
		gpu_track(pf, c[i].device_id, c[i].stream_id);
		complete(pf, PERFETTO_PID_GPU + c[i].device_id, c[i].stream_id, c[i].start_ns,
			 c[i].end_ns > c[i].start_ns ? c[i].end_ns - c[i].start_ns : 0,
			 copy_name(&c[i]), "copy");
		fprintf(pf->f, ",\"args\":{\"bytes\":%" PRIu64 ",\"gbps\":%.3f,\"pageable\":%s}}",
			c[i].bytes, c[i].gbps, c[i].pageable ? "true" : "false");
	}
	pf->gpu_cursor_ns = to_ns;
cleanup:
	free(k);
	free(c);
}

static void on_tick(void *ctx, uint64_t now_ns)
{
	struct perfetto *pf = ctx;

	if (!pf->gpu || now_ns < pf->gpu_next_ns)
		return;
	pf->gpu_next_ns = now_ns + 1000000000ull;
	if (now_ns > PERFETTO_GPU_LAG_NS)
		gpu_flush(pf, now_ns - PERFETTO_GPU_LAG_NS);
}

static int on_finish(void *ctx, const struct report_counter *cnt, int n)
{
	struct perfetto *pf = ctx;
	int err = 0;

	gpu_flush(pf, UINT64_MAX);
	/* Open thread slices end at the last thing seen of the thread: nothing to draw. */
	fprintf(pf->f, "\n],\"displayTimeUnit\":\"ms\",\"otherData\":{\"generator\":\"ttftrace\","
		"\"clock\":\"CLOCK_MONOTONIC\",\"trace_events\":%" PRIu64 ",\"threads_refused\":%" PRIu64
		",\"connections_refused\":%" PRIu64 ",\"sched_reordered\":%" PRIu64
		",\"gpu_spans_unread\":%" PRIu64, pf->events, pf->threads_refused,
		pf->conns_refused, pf->sched_reordered, pf->gpu_unread);
	for (int i = 0; i < n; i++) {
		fputs(",", pf->f);
		jstr(pf->f, cnt[i].name);
		fprintf(pf->f, ":%" PRIu64, cnt[i].value);
	}
	fputs("}}\n", pf->f);
	if (fflush(pf->f) || ferror(pf->f) || (pf->tmp_path && fsync(fileno(pf->f))))
		err = -(errno ? errno : EIO);
	if (fclose(pf->f) && !err)
		err = -errno;
	pf->f = NULL;
	if (pf->tmp_path && !err && rename(pf->tmp_path, pf->path))
		err = -errno;
	if (pf->tmp_path && err)
		unlink(pf->tmp_path);
	pf->finished = 1;
	if (err)
		ttf_error(err == -ENOSPC ? "free space on that file system" : "check permissions",
			  "writing %s: %s", pf->path, strerror(-err));
	if (pf->threads_refused || pf->conns_refused || pf->gpu_unread)
		fprintf(stderr, "Warning: perfetto: %" PRIu64 " threads and %" PRIu64
			" connections over the table size, %" PRIu64 " GPU spans not drawn\n",
			pf->threads_refused, pf->conns_refused, pf->gpu_unread);
	return err;
}

static void on_destroy(void *ctx)
{
	struct perfetto *pf = ctx;

	if (!pf)
		return;
	if (pf->f) {
		fclose(pf->f);
		if (pf->tmp_path)
			unlink(pf->tmp_path);	/* never finished: leave no partial file behind */
	}
	free(pf->thr);
	free(pf->conns);
	free(pf->path);
	free(pf->tmp_path);
	free(pf);
}

int perfetto_sink__new(const char *path, struct gpu_store *gpu, struct ttf_sink *out)
{
	struct perfetto *pf = calloc(1, sizeof(*pf));
	int in_place;
	struct stat st;
	int fd, err;

	if (!pf)
		return -ENOMEM;
	pf->first = 1;
	pf->gpu = gpu;
	pf->path = strdup(path);
	/*
	 * A device or FIFO (/dev/null, /dev/stdout) is written in place: renaming
	 * a temporary file over it would replace the device node (as root, in /dev).
	 */
	in_place = !stat(path, &st) && !S_ISREG(st.st_mode);
	if (!in_place && asprintf(&pf->tmp_path, "%s.tmp.XXXXXX", path) < 0)
		pf->tmp_path = NULL;
	pf->thr = calloc(PERFETTO_MAX_THREADS, sizeof(*pf->thr));
	pf->conns = calloc(PERFETTO_MAX_CONNS, sizeof(*pf->conns));
	if (!pf->path || (!in_place && !pf->tmp_path) || !pf->thr || !pf->conns) {
		err = -ENOMEM;
		goto cleanup;
	}
	fd = in_place ? open(path, O_WRONLY | O_CLOEXEC) : mkostemp(pf->tmp_path, O_CLOEXEC);
	if (fd < 0) {
		err = -errno;
		goto cleanup;
	}
	if (!in_place)
		fchmod(fd, 0644);
	pf->f = fdopen(fd, "w");
	if (!pf->f) {
		err = -errno;
		close(fd);
		if (pf->tmp_path)
			unlink(pf->tmp_path);
		goto cleanup;
	}
	fputs("{\"traceEvents\":[", pf->f);
	meta(pf, PERFETTO_PID_REQUESTS, 0, "process_name", "Requests (TTFT stages, tokens)");
	meta(pf, PERFETTO_PID_CONNS, 0, "process_name", "Connections (bytes in/out)");
	*out = (struct ttf_sink){ .name = "perfetto", .ctx = pf, .net_event = on_net,
				  .sched_event = on_sched, .request = on_request,
				  .tick = on_tick, .finish = on_finish, .destroy = on_destroy };
	return 0;
cleanup:
	on_destroy(pf);
	return err;
}
