# SPDX-License-Identifier: GPL-2.0-only
"""1xx interim responses (root, BPF): curl posts a 2 MB body with
`Expect: 100-continue` to the mock server (tests/root/proto/mock_sse.py), once
when the server ignores Expect (curl waits its 1 s timeout, then sends the
body) and once when it answers 100 Continue; and a 103 Early Hints before
a response.

The 1xx is not the response: TTFB and TTFT are the final response's, each
no less than the server's waits and its own logged read-to-write, and no
more than curl's own trace shows
(--trace-time; differences of its clock; proto_helpers.close_ms).
The client's wait for 100-continue is inside net_in, reported as
expect_wait_ms and flagged expect-100, and equals the gap curl's trace
shows between sending the head and sending the body.
"""
import datetime
import json
import os
import re
import subprocess
import sys

import pytest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from conftest import needs_root  # noqa: E402
from proto_helpers import (HERE, RT, by_client_port, close_ms, free_port,  # noqa: E402
                           request_sent_ns, server_ms, server_stamps, start_server)

pytestmark = needs_root

LINE = re.compile(r"^(\d\d):(\d\d):(\d\d)\.(\d{6}) (=>|<=|==) (.*)$")


def parse_trace(path):
    """curl --trace-ascii --trace-time: [(t_ns, dir, title, data)], data joined."""
    out = []
    with open(path, errors="replace") as f:
        for raw in f:
            raw = raw.rstrip("\n")
            m = LINE.match(raw)
            if m:
                h, mi, s, us = (int(x) for x in m.groups()[:4])
                t = ((h * 60 + mi) * 60 + s) * 10**9 + us * 1000
                out.append([t, m.group(5), m.group(6), ""])
            elif out and re.match(r"^[0-9a-f]{4}: ", raw):
                out[-1][3] += raw[6:]
    return out


def run_curl(port, tmp_path, cfg, expect=True):
    body = tmp_path / "body.json"
    body.write_text(json.dumps({"model": "m", "messages": [
        {"role": "user", "content": "x" * (2 << 20)}]}))
    trace = tmp_path / "trace.txt"
    cmd = ["curl", "-s", "-N", "-o", str(tmp_path / "out.txt"), "--trace-time",
           "--trace-ascii", str(trace), "-H", "Content-Type: application/json",
           "-H", "X-Mock: " + json.dumps(cfg), "--data-binary", "@" + str(body),
           "-w", "%{local_port}", "http://127.0.0.1:%d/v1/chat/completions" % port]
    # curl sends Expect: 100-continue by itself for bodies over 1 MB: say it, or turn it off
    cmd[1:1] = ["-H", "Expect: 100-continue" if expect else "Expect:"]
    p = subprocess.run(RT + cmd, capture_output=True, text=True, timeout=30)
    assert p.returncode == 0, p.stderr
    ev = parse_trace(trace)
    # curl traces the head after its write returned: the stamp before it
    t_head_sent = request_sent_ns(ev)
    t_body_sent = next(t for t, d, ti, _ in ev if d == "=>" and ti.startswith("Send data"))
    recv_heads = [(t, data) for t, d, ti, data in ev if d == "<=" and ti.startswith("Recv header")]
    t_final_head = next(t for t, data in recv_heads if re.match(r"HTTP/1.1 [2-5]", data))
    interim = [t for t, data in recv_heads if re.match(r"HTTP/1.1 1", data)]
    t_first_token = next(t for t, d, ti, data in ev if d == "<=" and ti.startswith("Recv data")
                         and '"content": "first"' in data)
    return dict(port=int(p.stdout), sent=t_head_sent, body=t_body_sent, head=t_final_head,
                interim=interim, token=t_first_token)


CFG = {"format": "chat_n2", "tokens": 3, "head_ms": 40, "pre_ms": 0, "ttft_ms": 30,
       "itl_ms": 10}


def trace_one(procs, tracer, tmp_path, cfg, expect=True):
    port = free_port()
    log = str(tmp_path / "server.log")
    srv = start_server(procs, [sys.executable, os.path.join(HERE, "mock_sse.py"), str(port), log])
    tr = tracer("-p", srv.pid)
    c = run_curl(port, tmp_path, cfg, expect)
    st = server_stamps(log, 1)[(c["port"], 0)]
    tr.wait_requests(1)
    assert tr.stop() == 0, tr.stderr
    recs = by_client_port(tr.requests()).get(c["port"], [])
    assert len(recs) == 1, tr.requests()
    rec = recs[0]
    print({k: rec.get(k) for k in ("ttfb_ms", "ttfe_ms", "ttft_ms", "interim_ms", "expect_wait_ms",
                                   "stages_ms", "flags")},
          {k: (v - c["sent"]) / 1e6 for k, v in c.items() if k not in ("port", "interim")})
    assert rec["status"] == 200 and rec["tokens"] == 3 and rec["token_events"] == 3, rec
    assert rec["req_bytes"] > 2 << 20, rec
    # the server's waits after it has the whole request: floors (close_ms)
    close_ms(rec["ttft_ms"], c["token"], c["sent"], "TTFT",
             floor_ms=cfg["head_ms"] + cfg["pre_ms"] + cfg["ttft_ms"],
             server_ms=server_ms(st, "t_first_token_ns"))
    close_ms(rec["ttfb_ms"], c["head"], c["sent"], "TTFB (the final response's head)",
             floor_ms=cfg["head_ms"], server_ms=server_ms(st, "t_head_ns"))
    return rec, c


def test_expect_ignored(procs, tracer, tmp_path):
    rec, c = trace_one(procs, tracer, tmp_path, CFG)
    assert not c["interim"]
    assert "expect-100" in rec["flags"] and "interim" not in rec["flags"], rec
    assert rec["interim_ms"] is None, rec
    # curl gave up waiting after its 1 s default and sent the body
    client_wait_ms = (c["body"] - c["sent"]) / 1e6
    assert 900 < client_wait_ms < 1200, client_wait_ms
    close_ms(rec["expect_wait_ms"], c["body"], c["sent"], "expect wait")
    assert rec["ttft_ms"] > rec["expect_wait_ms"] + 60, rec
    if "stages_ms" in rec:
        assert rec["net_in_expect_wait_ms"] == pytest.approx(rec["expect_wait_ms"], abs=0.01)
        assert rec["stages_ms"]["net_in"] >= rec["expect_wait_ms"] - 0.01, rec


def test_expect_continue(procs, tracer, tmp_path):
    rec, c = trace_one(procs, tracer, tmp_path, dict(CFG, **{"continue": True}))
    assert len(c["interim"]) == 1
    assert "expect-100" in rec["flags"] and "interim" in rec["flags"], rec
    close_ms(rec["interim_ms"], c["interim"][0], c["sent"], "100 Continue")
    close_ms(rec["expect_wait_ms"], c["body"], c["sent"], "expect wait")
    assert rec["expect_wait_ms"] < 50, rec  # not curl's 1 s timeout: the 100 came
    assert rec["ttfb_ms"] > rec["interim_ms"] + 30, rec


def test_early_hints(procs, tracer, tmp_path):
    rec, c = trace_one(procs, tracer, tmp_path, dict(CFG, early_hints=True), expect=False)
    assert len(c["interim"]) == 1
    assert "interim" in rec["flags"] and "expect-100" not in rec["flags"], rec
    assert rec["expect_wait_ms"] is None, rec
    close_ms(rec["interim_ms"], c["interim"][0], c["sent"], "103 Early Hints")
    assert rec["ttfb_ms"] > rec["interim_ms"] + 30, rec
