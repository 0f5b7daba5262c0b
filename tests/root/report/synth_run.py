# SPDX-License-Identifier: GPL-2.0-only
"""A synthetic ttftrace run (NDJSON request objects, as user/export/report/report.c writes
them) of any size, for the report page at scale: Poisson arrivals with a burst in the
middle of the run (queue grows), two models, two routes, a few extreme TTFT outliers,
500s, aborted and incomplete requests, 404s on another path. Deterministic per seed."""
import json
import math
import random

MODELS = [("llama-3.1-8b-instruct", 0.7), ("qwen2.5-7b-instruct", 0.3)]
ROUTES = [("/v1/chat/completions", "chat", 0.8), ("/v1/completions", "completion", 0.2)]
T0_NS = 5_000_000_000_000
HOP_STAGES = ("net_in", "read_wait", "gateway_in", "upstream", "upstream_out", "gateway_out",
              "net_out")


def pick(rng, items):
    x, acc = rng.random(), 0.0
    for it in items:
        acc += it[-1]
        if x < acc:
            return it
    return items[-1]


def r3(v):
    return round(v, 3)


def make_requests(n, seed=1, span_s=600.0, n_outliers=4, hops=False):
    rng = random.Random(seed)
    reqs, t = [], 0.0
    rate = n / span_s
    for i in range(n):
        # a 3x burst in the middle fifth of the run
        burst = 0.4 * span_s < t < 0.6 * span_s
        t += rng.expovariate(rate * (3.0 if burst else 0.8))
        model, _ = pick(rng, MODELS)
        path, api, _ = pick(rng, ROUTES)
        slow = model.startswith("qwen")
        queue = rng.lognormvariate(math.log(8 if not burst else 60), 0.8)
        prefill = rng.uniform(18, 70) * (1.4 if slow else 1.0)
        stages = {"net_in": 0.0, "read_wait": r3(rng.uniform(0.01, 0.3)),
                  "frontend": r3(rng.lognormvariate(math.log(1.5), 0.4)),
                  "tokenize": None, "queue": r3(queue), "prefill": r3(prefill), "copy": None,
                  "emit": r3(rng.uniform(0.02, 0.4)), "net_out": r3(rng.uniform(0.005, 0.05)),
                  "server": None}
        stages["tokenize"] = r3(stages["frontend"] * 0.6)
        if i < n_outliers:
            stages["queue"] = r3(rng.uniform(9000, 15000))      # a stall: squeezes a linear axis
        ttft = r3(sum(v for k, v in stages.items() if v is not None and k != "tokenize"))
        tokens = rng.randint(16, 64)
        tpot = rng.lognormvariate(math.log(9 if not slow else 14), 0.15)
        itl = [r3(rng.lognormvariate(math.log(tpot), 0.2)) for _ in range(tokens - 1)]
        outliers = []
        if rng.random() < 0.03:
            k = rng.randrange(len(itl))
            itl[k] = r3(tpot * rng.uniform(4, 9))
            outliers.append({"index": k, "itl_ms": itl[k], "cause": "prefill of request %d" % (i + 2)})
        e2e = r3(ttft + sum(itl))
        mean = sum(itl) / len(itl)
        cv = math.sqrt(sum((v - mean) ** 2 for v in itl) / len(itl)) / mean
        status, flags = 200, ["stream", "usage"]
        x = rng.random()
        if x < 0.01:
            status, flags = 500, ["nonstream", "error"]
        elif x < 0.015:
            flags = flags + ["aborted"]
        elif x < 0.017:
            flags = flags + ["incomplete"]
        elif x < 0.019:
            status, path, api, flags = 404, "/v1/embeddings", "unknown", ["nonstream", "error"]
        ta = T0_NS + int(t * 1e9)
        failed = status != 200
        r = {"type": "request", "id": i + 1, "pid": 4242, "comm": "vllm", "method": "POST",
             "path": path, "status": status, "api": api, "model": model,
             "ttft_ms": None if failed else ttft, "ttfv_ms": None if failed else ttft,
             "e2e_ms": r3(rng.uniform(0.2, 3.0)) if failed else e2e,
             "tpot_ms": None if failed else r3(mean), "itl_ms": [] if failed else itl,
             "outliers": [] if failed else outliers, "itl_mean_ms": None if failed else r3(mean),
             "itl_cv": None if failed else round(cv, 4),
             "grade": "-" if failed else ("A" if cv < 0.15 else "B" if cv < 0.3 else "C"),
             "tokens": 0 if failed else tokens, "flags": flags,
             "t_arrival_ns": ta,
             "t_first_token_ns": None if failed else ta + int(ttft * 1e6),
             "t_end_ns": ta + int((e2e if not failed else 1.0) * 1e6),
             "stages_ms": stages if not failed else {k: None for k in stages},
             "attribution": "inferred", "inferred_by": "FIFO order"}
        if hops and not failed:
            hs = {"net_in": 0.0, "read_wait": r3(rng.uniform(0.01, 0.2)),
                  "gateway_in": r3(rng.uniform(0.2, 1.5)), "upstream_out": r3(rng.uniform(0.05, 0.3)),
                  "gateway_out": r3(rng.uniform(0.05, 0.5)), "net_out": r3(rng.uniform(0.005, 0.05))}
            hs["upstream"] = r3(max(ttft - sum(hs.values()), 0.0))
            r["hop_stages_ms"] = {k: hs[k] for k in HOP_STAGES}
        reqs.append(r)
    return reqs


def write_run(path, n, **kw):
    """Write N request objects (no summary object: an interrupted run). Returns them."""
    reqs = make_requests(n, **kw)
    with open(path, "w") as f:
        for r in reqs:
            f.write(json.dumps(r, separators=(",", ":")) + "\n")
    return reqs


if __name__ == "__main__":
    import sys
    write_run(sys.argv[1], int(sys.argv[2]), hops=len(sys.argv) > 3)
