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
import json
import os
import sys

import pytest

from conftest import needs_root

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from hop_checks import assert_split_exact  # noqa: E402
from test_vllm_shaped import Stack, drive, one, workload  # noqa: E402

pytestmark = needs_root


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
    c = assert_split_exact(tr, results, st.pid, st.engine_pid)
    # both ends of the input and the output connection: four sockets, none with a greeting
    zl = [r for r in tr.records() if r.get("type") == "zmtp"]
    assert len(zl) == 4 and all(z["mid_stream"] and z["framing"] == "zmtp" for z in zl), zl
    assert c["zmtp_mid_stream_connections"] == 4, c
    assert all(z["in"]["socket_type"] == z["out"]["socket_type"] == "" for z in zl), zl
    assert sorted(z["pid"] for z in zl) == sorted([st.pid, st.pid, st.engine_pid,
                                                   st.engine_pid]), zl
    assert sum(z["in"]["messages"] for z in zl) == sum(z["out"]["messages"] for z in zl), zl


def test_attach_suffixed_ids(procs, tmp_path, tracer):
    """vLLM's ids since its PR #27987 (docs/protocols.md "Request ids"): the
    messages name the SSE id plus a suffix, the request message the SSE id too
    (external_req_id). Attached after the stack served, every request joins by
    the ids' core, each engine hop says so, and the counter counts them all."""
    st = Stack(procs, str(tmp_path / "truth.ndjson"), "--transport", "ipc",
               "--wire-ids", "suffixed")
    try:
        for w in workload(7)[:3]:
            one(st.port, *w)
        tr = tracer("--capture-bytes", "8192", "-p", str(st.pid))
        results = drive(st.port, workload(900) + workload(950), 8)
        tr.wait_requests(len(results), timeout_s=10)
        assert tr.stop() == 0, tr.stderr
    finally:
        st.stop()
    c = assert_split_exact(tr, results, st.pid, st.engine_pid)
    assert c["msg_hop_joins_id_suffix"] == len(results), c
    why = {r["hops"][1]["join_why"] for r in tr.requests()}
    assert len(why) == 1 and "with a suffix" in why.pop(), why
    # the truth: the engine saw suffixed ids only, the client the SSE ids only
    with open(str(tmp_path / "truth.ndjson")) as f:
        rows = [json.loads(l) for l in f]
    sse = {r["rid"] for r in rows if r["ev"] == "request"}
    eng = {r["rid"] for r in rows if r["ev"] == "eng_req"}
    assert len(sse) == len(eng) >= len(results) and not sse & eng
    assert all(any(e.startswith(s + "-") for s in sse) for e in eng)
