# SPDX-License-Identifier: GPL-2.0-only
"""Helpers of the attribution tier: the fixture engine, load schedules, and
the join of ttftrace's request objects with the engine's truth.

Truth stage definitions (CLOCK_MONOTONIC ns from the engine's --truth file,
the clock of bpf_ktime_get_ns):
  frontend = t_tokenize_end - [t_read_done, t_read_call]
             (the request's read -> tokenize returned; includes tokenize; the
             read's kernel time lies between the call of the read that brought
             the request's first byte and the return of the one that completed
             it: the thread can be preempted on either side of the kernel's
             receive, and its clock reads are not the kernel's)
  tokenize = t_tokenize_end - t_tokenize_start
  queue    = t_prefill_start - t_tokenize_end (-> first prefill step starts)
  prefill  = t_prefill_end - t_prefill_start  (-> last prefill step ends)
  emit     = [t_first_token_send, t_first_token_write] - t_prefill_end
             (-> the first token's bytes handed to the kernel: on loopback they
             reach the device inside send(), whose return can come much later
             when the woken reader preempts the engine thread; the truth is
             that interval, and ttftrace's TTFT ends at the transmit in it)
"""
import json
import math
import os
import subprocess
import threading
import time

import pytest

from conftest import ROOT, Client, conn_client_port, require_built

ENGINE = os.path.join(ROOT, ".output", "tests", "fixtures", "engine")
PROFILE = os.path.join(ROOT, "profiles", "fixture.ini")

ENGINE_STAGES = ("frontend", "tokenize", "queue", "prefill", "emit")
ALL_STAGES = ("net_in", "read_wait", "frontend", "tokenize", "queue", "prefill", "emit",
              "net_out")
# frontend includes tokenize: the disjoint stages that sum to TTFT.
SUM_STAGES = ("net_in", "read_wait", "frontend", "queue", "prefill", "emit", "net_out")


def require_attribution():
    """Fail (not skip) when ttftrace lacks the attribution options."""
    require_built(ENGINE)
    out = subprocess.run([os.path.join(ROOT, "ttftrace"), "--help"], capture_output=True,
                         text=True).stdout
    if "--profile" not in out or "--probe" not in out:
        pytest.fail("ttftrace --help shows no --profile/--probe: attribution is not built")


class Engine:
    """A running fixture engine; .port, .pid, .truth()."""

    def __init__(self, procs, args, truth_path):
        self.truth_path = truth_path
        cmd = [ENGINE, "--port", "0", "--nodelay", "--truth", truth_path] + [str(a) for a in args]
        self.proc = procs.add(subprocess.Popen(cmd, stdout=subprocess.PIPE, text=True))
        line = self.proc.stdout.readline()
        assert line.startswith("listening on 127.0.0.1:"), "engine said %r" % line
        self.port = int(line.rsplit(":", 1)[1])
        self.pid = self.proc.pid

    def truth(self):
        with open(self.truth_path) as f:
            return [json.loads(l) for l in f if l.strip()]

    def wait_truth(self, n, timeout_s=5.0):
        """The truth of n requests: the frontend logs a request after the
        client may already have read its last byte."""
        deadline = time.monotonic() + timeout_s
        while len(self.truth()) < n and time.monotonic() < deadline:
            time.sleep(0.02)
        t = self.truth()
        assert len(t) == n, "engine logged %d requests, the client made %d" % (len(t), n)
        return t


def prompt_lengths(n, lo=32, hi=512):
    """n prompt lengths spread over [lo, hi] in a fixed, shuffled order."""
    return [lo + (i * 7 % n) * (hi - lo) // max(n - 1, 1) for i in range(n)]


def body(prompt_len, max_tokens, chat):
    if chat:
        return {"model": "m", "stream": True, "max_tokens": max_tokens,
                "messages": [{"role": "user", "content": "x" * prompt_len}]}
    return {"model": "m", "stream": True, "max_tokens": max_tokens, "prompt": "x" * prompt_len}


def drive(port, lengths, concurrency, max_tokens):
    """Send one request per prompt length over `concurrency` keep-alive
    connections (request i on connection i % concurrency), all connections
    at once. Returns the number of requests made."""
    out = [None] * len(lengths)
    errors = []

    def worker(k):
        try:
            c = Client(port)
            for i in range(k, len(lengths), concurrency):
                path = "/v1/chat/completions" if i % 2 else "/v1/completions"
                out[i] = c.request(path=path, body=body(lengths[i], max_tokens, i % 2 == 1))
            c.close()
        except Exception as e:  # reported below, with the others
            errors.append(repr(e))

    ths = [threading.Thread(target=worker, args=(k,)) for k in range(concurrency)]
    for t in ths:
        t.start()
    for t in ths:
        t.join(120)
    assert not errors, errors
    for r in out:
        assert r is not None and r.status == 200
    return len(out)


def truth_stages_ms(t):
    """Truth per stage in ms (emit: its lower bound, see truth_range_ms)."""
    return {
        "frontend": (t["t_tokenize_end"] - t["t_read_done"]) / 1e6,
        "tokenize": (t["t_tokenize_end"] - t["t_tokenize_start"]) / 1e6,
        "queue": (t["t_prefill_start"] - t["t_tokenize_end"]) / 1e6,
        "prefill": (t["t_prefill_end"] - t["t_prefill_start"]) / 1e6,
        "emit": (t["t_first_token_send"] - t["t_prefill_end"]) / 1e6,
    }


def truth_range_ms(t, stage):
    """(lo, hi) ms: the stage's truth interval (lo == hi except for emit and frontend)."""
    lo = truth_stages_ms(t)[stage]
    if stage == "emit":
        return lo, (t["t_first_token_write"] - t["t_prefill_end"]) / 1e6
    if stage == "frontend":
        return lo, (t["t_tokenize_end"] - t["t_read_call"]) / 1e6
    return lo, lo


def join(recs, truth):
    """[(record, truth)] joined on (client port, conn_seq); every truth entry once."""
    by_key = {}
    for rec in recs:
        key = (conn_client_port(rec), rec["conn_seq"])
        assert key not in by_key, "request reported twice: %s" % rec
        by_key[key] = rec
    pairs = []
    for t in truth:
        key = (t["port"], t["conn_seq"])
        assert key in by_key, "ttftrace did not report the request of %s" % (key,)
        pairs.append((by_key[key], t))
    return pairs


def within(got, want, abs_ms=1.0, rel=0.03, want_hi=None):
    """got within abs_ms or rel of want (of the range [want, want_hi] if given)."""
    hi = want if want_hi is None else want_hi
    tol = max(abs_ms, rel * abs(want))
    return got is not None and want - tol <= got <= hi + tol


def check_stage_sums(rec):
    """stage_sum_ms is the sum of the reported disjoint stages and equals ttft_ms."""
    st = rec["stages_ms"]
    assert set(ALL_STAGES) <= set(st), st
    parts = [st[s] for s in SUM_STAGES if st[s] is not None]
    if st.get("server") is not None:
        parts.append(st["server"])
    assert rec["stage_sum_ms"] == pytest.approx(rec["ttft_ms"], abs=0.001), rec
    # each stage is rounded to 1 us on output
    assert sum(parts) == pytest.approx(rec["stage_sum_ms"], abs=0.0005 * len(parts) + 1e-9), st
    for s in SUM_STAGES:
        assert st[s] is None or st[s] >= 0, (s, st)


def stage_agreement(pairs, stages=ENGINE_STAGES):
    """Per stage: (requests within 1 ms or 3 % of truth, worst lines)."""
    res = {}
    for s in stages:
        ok, bad = 0, []
        for rec, t in pairs:
            lo, hi = truth_range_ms(t, s)
            got = rec["stages_ms"].get(s)
            if within(got, lo, want_hi=hi):
                ok += 1
            else:
                bad.append("id %s port %d seq %d: %s %s ms, truth %.3f..%.3f ms" % (
                    rec["id"], t["port"], t["conn_seq"], s, got, lo, hi))
        res[s] = (ok, bad)
    return res


def assert_stages_match(pairs, frac=0.95, stages=ENGINE_STAGES):
    need = math.ceil(frac * len(pairs))
    res = stage_agreement(pairs, stages)
    msgs = []
    for s, (ok, bad) in res.items():
        if ok < need:
            msgs.append("%s: %d/%d within 1 ms or 3%% (need %d): %s" % (
                s, ok, len(pairs), need, "; ".join(bad[:6])))
    assert not msgs, "\n".join(msgs)


def assert_stage_values_match(pairs, stage, frac):
    """The stage's values, sorted, against the truth's, sorted: where requests
    cannot be told apart, which of them had which value is a guess."""
    got = sorted(rec["stages_ms"].get(stage) or 0.0 for rec, _ in pairs)
    want = sorted(truth_range_ms(t, stage)[0] for _, t in pairs)
    ok = sum(within(g, w) for g, w in zip(got, want))
    assert ok >= math.ceil(frac * len(pairs)), (stage, ok, list(zip(got, want)))


def median(xs):
    xs = sorted(xs)
    n = len(xs)
    return xs[n // 2] if n % 2 else (xs[n // 2 - 1] + xs[n // 2]) / 2
