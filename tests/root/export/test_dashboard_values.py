# SPDX-License-Identifier: GPL-2.0-only
"""Every panel of deploy/grafana/ttftrace-dashboard.json, evaluated by a real
Prometheus (Debian's) that scraped ttftrace every second during a known run,
against the run's own output (ttftrace --json -o: one line per request).

Two servers under one ttftrace: the fixture engine (tests/fixtures/engine.c,
profile fixture: exact tokenize, queue, prefill and emit stages) and the SSE
fixture (30 ms TTFT, its stages merged into server). A warm-up (a stream and
a 404 to each, so that every series exists before the measured part), then
the measured part: N_OK streams and N_404 requests to a path they answer 404. Each panel's query is evaluated
at the first scrape after the run with $__rate_interval set to the time from
the last scrape before it (ts0, whose values are the warm-up's) to that
scrape plus 1 ms: Prometheus' rate() then extrapolates nothing, so a rate is
exactly (increase in the measured part) / (seconds between the two scrapes),
and the tolerances below are rounding only (1e-6 s in the NDJSON). Quantile
panels must fall inside the bucket that holds the NDJSON's own quantile (the
rank Prometheus uses: ceil(q x n)), the only precision a histogram has.
"""
import json
import math
import os
import sys
import time
import urllib.parse

import pytest

from conftest import ROOT, Client, free_port, needs_root, sse_server_cmd

import test_prometheus as tp

sys.path.insert(0, os.path.join(ROOT, "tests", "root", "packaging"))
import test_dashboard as td  # noqa: E402  (the fixture engine and panel walk)

pytestmark = [needs_root, pytest.mark.skipif(tp._prom_reason() is not None,
                                             reason=tp._prom_reason() or "")]

N_OK, N_404, TOKENS = 24, 6, 4
SSE_TTFT_MS = 30
N_WARM = 4


def query_at(api, expr, t):
    url = "http://127.0.0.1:%d/api/v1/query?%s" % (
        api, urllib.parse.urlencode({"query": expr, "time": "%.3f" % t}))
    res = json.loads(tp.http_get(url)[2])
    assert res["status"] == "success", res
    return res["data"]["result"]


def last_scrape(api):
    """The timestamp (s, ms precision) of the latest scrape."""
    return tp.scalar(api, "timestamp(ttftrace_build_info)")


def total_requests(api):
    r = tp.query(api, "sum(ttftrace_requests_total)")
    return float(r[0]["value"][1]) if r else 0


def wait_scraped(api, n):
    """The timestamp of a scrape that saw n requests (and any later one saw as many)."""
    deadline = time.monotonic() + 20
    while total_requests(api) != n:
        assert time.monotonic() < deadline, (total_requests(api), n)
        time.sleep(0.2)
    return last_scrape(api)


def substitute(expr, window):
    for k, v in dict(td.VARS_ALL, __rate_interval=window, __interval=window).items():
        expr = expr.replace("$" + k, v)
    assert "$" not in expr, expr
    return expr


def nearest_rank(values, q):
    v = sorted(values)
    return v[max(0, math.ceil(q * len(v)) - 1)]


def bucket_of(bounds, x):
    """(lower, upper] of the bucket holding x."""
    lo = 0.0
    for b in bounds:
        if x <= b:
            return lo, b
        lo = b
    return lo, math.inf


def run(tracer, procs, tmp_path):
    """Two servers under one ttftrace -c: the fixture engine, whose requests have
    exact stages (frontend, queue, prefill, emit), and the SSE fixture, whose
    stages merge into server (no engine profile for it): stage counts differ,
    so a stage divided by its own count would overstate the mean TTFT."""
    td.require_built(td.ENGINE)
    pe, ps = free_port(), free_port()
    cmd = "%s --port %d --nodelay --tokenize-us-per-token 20 --decode-us 3000 & %s & wait" % (
        td.ENGINE, pe, sse_server_cmd("--port", ps, "--ttft-ms", SSE_TTFT_MS, "--itl-ms", 2,
                                      "--tokens", TOKENS, "--nodelay"))
    mport = free_port()
    tr = tracer("-c", cmd, "--profile", td.PROFILE, "--metrics", str(mport), "--cost")
    api = tp.start_prometheus(procs, tmp_path, mport)
    tp.wait_listen(pe)
    tp.wait_listen(ps)

    def one(port, ok):
        c = Client(port)
        if ok:
            assert c.request(max_tokens=TOKENS).status == 200
        else:
            assert c.request(path="/v1/nope").status == 404
        c.close()

    # every (server, status) series the measured part adds to, so that none
    # first appears inside the window (rate() over one sample is empty)
    for port, ok in ((pe, True), (ps, True), (pe, False), (ps, False)):
        one(port, ok)
    ts0 = wait_scraped(api, N_WARM)
    time.sleep(1.2)     # a measured request is not in the scrape at ts0
    for i in range(N_OK + N_404):
        one(pe if i % 3 else ps, i % 5 != 4)    # 16 streams to the engine, 8 to SSE
    ts1 = wait_scraped(api, N_WARM + N_OK + N_404)
    return tr, api, ts0, ts1


def test_each_panel_against_the_run(tracer, procs, tmp_path):
    with open(td.DASHBOARD) as f:
        dash = json.load(f)
    tr, api, ts0, ts1 = run(tracer, procs, tmp_path)
    secs = ts1 - ts0
    window = "%dms" % round(secs * 1000 + 1)

    def ev(expr):
        return query_at(api, substitute(expr, window), ts1)

    def one_value(expr):
        r = ev(expr)
        assert len(r) == 1, (expr, r)
        return float(r[0]["value"][1])

    ttft_bounds = sorted({float(r["metric"]["le"]) for r in tp.query(
        api, "ttftrace_ttft_seconds_bucket") if r["metric"]["le"] != "+Inf"})
    assert tr.stop() == 0, tr.stderr
    recs = sorted(tr.requests(), key=lambda r: r["t_arrival_ns"])
    assert len(recs) == N_WARM + N_OK + N_404
    meas = recs[N_WARM:]
    ok = [r for r in meas if r["status"] == 200]
    assert len(ok) == N_OK and sum(r["status"] == 404 for r in meas) == N_404
    assert all(r["stage_sum_ms"] == pytest.approx(r["ttft_ms"], abs=2e-3) for r in ok)
    summary = tr.summary()

    def hist_truth(field):
        if field == "itl_ms":
            return [x / 1e3 for r in ok for x in r["itl_ms"]]
        return [r[field] / 1e3 for r in ok if r[field] is not None]

    checked = {}
    for p in td.panels(dash):
        for t in p.get("targets", []):
            title, expr = p["title"], t["expr"]
            legend = t.get("legendFormat")
            if title == "Requests/s":
                assert one_value(expr) * secs == pytest.approx(N_OK + N_404, rel=1e-3)
            elif title == "Error ratio":
                # failures on the server's side: none; the 404s are the client's
                want = sum(r["status"] // 100 != 4 and r["status"] // 100 != 2 for r in meas)
                assert one_value(expr) == want == 0
            elif title == "In flight" or title.startswith("In-flight"):
                assert {float(r["value"][1]) for r in ev(expr)} == {0.0}
            elif title == "Requests/s by outcome":
                got = {(r["metric"]["outcome"], r["metric"]["status_class"]):
                       round(float(r["value"][1]) * secs, 2) for r in ev(expr)}
                assert got == {("ok", "2xx"): N_OK, ("error", "4xx"): N_404}, got
            elif "histogram_quantile" in expr:
                q = float(expr.split("histogram_quantile(")[1].split(",")[0])
                field = {"ttft": "ttft_ms", "tpot": "tpot_ms", "itl": "itl_ms",
                         "e2e": "e2e_ms"}[expr.split("ttftrace_")[1].split("_seconds")[0]]
                truth = nearest_rank(hist_truth(field), q)
                v = one_value(expr)
                if field == "ttft_ms":
                    lo, hi = bucket_of(ttft_bounds, truth)
                    assert lo < v <= hi, (title, q, v, truth)
                else:
                    # other buckets: within the bucket's width of the truth
                    assert v == pytest.approx(truth, rel=1.0), (title, q, v, truth)
            elif p["type"] == "heatmap":
                got = {float(r["metric"]["le"]): float(r["value"][1]) for r in ev(expr)}
                # increase() is rate x the window, whose 1 ms before ts0 is
                # extrapolated into unless the bucket was 0 at ts0
                for le, n in got.items():
                    want = sum(x <= le for x in hist_truth("ttft_ms"))
                    assert want - 1e-9 <= n <= want * (secs + 1e-3) / secs + 1e-9, (
                        le, n, want)
            elif title.startswith("TTFT stages"):
                got = {r["metric"]["stage"]: float(r["value"][1]) for r in ev(expr)}
                want = {}
                for r in ok:
                    for st, ms in r["stages_ms"].items():
                        if ms is not None and st != "tokenize":
                            want[st] = want.get(st, 0) + ms / 1e3 / len(ok)
                assert set(got) == set(want), (got, want)
                for st in want:
                    assert got[st] == pytest.approx(want[st], abs=1e-5), (st, got, want)
                mean_ttft = sum(r["ttft_ms"] for r in ok) / len(ok) / 1e3
                assert sum(got.values()) == pytest.approx(mean_ttft, rel=1e-3)
                checked["stack_s"], checked["mean_ttft_s"] = sum(got.values()), mean_ttft
            elif title.startswith("Tokenize"):
                # the engine's requests only: the SSE fixture has no tokenize probe
                tok = [r["stages_ms"]["tokenize"] / 1e3 for r in ok
                       if r["stages_ms"]["tokenize"] is not None]
                assert 0 < len(tok) < len(ok), tok
                assert one_value(expr) == pytest.approx(sum(tok) / len(tok), abs=1e-5)
            elif title.startswith("Hop stages"):
                assert ev(expr) == []   # no hop in this run (tests/root/hops)
            elif title == "Output tokens/s":
                want = sum(r["tokens"] for r in meas)
                assert want == N_OK * TOKENS
                assert one_value(expr) * secs == pytest.approx(want, rel=1e-3)
            elif title == "Prompt tokens/s":
                want = sum(r["prompt_tokens"] or 0 for r in meas)
                assert one_value(expr) * secs == pytest.approx(want, abs=1e-2)
            elif title.startswith("Dropped events"):
                assert {float(r["value"][1]) for r in ev(expr)} == {0.0}
                assert summary["counters"]["ringbuf_full"] == 0
            elif title == "Tracer events/s":
                # counters reach the sink about once a second, not with each
                # request: at most what the summary counted over the whole run
                got = {r["metric"]["name"]: float(r["value"][1]) * secs for r in ev(expr)}
                assert 0 < got["events"] <= summary["counters"]["events"], got
            elif title == "Cost of tracing per output token":
                # the window's increase over its tokens (N_OK x TOKENS, as "Output
                # tokens/s" checks): at most the whole run's counter
                counter = {"tracer": "cost_tracer_cpu_ns", "BPF programs": "cost_bpf_run_ns",
                           "traced processes": "cost_targets_cpu_ns"}[legend.split(" {{")[0]]
                inc_s = one_value(expr) * N_OK * TOKENS
                assert 0 < inc_s <= summary["counters"][counter] / 1e9 + 1e-9, (
                    legend, inc_s, summary["counters"][counter])
            elif title == "Tracer CPU, share of one core":
                inc_s = one_value(expr) * secs
                assert 0 < inc_s <= summary["counters"]["cost_tracer_cpu_ns"] / 1e9 + 1e-9, inc_s
            elif title == "ttftrace instances":
                assert one_value(expr) == 1
            else:
                pytest.fail("panel %r (%s) has no check here" % (title, legend))
            checked[title] = True
    assert len(checked) >= 20, sorted(checked)
    print("stack %.6f s, mean TTFT %.6f s over %d requests, window %s" % (
        checked["stack_s"], checked["mean_ttft_s"], len(ok), window))


def test_hop_stage_panel_against_the_run(sse_server, tracer, procs, tmp_path):
    """The hop-stage panel through a gateway: nginx (tests/root/hops) in front
    of the SSE fixture. Each (hop, stage) is that stage's mean over the
    requests that crossed processes, from the NDJSON's hop_stages_ms, and
    the stack adds up to their mean TTFT."""
    sys.path.insert(0, os.path.join(ROOT, "tests", "root", "hops"))
    import test_gateway as tg
    with open(td.DASHBOARD) as f:
        dash = json.load(f)
    (expr,) = [t["expr"] for p in td.panels(dash) if p["title"].startswith("Hop stages")
               for t in p["targets"]]
    srv = sse_server("--ttft-ms", str(SSE_TTFT_MS), "--itl-ms", "2", "--tokens", str(TOKENS),
                     "--nodelay")
    gw = tg.start_nginx(procs, tmp_path, srv.port)
    mport = free_port()
    tr = tracer("--port", gw, "--metrics", str(mport))
    api = tp.start_prometheus(procs, tmp_path, mport)

    def one():
        c = Client(gw)
        assert c.request(max_tokens=TOKENS).status == 200
        c.close()

    one()
    ts0 = wait_scraped(api, 1)
    time.sleep(1.2)
    n = 12
    for _ in range(n):
        one()
    ts1 = wait_scraped(api, 1 + n)
    secs = ts1 - ts0
    r = query_at(api, substitute(expr, "%dms" % round(secs * 1000 + 1)), ts1)
    got = {(x["metric"]["hop"], x["metric"]["stage"]): float(x["value"][1]) for x in r}
    assert tr.stop() == 0, tr.stderr
    recs = sorted(tr.requests(), key=lambda x: x["t_arrival_ns"])[1:]
    assert len(recs) == n and all(x.get("hop_stages_ms") for x in recs), recs[:1]
    want = {}
    for x in recs:
        for st, ms in x["hop_stages_ms"].items():
            want[st] = want.get(st, 0) + ms / 1e3 / n
    assert {st for _, st in got} == set(want), (got, want)
    for (hop, st), v in got.items():
        assert v == pytest.approx(want[st], abs=1e-5), (hop, st, v, want[st])
    mean_ttft = sum(x["ttft_ms"] for x in recs) / n / 1e3
    assert sum(got.values()) == pytest.approx(mean_ttft, rel=1e-3), (got, mean_ttft)
