#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0-only
"""Write the seed corpora of fuzz_http_sse and fuzz_sse (tests/fuzz/corpus/<harness>/).
fuzz_cupti_decode's seeds come from make_cupti_seeds.c (needs the CUPTI headers)."""
import json
import os
import struct

HERE = os.path.dirname(os.path.abspath(__file__))
RECV, SEND, XMIT, CLOSE, EXIT = 1, 2, 3, 4, 5


def rec(typ, payload=b"", sock=0, gap=0, step_ms=1, flags=0, seq=0):
    return struct.pack("<BBHHBBI", typ, sock, len(payload), gap, step_ms, flags, seq) + payload


def chunk(b):
    return b"%x\r\n" % len(b) + b + b"\r\n"


def sse(obj):
    return b"data: " + json.dumps(obj).encode() + b"\n\n"


def tok(text, final=None):
    return sse({"choices": [{"index": 0, "delta": {"content": text}, "finish_reason": final}]})


REQ = (b"POST /v1/chat/completions HTTP/1.1\r\nHost: 127.0.0.1\r\n"
       b"Content-Type: application/json\r\nContent-Length: 47\r\n\r\n"
       b'{"stream":true,"messages":[{"role":"user"}]}   ')
HEAD = (b"HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\n"
        b"Transfer-Encoding: chunked\r\n\r\n")


def chat_stream(sock=0, gap_at=None, abort=False):
    out = [rec(RECV, REQ, sock)]
    seq = 1000
    parts = [HEAD, chunk(sse({"choices": [{"delta": {"role": "assistant"}}]}))]
    parts += [chunk(tok(w)) for w in ("Hello", " world", "!")]
    parts += [chunk(tok("", "stop")), chunk(b"data: [DONE]\n\n"), b"0\r\n\r\n"]
    for i, p in enumerate(parts):
        if abort and i == 4:
            out.append(rec(CLOSE, sock=sock))
            return b"\x00" + b"".join(out)
        seq += len(p)
        if gap_at == i:
            out.append(rec(SEND, p[:5], sock, gap=len(p) - 5, seq=seq))
        else:
            out.append(rec(SEND, p, sock, seq=seq))
        out.append(rec(XMIT, sock=sock, gap=len(p), seq=seq))
    return b"\x01" + b"".join(out)


def nonstream():
    body = json.dumps({"choices": [{"message": {"content": "hi"}}],
                       "usage": {"completion_tokens": 1}}).encode()
    resp = (b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: %d\r\n\r\n"
            % len(body)) + body
    return b"\x00" + rec(RECV, REQ.replace(b"true", b"fals")) + rec(SEND, resp) + rec(CLOSE)


def llamacpp():
    req = (b"POST /completion HTTP/1.1\r\nContent-Length: 2\r\n\r\n{}")
    resp = HEAD + chunk(sse({"content": "a", "stop": False, "tokens": [1, 2]}))
    resp += chunk(sse({"content": "", "stop": True, "tokens_predicted": 2,
                       "tokens_evaluated": 5})) + b"0\r\n\r\n"
    return b"\x00" + rec(RECV, req, 1) + rec(SEND, resp, 1) + rec(EXIT)


def write(harness, name, data):
    d = os.path.join(HERE, "corpus", harness)
    os.makedirs(d, exist_ok=True)
    with open(os.path.join(d, name), "wb") as f:
        f.write(data)


def main():
    write("http_sse", "chat_stream", chat_stream())
    write("http_sse", "chat_gap", chat_stream(gap_at=3))
    write("http_sse", "chat_abort", chat_stream(abort=True))
    write("http_sse", "two_conns", chat_stream(0) + chat_stream(1)[1:])
    write("http_sse", "nonstream", nonstream())
    write("http_sse", "llamacpp", llamacpp())
    write("http_sse", "keepalive", chat_stream() + chat_stream()[1:])
    stream = b"".join([sse({"choices": [{"delta": {"role": "assistant"}}]}), tok("a"),
                       b": keep-alive\n\n", tok("b"),
                       b"data: {\"error\": {\"message\": \"x\"}}\n\n",
                       sse({"choices": [], "usage": {"completion_tokens": 2,
                                                     "prompt_tokens": 3}}),
                       b"data: [DONE]\n\n"])
    write("sse", "openai", b"\x07" + stream)
    write("sse", "openai_crlf", b"\x01" + stream.replace(b"\n", b"\r\n"))
    write("sse", "llamacpp", b"\x03" + sse({"content": "x", "tokens": [5], "stop": False}) +
          sse({"content": "", "stop": True, "tokens_predicted": 9}))
    write("sse", "multiline", b"\x00data: {\"choices\":\ndata: [{\"text\":\"x\"}]}\n\n")
    write("sse", "reasoning", b"\x05" + sse({"choices": [{"delta": {"reasoning_content": "r"}}]})
          + sse({"choices": [{"delta": {"tool_calls": [{"id": "1"}]}}]}))


if __name__ == "__main__":
    main()
