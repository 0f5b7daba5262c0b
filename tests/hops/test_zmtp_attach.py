# SPDX-License-Identifier: GPL-2.0-only
"""ttftrace attached to a vLLM-shaped stack that is already serving
(docs/protocols.md, "ZMTP mid-stream"; docs/design.md D15): the zmq
connections between the frontend and its engine core were opened, and
carried requests, before tracing began, so no greeting is ever seen. They
must still be recognized as ZMTP (from their frames: "mid_stream": true in
the zmtp lines) and every request sent after the attach split by the hop
and joined exactly by its id.

`-p PID` traces the process and its existing descendants: the frontend's
pid takes in the engine core it started.
"""
import os
import sys

import pytest

from conftest import conn_client_port, needs_root

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from test_vllm_shaped import Stack, drive, one, workload  # noqa: E402

pytestmark = needs_root

STAGES = ["net_in", "read_wait", "frontend", "ipc_in", "queue", "prefill", "ipc_out", "emit",
          "net_out"]


@pytest.mark.parametrize("transport", ["tcp", "ipc"])
@pytest.mark.parametrize("concurrency", [1, 8])
def test_attach_to_serving_stack(procs, tmp_path, tracer, concurrency, transport):
    st = Stack(procs, str(tmp_path / "truth.ndjson"), "--transport", transport)
    try:
        # served before tracing: the zmq connections are old when ttftrace comes
        for w in workload(7)[:3]:
            one(st.port, *w)
        tr = tracer("--capture-bytes", "8192", "-p", str(st.pid))
        results = drive(st.port, workload(100 * concurrency) + workload(100 * concurrency + 50),
                        concurrency)
        tr.wait_requests(len(results), timeout_s=10)
        assert tr.stop() == 0, tr.stderr
    finally:
        st.stop()
    recs = {conn_client_port(r): r for r in tr.requests()}
    assert len(recs) == len(results), [r["conn"] for r in tr.requests()]
    s = tr.summary()
    c = s["counters"]
    unsplit = [r for r in recs.values() if "hop_stages_ms" not in r]
    assert not unsplit, (unsplit[:1], c)
    for _, resp in results:
        rec = recs[resp.local_port]
        st_ms = rec["hop_stages_ms"]
        assert list(st_ms) == STAGES, st_ms
        assert abs(sum(st_ms.values()) - rec["ttft_ms"]) <= 0.002 * len(st_ms), (st_ms, rec)
        fe, eng = rec["hops"]
        assert fe["hop"] == "frontend" and eng["hop"] == "engine", rec["hops"]
        assert eng["join"] == "exact", eng
        assert eng["pid"] == st.engine_pid and fe["pid"] == st.pid, rec["hops"]
    assert s["msg_hops"]["requests"] == len(results), s.get("msg_hops")
    assert c["msg_hop_joins"] == len(results), c
    assert c["msg_hop_unjoined"] == 0, c
    # both ends of the input and the output connection: four sockets, none with a greeting
    zl = [r for r in tr.records() if r.get("type") == "zmtp"]
    assert len(zl) == 4 and all(z["mid_stream"] and z["framing"] == "zmtp" for z in zl), zl
    assert c["zmtp_mid_stream_connections"] == 4, c
    assert all(z["in"]["socket_type"] == z["out"]["socket_type"] == "" for z in zl), zl
    assert sorted(z["pid"] for z in zl) == sorted([st.pid, st.pid, st.engine_pid,
                                                   st.engine_pid]), zl
    assert sum(z["in"]["messages"] for z in zl) == sum(z["out"]["messages"] for z in zl), zl
