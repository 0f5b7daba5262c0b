# SPDX-License-Identifier: GPL-2.0-only
"""Compressed SSE bodies, traced live (root, BPF).

- Starlette's GZipMiddleware (Debian's 0.26 compresses text/event-stream)
  under uvicorn, read by `curl --compressed`, and under hypercorn over
  HTTP/2 (`curl --http2-prior-knowledge --compressed`);
- the mock server (tests/root/proto/mock_sse.py) with gzip and deflate flushed
  after every event, so that each token leaves in its own write;
- a body labelled br (not decoded here) and a gzip stream whose first write
  is larger than the write capture (--capture-send-bytes, 8192 by default):
  both `opaque`, TTFT at the first body write, no token counts.

TTFT no less than the server's waits (and the mock server's own logged
read-to-write) and no more than the client's own
measurement (curl's --trace times, or the Python client's; see
proto_helpers.close_ms), token and event counts exact where they are reported.
"""
import json
import os
import re
import socket
import subprocess
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from conftest import needs_root  # noqa: E402
from proto_helpers import (HERE, RT, Timed, by_client_port, close_ms, curl_h2_stream,  # noqa: E402
                           curl_stream,
                           free_port, post_stream, realtime, server_ms, server_stamps,
                           start_server)

pytestmark = needs_root


def chat_token(o):
    return isinstance(o, dict) and any((c.get("delta") or {}).get("content")
                                       for c in o.get("choices", []))


def curl(port, tmp_path, body, path="/v1/chat/completions", headers=()):
    trace = tmp_path / "trace.bin"
    cmd = RT + ["curl", "-s", "-N", "--compressed", "-o", str(tmp_path / "out.txt"),
                "--trace", str(trace), "--trace-time", "-w", "%{local_port}",
                "-H", "Content-Type: application/json", "-d", json.dumps(body)]
    for h in headers:
        cmd += ["-H", h]
    p = subprocess.run(cmd + ["http://127.0.0.1:%d%s" % (port, path)], capture_output=True,
                       text=True, timeout=30)
    assert p.returncode == 0, p.stderr
    r = curl_stream(trace, chat_token)
    r.local_port = int(p.stdout)
    text = (tmp_path / "out.txt").read_text()  # curl's own decoding
    assert len(re.findall(r'"content": "[^"]', text)) == len([o for o, _ in r.events if chat_token(o)])
    return r


def traced(procs, tracer, argv, drive, n=1):
    srv = start_server(procs, argv)
    tr = tracer("-p", srv.pid)
    results = drive()
    tr.wait_requests(n)
    assert tr.stop() == 0, tr.stderr
    recs = by_client_port(tr.requests())
    out = []
    for r in results:
        got = recs.get(r.local_port, [])
        assert len(got) == 1, tr.requests()
        out.append((r, got[0]))
    return out, tr


def logged_ms(r, key):
    """The mock server's own interval to its write of `key` (mock() sets
    r.stamps), or None where the server logs nothing."""
    st = getattr(r, "stamps", None)
    return server_ms(st, key) if st else None


def check_decoded(rec, r, n_tok, ttft_ms):
    """`ttft_ms`: the least the server waited before the first token."""
    toks = [o for o, _ in r.events if chat_token(o)]
    assert len(toks) == n_tok
    assert "decoded" in rec["flags"] and "opaque" not in rec["flags"], rec
    assert rec["tokens"] == n_tok and rec["token_events"] == n_tok, rec
    assert rec["stream_events"] == len(r.events), rec
    close_ms(rec["ttft_ms"], r.t_first_token_ns, r.t_sent_ns, "TTFT", floor_ms=ttft_ms,
             server_ms=logged_ms(r, "t_first_token_ns"))


def test_starlette_gzip_middleware(procs, tracer, tmp_path):
    port = free_port()
    n = 6
    body = {"tokens": n, "ttft_ms": 80, "itl_ms": 15}
    pairs, _ = traced(procs, tracer, [sys.executable, os.path.join(HERE, "gzip_app.py"),
                                      str(port)], lambda: [curl(port, tmp_path, body)])
    r, rec = pairs[0]
    assert r.headers.get("content-encoding") == "gzip"
    check_decoded(rec, r, n, body["ttft_ms"])
    assert rec["token_source"] == "usage", rec


def mock(procs, tracer, tmp_path, cfg, client="curl"):
    port = free_port()
    log = str(tmp_path / "server.log")
    argv = [sys.executable, os.path.join(HERE, "mock_sse.py"), str(port), log]

    def drive():
        if client == "curl":
            return [curl(port, tmp_path, cfg)]
        sock = socket.create_connection(("127.0.0.1", port))
        time.sleep(0.05)
        with realtime():
            r = post_stream(sock, Timed(sock), "/v1/chat/completions", cfg, chat_token)
        sock.close()
        return [r]

    r, rec = traced(procs, tracer, argv, drive)[0][0]
    r.stamps = server_stamps(log, 1)[(r.local_port, 0)]
    return r, rec


SCHED = {"format": "chat_n2", "tokens": 5, "head_ms": 10, "pre_ms": 10, "ttft_ms": 60,
         "itl_ms": 20}
SCHED_TTFT_MS = SCHED["head_ms"] + SCHED["pre_ms"] + SCHED["ttft_ms"]


def test_gzip_flushed_per_event(procs, tracer, tmp_path):
    r, rec = mock(procs, tracer, tmp_path, dict(SCHED, coding="gzip"))
    assert r.headers.get("content-encoding") == "gzip"
    check_decoded(rec, r, 5, SCHED_TTFT_MS)
    # each token in its own write: the gaps are the schedule's
    assert len(rec["itl_ms"]) == 4 and all(15 < x < 30 for x in rec["itl_ms"]), rec


def test_deflate_flushed_per_event(procs, tracer, tmp_path):
    r, rec = mock(procs, tracer, tmp_path, dict(SCHED, coding="deflate"), client="python")
    check_decoded(rec, r, 5, SCHED_TTFT_MS)


def check_opaque(rec, r):
    """The mock server's first body write comes after SCHED's head and pre waits."""
    assert "opaque" in rec["flags"] and "decoded" not in rec["flags"], rec
    assert rec["tokens"] is None and rec["token_events"] is None, rec
    assert rec["stream_events"] is None and rec["tpot_ms"] is None and rec["itl_ms"] == [], rec
    close_ms(rec["ttft_ms"], r.t_first_body_ns, r.t_sent_ns, "TTFT (first body write)",
             floor_ms=SCHED["head_ms"] + SCHED["pre_ms"],
             server_ms=logged_ms(r, "t_first_event_ns"))


def test_br_is_opaque(procs, tracer, tmp_path):
    r, rec = mock(procs, tracer, tmp_path, dict(SCHED, coding="br"), client="python")
    check_opaque(rec, r)


def test_gzip_start_not_captured_is_opaque(procs, tracer, tmp_path):
    # the first compressed write is about 20 kB: more than the 8192 bytes captured
    r, rec = mock(procs, tracer, tmp_path, dict(SCHED, coding="gzip", big_first=20000),
                  client="python")
    assert len([o for o, _ in r.events if chat_token(o)]) == 5  # the client could read it
    check_opaque(rec, r)
    assert "trunc" in rec["flags"], rec


def test_starlette_gzip_over_http2(procs, tracer, tmp_path):
    port = free_port()
    n = 5
    body = {"tokens": n, "ttft_ms": 60, "itl_ms": 15}
    srv = start_server(procs, [sys.executable, os.path.join(HERE, "gzip_app.py"), str(port),
                               "--hypercorn"])
    tr = tracer("-p", srv.pid)
    trace = tmp_path / "trace.bin"
    p = subprocess.run(RT + ["curl", "-s", "-N", "--http2-prior-knowledge", "--compressed",
                             "-o", str(tmp_path / "out.txt"), "--trace", str(trace),
                             "--trace-time", "-w", "%{local_port}",
                             "-H", "Content-Type: application/json", "-d", json.dumps(body),
                             "http://127.0.0.1:%d/v1/chat/completions" % port],
                       capture_output=True, text=True, timeout=30)
    assert p.returncode == 0, p.stderr
    tr.wait_requests(1)
    assert tr.stop() == 0, tr.stderr
    recs = by_client_port(tr.requests()).get(int(p.stdout), [])
    assert len(recs) == 1, tr.requests()
    rec = recs[0]
    # curl shows HTTP/2 bodies before content decoding: decode its trace here
    r = curl_h2_stream(trace, chat_token, decode="gzip")
    assert len(re.findall(r'"content": "[^"]', (tmp_path / "out.txt").read_text())) == n
    check_decoded(rec, r, n, body["ttft_ms"])
