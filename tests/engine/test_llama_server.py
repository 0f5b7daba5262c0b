# SPDX-License-Identifier: GPL-2.0-only
"""Prefill attribution on llama.cpp's own llama-server under batching.

llama-server (built by tools/demo/build_llama_server.sh from the llama.cpp
source node-llama-cpp ships) runs the demo model with 4 slots: prompts of
several new requests go into one llama_decode batch, next to the decode
tokens of the others, and a slot freed by a finished request is taken by the
next. The engine reports its own timings per request (timings.prompt_ms,
prompt_n, cache_n in the last streamed event); ttftrace's prefill stage must
agree within 3 ms + 10 %, and its cached token count must equal cache_n.
"""
import os
import random
import re
import subprocess
import time

import pytest

from conftest import ROOT, needs_root
from llama_server import completion, load, start_llama_server
from proc_truth import bpf_stats, cpu_ns

pytestmark = needs_root


@pytest.fixture
def llama_server(procs, tmp_path):
    return start_llama_server(procs, tmp_path)


def joined(tr, client):
    by_port = {c["port"]: c for c in client}
    recs = tr.requests()
    assert len(recs) == len(client), tr.stderr
    pairs = []
    for r in recs:
        port = int(re.search(r":(\d+)$", r["conn"]).group(1))
        pairs.append((r, by_port[port]["timings"]))
    return pairs


def prefill_ok(r, t):
    assert "stages_ms" in r, r
    pf = r["stages_ms"]["prefill"]
    return pf is not None and abs(pf - t["prompt_ms"]) <= 3 + 0.1 * t["prompt_ms"]


def traced(tracer, port, fn, rec=None):
    tr = tracer("--port", port, *(("--record", rec) if rec else ()))
    out = fn()
    tr.wait_requests(len(out), timeout_s=10)
    assert tr.stop() == 0, tr.stderr
    # attached to a server already running: the start-up says which profile attached
    assert re.search(r"PID \d+: engine profile llama\.cpp: [1-9]\d* uprobe\(s\) attached",
                     tr.stderr), tr.stderr
    return tr, joined(tr, out)


def explain(rec, bad_ids):
    """The timeline's decisions (replay -vv) on prompt steps, for a failure message."""
    p = subprocess.run([os.path.join(ROOT, "ttftrace"), "replay", "-vv", "-q", "-o", os.devnull,
                        rec], capture_output=True, text=True, timeout=120)
    keep = []
    for line in p.stderr.splitlines():
        m = re.search(r"timeline: step .* (\d+) tokens:(.*)", line)
        if m and int(m.group(1)) == len(m.group(2).split()):
            continue    # decode tokens only
        if "timeline:" in line:
            keep.append(line)
    return "bad ids %s; the timeline's prompt decisions:\n%s" % (bad_ids, "\n".join(keep[-120:]))


@pytest.mark.parametrize("unequal", [False, True], ids=["equal", "unequal"])
def test_batched_prefill_matches_engine(llama_server, tracer, unequal, tmp_path):
    rec = str(tmp_path / "run.rec")
    tr, pairs = traced(tracer, llama_server, lambda: load(llama_server, 8, 3, 150, unequal), rec)
    bad = ["id %s: prefill %s ms, engine %.2f ms, tokens %s/%s, cached %s/%s (%s %s)" % (
        r["id"], r["stages_ms"]["prefill"], t["prompt_ms"], r["prefill_tokens"], t["prompt_n"],
        r["cached_tokens"], t["cache_n"], r["attribution"], r["inferred_by"])
        for r, t in pairs if not prefill_ok(r, t)]
    cnt = tr.summary()["counters"]
    why = "\n".join(bad) + "\ncounters: %s\n" % {k: cnt.get(k) for k in (
        "engine_arg_faults", "engine_chunks_claimed_late", "engine_orphan_prompt_steps",
        "engine_ringbuf_full")} + (explain(rec, [b.split(":")[0] for b in bad]) if bad else "")
    # Equal lengths: arrival order is a guess, checked against each request's
    # first token (docs/design.md D10). llama-server does not always serve its
    # waiting requests in arrival order: in one clean-clone CI run a freed slot
    # took the later of two requests read 4.3 ms apart, and the guess swapped
    # those two (22 of 24 right). One swap is allowed for equal lengths, none
    # for unequal ones, where the length decides.
    bar = 0.95 if unequal else 0.9
    assert len(pairs) - len(bad) >= bar * len(pairs), why
    for r, t in pairs:
        assert r["prefill_tokens"] == t["prompt_n"], (r, t, why)
        assert r["cached_tokens"] == t["cache_n"], (r, t, why)
    # the prompts' runs were measured, not walked (docs/kernel.md B7.1), and
    # llama-server's batches passed the run check
    assert 0 < cnt["engine_walk_tokens_skipped"] <= sum(t["prompt_n"] for _, t in pairs), cnt
    assert cnt["engine_walk_interleaved"] == 0, cnt
    exact = sum(r["attribution"] == "exact" for r, _ in pairs)
    if unequal:
        assert exact >= 0.8 * len(pairs), [r["inferred_by"] for r, _ in pairs]
    s = tr.summary()
    assert s["attribution"]["exact"] == exact
    # 4 slots, 8 clients: new prompts share steps
    assert s["attribution"]["shared_prefill"] > 0, s["attribution"]


def test_prefix_cache_hit_is_a_prefill(llama_server, tracer):
    rnd = random.Random(3)
    prompt = "".join(chr(97 + rnd.randrange(26)) for _ in range(1799))
    tr, pairs = traced(tracer, llama_server,
                       lambda: [completion(llama_server, prompt, 8) for _ in range(3)])
    pairs.sort(key=lambda p: p[0]["id"])
    for r, t in pairs[1:]:
        assert t["cache_n"] > 1000, t     # the engine served it from its cache
        assert prefill_ok(r, t), "prefill %s ms, engine prompt_ms %.2f; stages %s" % (
            r["stages_ms"]["prefill"], t["prompt_ms"], r["stages_ms"])
        assert r["cached_tokens"] == t["cache_n"], (r["cached_tokens"], t)
        assert r["prefill_tokens"] == t["prompt_n"], (r["prefill_tokens"], t)
        assert r["attribution"] == "exact", r
    s = tr.summary()
    assert s["prefix_cache"]["hits"] >= 2, s["prefix_cache"]


def test_cost_attached_to_llama_server(llama_server, procs, tracer):
    """--cost attached to a running llama-server under 4 clients: the summary's
    output tokens are the engine's own (timings.predicted_n), and its cost
    counters hold what the kernel says over the same window (tests/proc_truth.py:
    schedstat of every thread of llama-server and of the tracer, fdinfo of the
    tracer's programs, uprobes included). llama-server's HTTP and compute
    threads live for the whole run, so none ends inside the window."""
    srv_pid = procs.procs[-1].pid
    tr = tracer("--port", llama_server, "--cost")
    t0, tr0, srv0, bpf0 = time.monotonic(), cpu_ns(tr.proc.pid), cpu_ns(srv_pid), \
        bpf_stats(tr.proc.pid)
    out = load(llama_server, 4, 3, 60, False)
    tr.wait_requests(len(out), timeout_s=10)
    t1, tr1, srv1, bpf1 = time.monotonic(), cpu_ns(tr.proc.pid), cpu_ns(srv_pid), \
        bpf_stats(tr.proc.pid)
    assert tr.stop() == 0, tr.stderr
    s = tr.summary()
    c = s["counters"]
    print("window %.2f s: tracer %d ns, llama-server %d ns, BPF %d runs %d ns; ttftrace %s" % (
        t1 - t0, tr1 - tr0, srv1 - srv0, bpf1[0] - bpf0[0], bpf1[1] - bpf0[1],
        {k: v for k, v in c.items() if k.startswith("cost_")}))
    assert s["total_output_tokens"] == sum(o["timings"]["predicted_n"] for o in out) == 12 * 16
    assert tr1 - tr0 <= c["cost_tracer_cpu_ns"] <= (tr1 - tr0) * 1.15 + 8e6
    assert bpf1[0] - bpf0[0] <= c["cost_bpf_runs"] <= (bpf1[0] - bpf0[0]) * 1.1 + 3000
    assert bpf1[1] - bpf0[1] <= c["cost_bpf_run_ns"] <= (bpf1[1] - bpf0[1]) * 1.1 + 3e6
    # /proc/PID/stat, in clock ticks (10 ms), from the tracer's first reading
    assert srv1 - srv0 - 20e6 <= c["cost_targets_cpu_ns"] <= (srv1 - srv0) * 1.15 + 20e6
