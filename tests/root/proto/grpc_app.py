#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0-only
"""A server-streaming gRPC method with python3-grpcio's generic handler (no
generated code) on 127.0.0.1:PORT.

  grpc_app.py PORT

/llm.Generator/Stream takes a JSON request {"plan": [k1, k2, ...],
"ttft_ms": T, "itl_ms": I} and answers one message per plan entry, I ms
apart after T ms ("abort": true: then fail the call with
RESOURCE_EXHAUSTED, a grpc-status in the trailers). Each message is protobuf by hand: field 1 the k token ids
(repeated uint32, packed), field 2 their text. Prints "listening".
"""
import json
import sys
import time
from concurrent import futures

import grpc


def varint(v):
    out = b""
    while True:
        b = v & 0x7f
        v >>= 7
        if v:
            out += bytes([b | 0x80])
        else:
            return out + bytes([b])


def message(ids, text):
    packed = b"".join(varint(i) for i in ids)
    t = text.encode()
    return b"\x0a" + varint(len(packed)) + packed + b"\x12" + varint(len(t)) + t


def stream(request, context):
    cfg = json.loads(request)
    time.sleep(cfg["ttft_ms"] / 1e3)
    tok = 300
    for i, k in enumerate(cfg["plan"]):
        if i:
            time.sleep(cfg["itl_ms"] / 1e3)
        ids = list(range(tok, tok + k))
        tok += k
        yield message(ids, " ".join("w%d" % x for x in ids))
    if cfg.get("abort"):
        context.abort(grpc.StatusCode.RESOURCE_EXHAUSTED, "out of KV cache")


def main():
    handler = grpc.method_handlers_generic_handler(
        "llm.Generator", {"Stream": grpc.unary_stream_rpc_method_handler(stream)})
    server = grpc.server(futures.ThreadPoolExecutor(max_workers=8))
    server.add_generic_rpc_handlers((handler,))
    server.add_insecure_port("127.0.0.1:%s" % sys.argv[1])
    server.start()
    print("listening", flush=True)
    server.wait_for_termination()


if __name__ == "__main__":
    main()
