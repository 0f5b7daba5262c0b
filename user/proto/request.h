/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * One HTTP request/response exchange recognised on a traced connection,
 * built by the connection tracker (conn.c) from partial payload captures and
 * handed to the metrics and output code when it ends.
 *
 * Times are CLOCK_MONOTONIC nanoseconds (bpf_ktime_get_ns); 0 means "not
 * observed". Sizes are bytes.
 */
#ifndef TTFTRACE_REQUEST_H
#define TTFTRACE_REQUEST_H

#include <stdint.h>
#include <stdbool.h>
#include "user/proto/traceparent.h"

/* One SSE event that carries at least one token (see is-token rules in sse.h). */
struct ttf_token_event {
	uint64_t write_ns; /* the write that completed the event returned */
	uint64_t write_start_ns; /* ... began (syscall entry); 0 unknown */
	uint64_t xmit_ns;  /* the segment holding the event's last byte reached the device; 0 unknown */
	uint32_t n_tokens; /* tokens in this event when the server says (e.g. llama.cpp tokens[]), else 1 */
	uint32_t flags;    /* enum ttf_token_flags */
};

enum ttf_token_flags {
	TTF_TOK_CONTENT = 1 << 0,   /* delta.content / text / content (visible output) */
	TTF_TOK_REASONING = 1 << 1, /* delta.reasoning_content / reasoning */
	TTF_TOK_TOOL = 1 << 2,      /* delta.tool_calls */
};

enum ttf_req_flags {
	TTF_REQ_STREAM = 1 << 0,      /* response Content-Type: text/event-stream */
	TTF_REQ_NONSTREAM = 1 << 1,   /* non-streamed response: TTFT = E2E */
	TTF_REQ_ABORTED = 1 << 2,     /* connection closed/reset before the response ended */
	TTF_REQ_INCOMPLETE = 1 << 3,  /* tracing stopped before the response ended */
	TTF_REQ_TRUNCATED = 1 << 4,   /* some payload was not captured: events may be missing */
	TTF_REQ_USAGE = 1 << 5,       /* token count taken from the server's usage report */
	TTF_REQ_XMIT = 1 << 6,        /* token times end at device transmit, not at write */
	TTF_REQ_BUFFERED = 1 << 7,    /* all token events left within a few ms after a long silence */
	TTF_REQ_DONE_MARKER = 1 << 8, /* the stream ended with data: [DONE] */
	TTF_REQ_UNKNOWN = 1 << 9,     /* lost sync with the byte stream; request not trusted */
	TTF_REQ_ERROR = 1 << 10,      /* HTTP status >= 400 or an error event in the stream */
	TTF_REQ_NODELAY = 1 << 11,    /* the first token was written with TCP_NODELAY set */
	TTF_REQ_READ = 1 << 12,       /* read completely: on_request_read fired (in-flight gauges) */
	TTF_REQ_EXPECT_100 = 1 << 13, /* the request said Expect: 100-continue */
	TTF_REQ_INTERIM = 1 << 14,    /* 1xx interim responses came before the response */
	TTF_REQ_OPAQUE = 1 << 15,     /* body not readable (coding unknown, or its start not seen): no tokens counted */
	TTF_REQ_DECODED = 1 << 16,    /* body Content-Encoding gzip/deflate, decoded to find tokens */
	TTF_REQ_HPACK_UNKNOWN = 1 << 17, /* HTTP/2 headers referenced HPACK entries not known (tracing began mid-connection) */
	TTF_REQ_CHUNKS = 1 << 18,     /* events are chunks (gRPC messages without a token profile), not tokens */
	TTF_REQ_UPSTREAM = 1 << 19,   /* the traced process sent it (client side of HTTP): a gateway's upstream call */
	TTF_REQ_TLS = 1 << 20,        /* read from TLS plaintext (library uprobes, docs/tls.md) */
};

enum ttf_api {
	TTF_API_UNKNOWN = 0,
	TTF_API_CHAT,       /* OpenAI /v1/chat/completions */
	TTF_API_COMPLETION, /* OpenAI /v1/completions */
	TTF_API_LLAMACPP,   /* llama.cpp /completion (and /completions) */
	TTF_API_RESPONSES,  /* OpenAI /v1/responses */
	TTF_API_MESSAGES,   /* Anthropic /v1/messages */
};

struct ttf_conn_addr {
	uint8_t family;    /* 2 = IPv4, 10 = IPv6, 1 = unix stream (inodes: bpf/net.h) */
	uint16_t lport;    /* host order */
	uint16_t rport;
	uint8_t laddr[16]; /* network order; IPv4 in the first 4 bytes */
	uint8_t raddr[16];
};

struct ttf_request {
	uint64_t id;          /* sequence number of requests seen, from 1 */
	uint64_t sock_cookie; /* socket cookie of the connection */
	uint32_t conn_seq;    /* 0 for the first request on the connection, 1 for the next ... */
	uint32_t tgid;        /* server process */
	uint32_t rx_tid;      /* thread that read the request */
	uint32_t tx_tid;      /* thread that wrote the first token */
	char comm[16];
	struct ttf_conn_addr addr;

	char method[8];
	char path[96];   /* request target without the query string, truncated */
	int status;      /* HTTP status code; 0 unknown */
	enum ttf_api api;
	char model[64];  /* "model" of the request body (user/proto/stream/body_model.h); "" unknown */
	struct ttf_trace_parent traceparent; /* its W3C traceparent header, when valid */

	uint64_t arrival_first_ns; /* first request byte reached the server socket (kernel) */
	uint64_t arrival_last_ns;  /* last request byte reached the server socket */
	uint64_t read_first_ns;    /* the server's first read of the request returned */
	uint64_t read_done_ns;     /* the server's read of the last request byte returned */
	uint64_t resp_first_write_ns; /* first response byte (status line) written */
	uint64_t resp_first_xmit_ns;  /* ... and reached the device; 0 unknown */
	uint64_t first_event_write_ns; /* the write that completed the first stream event (any kind) */
	uint64_t first_event_xmit_ns;  /* ... reached the device; 0 unknown */
	uint64_t end_write_ns;     /* last response byte written (chunked terminator, [DONE], Content-Length) */
	uint64_t end_xmit_ns;      /* ... and reached the device; 0 unknown */
	uint64_t closed_ns;        /* aborted: the connection closed/reset before the response ended */
	uint64_t interim_write_ns; /* the first 1xx interim response was written; 0 none */
	uint32_t n_interim;        /* 1xx interim responses before the final one */
	bool expect_wait_known;    /* expect_wait_ns is valid */
	uint64_t expect_wait_ns;   /* Expect: 100-continue: head arrived -> body began arriving (part of net_in) */
	uint64_t req_bytes;        /* request bytes (headers + body) */
	uint64_t body_bytes;       /* request body bytes (HTTP/1.1); 0 none or unknown */
	uint32_t body_hash;        /* FNV-1a of the body's first 128 bytes, | 1; 0 unknown (hops.h) */
	uint64_t resp_bytes;       /* response bytes (headers + body) */

	struct ttf_token_event *events; /* token events in order, owned by the request */
	uint32_t n_events;
	uint32_t cap_events;
	uint32_t n_sse_events;          /* all SSE events, tokens or not */
	/*
	 * The stream's response id (an OpenAI chunk's "id", when it looks like a
	 * request id: zmtp_id_like()); "" unknown. Only joins message hops
	 * (user/model/hops/msg.h); never output.
	 */
	char resp_id[64];

	uint32_t usage_completion_tokens; /* valid when flags & TTF_REQ_USAGE */
	uint32_t usage_prompt_tokens;
	uint32_t flags;                   /* enum ttf_req_flags */
};

/* Append a token event; returns 0 or -ENOMEM (the event is then counted as lost by the caller). */
int ttf_request__add_event(struct ttf_request *r, const struct ttf_token_event *ev);
/* The API a request path (no query string) names; TTF_API_UNKNOWN for others. */
enum ttf_api ttf_api_of_path(const char *path);
/* Free what the request owns (not the struct itself). */
void ttf_request__release(struct ttf_request *r);

#endif /* TTFTRACE_REQUEST_H */
