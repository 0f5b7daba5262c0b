# SPDX-License-Identifier: GPL-2.0-only
"""vLLM served with `--api-server-count 2`, ttftrace attached after it
served (docs/protocols.md, "vLLM v1 between its processes"; docs/hops.md).

The process layout is vLLM's (tests/fixtures/vllm_shaped/launcher.py): a
launcher holds the listening socket; two API servers, its children, accept
on that one socket, each with its own ROUTER and PULL endpoints; the engine
core, their sibling, connects a DEALER and a PUSH to each and answers each
request on the PUSH of the API server named by the request's client_index.
The ids are vLLM's of today (suffixed, external_req_id in the 17-element
request array).

`-p LAUNCHER` takes the launcher and its descendants. Every request sent
after the attach must be split by the message hop and joined exactly, to
the API server that served it and to the engine core; which API server that
was is the stack's own truth log (each process writes its pid), never
ttftrace's output. The hop boundaries are held to the stack's Python
handoffs (a crossing out after its handoff, a crossing in before its take)
and, through the LD_PRELOAD shim every process of the stack inherits, to the
socket crossings themselves at test_vllm_split's EXACT_BAR.
"""
import json
import os
import re
import select
import subprocess
import sys
import time

import pytest

from conftest import conn_client_port, needs_root

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from test_vllm_shaped import BLOCK, FRONTEND, PREFILL_US, PYTHON, STEP_MS, drive, one, workload  # noqa: E402,E501
from test_vllm_split import (EXACT_BAR, HOP_STAGES, SHIM, STAGES, crossing_truth,  # noqa: E402
                             handoff_order, stack_truth, within)

pytestmark = needs_root

LAUNCHER = os.path.join(os.path.dirname(FRONTEND), "launcher.py")
RT_PRIO = "10"


class Launched:
    """launcher.py running: .port, .pid, .api_pids, .engine_pids, .coordinator_pid (0: none)."""

    def __init__(self, procs, log, dp):
        env = dict(os.environ, LD_PRELOAD=SHIM, TTF_XING_LOG=log,
                   TTF_XING_BARE="1")
        cmd = [PYTHON, LAUNCHER, "--api-server-count", "2", "--port", "0", "--log", log,
               "--step-ms", str(STEP_MS), "--prefill-us-per-token", str(PREFILL_US),
               "--block-size", str(BLOCK), "--data-parallel", str(dp)]
        if os.geteuid() == 0:
            cmd += ["--rt", RT_PRIO]
        self.proc = procs.add(subprocess.Popen(cmd, stdout=subprocess.PIPE, text=True, env=env))
        r, _, _ = select.select([self.proc.stdout], [], [], 90)
        # the launcher prints its two lines together, once every API server serves
        lines = [self.proc.stdout.readline(), self.proc.stdout.readline()] if r else ["", ""]
        assert lines[0].startswith("listening on 127.0.0.1:"), lines
        self.port = int(lines[0].rsplit(":", 1)[1])
        m = re.match(r"api servers: ([\d,]+) engine cores: ([\d,]+) coordinator: (\d+)$",
                     lines[1].strip())
        assert m, lines
        self.api_pids, self.engine_pids = ([int(x) for x in g.split(",")] for g in m.groups()[:2])
        self.coordinator_pid = int(m.group(3))
        self.pid = self.proc.pid

    def stop(self):
        self.proc.terminate()
        assert self.proc.wait(timeout=30) == 0
        deadline = time.monotonic() + 5
        left = [p for p in self.api_pids + self.engine_pids + [self.coordinator_pid]
                if p and os.path.exists("/proc/%d" % p)]
        while left and time.monotonic() < deadline:
            time.sleep(0.05)
            left = [p for p in left if os.path.exists("/proc/%d" % p)]
        assert not left, "outlived the launcher: %s" % left


def print_engine_outs(log, pid, eng_out_ns):
    """The engine's writes in the 20 ms before its first output of a request
    off the truth, the id-less ones (the counts to the coordinator) with them."""
    for x in (json.loads(l) for l in open(log) if l.strip()):
        if (x.get("ev") == "xing" and x["pid"] == pid and x["dir"] == "out"
                and eng_out_ns - 20e6 < x["t_ns"] <= eng_out_ns):
            print("   engine write %+.3f ms: fd %d, %s, %d bytes, %d ids" % (
                (x["t_ns"] - eng_out_ns) / 1e6, x["fd"], x["kind"], x["bytes"],
                len(x.get("ids", []))))


@pytest.mark.parametrize("dp", [1, 2])
def test_two_api_servers_attached(procs, tmp_path, tracer, dp):
    """dp 2: two engine cores (data parallel ranks), each connected to both API
    servers, and the coordinator between them all with its id-less messages."""
    assert os.path.exists(SHIM), "make builds " + SHIM
    log = str(tmp_path / "truth.ndjson")
    st = Launched(procs, log, dp)
    try:
        for w in workload(7)[:4]:     # served before tracing: old connections everywhere
            one(st.port, *w)
        tr = tracer("--capture-bytes", "8192", "-p", str(st.pid))
        results = drive(st.port, workload(800) + workload(850), 8)
        tr.wait_requests(len(results), timeout_s=10)
        assert tr.stop() == 0, tr.stderr
    finally:
        st.stop()
    req_truth, eng_truth, xs = stack_truth(log)
    recs = {conn_client_port(r): r for r in tr.requests()}
    assert len(recs) == len(results), [r["conn"] for r in tr.requests()]
    served, ranks, good, missed = {}, {}, 0, {k: 0 for k in HOP_STAGES}
    for _, resp in results:
        rec, t = recs[resp.local_port], req_truth[resp.local_port]
        e = eng_truth[t["wire_rid"]]
        served[t["pid"]] = served.get(t["pid"], 0) + 1
        ranks[e["pid"]] = ranks.get(e["pid"], 0) + 1
        assert list(rec.get("hop_stages_ms", {})) == STAGES, rec
        fe, eng = rec["hops"]
        assert (fe["hop"], eng["hop"], eng["join"]) == ("frontend", "engine", "exact"), rec["hops"]
        # joined to the API server that served it and to the engine core that ran it,
        # by the stack's own log
        assert (fe["pid"], eng["pid"]) == (t["pid"], e["pid"]), (rec["hops"], t["pid"], e["pid"])
        assert "suffix" in eng["join_why"], eng
        wrong = [k for k, ok in handoff_order(rec, t, e) if not ok]
        assert not wrong, (rec["id"], wrong, rec["hop_stages_ms"])
        want, want_c = crossing_truth(xs, t, e)
        s = rec["hop_stages_ms"]
        bad = [(k, s[k], round(want[k], 3)) for k in HOP_STAGES if not within(s[k], want[k])]
        if bad:
            print("request %d off the crossing truth:" % rec["id"], bad, s)
            print_engine_outs(log, e["pid"], min(want_c["eng_out"]["t_ns"], want_c["fe_in"]["t_ns"]))
        for k, _, _ in bad:
            missed[k] += 1
        good += not bad
    n = len(results)
    print("2 API servers, %d engine cores: requests per API server %s, per engine core %s; "
          "%d of %d with every hop stage within 1 ms or 3%% of the crossing truth; misses per "
          "stage %s" % (dp, served, ranks, good, n, missed))
    # the kernel spread the connections over both API servers, the API servers
    # their requests over the engine cores
    assert sorted(served) == sorted(st.api_pids) and min(served.values()) >= n // 8, served
    assert sorted(ranks) == sorted(st.engine_pids) and min(ranks.values()) >= n // 8, ranks
    assert good >= EXACT_BAR * n, (good, n, missed)
    c = tr.summary()["counters"]
    assert c["msg_hop_joins"] == c["msg_hop_joins_id_suffix"] == n, c
    assert c["msg_hop_unjoined"] == 0, c
    # two connections between each API server and each engine core (input and
    # output), and under data parallel one from each of them to the coordinator,
    # seen at both ends, all opened before the attach: recognized mid-stream, the
    # coordinator's without any id (docs/protocols.md "ZMTP mid-stream")
    zl = [r for r in tr.records() if r.get("type") == "zmtp"]
    coord = [st.coordinator_pid] if dp > 1 else []
    per_pid = {p: sum(z["pid"] == p for z in zl) for p in st.api_pids + st.engine_pids + coord}
    print("zmtp connection ends per pid:", per_pid)
    want = dict([(p, 2 * dp + len(coord)) for p in st.api_pids] +
                [(p, 2 * len(st.api_pids) + len(coord)) for p in st.engine_pids] +
                [(p, len(st.api_pids) + dp) for p in coord])
    assert per_pid == want, (per_pid, want)
    assert all(z["mid_stream"] for z in zl), zl
    at_coord = [z for z in zl if z["pid"] in coord]
    assert all(z["ids_seen"] == 0 and z["in"]["messages"] + z["out"]["messages"] > 0
               for z in at_coord), at_coord
