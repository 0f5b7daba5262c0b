#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0-only
"""An OpenAI-style streaming chat endpoint behind Starlette's GZipMiddleware
(Debian's python3-starlette 0.26 compresses text/event-stream), served by
uvicorn on 127.0.0.1:PORT.

  gzip_app.py PORT [--hypercorn]

--hypercorn serves it with hypercorn instead (HTTP/1.1 and HTTP/2 cleartext).

POST /v1/chat/completions with {"tokens": N, "ttft_ms": T, "itl_ms": I}:
a role chunk, then N content chunks I ms apart after T ms, a usage chunk and
[DONE]. GZipMiddleware compresses without flushing, so the compressed bytes
leave in bursts the compressor decides. Prints "listening" once it serves.
"""
import asyncio
import json
import sys

import uvicorn
from starlette.applications import Starlette
from starlette.middleware import Middleware
from starlette.middleware.gzip import GZipMiddleware
from starlette.responses import StreamingResponse
from starlette.routing import Route


def chunk(obj):
    return "data: " + json.dumps(obj) + "\n\n"


async def chat(request):
    cfg = await request.json()

    async def gen():
        yield chunk({"choices": [{"index": 0, "delta": {"role": "assistant"}}]})
        await asyncio.sleep(cfg["ttft_ms"] / 1e3)
        for i in range(cfg["tokens"]):
            if i:
                await asyncio.sleep(cfg["itl_ms"] / 1e3)
            yield chunk({"choices": [{"index": 0, "delta": {"content": "tok%d " % i}}]})
        yield chunk({"choices": [], "usage": {"prompt_tokens": 3,
                                              "completion_tokens": cfg["tokens"]}})
        yield "data: [DONE]\n\n"

    return StreamingResponse(gen(), media_type="text/event-stream")


app = Starlette(routes=[Route("/v1/chat/completions", chat, methods=["POST"])],
                middleware=[Middleware(GZipMiddleware, minimum_size=100)])




async def main_hypercorn():
    from hypercorn.asyncio import serve
    from hypercorn.config import Config
    cfg = Config()
    cfg.bind = ["127.0.0.1:%s" % sys.argv[1]]
    cfg.loglevel = "WARNING"
    task = asyncio.ensure_future(serve(app, cfg))
    for _ in range(500):
        try:
            _, w = await asyncio.open_connection("127.0.0.1", int(sys.argv[1]))
            w.close()
            break
        except OSError:
            await asyncio.sleep(0.01)
    print("listening", flush=True)
    await task


async def main():
    if "--hypercorn" in sys.argv:
        await main_hypercorn()
        return
    config = uvicorn.Config(app, host="127.0.0.1", port=int(sys.argv[1]), log_level="warning",
                            http="h11", loop="asyncio")
    server = uvicorn.Server(config)
    task = asyncio.ensure_future(server.serve())
    while not server.started:
        await asyncio.sleep(0.01)
    print("listening", flush=True)
    await task


if __name__ == "__main__":
    asyncio.run(main())
