// SPDX-License-Identifier: GPL-2.0-only
/*
 * cupti_rx: stand-alone receiver for the injected CUPTI collector, used by
 * `make gpu-check` (tests/gpu/run.sh). ttftrace's own loop reads the same
 * socket (user/probe/gpu_rx.c) into the same GPU store; this driver needs no BPF, no root and no
 * kernel tracepoints, so the GPU check runs on a machine that has only a
 * compiler, CUDA and PyTorch.
 * Collects records until SIGINT/SIGTERM (or -d seconds), then joins them
 * with request prefill windows and writes one JSON object.
 *
 * Usage: cupti_rx [-s SOCK] [-d SECONDS] [-w WINDOWS] [-o OUT.json] [-r SPANS]
 *   WINDOWS: lines "ID PID START_NS END_NS" (CLOCK_MONOTONIC prefill windows;
 *   PID 0 = the process that sent the most kernels).
 *   SPANS: every kernel and copy kept, one per line (check.py reads them):
 *     K PID TID START_NS END_NS GRAPH_ID NAME
 *     C PID TID START_NS END_NS BYTES COPY_KIND PAGEABLE
 */
#include <errno.h>
#include <getopt.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "user/model/gpu_join.h"
#include "user/probe/gpu_rx.h"
#include "user/model/gpu_store.h"

static volatile sig_atomic_t stop;
static uint64_t store_drops;

static int to_store(void *ctx, uint32_t pid, uint32_t kind, const void *body, size_t len)
{
	int err = gpu_store__add_item(ctx, pid, kind, body, len);

	if (err)
		store_drops++;
	return err;
}

static void on_signal(int sig)
{
	stop = 1;
}

static uint64_t mono_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + ts.tv_nsec;
}

/* Correlated launch/kernel pairs and how many violate api.start <= kernel.start. */
static void clock_checks(struct gpu_store *s, FILE *out)
{
	size_t n = gpu_store__kernels(s, 0, 0, UINT64_MAX, NULL, 0);
	struct gpu_kernel_span *ks = calloc(n + 1, sizeof(*ks));
	uint64_t pairs = 0, bad = 0, graph = 0, min_ts = UINT64_MAX, max_ts = 0, worst_ns = 0;
	struct gpu_api_span api;

	gpu_store__kernels(s, 0, 0, UINT64_MAX, ks, n);
	for (size_t i = 0; i < n; i++) {
		if (ks[i].start_ns < min_ts)
			min_ts = ks[i].start_ns;
		if (ks[i].end_ns > max_ts)
			max_ts = ks[i].end_ns;
		graph += ks[i].graph_id != 0;
		if (gpu_store__api(s, ks[i].pid, ks[i].correlation_id, &api))
			continue;
		pairs++;
		if (ks[i].start_ns < api.start_ns) {
			bad++;
			if (api.start_ns - ks[i].start_ns > worst_ns)
				worst_ns = api.start_ns - ks[i].start_ns;
		}
	}
	fprintf(out, "\"kernels\": %zu, \"graph_kernels\": %llu,\n", n, (unsigned long long)graph);
	fprintf(out, "\"clock\": {\"pairs\": %llu, \"kernel_before_launch\": %llu, "
		     "\"worst_ns\": %llu, \"min_ts\": %llu, \"max_ts\": %llu, \"mono_now\": %llu},\n",
		(unsigned long long)pairs, (unsigned long long)bad, (unsigned long long)worst_ns,
		(unsigned long long)(n ? min_ts : 0), (unsigned long long)max_ts,
		(unsigned long long)mono_ns());
	free(ks);
}

static uint32_t busiest_pid(struct gpu_store *s)
{
	size_t n = gpu_store__kernels(s, 0, 0, UINT64_MAX, NULL, 0);
	struct gpu_kernel_span *ks = calloc(n + 1, sizeof(*ks));
	uint32_t best = 0, best_n = 0;

	gpu_store__kernels(s, 0, 0, UINT64_MAX, ks, n);
	for (size_t i = 0; i < n; i++) {
		uint32_t c = 0;

		for (size_t j = 0; j < n && c <= best_n; j++)
			c += ks[j].pid == ks[i].pid;
		if (c > best_n) {
			best_n = c;
			best = ks[i].pid;
		}
		if (best_n > n / 2)
			break;
	}
	free(ks);
	return best;
}

static void requests(struct gpu_store *s, const char *path, FILE *out)
{
	unsigned long long id, start, end;
	struct gpu_copy_bw bw[64];
	struct gpu_prefill p;
	unsigned int pid;
	bool first = true;
	FILE *f = path ? fopen(path, "r") : NULL;
	uint32_t fallback = busiest_pid(s);

	fprintf(out, "\"requests\": [");
	while (f && fscanf(f, "%llu %u %llu %llu", &id, &pid, &start, &end) == 4) {
		int nc = gpu_join__prefill(s, pid ? pid : fallback, 0, start, end, &p, bw, 64);

		if (nc < 0)
			continue;
		fprintf(out, "%s\n {\"id\": %llu, \"pid\": %u, \"prefill_window_ns\": %llu, "
			     "\"gpu_compute_ns\": %llu, \"copy_ns\": %llu, \"copy_total_ns\": %llu, "
			     "\"host_gap_ns\": %llu, \"kernels\": %u, \"copies\": [",
			first ? "" : ",", id, pid ? pid : fallback,
			(unsigned long long)p.split.window_ns,
			(unsigned long long)p.split.compute_ns, (unsigned long long)p.split.copy_ns,
			(unsigned long long)p.copy_total_ns, (unsigned long long)p.split.host_gap_ns,
			p.split.kernels);
		for (int i = 0; i < nc && i < 64; i++)
			fprintf(out, "%s{\"bytes\": %llu, \"ns\": %llu, \"kind\": %u, \"src\": %u, "
				     "\"dst\": %u, \"pageable\": %s, \"gbps\": %.3f}",
				i ? ", " : "", (unsigned long long)bw[i].bytes,
				(unsigned long long)(bw[i].end_ns - bw[i].start_ns), bw[i].copy_kind,
				bw[i].src_kind, bw[i].dst_kind, bw[i].pageable ? "true" : "false",
				bw[i].gbps);
		fprintf(out, "]}");
		first = false;
	}
	fprintf(out, "\n]\n");
	if (f)
		fclose(f);
}

/* Every kernel and copy span, for matching against known work (-r). */
static int dump_spans(struct gpu_store *s, const char *path)
{
	size_t nk = gpu_store__kernels(s, 0, 0, UINT64_MAX, NULL, 0);
	size_t nc = gpu_store__copies(s, 0, 0, UINT64_MAX, NULL, 0);
	struct gpu_kernel_span *ks = calloc(nk + 1, sizeof(*ks));
	struct gpu_copy_span *cs = calloc(nc + 1, sizeof(*cs));
	FILE *f = fopen(path, "w");

	if (!ks || !cs || !f) {
		fprintf(stderr, "Error: cannot write %s: %s\n", path, strerror(errno));
		free(ks);
		free(cs);
		if (f)
			fclose(f);
		return -1;
	}
	gpu_store__kernels(s, 0, 0, UINT64_MAX, ks, nk);
	gpu_store__copies(s, 0, 0, UINT64_MAX, cs, nc);
	for (size_t i = 0; i < nk; i++)
		fprintf(f, "K %u %u %llu %llu %u %s\n", ks[i].pid, ks[i].tid,
			(unsigned long long)ks[i].start_ns, (unsigned long long)ks[i].end_ns,
			ks[i].graph_id, ks[i].name && *ks[i].name ? ks[i].name : "?");
	for (size_t i = 0; i < nc; i++)
		fprintf(f, "C %u %u %llu %llu %llu %u %d\n", cs[i].pid, cs[i].tid,
			(unsigned long long)cs[i].start_ns, (unsigned long long)cs[i].end_ns,
			(unsigned long long)cs[i].bytes, cs[i].memset ? 0 : cs[i].copy_kind,
			cs[i].pageable);
	fclose(f);
	free(ks);
	free(cs);
	return 0;
}

int main(int argc, char **argv)
{
	struct gpu_rx_opts ro = { .sz = sizeof(ro) };
	const char *windows = NULL, *out_path = NULL, *spans = NULL;
	double duration_s = 0;
	struct ttf_gpu_stats st;
	struct gpu_store *s;
	struct gpu_rx *rx;
	struct ttf_records recs_out;
	uint64_t deadline, recs = 0;
	FILE *out = stdout;
	int opt, err = 0;

	while ((opt = getopt(argc, argv, "s:d:w:o:r:h")) != -1) {
		switch (opt) {
		case 's': ro.sock_path = optarg; break;
		case 'd': duration_s = atof(optarg); break;
		case 'w': windows = optarg; break;
		case 'o': out_path = optarg; break;
		case 'r': spans = optarg; break;
		default:
			fprintf(stderr, "usage: %s [-s SOCK] [-d SECONDS] [-w WINDOWS] [-o OUT] [-r SPANS]\n",
				argv[0]);
			return opt == 'h' ? 0 : 2;
		}
	}
	signal(SIGINT, on_signal);
	signal(SIGTERM, on_signal);
	s = gpu_store__new();
	rx = gpu_rx__new(&ro);
	if (!s || !rx) {
		fprintf(stderr, "Error: cannot listen on the CUPTI socket: %s\n", strerror(errno));
		fprintf(stderr, "HINT: is another ttftrace or cupti_rx running? (TTFTRACE_CUPTI_SOCK)\n");
		return 1;
	}
	recs_out = (struct ttf_records){ .ctx = s, .gpu = to_store };
	deadline = duration_s > 0 ? mono_ns() + (uint64_t)(duration_s * 1e9) : UINT64_MAX;
	while (!stop && mono_ns() < deadline) {
		err = gpu_rx__poll(rx, &recs_out);
		if (err < 0)
			break;
		recs += err;
		usleep(2000);
	}
	/* Collectors flush at exit: keep reading a little after the stop. */
	for (int i = 0; i < 250; i++) {
		err = gpu_rx__poll(rx, &recs_out);
		recs += err > 0 ? err : 0;
		usleep(2000);
	}
	if (spans && dump_spans(s, spans))
		return 1;
	if (out_path && !(out = fopen(out_path, "w"))) {
		fprintf(stderr, "Error: cannot write %s: %s\n", out_path, strerror(errno));
		return 1;
	}
	gpu_store__stats(s, 0, &st);
	fprintf(out, "{\"records\": %llu, \"bad_msgs\": %llu, \"store_drops\": %llu,\n",
		(unsigned long long)recs, (unsigned long long)gpu_rx__bad_msgs(rx),
		(unsigned long long)store_drops);
	fprintf(out, "\"collector\": {\"kernel\": %llu, \"memcpy\": %llu, \"memset\": %llu, "
		     "\"api\": %llu, \"cupti_dropped\": %llu, \"buffers\": %llu, "
		     "\"buffers_refused\": %llu, \"duplicates\": %llu, \"invalid_ts\": %llu, "
		     "\"send_dropped\": %llu, \"clock_mode\": %llu, \"cupti_version\": %llu},\n",
		(unsigned long long)st.records[TTF_GPU_REC_KERNEL],
		(unsigned long long)st.records[TTF_GPU_REC_MEMCPY],
		(unsigned long long)st.records[TTF_GPU_REC_MEMSET],
		(unsigned long long)st.records[TTF_GPU_REC_API],
		(unsigned long long)st.cupti_dropped, (unsigned long long)st.buffers,
		(unsigned long long)st.buffers_refused, (unsigned long long)st.duplicates,
		(unsigned long long)st.invalid_ts, (unsigned long long)st.send_dropped,
		(unsigned long long)st.clock_mode, (unsigned long long)st.cupti_version);
	fprintf(out, "\"copies\": %zu,\n", gpu_store__copies(s, 0, 0, UINT64_MAX, NULL, 0));
	clock_checks(s, out);
	requests(s, windows, out);
	fprintf(out, "}\n");
	if (out != stdout)
		fclose(out);
	gpu_rx__free(rx);
	gpu_store__free(s);
	return 0;
}
