# SPDX-License-Identifier: GPL-2.0-only
"""ZMTP (root, BPF): a pyzmq PUSH -> PULL pair over tcp://127.0.0.1 in one
Python process (tests/root/proto/zmtp_app.py, vLLM-like msgpack messages),
traced with `ttftrace -p PID`. Both sockets are the process's: the PUSH
connection shows every message leaving, the PULL connection every message
arriving, each with the request ids its msgpack body names; no request
objects, and no payload text in the output."""
import json
import os
import subprocess
import sys

import pytest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from conftest import TTFTRACE, needs_root  # noqa: E402
from proto_helpers import HERE  # noqa: E402

pytest.importorskip("zmq")
pytest.importorskip("msgpack")
pytestmark = needs_root

N = 6


def rid(i):
    return "chatcmpl-%032x" % (0xfeed0000000000000000000000000000 + i)


def test_zmtp_push_pull(procs, tracer, tmp_path):
    app = procs.add(subprocess.Popen(
        ["/usr/bin/python3", os.path.join(HERE, "zmtp_app.py"), str(N)],
        stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE))
    assert b"listening" in app.stdout.readline(), app.stderr.read()
    rec = str(tmp_path / "zmtp.rec")
    tr = tracer("-p", app.pid, "--record", rec)
    app.stdin.write(b"go\n")   # connect now: the tracer sees the greetings
    app.stdin.close()
    line = app.stdout.readline()
    assert b"done" in line, (line, app.stderr.read())
    app.wait(timeout=10)
    # its only process gone, the tracer ends by itself (exit code 7, target gone)
    assert tr.wait_exit(10) == 7, tr.stderr
    assert "All traced processes exited." in tr.stderr
    recs = tr.records()
    z = [r for r in recs if r.get("type") == "zmtp"]
    assert [r for r in recs if r.get("type") == "request"] == []
    assert len(z) == 2, (z, tr.stderr)
    push = [r for r in z if r["out"]["messages"]]
    pull = [r for r in z if r["in"]["messages"]]
    assert len(push) == 1 and len(pull) == 1, z
    push, pull = push[0], pull[0]
    want = sorted(rid(i) for i in range(N))
    # N requests and one outputs batch, each way once
    assert push["out"]["messages"] == N + 1 and push["in"]["messages"] == 0, push
    assert pull["in"]["messages"] == N + 1 and pull["out"]["messages"] == 0, pull
    assert push["out"]["socket_type"] == "PUSH" and push["in"]["socket_type"] == "PULL", push
    assert pull["in"]["socket_type"] == "PUSH" and pull["out"]["socket_type"] == "PULL", pull
    assert push["out"]["bytes"] == pull["in"]["bytes"] > 0
    for r in (push, pull):
        assert r["pid"] == app.pid
        assert sorted(r["ids"]) == want and r["ids_seen"] == N, r
        assert r["in"]["lost_sync"] == 0 and r["out"]["lost_sync"] == 0, r
        assert r["in"]["partial"] == 0 and r["out"]["partial"] == 0, r
        assert r["messages_kept"] == N + 1 and r["messages_dropped"] == 0, r
        assert r["out"]["mechanism"] == "NULL" and r["out"]["minor"] == 1, r
    c = tr.summary()["counters"]
    assert c["zmtp_connections"] == 2 and c["zmtp_lost_sync"] == 0, c
    assert c["zmtp_messages_out"] == N + 1 and c["zmtp_messages_in"] == N + 1, c
    # each id once in its request, once in the batch; both sockets
    assert c["zmtp_request_ids"] == 2 * 2 * N, c
    text = open(tr.out_path).read()
    assert "secret" not in text and "temperature" not in text
    # a replay of the recording says the same of both connections
    out = str(tmp_path / "replay.ndjson")
    subprocess.run([TTFTRACE, "replay", rec, "--json", "-q", "-o", out], check=True, timeout=60)
    with open(out) as f:
        again = [json.loads(x) for x in f if '"type":"zmtp"' in x]
    assert again == z
