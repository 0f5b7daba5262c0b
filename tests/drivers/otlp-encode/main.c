// SPDX-License-Identifier: GPL-2.0-only
/*
 * otlp-encode: write the OTLP bodies ttftrace would send for a fixed set of
 * requests, in both encodings, so that tests/root/export/test_otlp_encoding.py can
 * decode the protobuf with the official definitions and compare it with the
 * JSON: DIR/traces.pb, traces.json, metrics.pb, metrics.json.
 *
 * The requests: a streamed chat request with stages, two prefill steps (one
 * with GPU data), gateway hops and a client traceparent; a 503 on
 * /v1/completions over IPv6 with usage tokens; a request on an unknown path.
 *
 *   otlp-encode DIR
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "user/export/otlp/otlp.h"
#include "user/export/otlp/otlp_metrics.h"

#define OFFSET_NS 1700000000000000000ll

static void base(struct otlp_span_src *s, uint64_t id, uint32_t tgid)
{
	memset(s, 0, sizeof(*s));
	s->req_id = id;
	s->tgid = tgid;
	strcpy(s->comm, "vllm");
	strcpy(s->method, "POST");
	strcpy(s->path, "/v1/chat/completions");
	strcpy(s->model, "llama-3-8b");
	s->status = 200;
	s->api = TTF_API_CHAT;
	s->server_port = 8000;
	s->addr_family = 2;
	memcpy(s->server_addr, (uint8_t[]){ 10, 1, 2, 3 }, 4);
	s->flags = TTF_REQ_STREAM;
	s->start_ns = 1000000000;
	s->end_ns = 1900000000;
	s->ttft_ns = 150000000;
	s->e2e_ns = 900000000;
	s->tpot_ns = 25000000.5;
	s->itl_cv = 0.25;
	s->grade = 'B';
	s->n_tokens = 31;
	s->n_events = 31;
	for (int i = 0; i < TTF_ST__ALL; i++)
		s->stage_ns[i] = -1;
}

static int fill(struct otlp_span_src *s)
{
	base(&s[0], 1, 100);
	s[0].have_stages = 1;
	s[0].kind = TTF_ATTR_MERGED;
	strcpy(s[0].merged, "frontend+queue+prefill+emit");
	s[0].stage_ns[TTF_ST_NET_IN] = 1000000;
	s[0].stage_ns[TTF_ST_SERVER] = 140000000;
	s[0].stage_ns[TTF_ST_NET_OUT] = 9000000;
	s[0].n_steps = 2;
	s[0].steps[0] = (struct ttf_step_span){ .start_ns = 1010000000, .end_ns = 1050000000,
						.n_tokens = 512, .tid = 4250, .have_gpu = 1,
						.compute_ns = 30000000, .copy_ns = 2000000,
						.host_gap_ns = 8000000, .kernels = 120, .copies = 3 };
	s[0].steps[1] = (struct ttf_step_span){ .start_ns = 1052000000, .end_ns = 1080000000,
						.n_tokens = 300, .tid = 4250 };
	s[0].n_causes = 1;
	strcpy(s[0].causes[0], "itl #3 41.200 ms: prefill of request 12");
	s[0].have_hops = 1;
	s[0].hops[0] = (struct otlp_hop){ .tgid = 90, .comm = "nginx", .start_ns = 1000000000,
					  .end_ns = 1150000000 };
	s[0].hops[1] = (struct otlp_hop){ .tgid = 100, .comm = "vllm", .start_ns = 1002000000,
					  .end_ns = 1140000000 };
	s[0].hop_exact = 1;
	s[0].hop_held_ns = 3000000;
	s[0].hop_upstream_port = 8000;
	s[0].parent.valid = true;
	memcpy(s[0].parent.trace_id, (uint8_t[]){ 0x4b, 0xf9, 0x2f, 0x35, 0x77, 0xb3, 0x4d, 0xa6,
						  0xa3, 0xce, 0x92, 0x9d, 0x0e, 0x0e, 0x47, 0x36 },
	       16);
	memcpy(s[0].parent.span_id, (uint8_t[]){ 0x00, 0xf0, 0x67, 0xaa, 0x0b, 0xa9, 0x02, 0xb7 },
	       8);
	s[0].parent.flags = 1;

	base(&s[1], 2, 200);
	strcpy(s[1].comm, "llama-server");
	strcpy(s[1].path, "/v1/completions");
	s[1].api = TTF_API_COMPLETION;
	s[1].status = 503;
	s[1].flags = TTF_REQ_ERROR | TTF_REQ_USAGE;
	s[1].prompt_tokens = 77;
	s[1].addr_family = 10;
	memset(s[1].server_addr, 0, 16);
	s[1].server_addr[15] = 1;
	s[1].ttft_ns = -1;
	s[1].tpot_ns = -1;

	base(&s[2], 3, 100);
	strcpy(s[2].path, "/admin");
	s[2].api = TTF_API_UNKNOWN;
	s[2].model[0] = '\0';
	return 3;
}

static int write_file(const char *dir, const char *name, const char *body, size_t len)
{
	char path[4096];
	FILE *f;

	snprintf(path, sizeof(path), "%s/%s", dir, name);
	f = fopen(path, "wb");
	if (!f || fwrite(body, 1, len, f) != len || fclose(f)) {
		fprintf(stderr, "Error: cannot write %s: %s\n", path, strerror(errno));
		return 1;
	}
	return 0;
}

int main(int argc, char **argv)
{
	static const char *const names[2][2] = { { "traces.pb", "metrics.pb" },
						 { "traces.json", "metrics.json" } };
	static struct otlp_span_src s[3];
	struct otlp_metrics *m;
	int n, rc = 0;

	if (argc != 2) {
		fprintf(stderr, "usage: otlp-encode DIR\n");
		return 2;
	}
	n = fill(s);
	m = otlp_metrics__new(OFFSET_NS);
	if (!m)
		return 9;
	for (int i = 0; i < n; i++)
		otlp_metrics__add(m, &s[i]);
	for (int p = 0; p < 2 && !rc; p++) {
		enum otlp_proto proto = p ? OTLP_PROTO_JSON : OTLP_PROTO_PROTOBUF;
		char *body;
		size_t len;

		if (otlp__build_traces(proto, s, n, "gpu-host", NULL, 7, OFFSET_NS, &body, &len))
			return 9;
		rc = write_file(argv[1], names[p][0], body, len);
		free(body);
		if (otlp_metrics__build(m, proto, "gpu-host", NULL, OFFSET_NS + 5000000000ll, &body,
					&len))
			return 9;
		rc |= write_file(argv[1], names[p][1], body, len);
		free(body);
	}
	otlp_metrics__free(m);
	return rc ? 8 : 0;
}
