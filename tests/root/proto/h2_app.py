#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0-only
"""An OpenAI-style streaming chat endpoint as a plain ASGI app, served by
hypercorn (Debian's python3-hypercorn) on 127.0.0.1:PORT, HTTP/1.1 and
HTTP/2 cleartext (h2c, prior knowledge).

  h2_app.py PORT

POST /v1/chat/completions with {"tokens": N, "ttft_ms": T, "itl_ms": I}: a
role chunk, N content chunks I ms apart after T ms, a usage chunk and
[DONE]. Prints "listening" once it serves.
"""
import asyncio
import json
import sys

from hypercorn.asyncio import serve
from hypercorn.config import Config


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
    cfg = json.loads(body or b"{}")
    await send({"type": "http.response.start", "status": 200,
                "headers": [(b"content-type", b"text/event-stream"),
                            (b"cache-control", b"no-cache")]})
    await send({"type": "http.response.body", "more_body": True,
                "body": chunk({"choices": [{"index": 0, "delta": {"role": "assistant"}}]})})
    await asyncio.sleep(cfg.get("ttft_ms", 50) / 1e3)
    n = cfg.get("tokens", 4)
    for i in range(n):
        if i:
            await asyncio.sleep(cfg.get("itl_ms", 10) / 1e3)
        await send({"type": "http.response.body", "more_body": True,
                    "body": chunk({"choices": [{"index": 0, "delta": {"content": "t%d " % i}}]})})
    await send({"type": "http.response.body", "more_body": True,
                "body": chunk({"choices": [], "usage": {"prompt_tokens": 2,
                                                        "completion_tokens": n}})})
    await send({"type": "http.response.body", "body": b"data: [DONE]\n\n"})


async def main():
    cfg = Config()
    cfg.bind = ["127.0.0.1:%s" % sys.argv[1]]
    cfg.loglevel = "WARNING"
    task = asyncio.ensure_future(serve(app, cfg))
    # serve() binds before it accepts; wait for the port
    for _ in range(500):
        try:
            r, w = await asyncio.open_connection("127.0.0.1", int(sys.argv[1]))
            w.close()
            break
        except OSError:
            await asyncio.sleep(0.01)
    print("listening", flush=True)
    await task


if __name__ == "__main__":
    asyncio.run(main())
