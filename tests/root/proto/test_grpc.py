# SPDX-License-Identifier: GPL-2.0-only
"""gRPC server streaming over HTTP/2 (root, BPF): python3-grpcio with a
generic handler (tests/root/proto/grpc_app.py), three concurrent calls on one
channel. Each response message is one event; with a token profile
(--grpc-profile: field 1, packed token ids) the tokens are the ids each
message holds, without one the events are chunks (flag chunks). TTFT
between the server's wait and the client's own receipt of the first
message (tests/root/proto/proto_helpers.py close_ms), event and
token counts exact; grpc-status from the trailers (an aborted call is an
error).
"""
import json
import os
import sys
import threading
import time

import pytest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from conftest import needs_root  # noqa: E402
from proto_helpers import (HERE, by_client_port, close_ms, free_port, realtime,  # noqa: E402
                           start_server)

grpc = pytest.importorskip("grpc")
pytestmark = needs_root

METHOD = "/llm.Generator/Stream"
PLANS = [([1, 2, 3, 1], 150, 20), ([2, 2, 2, 2, 2, 2], 80, 15), ([5, 1], 40, 30)]


def run_calls(port, plans):
    ch = grpc.insecure_channel("127.0.0.1:%d" % port)
    grpc.channel_ready_future(ch).result(timeout=10)
    call = ch.unary_stream(METHOD)  # bytes in, bytes out: no generated code
    out = [None] * len(plans)

    def one(i, plan, ttft, itl):
        t0 = time.monotonic_ns()
        times, msgs = [], []
        for m in call(json.dumps({"plan": plan, "ttft_ms": ttft, "itl_ms": itl}).encode()):
            times.append(time.monotonic_ns())
            msgs.append(m)
        out[i] = (t0, times, msgs)

    ths = [threading.Thread(target=one, args=(i,) + p) for i, p in enumerate(plans)]
    for t in ths:
        t.start()
        time.sleep(0.005)  # start order = stream order
    for t in ths:
        t.join(30)
    ch.close()
    return out


def trace_calls(procs, tracer, tmp_path, profile):
    port = free_port()
    srv = start_server(procs, [sys.executable, os.path.join(HERE, "grpc_app.py"), str(port)])
    args = ["-p", srv.pid]
    if profile:
        pf = tmp_path / "grpc.profile"
        pf.write_text("# token ids: field 1, packed\n%s 1#\n" % METHOD)
        args += ["--grpc-profile", str(pf)]
    tr = tracer(*args)
    with realtime():
        res = run_calls(port, PLANS)
    tr.wait_requests(3)
    assert tr.stop() == 0, tr.stderr
    recs = [r for r in tr.requests() if r["path"] == METHOD]
    assert len(recs) == 3, tr.requests()
    # one channel, one connection, three streams
    conns = by_client_port(recs)
    assert len(conns) == 1, recs
    recs.sort(key=lambda r: r["conn_seq"])
    return recs, res


def check_common(rec, res, plan, ttft_ms):
    t0, times, msgs = res
    assert len(msgs) == len(plan)
    assert rec["status"] == 200 and rec["method"] == "POST", rec
    assert "stream" in rec["flags"] and "error" not in rec["flags"], rec
    assert rec["token_events"] == len(plan) and rec["stream_events"] == len(plan), rec
    close_ms(rec["ttft_ms"], times[0], t0, "TTFT", floor_ms=ttft_ms)
    assert len(rec["itl_ms"]) == len(plan) - 1, rec


def test_grpc_three_streams_profile(procs, tracer, tmp_path):
    recs, res = trace_calls(procs, tracer, tmp_path, profile=True)
    for (plan, ttft_ms, _), rec, r in zip(PLANS, recs, res):
        check_common(rec, r, plan, ttft_ms)
        assert rec["tokens"] == sum(plan), rec
        assert "chunks" not in rec["flags"], rec
        assert rec["tokens_per_event"] == pytest.approx(sum(plan) / len(plan), abs=1e-3), rec


def test_grpc_three_streams_chunks(procs, tracer, tmp_path):
    recs, res = trace_calls(procs, tracer, tmp_path, profile=False)
    for (plan, ttft_ms, _), rec, r in zip(PLANS, recs, res):
        check_common(rec, r, plan, ttft_ms)
        assert rec["tokens"] == len(plan) and "chunks" in rec["flags"], rec


def test_grpc_status_error_in_trailers(procs, tracer):
    port = free_port()
    srv = start_server(procs, [sys.executable, os.path.join(HERE, "grpc_app.py"), str(port)])
    tr = tracer("-p", srv.pid)
    ch = grpc.insecure_channel("127.0.0.1:%d" % port)
    call = ch.unary_stream(METHOD)
    got = []
    with pytest.raises(grpc.RpcError) as e:
        for m in call(json.dumps({"plan": [1, 1], "ttft_ms": 20, "itl_ms": 10,
                                  "abort": True}).encode()):
            got.append(m)
    assert e.value.code() == grpc.StatusCode.RESOURCE_EXHAUSTED and len(got) == 2
    ch.close()
    tr.wait_requests(1)
    assert tr.stop() == 0, tr.stderr
    recs = [r for r in tr.requests() if r["path"] == METHOD]
    assert len(recs) == 1, tr.requests()
    # HTTP status 200, the call failed: error, and out of the percentiles
    assert recs[0]["status"] == 200 and "error" in recs[0]["flags"], recs[0]
    assert recs[0]["token_events"] == 2, recs[0]
