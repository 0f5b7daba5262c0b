// SPDX-License-Identifier: GPL-2.0-only
/*
 * GPU tracks of the Perfetto sink: kernels and copies from the CUPTI store,
 * and the flows from requests to them (see perfetto.h).
 */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include "user/export/perfetto/perfetto_int.h"

#define GPU_BATCH 4096

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
	pf_meta(&pf->out, PERFETTO_PID_GPU + dev, 0, "process_name", name);
	snprintf(name, sizeof(name), "stream %u", stream);
	pf_meta(&pf->out, PERFETTO_PID_GPU + dev, stream, "thread_name", name);
}

/* The first kernel or copy of fl->pid starting in [a, b), drawn already; its mark and the flow. */
static void gpu_flow_now(struct perfetto *pf, const struct pf_gpu_flow *fl)
{
	struct gpu_kernel_span k[8];
	struct gpu_copy_span c[8];
	size_t nk = gpu_store__kernels(pf->gpu, fl->pid, fl->a, fl->b, k, 8);
	size_t nc = gpu_store__copies(pf->gpu, fl->pid, fl->a, fl->b, c, 8);
	uint64_t ts = UINT64_MAX;
	uint32_t dev = 0, stream = 0;

	for (size_t i = 0; i < nk && i < 8; i++)
		if (k[i].start_ns >= fl->a && k[i].start_ns < ts)
			ts = k[i].start_ns, dev = k[i].device_id, stream = k[i].stream_id;
	for (size_t i = 0; i < nc && i < 8; i++)
		if (c[i].start_ns >= fl->a && c[i].start_ns < ts)
			ts = c[i].start_ns, dev = c[i].device_id, stream = c[i].stream_id;
	if (ts == UINT64_MAX || ts < fl->req_start_ns)
		return;
	pf_flow_start(pf, fl->lane, fl->req_start_ns, fl->flow_id);
	pf_mark_flow(pf, PERFETTO_PID_GPU + dev, stream, ts, "prefill GPU", fl->flow_id);
}

void pf_gpu_flow(struct perfetto *pf, const struct pf_gpu_flow *fl)
{
	if (!pf->gpu)
		return;
	if (fl->b < pf->gpu_cursor_ns) {
		gpu_flow_now(pf, fl);
		return;
	}
	/* its spans are not written yet: the flow follows them, so each binds to its span */
	if (pf->n_gpu_pending == PF_GPU_PENDING) {
		pf->gpu_flows_dropped++;
		return;
	}
	pf->gpu_pending[pf->n_gpu_pending++] = *fl;
}

/* Writes GPU spans starting in [gpu_cursor_ns, to_ns), then the flows that waited for them. */
void pf_gpu_flush(struct perfetto *pf, uint64_t to_ns)
{
	struct gpu_kernel_span *k = NULL;
	struct gpu_copy_span *c = NULL;
	struct pf_out *o = &pf->out;
	size_t nk, nc;
	uint32_t kept = 0;

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
		pf_complete(o, PERFETTO_PID_GPU + k[i].device_id, k[i].stream_id, k[i].start_ns,
			    k[i].end_ns > k[i].start_ns ? k[i].end_ns - k[i].start_ns : 0,
			    k[i].name ? k[i].name : "kernel", "kernel");
		fprintf(o->f, ",\"args\":{\"grid\":[%u,%u,%u],\"block\":[%u,%u,%u],"
			"\"graph_id\":%u,\"host_tid\":%u,\"pid\":%u}}", k[i].grid[0], k[i].grid[1],
			k[i].grid[2], k[i].block[0], k[i].block[1], k[i].block[2], k[i].graph_id,
			k[i].tid, k[i].pid);
	}
	for (size_t i = 0; i < nc && i < GPU_BATCH; i++) {
		if (c[i].start_ns < pf->gpu_cursor_ns || c[i].start_ns >= to_ns)
			continue;
		gpu_track(pf, c[i].device_id, c[i].stream_id);
		pf_complete(o, PERFETTO_PID_GPU + c[i].device_id, c[i].stream_id, c[i].start_ns,
			    c[i].end_ns > c[i].start_ns ? c[i].end_ns - c[i].start_ns : 0,
			    copy_name(&c[i]), "copy");
		fprintf(o->f, ",\"args\":{\"bytes\":%" PRIu64 ",\"gbps\":%.3f,\"pageable\":%s}}",
			c[i].bytes, c[i].gbps, c[i].pageable ? "true" : "false");
	}
	pf->gpu_cursor_ns = to_ns;
cleanup:
	free(k);
	free(c);
	for (uint32_t i = 0; i < pf->n_gpu_pending; i++) {
		if (pf->gpu_pending[i].b < pf->gpu_cursor_ns)
			gpu_flow_now(pf, &pf->gpu_pending[i]);
		else
			pf->gpu_pending[kept++] = pf->gpu_pending[i];
	}
	pf->n_gpu_pending = kept;
}
