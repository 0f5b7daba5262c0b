# SPDX-License-Identifier: GPL-2.0-only
"""`ttftrace -i SECONDS`: bcc-style interval summaries.

A client streams requests to the fixture server for about 3 s while two
tracers run with -i 1, one with --json and one with text output. Every
finished request is counted in exactly one interval: the interval objects'
counts add up to the summary's, and each one equals the request objects
written since the previous interval object (one stream, in order).
"""
import re
import threading
import time

from conftest import Client, needs_root

pytestmark = needs_root

TTFT_MS, ITL_MS, TOKENS, N_404 = 30, 5, 3, 2


def _load(port, seconds, sent):
    c = Client(port)
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        r = c.request(max_tokens=TOKENS)
        assert r.status == 200
        sent[0] += 1
        if sent[0] in (5, 20):
            assert c.request(path="/v1/nope").status == 404
            sent[1] += 1
    c.close()


def test_interval_summaries_add_up(sse_server, tracer):
    srv = sse_server("--ttft-ms", str(TTFT_MS), "--itl-ms", str(ITL_MS), "--tokens", str(TOKENS),
                     "--nodelay")
    tj = tracer("-p", srv.pid, "-i", "1")
    tt = tracer("-p", srv.pid, "-i", "1", json_out=False)
    sent = [0, 0]
    th = threading.Thread(target=_load, args=(srv.port, 3.2, sent))
    th.start()
    th.join(20)
    time.sleep(0.3)
    assert tj.stop() == 0, tj.stderr
    assert tt.stop() == 0, tt.stderr
    assert sent[1] == N_404

    recs = tj.records()
    summ = tj.summary()
    ivs = [r for r in recs if r["type"] == "interval"]
    assert len(ivs) >= 3, ivs
    assert [i["index"] for i in ivs] == list(range(1, len(ivs) + 1))
    # intervals are back to back, 1 s each but the last (partial) one
    for a, b in zip(ivs, ivs[1:]):
        assert b["t_start_s"] == a["t_end_s"]
        assert abs(a["duration_s"] - 1.0) < 1e-3, a
    assert sum(i["requests"] for i in ivs) == summ["requests"] == sent[0] + N_404
    assert sum(i["errors"] for i in ivs) == summ["left_out_of_percentiles"] == N_404
    assert sum(i["output_tokens"] for i in ivs) == summ["total_output_tokens"] == sent[0] * TOKENS
    # each interval object counts the request objects written since the previous one
    since = 0
    for r in recs:
        if r["type"] == "request":
            since += 1
        elif r["type"] == "interval":
            assert r["requests"] == since, r
            since = 0
    assert since == 0
    busy = [i for i in ivs if i["successful"] >= 5]
    assert len(busy) >= 2, ivs
    for i in busy:
        assert TTFT_MS <= i["ttft_ms"]["p50"] < TTFT_MS + 10, i
        assert i["ttft_ms"]["p50"] <= i["ttft_ms"]["p95"] <= i["ttft_ms"]["p99"]
        assert ITL_MS * 0.8 < i["tpot_ms"]["p50"] < ITL_MS * 1.5, i
        assert i["ttft_ms"]["n"] == i["successful"]
        # duration_s is rounded to 1 ms: as much relative error in the rate computed here
        thr = i["output_token_throughput"]
        assert abs(thr - i["output_tokens"] / i["duration_s"]) <= \
            thr * 0.0005 / i["duration_s"] + 1e-3, i

    # text: one INTERVAL line per interval, the same totals, before the summary
    lines = tt.stdout.splitlines()
    pat = re.compile(r"^INTERVAL (\d+) [\d.]+-[\d.]+s: (\d+) requests, (\d+) errors; "
                     r"TTFT\(ms\) P50 (\S+) P95 (\S+) P99 (\S+); TPOT\(ms\) P50 \S+ P95 \S+ "
                     r"P99 \S+; [\d.]+ req/s, [\d.]+ tok/s$")
    txt = [pat.match(l) for l in lines if l.startswith("INTERVAL")]
    assert len(txt) >= 3 and all(txt), [l for l in lines if l.startswith("INTERVAL")]
    assert sum(int(m.group(2)) for m in txt) == sent[0] + N_404
    assert sum(int(m.group(3)) for m in txt) == N_404
    summary_at = next(i for i, l in enumerate(lines) if l.startswith("Summary: "))
    assert lines[summary_at] == "Summary: %d requests" % (sent[0] + N_404)
    assert max(i for i, l in enumerate(lines) if l.startswith("INTERVAL")) < summary_at
