# SPDX-License-Identifier: GPL-2.0-only
"""TTFT stages on the demo llama.cpp server with the llama.cpp profile (root).

- prefill grows with prompt length, about linearly (ttftrace's own fit);
- queue grows with concurrency while prefill per request stays flat
  (one sequence: concurrent requests wait FIFO for the engine);
- a profile whose symbols are missing: a warning names the symbol, stages
  merge, nothing breaks.
The stages of every request sum to its TTFT, and its TTFT, ITL and TPOT lie in
the bracket of an independent client's view (tests/client_bracket.py).
"""
import statistics

import pytest

import client_bracket
from conftest import needs_root
from e2e_helpers import DemoServer, demo_missing_reason, join, wait_for_file_lines
from indep_client import stream_load

pytestmark = [needs_root,
              pytest.mark.skipif(demo_missing_reason() is not None,
                                 reason=demo_missing_reason() or "")]

ENGINE_STAGES = ("frontend", "queue", "prefill", "emit")


@pytest.fixture(scope="module")
def demo(tmp_path_factory):
    srv = DemoServer(str(tmp_path_factory.mktemp("demo") / "server.log"))
    yield srv
    srv.stop()


def traced(demo, tracer, tmp_path, n, c, prompt, extra=(), max_tokens=4):
    """n requests, c at a time, from tests/indep_client.py (not loadgen, which
    splits the stream with ttftrace's own SSE code); every traced request's TTFT,
    ITL and TPOT inside the client's bracket (tests/client_bracket.py)."""
    tr = tracer("--port", demo.port, *extra)
    client = stream_load(demo.port, n=n, c=c, prompt_chars=prompt, max_tokens=max_tokens)
    wait_for_file_lines(tr.out_path, lambda o: o.get("type") == "request", n)
    assert tr.stop() == 0, tr.stderr
    assert [q["error"] for q in client] == [None] * n, client
    reqs = tr.requests()
    assert len(reqs) == n, (len(reqs), tr.stderr)
    for r in reqs:
        assert abs(r["stage_sum_ms"] - r["ttft_ms"]) <= 0.002, r
    pairs, unmatched, dups = join(client, reqs)
    assert not unmatched and not dups, (unmatched, dups)
    bad = [p for q, r in pairs for p in client_bracket.check(q, r)]
    bad += ["%d#%d: tokens ttftrace %r, client %r" % (q["local_port"], q["conn_seq"],
                                                       r.get("tokens"), q["tokens"])
            for q, r in pairs if r.get("tokens") != q["tokens"]]
    print(client_bracket.SPREAD_FMT % client_bracket.spread(pairs))
    assert not bad, "\n".join(bad)
    return tr, reqs


def prefill_cpu_ms(r):
    """Prefill time on CPU (the overlay's on_cpu): robust to other load on the
    machine, which only adds runnable time. The demo runs llama.cpp with one
    compute thread, the one that calls llama_decode."""
    ov = (r.get("overlay") or {}).get("prefill")
    if ov and ov.get("on_cpu_ms") is not None and not ov.get("unknown_ms"):
        return ov["on_cpu_ms"]
    return r["stages_ms"]["prefill"]


def test_prefill_grows_with_prompt_length(demo, tracer, tmp_path):
    rows = []
    # within one llama.cpp batch (512): one prompt step each
    for prompt in (32, 160, 384):
        _, reqs = traced(demo, tracer, tmp_path, n=3, c=1, prompt=prompt)
        for r in reqs:
            assert r["attribution"] == "exact", r
            assert r["prefill_tokens"] >= prompt, r
            rows.append((r["prefill_tokens"], prefill_cpu_ms(r)))
    by_len = {}
    for tok, ms in rows:
        by_len.setdefault(tok, []).append(ms)
    med = [(t, statistics.median(v)) for t, v in sorted(by_len.items())]
    # Monotone in prompt length, and the longest prompt costs clearly more.
    assert all(a[1] < b[1] for a, b in zip(med, med[1:])), med
    assert med[-1][1] > 3 * med[0][1], med
    # Least-squares line through the per-length medians (robust to one slow
    # request on a busy machine); ttftrace's summary prints the same fit
    # over all requests.
    xs, ys = [t for t, _ in med], [m for _, m in med]
    mx, my = statistics.fmean(xs), statistics.fmean(ys)
    sxx = sum((x - mx) ** 2 for x in xs)
    sxy = sum((x - mx) * (y - my) for x, y in zip(xs, ys))
    syy = sum((y - my) ** 2 for y in ys)
    slope, r2 = sxy / sxx, sxy * sxy / (sxx * syy)
    print("prefill fit: %.3f ms + %.4f ms/token, r2 %.3f; medians %s"
          % (my - slope * mx, slope, r2, med))
    assert slope > 0 and r2 > 0.9, (slope, r2, med)


def test_queue_grows_with_concurrency_prefill_flat(demo, tracer, tmp_path):
    _, c1 = traced(demo, tracer, tmp_path, n=4, c=1, prompt=128)
    _, c4 = traced(demo, tracer, tmp_path, n=8, c=4, prompt=128)
    q1 = statistics.median(r["stages_ms"]["queue"] for r in c1)
    q4 = statistics.median(r["stages_ms"]["queue"] for r in c4)
    p1 = statistics.median(prefill_cpu_ms(r) for r in c1)
    p4 = statistics.median(prefill_cpu_ms(r) for r in c4)
    print("queue p50 c1 %.2f c4 %.2f ms; prefill on-CPU p50 c1 %.2f c4 %.2f ms"
          % (q1, q4, p1, p4))
    # One sequence: at c=4 a request waits for up to 3 others' whole responses.
    assert q4 > q1 + 0.5 * p1, (q1, q4, p1)
    assert 0.5 * p1 <= p4 <= 2.0 * p1, (p1, p4)
    inferred = [r for r in c4 if r["attribution"] == "inferred"]
    for r in inferred:
        assert r["inferred_by"].startswith(("FIFO order among",
                                            "equal prompt lengths: arrival order among")), r


def test_missing_symbols_merge_with_a_warning(demo, tracer, tmp_path):
    prof = tmp_path / "broken.ini"
    prof.write_text("[engine]\nname = broken\nmatch = libllama.v*.so\nmatch = libllama.so*\n"
                    "[probe step]\nsymbol = llama_decode_missing\nrole = step\n"
                    "want_return = yes\narg = llama_batch:8\n"
                    "[probe tok]\nsymbol = llama_tokenize\nrole = tokenize\n"
                    "want_return = yes\narg = none\n")
    tr, reqs = traced(demo, tracer, tmp_path, n=2, c=1, prompt=64,
                      extra=("--profile", str(prof)))
    assert "llama_decode_missing" in tr.stderr, tr.stderr
    for r in reqs:
        assert r["attribution"] == "merged", r
        assert r["merged"] == "frontend+queue+prefill+emit", r
        assert r["stages_ms"]["server"] is not None, r
        assert all(r["stages_ms"][s] is None for s in ENGINE_STAGES), r
        assert r["tokens"] == 4, r
