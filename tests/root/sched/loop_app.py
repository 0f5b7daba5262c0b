#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0-only
"""One asyncio event loop, blocked by one request's synchronous CPU work
(docs/cases.md #31), served by uvicorn on 127.0.0.1:PORT.

  loop_app.py PORT LOG

POST /v1/chat/completions with {"tokens": N, "itl_ms": I, "work_ms": W}:
first W ms of synchronous CPU work on the loop thread (PBKDF2 rounds, as a
tokenizer or template renderer would block it), then N content chunks I ms
apart and [DONE]. LOG gets one JSON line per request with W > 0:
client_port, t_work_start_ns, t_work_end_ns (time.monotonic_ns()). Prints
"listening" once it serves.
"""
import asyncio
import hashlib
import json
import sys
import time

import uvicorn
from starlette.applications import Starlette
from starlette.responses import StreamingResponse
from starlette.routing import Route

LOG = open(sys.argv[2], "a")


def chunk(obj):
    return "data: " + json.dumps(obj) + "\n\n"


def busy(ms):
    """Hold the loop thread on CPU for ms milliseconds."""
    end = time.monotonic_ns() + ms * 1_000_000
    while time.monotonic_ns() < end:
        hashlib.pbkdf2_hmac("sha256", b"p", b"salt", 200)


async def chat(request):
    cfg = await request.json()
    if cfg.get("work_ms"):
        t0 = time.monotonic_ns()
        busy(cfg["work_ms"])
        LOG.write(json.dumps({"client_port": request.client.port, "t_work_start_ns": t0,
                              "t_work_end_ns": time.monotonic_ns()}) + "\n")
        LOG.flush()

    async def gen():
        for i in range(cfg["tokens"]):
            if i:
                await asyncio.sleep(cfg["itl_ms"] / 1e3)
            yield chunk({"choices": [{"index": 0, "delta": {"content": "t%d " % i}}]})
        yield "data: [DONE]\n\n"

    return StreamingResponse(gen(), media_type="text/event-stream")


app = Starlette(routes=[Route("/v1/chat/completions", chat, methods=["POST"])])


async def main():
    server = uvicorn.Server(uvicorn.Config(app, host="127.0.0.1", port=int(sys.argv[1]),
                                           log_level="warning", http="h11", loop="asyncio",
                                           lifespan="off"))
    task = asyncio.ensure_future(server.serve())
    while not server.started:
        await asyncio.sleep(0.01)
    print("listening", flush=True)
    await task


if __name__ == "__main__":
    asyncio.run(main())
