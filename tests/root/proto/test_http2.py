# SPDX-License-Identifier: GPL-2.0-only
"""HTTP/2 cleartext (h2c) from hypercorn serving SSE (tests/root/proto/h2_app.py),
traced live (root, BPF):

- `curl --http2-prior-knowledge`, one stream;
- python3-h2: three streams in flight on one connection;
- python3-h2 on a connection opened before ttftrace attached: its HPACK
  tables are unknown, so a path the client sends as a reference to its
  dynamic table is "unknown" (flag hpack-unsynced) while the stream is still
  timed, and a path sent as a literal is known again.

Each stream is a request: TTFT (and TTFB) no less than the server waited
and no more than the client's own measurement (proto_helpers.close_ms),
token and event counts exact.
"""
import os
import subprocess
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from conftest import needs_root  # noqa: E402
from proto_helpers import (HERE, RT, H2Client, by_client_port, close_ms,  # noqa: E402
                           curl_h2_stream, free_port, realtime, start_server)

pytestmark = needs_root

PATH = "/v1/chat/completions"


def chat_token(o):
    return isinstance(o, dict) and any((c.get("delta") or {}).get("content")
                                       for c in o.get("choices", []))


def server(procs, tracer=None):
    port = free_port()
    srv = start_server(procs, [sys.executable, os.path.join(HERE, "h2_app.py"), str(port)])
    return port, srv


def check(rec, r, n_tok, ttft_ms, path=PATH, ttfb=True):
    """`ttft_ms`: what the server was told to wait before the first token."""
    toks = [o for o, _ in r.events if chat_token(o)]
    assert len(toks) == n_tok  # the server did what it was asked
    assert rec["status"] == 200 and rec["method"] == "POST" and rec["path"] == path, rec
    assert rec["tokens"] == n_tok and rec["token_events"] == n_tok, rec
    assert rec["token_source"] == "usage", rec
    assert rec["stream_events"] == len(r.events) == n_tok + 3, rec
    assert "stream" in rec["flags"] and "aborted" not in rec["flags"], rec
    assert "done" not in rec["flags"]
    close_ms(rec["ttft_ms"], r.t_first_token_ns, r.t_sent_ns, "TTFT", floor_ms=ttft_ms)
    if ttfb:
        close_ms(rec["ttfb_ms"], r.t_head_ns, r.t_sent_ns, "TTFB", floor_ms=0)
    assert len(rec["itl_ms"]) == n_tok - 1, rec


def test_curl_prior_knowledge(procs, tracer, tmp_path):
    port, srv = server(procs)
    tr = tracer("-p", srv.pid)
    trace = tmp_path / "trace.bin"
    p = subprocess.run(RT + ["curl", "-s", "-N", "--http2-prior-knowledge", "-o", "/dev/null",
                             "--trace", str(trace), "--trace-time", "-w", "%{local_port}",
                             "-d", '{"tokens": 5, "ttft_ms": 80, "itl_ms": 15}',
                             "http://127.0.0.1:%d%s" % (port, PATH)],
                       capture_output=True, text=True, timeout=30)
    assert p.returncode == 0, p.stderr
    tr.wait_requests(1)
    assert tr.stop() == 0, tr.stderr
    recs = by_client_port(tr.requests()).get(int(p.stdout), [])
    assert len(recs) == 1, tr.requests()
    r = curl_h2_stream(trace, chat_token)
    assert r.status == 200
    check(recs[0], r, 5, 80)
    assert recs[0]["conn_seq"] == 0


def test_h2_three_concurrent_streams(procs, tracer):
    port, srv = server(procs)
    tr = tracer("-p", srv.pid)
    c = H2Client(port)
    time.sleep(0.05)
    plans = [(4, 120, 10), (6, 60, 20), (3, 30, 40)]  # tokens, ttft_ms, itl_ms
    with realtime():
        sids = [c.start(PATH, {"tokens": n, "ttft_ms": t, "itl_ms": i}, chat_token)
                for n, t, i in plans]
        res = c.run()
    c.close()
    tr.wait_requests(3)
    assert tr.stop() == 0, tr.stderr
    recs = by_client_port(tr.requests()).get(c.local_port, [])
    assert len(recs) == 3, tr.requests()
    # the streams' requests, in the order they began (conn_seq)
    for (n, ttft, _), sid, rec in zip(plans, sids, recs):
        check(rec, res[sid], n, ttft)
    # in flight together: the shortest TTFT ended first, though it began last
    assert recs[2]["ttft_ms"] < recs[1]["ttft_ms"] < recs[0]["ttft_ms"], recs


def test_connection_begun_before_tracing(procs, tracer):
    port, srv = server(procs)
    c = H2Client(port)
    c.start(PATH, {"tokens": 2, "ttft_ms": 10, "itl_ms": 5}, chat_token)
    c.run()  # the client's HPACK encoder now has :path in its dynamic table
    tr = tracer("-p", srv.pid)
    time.sleep(0.1)
    with realtime():
        c.results = {}
        s1 = c.start(PATH, {"tokens": 4, "ttft_ms": 60, "itl_ms": 15}, chat_token)
        r1 = c.run()[s1]
        c.results = {}
        s2 = c.start("/v1/completions", {"tokens": 3, "ttft_ms": 40, "itl_ms": 15}, chat_token)
        r2 = c.run()[s2]
    c.close()
    tr.wait_requests(2)
    assert tr.stop() == 0, tr.stderr
    recs = by_client_port(tr.requests()).get(c.local_port, [])
    assert len(recs) == 2, tr.requests()
    # :path was a reference to an entry added before tracing: unknown, and said so
    assert recs[0]["path"] == "unknown" and "hpack-unsynced" in recs[0]["flags"], recs[0]
    check(recs[0], r1, 4, 60, path="unknown", ttfb=False)
    # a new path is a literal: known, though the table still is not
    assert recs[1]["path"] == "/v1/completions", recs[1]
    check(recs[1], r2, 3, 40, path="/v1/completions", ttfb=False)
