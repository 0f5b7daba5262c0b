# SPDX-License-Identifier: GPL-2.0-only
"""ttftrace --json --perfetto against the fixture server (programmed delays), stopped
with SIGINT (root, BTF): the timeline is complete trace-event JSON whose request
stages sum to each request's TTFT, whose thread slices show the server sleeping
through the programmed TTFT, and whose connection counters match the request and
response sizes; then `ttftrace report` of the same run renders in headless Chromium.

No trace viewer UI runs offline here (ui.perfetto.dev needs the network and
chrome://tracing is not available headless), so the format is checked
structurally against the Trace Event Format here (the JSON Object Format with
traceEvents, and ph/ts/pid/tid on every event); tests/root/export/test_perfetto.py
parses the output with DevTools' trace engine."""
import json
import os
from collections import defaultdict

import pytest

from conftest import Client, needs_root
from report_helpers import page_data, render, report

pytestmark = needs_root

TTFT_MS = 60
ITL_MS = 10
TOKENS = 8
PHASES = {"X", "i", "C", "M", "s", "f"}


def run_traced(sse_server, tracer, tmp_path):
    srv = sse_server("--ttft-ms", str(TTFT_MS), "--itl-ms", str(ITL_MS), "--tokens", str(TOKENS))
    pf = str(tmp_path / "timeline.json")
    tr = tracer("--port", srv.port, "--perfetto", pf)   # --perfetto-sched served (default)
    n = 0
    for _ in range(2):                    # two connections, two requests each
        c = Client(srv.port)
        for _ in range(2):
            r = c.request()
            assert r.status == 200
            n += 1
        c.close()
    tr.wait_requests(n, timeout_s=5)
    rc = tr.stop()                        # SIGINT: the file must still be complete
    assert rc == 0, tr.stderr
    reqs = tr.requests()
    assert len(reqs) == n, tr.stderr
    return srv, tr, pf, reqs


def test_perfetto_timeline_and_report(sse_server, tracer, tmp_path):
    srv, tr, pf, reqs = run_traced(sse_server, tracer, tmp_path)
    assert not [f for f in os.listdir(tmp_path) if ".tmp." in f]
    with open(pf) as f:
        trace = json.load(f)
    assert trace["displayTimeUnit"] == "ms"
    evs = trace["traceEvents"]
    for e in evs:
        for k in ("ph", "ts", "pid", "tid"):
            assert k in e, e
        assert e["ph"] in PHASES, e
        if e["ph"] == "X":
            assert e["dur"] >= 0, e
        if e["ph"] == "M":
            assert e["name"] in ("process_name", "thread_name") and e["args"]["name"], e

    # Requests: a span on a lane, stages tiling [arrival, first token] and summing to
    # TTFT, tokens. A lane holds one request at a time: an event belongs to the
    # request that began last at or before it on its lane.
    by_req = defaultdict(list)
    lanes = defaultdict(list)
    for e in evs:
        if e["pid"] == 0x40000001 and e.get("cat") == "request" and e["ph"] == "X":
            lanes[e["tid"]].append((e["ts"], e["args"]["id"]))
    for l in lanes.values():
        l.sort()
    for e in evs:
        if e["pid"] == 0x40000001 and e["ph"] != "M":
            own = [i for ts, i in lanes[e["tid"]] if ts <= e["ts"] + 1e-3]
            if own:
                by_req[own[-1]].append(e)
    assert sorted(i for l in lanes.values() for _, i in l) == sorted(r["id"] for r in reqs)
    for r in reqs:
        mine = by_req[r["id"]]
        span = [e for e in mine if e.get("cat") == "request" and e["ph"] == "X"]
        assert len(span) == 1
        stages = sorted((e for e in mine if e.get("cat") == "stage"), key=lambda e: e["ts"])
        want = [k for k in ("net_in", "read_wait", "frontend", "server", "queue", "prefill",
                            "copy", "emit", "net_out") if r["stages_ms"][k] is not None]
        assert [e["name"] for e in stages] == want
        assert stages[0]["ts"] == pytest.approx(span[0]["ts"], abs=1e-3)
        for a, b in zip(stages, stages[1:]):
            assert b["ts"] == pytest.approx(a["ts"] + a["dur"], abs=1e-3)
        assert sum(e["dur"] for e in stages) / 1000 == pytest.approx(r["ttft_ms"], abs=0.002)
        for e in stages:
            assert e["dur"] / 1000 == pytest.approx(r["stages_ms"][e["name"]], abs=0.001)
        assert span[0]["dur"] / 1000 == pytest.approx(r["e2e_ms"], abs=0.002)
        assert len([e for e in mine if e.get("cat") == "token"]) == r["token_events"] == TOKENS

    # Threads: the thread that wrote each first token slept through most of the TTFT.
    sched = defaultdict(list)
    for e in evs:
        if e["pid"] == srv.pid and e.get("cat") == "sched":
            assert e["name"] in ("running", "runnable", "blocked")
            sched[e["tid"]].append(e)
    for tid, sl in sched.items():
        sl.sort(key=lambda e: e["ts"])
        for a, b in zip(sl, sl[1:]):
            assert b["ts"] >= a["ts"] + a["dur"] - 1e-3, (a, b)   # one state at a time
    for r in reqs:
        t0 = r["t_arrival_ns"] / 1000
        t1 = r["t_first_token_ns"] / 1000
        slept = sum(min(e["ts"] + e["dur"], t1) - max(e["ts"], t0)
                    for e in sched[r["tid_tx"]]
                    if e["name"] == "blocked" and e["ts"] < t1 and e["ts"] + e["dur"] > t0)
        assert slept / 1000 > TTFT_MS / 2, (r["id"], slept)

    # Connections: the last counter of each holds the bytes of its requests.
    names = {e["tid"]: e["args"]["name"] for e in evs
             if e["pid"] == 0x40000002 and e["ph"] == "M" and e["name"] == "thread_name"}
    last = {}
    for e in evs:
        if e["pid"] == 0x40000002 and e["ph"] == "C":
            last[e["name"]] = e["args"]
    conns = defaultdict(lambda: [0, 0])
    for r in reqs:
        conns[r["conn"]][0] += r["req_bytes"]
        conns[r["conn"]][1] += r["resp_bytes"]
    assert len(conns) == 2
    for conn, (nin, nout) in conns.items():
        seq = [t for t, n in names.items() if n.endswith(" " + conn)]
        assert len(seq) == 1, (conn, names)
        assert last["conn %d bytes" % seq[0]] == {"in": nin, "out": nout}

    # The report of the same run.
    ndjson = tr.out_path
    html = tmp_path / "live.html"
    p = report(ndjson, "-o", html, "--slo", "ttft_p95=%dms" % (TTFT_MS * 3))
    assert p.returncode == 0, p.stderr
    assert page_data(html)["meta"]["requests"] == len(reqs)
    dom, errors = render(tmp_path, html, "report_live")
    assert not errors, errors
    assert 'data-requests="%d"' % len(reqs) in dom and "All 1 SLOs met" in dom
