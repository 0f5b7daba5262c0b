# SPDX-License-Identifier: GPL-2.0-only
"""Sequential streaming load for tests/gpu/run.sh: prints one JSON object with
per-request TTFT and the output tokens/s over the measured requests."""
import http.client
import json
import sys
import time


def one(port, prompt, out):
    c = http.client.HTTPConnection("127.0.0.1", port, timeout=60)
    t0 = time.monotonic()
    c.request("POST", "/v1/completions", json.dumps({"prompt_tokens": prompt, "max_tokens": out}),
              {"Content-Type": "application/json"})
    r = c.getresponse()
    ttft, toks, buf = None, 0, b""
    while True:
        data = r.read1(65536) if hasattr(r, "read1") else r.read(1)
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
    return {"ttft_s": ttft, "tokens": toks, "e2e_s": time.monotonic() - t0}


def main():
    port, n = int(sys.argv[1]), int(sys.argv[2])
    one(port, 256, 8)  # warm-up, not measured
    t0 = time.monotonic()
    reqs = [one(port, 256, 32) for _ in range(n)]
    wall = time.monotonic() - t0
    toks = sum(r["tokens"] for r in reqs)
    print(json.dumps({"requests": reqs, "tokens": toks, "wall_s": wall,
                      "tokens_per_s": toks / wall if wall else 0}))


if __name__ == "__main__":
    main()
