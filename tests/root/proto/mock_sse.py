#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0-only
"""A mock streaming LLM server on 127.0.0.1:PORT for the stream-format tests.

  mock_sse.py PORT [LOG]

One thread per connection, keep-alive. Each POST's JSON body, or its
X-Mock header when it has one, says what to stream (test-chosen, no model):
  {"format": "responses"|"anthropic"|"chat_n2", "tokens": N,
   "head_ms": H, "pre_ms": P, "ttft_ms": T, "itl_ms": I,
   "continue": true (answer Expect: 100-continue), "early_hints": true (a 103 first),
   "coding": "gzip"|"deflate" (compressed, flushed after each event: Z_SYNC_FLUSH)
             |"br" (random bytes labelled br: nothing can read them),
   "big_first": N (the first event is preceded by an N-byte random SSE comment)}
Without "continue" an Expect header is ignored: the client waits for its
own timeout before it sends the body.
It waits H ms after reading the request, writes the response head, waits P
ms, writes the format's leading non-token events, waits T ms, then writes N
token events I ms apart, then the closing events (with the usage report
where the format has one), each event in its own chunk and write
(TCP_NODELAY). Prints "listening" when ready.

With LOG, it appends a JSON line per request: the client's port, the
request's number on its connection, and its own CLOCK_MONOTONIC stamps: after
the read that completed the request (t_read_ns) and before its writes of the
head, the first leading event and the first token (t_head_ns,
t_first_event_ns, t_first_token_ns). The tests hold ttftrace's intervals to
them from below (conftest.check_server_interval).
"""
import base64
import json
import os
import socket
import sys
import threading
import time
import zlib

LOG = sys.argv[2] if len(sys.argv) > 2 else None
LOG_LOCK = threading.Lock()


def log(stamps):
    if LOG:
        with LOG_LOCK, open(LOG, "a") as f:
            f.write(json.dumps(stamps) + "\n")


def sse(obj, event=None):
    head = ("event: %s\n" % event) if event else ""
    return (head + "data: " + json.dumps(obj) + "\n\n").encode()


def responses(n):
    lead = [
        sse({"type": "response.created", "sequence_number": 0,
             "response": {"id": "resp_1", "status": "in_progress", "output": [], "usage": None}},
            "response.created"),
        sse({"type": "response.in_progress", "sequence_number": 1,
             "response": {"id": "resp_1", "status": "in_progress", "output": []}},
            "response.in_progress"),
        sse({"type": "response.output_item.added", "output_index": 0,
             "item": {"type": "message", "id": "msg_1", "role": "assistant", "content": []}},
            "response.output_item.added"),
        sse({"type": "response.content_part.added", "item_id": "msg_1", "output_index": 0,
             "content_index": 0, "part": {"type": "output_text", "text": ""}},
            "response.content_part.added"),
    ]
    toks = [sse({"type": "response.output_text.delta", "item_id": "msg_1", "output_index": 0,
                 "content_index": 0, "delta": "w%d " % i}, "response.output_text.delta")
            for i in range(n)]
    tail = [
        sse({"type": "response.output_text.done", "item_id": "msg_1", "text": "..."},
            "response.output_text.done"),
        sse({"type": "response.completed",
             "response": {"id": "resp_1", "status": "completed",
                          "usage": {"input_tokens": 9, "output_tokens": n,
                                    "total_tokens": 9 + n}}},
            "response.completed"),
    ]
    return lead, toks, tail


def anthropic(n):
    lead = [
        sse({"type": "message_start",
             "message": {"id": "msg_1", "type": "message", "role": "assistant", "content": [],
                         "usage": {"input_tokens": 9, "output_tokens": 1}}}, "message_start"),
        sse({"type": "content_block_start", "index": 0,
             "content_block": {"type": "thinking", "thinking": ""}}, "content_block_start"),
        sse({"type": "ping"}, "ping"),
    ]
    # the first token is a thinking delta, then text: TTFT at the first, TTFV at the second
    toks = [sse({"type": "content_block_delta", "index": 0,
                 "delta": {"type": "thinking_delta", "thinking": "hmm"}}, "content_block_delta")]
    toks += [sse({"type": "content_block_delta", "index": 1,
                  "delta": {"type": "text_delta", "text": "w%d " % i}}, "content_block_delta")
             for i in range(n - 1)]
    tail = [
        sse({"type": "content_block_stop", "index": 1}, "content_block_stop"),
        sse({"type": "message_delta", "delta": {"stop_reason": "end_turn"},
             "usage": {"output_tokens": n}}, "message_delta"),
        sse({"type": "message_stop"}, "message_stop"),
    ]
    return lead, toks, tail


def chat_n2(n):
    # n=2: choice 0 says only its role; the first content is on choice 1
    lead = [sse({"choices": [{"index": 0, "delta": {"role": "assistant"}},
                             {"index": 1, "delta": {"role": "assistant"}}]})]
    toks = [sse({"choices": [{"index": i % 2, "delta": {"content": "w%d" % i}}]})
            for i in range(n)]
    # first token event carries choice 1 only
    toks[0] = sse({"choices": [{"index": 0, "delta": {"content": ""}},
                               {"index": 1, "delta": {"content": "first"}}]})
    tail = [sse({"choices": [], "usage": {"prompt_tokens": 9, "completion_tokens": n}}),
            b"data: [DONE]\n\n"]
    return lead, toks, tail


FORMATS = {"responses": responses, "anthropic": anthropic, "chat_n2": chat_n2}


def chunk(b):
    return b"%x\r\n" % len(b) + b + b"\r\n"


def serve(conn):
    conn.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
    buf = b""
    port, seq = conn.getpeername()[1], 0
    while True:
        while b"\r\n\r\n" not in buf:
            d = conn.recv(65536)
            if not d:
                return
            buf += d
        head, buf = buf.split(b"\r\n\r\n", 1)
        hdrs = {}
        for line in head.split(b"\r\n")[1:]:
            k, _, v = line.partition(b":")
            hdrs[k.strip().lower().decode()] = v.strip().decode()
        n = int(hdrs.get("content-length", "0"))
        cfg = json.loads(hdrs["x-mock"]) if "x-mock" in hdrs else None
        if cfg and cfg.get("continue") and hdrs.get("expect", "").lower() == "100-continue":
            conn.sendall(b"HTTP/1.1 100 Continue\r\n\r\n")
        while len(buf) < n:
            d = conn.recv(1 << 20)
            if not d:
                return
            buf += d
        stamps = dict(port=port, seq=seq, t_read_ns=time.monotonic_ns())
        seq += 1
        body, buf = cfg or json.loads(buf[:n]), buf[n:]
        if body.get("early_hints"):
            conn.sendall(b"HTTP/1.1 103 Early Hints\r\nLink: </s.css>; rel=preload\r\n\r\n")
        lead, toks, tail = FORMATS[body["format"]](body["tokens"])
        if body.get("big_first"):
            noise = base64.b64encode(os.urandom(body["big_first"]))[:body["big_first"]]
            lead[0] = b": " + noise + b"\n\n" + lead[0]
        coding = body.get("coding")
        enc = lambda b: b  # noqa: E731
        if coding in ("gzip", "deflate"):
            z = zlib.compressobj(6, zlib.DEFLATED, 31 if coding == "gzip" else 15)
            enc = lambda b: z.compress(b) + z.flush(zlib.Z_SYNC_FLUSH)  # noqa: E731
        elif coding == "br":
            enc = lambda b: os.urandom(len(b) // 2 + 1)  # noqa: E731
        ce = ("Content-Encoding: %s\r\n" % coding).encode() if coding else b""
        time.sleep(body["head_ms"] / 1e3)
        stamps["t_head_ns"] = time.monotonic_ns()
        conn.sendall(b"HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\n" + ce +
                     b"Cache-Control: no-cache\r\nTransfer-Encoding: chunked\r\n\r\n")
        time.sleep(body["pre_ms"] / 1e3)
        stamps["t_first_event_ns"] = time.monotonic_ns()
        for e in lead:
            conn.sendall(chunk(enc(e)))
        time.sleep(body["ttft_ms"] / 1e3)
        for i, e in enumerate(toks):
            if i:
                time.sleep(body["itl_ms"] / 1e3)
            else:
                stamps["t_first_token_ns"] = time.monotonic_ns()
            conn.sendall(chunk(enc(e)))
        for e in tail:
            conn.sendall(chunk(enc(e)))
        if coding in ("gzip", "deflate"):
            conn.sendall(chunk(z.flush(zlib.Z_FINISH)))
        conn.sendall(b"0\r\n\r\n")
        log(stamps)


def main():
    s = socket.socket()
    s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    s.bind(("127.0.0.1", int(sys.argv[1])))
    s.listen(16)
    print("listening", flush=True)
    while True:
        c, _ = s.accept()
        threading.Thread(target=serve, args=(c,), daemon=True).start()


if __name__ == "__main__":
    main()
