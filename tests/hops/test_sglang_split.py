# SPDX-License-Identifier: GPL-2.0-only
"""The SGLang-shaped stack split per hop (docs/design.md D16): ttftrace runs
the stack (`-c`, so it sees the zmq connections open) and joins each client
request across the tokenizer manager, the scheduler and the detokenizer by
the rid that is in the SSE chunks and in every message naming the request.

At concurrency 1 and 8, every request must be split into the eleven
stages, joined exactly, named by profiles/stacks/sglang.ini, its stages
adding up to TTFT, and every crossing on the right side of the stack's own
truth (tests/fixtures/sglang_shaped: a crossing out after its handoff, a
crossing in before its take; a wrong join breaks that by the milliseconds
between requests). How many requests have these spans within 1 ms or 3% of
the truth is printed:

  frontend          socket read -> the request message left the tokenizer
                    manager (truth: uvicorn's protocol got the bytes ->
                    handed to zmq)
  to_first_output   -> the scheduler's first output message naming it left
  (ipc_in+queue+    (truth: handed to zmq -> the first BatchTokenIDOutput
   prefill)         handed to zmq)
  prefill           the scheduler's previous output -> that first one
                    (truth: the first token's batch began -> its output
                    sent); when the scheduler was busy as the request came
  detokenizer       -> the detokenizer's first message naming it left
  (ipc_out+         (truth: the first BatchTokenIDOutput sent -> the first
   detokenize)      BatchStrOutput sent)
  back (ipc_back+   -> the tokenizer manager began writing the first token
   emit)            (truth: BatchStrOutput sent -> before the SSE write)
"""
import json
import os
import socket
import sys
import time

import pytest

from conftest import ROOT, conn_client_port, free_port, needs_root

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from test_vllm_shaped import PYTHON, RT, drive, workload  # noqa: E402
from test_vllm_split import EPS_NS, stack_pids, within  # noqa: E402
from hop_bounds import bounds, check_order  # noqa: E402

pytestmark = needs_root

TM = os.path.join(ROOT, "tests", "fixtures", "sglang_shaped", "tokenizer_manager.py")
STAGES = ["net_in", "read_wait", "frontend", "ipc_in", "queue", "prefill", "ipc_out",
          "detokenize", "ipc_back", "emit", "net_out"]
ROLES = ["tokenizer_manager", "scheduler", "detokenizer"]


def wait_port(port, tr):
    deadline = time.monotonic() + 60
    while True:
        try:
            socket.create_connection(("127.0.0.1", port), timeout=1).close()
            return
        except OSError:
            assert time.monotonic() < deadline and tr.proc.poll() is None, tr.stderr
            time.sleep(0.2)


def end_stack(log):
    """The stack must die with ttftrace (its process group): all three processes."""
    left = stack_pids(log)
    deadline = time.monotonic() + 15
    while left and time.monotonic() < deadline:
        time.sleep(0.1)
        left = stack_pids(log)
    for pid in left:    # SCHED_FIFO leftovers would disturb every later timing test
        os.kill(pid, 9)
    assert not left, "the stack outlived ttftrace: %s" % left


# msgpack as SGLang with SGLANG_USE_PICKLE_IPC=0, pickle as its default
@pytest.mark.parametrize("transport,codec", [("tcp", "msgpack"), ("ipc", "msgpack"),
                                             ("tcp", "pickle")])
@pytest.mark.parametrize("concurrency", [1, 8])
def test_sglang_shaped_split(tmp_path, tracer, concurrency, transport, codec):
    port, log = free_port(), str(tmp_path / "truth.ndjson")
    cmd = " ".join([PYTHON, TM, "--port", str(port), "--log", log, "--transport", transport,
                    "--codec", codec,
                    "--decode-ms", "4", "--prefill-ms", "3", "--prefill-us-per-token", "10",
                    "--tokenize-us-per-token", "2", "--detokenize-us", "200"] + RT)
    tr = tracer("--capture-bytes", "8192", "-c", cmd)
    wait_port(port, tr)
    results = drive(port, workload(300 * concurrency) + workload(300 * concurrency + 50),
                    concurrency)
    tr.wait_requests(len(results), timeout_s=10)
    assert tr.stop() == 0, tr.stderr
    end_stack(log)
    truth = [json.loads(l) for l in open(log) if l.strip()]
    req_truth = {t["rport"]: t for t in truth if t["ev"] == "request"}
    sched = {t["rid"]: t for t in truth if t["ev"] == "sched_req"}
    detok = {t["rid"]: t for t in truth if t["ev"] == "detok_req"}
    pids = {t["ev"]: t["pid"] for t in truth}
    recs = {conn_client_port(r): r for r in tr.requests()}
    assert len(recs) == len(results), [r["conn"] for r in tr.requests()]
    unsplit = [r for r in recs.values() if "hop_stages_ms" not in r]
    assert not unsplit, (unsplit[:1], tr.summary()["counters"])
    good = 0
    for _, resp in results:
        rec = recs[resp.local_port]
        st = rec["hop_stages_ms"]
        assert list(st) == STAGES, st
        assert abs(sum(st.values()) - rec["ttft_ms"]) <= 0.002 * len(st), (st, rec["ttft_ms"])
        assert [h["hop"] for h in rec["hops"]] == ROLES, rec["hops"]
        assert rec["hop_stack"] == "sglang"
        t = req_truth[resp.local_port]
        s, d = sched[t["rid"]], detok[t["rid"]]
        # each role is the process the truth says played it
        assert [h["pid"] for h in rec["hops"]] == [pids["request"], pids["sched_req"],
                                                   pids["detok_req"]] and rec["pid"] == t["pid"]
        assert all(h["join"] == "exact" for h in rec["hops"][1:]), rec["hops"]
        assert rec["hops"][1]["split"] == "inferred", rec["hops"]
        bound = bounds(rec, STAGES)
        # where a message crossed a socket, against where Python handed it over
        # or took it: a crossing out follows its handoff, a crossing in precedes
        # its take (EPS: the stamps' own cost)
        order = [
            ("tokenizer manager wrote the request", bound["ipc_in"] >= t["t_send_ns"] - EPS_NS),
            ("scheduler read it", t["t_send_ns"] - EPS_NS <= bound["queue"]
             <= s["t_recv_ns"] + EPS_NS),
            ("scheduler wrote its first output",
             bound["ipc_out"] >= s["t_first_sent_ns"] - EPS_NS),
            ("detokenizer read it", s["t_first_sent_ns"] - EPS_NS <= bound["detokenize"]
             <= d["t_first_recv_ns"] + EPS_NS),
            ("detokenizer wrote its text", bound["ipc_back"] >= d["t_first_sent_ns"] - EPS_NS),
            ("tokenizer manager read it", d["t_first_sent_ns"] - EPS_NS <= bound["emit"]
             <= t["t_first_recv_ns"] + EPS_NS),
        ]
        check_order(rec, order)
        checks = [
            ("frontend", st["frontend"], (t["t_send_ns"] - t["t_sock_read_ns"]) / 1e6),
            ("to_first_output", st["ipc_in"] + st["queue"] + st["prefill"],
             (s["t_first_sent_ns"] - t["t_send_ns"]) / 1e6),
            # an idle scheduler (queue 0): its wake-up is in prefill
            ("prefill", st["prefill"] if st["queue"] else None,
             (s["t_first_sent_ns"] - s["t_first_step_start_ns"]) / 1e6),
            ("detokenizer", st["ipc_out"] + st["detokenize"],
             (d["t_first_sent_ns"] - s["t_first_sent_ns"]) / 1e6),
            ("back", st["ipc_back"] + st["emit"],
             (t["t_first_pre_ns"] - d["t_first_sent_ns"]) / 1e6),
        ]
        bad = [(k, g, w) for k, g, w in checks if g is not None and not within(g, w)]
        if bad:
            print("request %d off the truth:" % rec["id"], bad, st)
        good += not bad
    s = tr.summary()
    print("%s %s, concurrency %d: %d of %d requests: every stage within 1 ms or 3%% of the truth"
          " (%d with a first message out missed)" % (transport, codec, concurrency, good,
                                                    len(results),
                                                    s["counters"]["msg_hop_out_missed"]))
    assert s["msg_hops"]["requests"] == len(results), s.get("msg_hops")
    assert list(s["msg_hops"]["stages_ms"]) == STAGES, s["msg_hops"]
    assert s["counters"]["msg_hop_joins"] == len(results)
    assert s["counters"]["msg_hop_unjoined"] == 0
