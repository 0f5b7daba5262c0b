#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0-only
"""An OpenAI-style streaming chat endpoint as a plain ASGI app, for
`uvicorn --uds PATH` (tests/root/hops/test_unix_hop.py).

POST /v1/chat/completions with {"tokens": N, "ttft_ms": T, "itl_ms": I}:
a role chunk at once, then N content chunks I ms apart after T ms, then
[DONE]. Truth: for each request one NDJSON line appended to $UDS_TRUTH,
{"id": its X-Req-Id header, "t_read_pre_ns" and "t_read_ns": before the
recv that brought it and when uvicorn's h11 protocol got its bytes,
"t_first_start_ns" and "t_first_ns": before the first token's write and
after it returned, "t_tokens_ns": each token's return}, all CLOCK_MONOTONIC
ns. asyncio's socket transport calls data_received right after its recv
(a busy machine may still preempt the loop in between, hence both stamps);
the request's task is created inside that call and inherits the context
variables; a chunk's write happens inside `await send` (the protocol writes
to the socket at once when nothing is queued).
"""
import asyncio
import asyncio.selector_events
import contextvars
import json
import os
import time

from uvicorn.protocols.http.h11_impl import H11Protocol

READ_NS = contextvars.ContextVar("read_ns", default=0)
READ_PRE_NS = contextvars.ContextVar("read_pre_ns", default=0)
_data_received = H11Protocol.data_received
_Transport = asyncio.selector_events._SelectorSocketTransport
_read_ready = _Transport._read_ready__data_received
_pre_recv_ns = [0]     # the loop is one thread: set just before the recv


def read_ready(self):
    _pre_recv_ns[0] = time.monotonic_ns()
    _read_ready(self)


def data_received(self, data):
    READ_NS.set(time.monotonic_ns())
    READ_PRE_NS.set(_pre_recv_ns[0])
    _data_received(self, data)


_Transport._read_ready__data_received = read_ready
H11Protocol.data_received = data_received


def chunk(obj):
    return ("data: " + json.dumps(obj) + "\n\n").encode()


async def app(scope, receive, send):
    if scope["type"] == "lifespan":
        while True:
            m = await receive()
            if m["type"] == "lifespan.startup":
                await send({"type": "lifespan.startup.complete"})
            elif m["type"] == "lifespan.shutdown":
                await send({"type": "lifespan.shutdown.complete"})
                return
    body = b""
    while True:
        m = await receive()
        body += m.get("body", b"")
        if not m.get("more_body"):
            break
    t_read, t_read_pre = READ_NS.get(), READ_PRE_NS.get()
    assert t_read and t_read_pre, "the request's read time was not stamped"
    cfg = json.loads(body)
    rid = dict(scope["headers"]).get(b"x-req-id", b"").decode()
    await send({"type": "http.response.start", "status": 200,
                "headers": [(b"content-type", b"text/event-stream")]})
    await send({"type": "http.response.body", "more_body": True,
                "body": chunk({"choices": [{"index": 0, "delta": {"role": "assistant"}}]})})
    await asyncio.sleep(cfg["ttft_ms"] / 1e3)
    tokens, starts = [], []
    for i in range(cfg["tokens"]):
        if i:
            await asyncio.sleep(cfg["itl_ms"] / 1e3)
        starts.append(time.monotonic_ns())
        await send({"type": "http.response.body", "more_body": True,
                    "body": chunk({"choices": [{"index": 0, "delta": {"content": "tok%d " % i}}]})})
        tokens.append(time.monotonic_ns())
    await send({"type": "http.response.body", "body": b"data: [DONE]\n\n"})
    with open(os.environ["UDS_TRUTH"], "a") as f:
        f.write(json.dumps({"id": rid, "t_read_pre_ns": t_read_pre, "t_read_ns": t_read,
                            "t_first_start_ns": starts[0],
                            "t_first_ns": tokens[0], "t_tokens_ns": tokens}) + "\n")
