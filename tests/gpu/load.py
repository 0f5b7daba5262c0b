# SPDX-License-Identifier: GPL-2.0-only
"""Streaming load for tests/gpu/run.sh, sharing no code with ttftrace.

Usage: load.py PORT N [--concurrency C] [--prompt P] [--tokens T] [--first ID]
Sends N requests (after one unmeasured warm-up) from C threads, each to
/v1/completions?req=ID with IDs from --first up, and prints one JSON object:
per-request TTFT as the client saw it, and output tokens/s over the run.
"""
import argparse
import http.client
import json
import threading
import time


def one(port, rid, prompt, out):
    c = http.client.HTTPConnection("127.0.0.1", port, timeout=120)
    t0 = time.monotonic()
    c.request("POST", f"/v1/completions?req={rid}",
              json.dumps({"prompt_tokens": prompt, "max_tokens": out}),
              {"Content-Type": "application/json"})
    r = c.getresponse()
    ttft, toks, buf = None, 0, b""
    while True:
        data = r.read1(65536)
        if not data:
            break
        buf += data
        while b"\n\n" in buf:
            ev, buf = buf.split(b"\n\n", 1)
            if ev.startswith(b"data: {"):
                toks += 1
                if ttft is None:
                    ttft = time.monotonic() - t0
    c.close()
    return {"req": rid, "ttft_s": ttft, "tokens": toks, "e2e_s": time.monotonic() - t0}


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("port", type=int)
    ap.add_argument("n", type=int)
    ap.add_argument("--concurrency", type=int, default=1)
    ap.add_argument("--prompt", type=int, default=256)
    ap.add_argument("--tokens", type=int, default=32)
    ap.add_argument("--first", type=int, default=1)
    a = ap.parse_args()
    one(a.port, 0, a.prompt, 8)  # warm-up, not measured
    ids = list(range(a.first, a.first + a.n))
    reqs, mu = [], threading.Lock()

    def worker():
        while True:
            with mu:
                if not ids:
                    return
                rid = ids.pop(0)
            r = one(a.port, rid, a.prompt, a.tokens)
            with mu:
                reqs.append(r)
    t0 = time.monotonic()
    ts = [threading.Thread(target=worker) for _ in range(a.concurrency)]
    for t in ts:
        t.start()
    for t in ts:
        t.join()
    wall = time.monotonic() - t0
    toks = sum(r["tokens"] for r in reqs)
    print(json.dumps({"requests": sorted(reqs, key=lambda r: r["req"]), "tokens": toks,
                      "wall_s": wall, "concurrency": a.concurrency,
                      "tokens_per_s": toks / wall if wall else 0}))


if __name__ == "__main__":
    main()
