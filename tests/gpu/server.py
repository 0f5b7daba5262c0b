# SPDX-License-Identifier: GPL-2.0-only
"""Minimal streaming LLM server for the GPU check (tests/gpu/run.sh).

Usage: server.py PORT [--dry LIBGPU_FEED SOCK]

A decoder-only transformer with random weights (no download), served over
HTTP/1.1 as OpenAI-style SSE, one thread per connection, one request on the
GPU at a time. Per request: a 32 MiB pinned and an 8 MiB pageable
host-to-device copy (stand-ins for KV swap-in, docs/cases.md #23), a prefill
forward over the prompt timed with torch.cuda.Event, then decode steps
replayed from a CUDA graph (docs/cases.md #20) when capture works. Each
request appends "RID PORT TID START END PREFILL_EVENT_NS" to $WINDOWS_FILE:
the client's id (the `req` query parameter), the client's port (the key
check.py joins ttftrace's `conn` on), the handler thread, the prefill
window in CLOCK_MONOTONIC ns (time.monotonic_ns, the bpf_ktime_get_ns
domain) and the prefill's GPU time by cudaEvents: the truth check.py holds
ttftrace's per-request prefill GPU time to.

--dry: no torch, no GPU (the dry run). The same protocol and log; the GPU
work is spans sent through tests/gpu/dry/feed.py: a 3 ms prefill kernel whose
length is the logged event time, 0.3 ms a decode step.
"""
import json
import os
import signal
import sys
import threading
import time
import urllib.parse
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

DRY = "--dry" in sys.argv
lock = threading.Lock()
windows = open(os.environ.get("WINDOWS_FILE", os.devnull), "a", buffering=1)


class TorchBackend:
    VOCAB, DIM, LAYERS, HEADS, CTX = 32000, 4096, 4, 32, 64

    def __init__(self):
        import torch
        import torch.nn as nn
        self.torch = torch
        torch.manual_seed(0)
        self.dev = torch.device("cuda")

        class TinyLM(nn.Module):
            def __init__(s):
                super().__init__()
                s.emb = nn.Embedding(self.VOCAB, self.DIM)
                layer = nn.TransformerEncoderLayer(self.DIM, self.HEADS, 4 * self.DIM,
                                                   batch_first=True, dropout=0.0)
                s.blocks = nn.TransformerEncoder(layer, self.LAYERS, enable_nested_tensor=False)
                s.head = nn.Linear(self.DIM, self.VOCAB)

            def forward(s, ids):
                n = ids.shape[1]
                mask = torch.triu(torch.full((n, n), float("-inf"), device=ids.device,
                                             dtype=s.emb.weight.dtype), 1)
                return s.head(s.blocks(s.emb(ids), mask=mask, is_causal=True))

        with self.dev:
            self.model = TinyLM().half().eval()
        self.pinned = torch.empty(32 << 20, dtype=torch.uint8).pin_memory()
        self.pageable = torch.empty(8 << 20, dtype=torch.uint8)
        self.static_ids = torch.zeros((1, self.CTX), dtype=torch.long, device=self.dev)
        self.graph, self.graph_out = None, None
        self.capture_graph()
        self.name = torch.cuda.get_device_name(0)

    def capture_graph(self):
        torch = self.torch
        try:
            s = torch.cuda.Stream()
            s.wait_stream(torch.cuda.current_stream())
            with torch.cuda.stream(s), torch.no_grad():
                for _ in range(3):
                    self.model(self.static_ids)
            torch.cuda.current_stream().wait_stream(s)
            g = torch.cuda.CUDAGraph()
            with torch.cuda.graph(g), torch.no_grad():
                self.graph_out = self.model(self.static_ids)[:, -1].argmax(-1)
            self.graph = g
        except Exception as e:  # noqa: BLE001 - report and serve without graphs
            print(f"graph capture failed: {e}", file=sys.stderr, flush=True)

    def prefill(self, n_prompt):
        """Copies and the prompt's forward; returns (state, first token, event ns)."""
        torch = self.torch
        ids = torch.randint(0, self.VOCAB, (1, n_prompt)).to(self.dev, non_blocking=True)
        kv = self.pinned.to(self.dev, non_blocking=True)
        kv2 = self.pageable.to(self.dev)
        e0, e1 = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        e0.record()
        with torch.no_grad():
            tok = self.model(ids)[:, -1].argmax(-1)
        e1.record()
        e1.synchronize()
        del kv, kv2
        return torch.cat([ids, tok[:, None]], 1), int(tok.item()), int(e0.elapsed_time(e1) * 1e6)

    def decode(self, ctx):
        torch = self.torch
        if self.graph is not None:
            self.static_ids.copy_(ctx[:, -self.CTX:])
            self.graph.replay()
            tok = self.graph_out
        else:
            with torch.no_grad():
                tok = self.model(ctx[:, -self.CTX:])[:, -1].argmax(-1)
        return torch.cat([ctx, tok[:, None]], 1), int(tok.item())

    def stop(self):
        self.torch.cuda.synchronize()


class DryBackend:
    """Sleeps where the GPU would work and sends the spans a collector would."""

    name, graph = "dry (no GPU)", None

    def __init__(self, lib, sock):
        sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "dry"))
        from feed import Feed
        self.feed = Feed(lib, sock)

    def span(self, dur_ns, fn):
        a = time.monotonic_ns() + 50000
        fn(a, a + dur_ns)
        while time.monotonic_ns() < a + dur_ns + 50000:
            time.sleep(0.0002)
        return dur_ns

    def prefill(self, n_prompt):
        self.span(2000000, lambda a, b: self.feed.copy(a, b, 32 << 20, True, False))
        self.span(1000000, lambda a, b: self.feed.copy(a, b, 8 << 20, True, True))
        ev = self.span(3000000, lambda a, b: self.feed.kernel(a, b, "prefill"))
        return n_prompt, 7, ev

    def decode(self, ctx):
        self.span(300000, lambda a, b: self.feed.kernel(a, b, "decode", graph=1))
        return ctx + 1, 7

    def stop(self):
        self.feed.close()


class Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    backend = None

    def log_message(self, *args):
        pass

    def do_POST(self):
        body = json.loads(self.rfile.read(int(self.headers.get("Content-Length", 0))) or b"{}")
        n_prompt = int(body.get("prompt_tokens", 256))
        n_out = int(body.get("max_tokens", 32))
        rid = urllib.parse.parse_qs(urllib.parse.urlparse(self.path).query).get("req", ["0"])[0]
        self.send_response(200)
        self.send_header("Content-Type", "text/event-stream")
        self.send_header("Transfer-Encoding", "chunked")
        self.end_headers()
        b = Handler.backend
        with lock:
            t0 = time.monotonic_ns()
            ctx, tok, ev_ns = b.prefill(n_prompt)
            t1 = time.monotonic_ns()
            windows.write(f"{rid} {self.client_address[1]} {threading.get_native_id()} {t0} {t1} "
                          f"{ev_ns}\n")
            self.chunk(rid, tok)
            for _ in range(n_out - 1):
                ctx, tok = b.decode(ctx)
                self.chunk(rid, tok)
        self.raw(b"data: [DONE]\n\n")
        self.raw(b"")

    def chunk(self, rid, tok):
        obj = {"id": f"cmpl-{rid}", "choices": [{"index": 0, "text": f"t{tok} "}]}
        self.raw(b"data: " + json.dumps(obj).encode() + b"\n\n")

    def raw(self, data):
        self.wfile.write(b"%x\r\n%s\r\n" % (len(data), data))
        self.wfile.flush()


def main():
    port = int(sys.argv[1])
    if DRY:
        i = sys.argv.index("--dry")
        Handler.backend = DryBackend(sys.argv[i + 1], sys.argv[i + 2])
    else:
        Handler.backend = TorchBackend()
    ThreadingHTTPServer.daemon_threads = True
    ThreadingHTTPServer.request_queue_size = 64
    srv = ThreadingHTTPServer(("127.0.0.1", port), Handler)
    signal.signal(signal.SIGTERM, lambda *a: threading.Thread(target=srv.shutdown).start())
    print(json.dumps({"ready": True, "pid": os.getpid(), "graph": Handler.backend.graph is not None,
                      "gpu": Handler.backend.name, "dry": DRY,
                      "mono_start_ns": time.monotonic_ns()}), flush=True)
    try:
        srv.serve_forever(poll_interval=0.05)
    except KeyboardInterrupt:
        pass
    Handler.backend.stop()
    time.sleep(0.5)  # let the collector's periodic flush send the tail
    sys.exit(0)


if __name__ == "__main__":
    main()
