# SPDX-License-Identifier: GPL-2.0-only
"""Minimal streaming LLM server for the GPU check (tests/gpu/run.sh).

A small decoder-only transformer with random weights (no download), served
over HTTP/1.1 as OpenAI-style SSE. Per request: a 32 MiB pinned and an 8 MiB
pageable host-to-device copy (stand-ins for KV swap-in, docs/cases.md #23), a prefill
forward over the prompt, then decode steps replayed from a CUDA graph
(docs/cases.md #20) when capture works. Each prefill window [start, end] in
CLOCK_MONOTONIC ns (time.monotonic_ns, the bpf_ktime_get_ns domain) is
appended to $WINDOWS_FILE as "ID PID START END".
"""
import json
import os
import signal
import sys
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import torch
import torch.nn as nn

VOCAB, DIM, LAYERS, HEADS, CTX = 32000, 512, 4, 8, 64


class TinyLM(nn.Module):
    def __init__(self):
        super().__init__()
        self.emb = nn.Embedding(VOCAB, DIM)
        layer = nn.TransformerEncoderLayer(DIM, HEADS, 4 * DIM, batch_first=True, dropout=0.0)
        self.blocks = nn.TransformerEncoder(layer, LAYERS, enable_nested_tensor=False)
        self.head = nn.Linear(DIM, VOCAB)

    def forward(self, ids):
        n = ids.shape[1]
        mask = torch.triu(torch.full((n, n), float("-inf"), device=ids.device), 1)
        return self.head(self.blocks(self.emb(ids), mask=mask, is_causal=True))


torch.manual_seed(0)
dev = torch.device("cuda")
model = TinyLM().to(dev).half().eval()
lock = threading.Lock()
windows = open(os.environ.get("WINDOWS_FILE", os.devnull), "a", buffering=1)
pinned = torch.empty(32 << 20, dtype=torch.uint8).pin_memory()
pageable = torch.empty(8 << 20, dtype=torch.uint8)
static_ids = torch.zeros((1, CTX), dtype=torch.long, device=dev)
graph, graph_out = None, None


def capture_graph():
    global graph, graph_out
    try:
        s = torch.cuda.Stream()
        s.wait_stream(torch.cuda.current_stream())
        with torch.cuda.stream(s), torch.no_grad():
            for _ in range(3):
                model(static_ids)
        torch.cuda.current_stream().wait_stream(s)
        g = torch.cuda.CUDAGraph()
        with torch.cuda.graph(g), torch.no_grad():
            graph_out = model(static_ids)[:, -1].argmax(-1)
        graph = g
    except Exception as e:  # noqa: BLE001 - report and serve without graphs
        print(f"graph capture failed: {e}", file=sys.stderr, flush=True)
        graph = None


def decode_step(ctx_ids):
    if graph is not None:
        static_ids.copy_(ctx_ids[:, -CTX:])
        graph.replay()
        return graph_out
    with torch.no_grad():
        return model(ctx_ids[:, -CTX:])[:, -1].argmax(-1)


class Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    counter = 0

    def log_message(self, *args):
        pass

    def do_POST(self):
        body = json.loads(self.rfile.read(int(self.headers.get("Content-Length", 0))) or b"{}")
        n_prompt = int(body.get("prompt_tokens", 256))
        n_out = int(body.get("max_tokens", 32))
        self.send_response(200)
        self.send_header("Content-Type", "text/event-stream")
        self.send_header("Transfer-Encoding", "chunked")
        self.end_headers()
        with lock:
            Handler.counter += 1
            rid = Handler.counter
            ids_cpu = torch.randint(0, VOCAB, (1, n_prompt))
            t0 = time.monotonic_ns()
            kv = pinned.to(dev, non_blocking=True)
            kv2 = pageable.to(dev)
            ids = ids_cpu.to(dev, non_blocking=True)
            with torch.no_grad():
                tok = model(ids)[:, -1].argmax(-1)
            torch.cuda.synchronize()
            t1 = time.monotonic_ns()
            windows.write(f"{rid} {os.getpid()} {t0} {t1}\n")
            del kv, kv2
            ctx = torch.cat([ids, tok[:, None]], 1)
            self.chunk({"choices": [{"delta": {"content": f"t{int(tok.item())} "}}]})
            for _ in range(n_out - 1):
                tok = decode_step(ctx)
                ctx = torch.cat([ctx, tok[:, None]], 1)
                self.chunk({"choices": [{"delta": {"content": f"t{int(tok.item())} "}}]})
        self.raw(b"data: [DONE]\n\n")
        self.raw(b"")

    def chunk(self, obj):
        self.raw(b"data: " + json.dumps(obj).encode() + b"\n\n")

    def raw(self, data):
        self.wfile.write(b"%x\r\n%s\r\n" % (len(data), data))
        self.wfile.flush()


def main():
    port = int(sys.argv[1])
    capture_graph()
    srv = ThreadingHTTPServer(("127.0.0.1", port), Handler)
    signal.signal(signal.SIGTERM, lambda *a: threading.Thread(target=srv.shutdown).start())
    print(json.dumps({"ready": True, "pid": os.getpid(), "graph": graph is not None,
                      "torch": torch.__version__, "cuda": torch.version.cuda,
                      "gpu": torch.cuda.get_device_name(0),
                      "mono_start_ns": time.monotonic_ns()}), flush=True)
    try:
        srv.serve_forever(poll_interval=0.05)
    except KeyboardInterrupt:
        pass
    torch.cuda.synchronize()
    time.sleep(0.5)  # let the collector's periodic flush send the tail
    sys.exit(0)


if __name__ == "__main__":
    main()
