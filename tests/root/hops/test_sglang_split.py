# SPDX-License-Identifier: GPL-2.0-only
"""The SGLang-shaped stack split per hop (docs/design.md D16): ttftrace runs
the stack (`-c`, so it sees the zmq connections open) and joins each client
request across the tokenizer manager, the scheduler and the detokenizer by
the rid that is in the SSE chunks and in every message naming the request.

At concurrency 1 and 8, every request must be split into the eleven
stages, joined exactly (with --wire-ids opaque, concurrency 8: by order
and timing, D17, marked inferred), named by profiles/stacks/sglang.ini, its stages
adding up to TTFT, and every crossing on the right side of the stack's own
truth (tests/fixtures/sglang_shaped: a crossing out after its handoff, a
crossing in before its take; a wrong join breaks that by the milliseconds
between requests).

The truth of what ttftrace claims: the LD_PRELOAD shim of the vLLM-shaped
stack (tests/fixtures/vllm_shaped/crossings.c, which also finds SGLang's
bare 32-hex rids in msgpack and pickle) runs in all three processes and
logs every send/recv naming a rid, the HTTP read and the first SSE write.
From those crossings the test computes the eight hop stages as ttftrace
defines them (D16) and requires nearly every request (XING_BAR) to have
every one within 1 ms or 3%. The share of requests with these spans within
1 ms or 3% of the Python handoffs is held to HANDOFF_BAR:

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
import subprocess
import sys
import time

import pytest

from conftest import ROOT, conn_client_port, free_port, needs_root

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from test_vllm_shaped import PYTHON, RT, drive, workload  # noqa: E402
from test_vllm_split import (EPS_NS, SHIM, crossings, stack_pids, unopaque,  # noqa: E402
                             within)
from hop_bounds import bounds, check_order  # noqa: E402

pytestmark = needs_root

TM = os.path.join(ROOT, "tests", "fixtures", "sglang_shaped", "tokenizer_manager.py")
STAGES = ["net_in", "read_wait", "frontend", "ipc_in", "queue", "prefill", "ipc_out",
          "detokenize", "ipc_back", "emit", "net_out"]
ROLES = ["tokenizer_manager", "scheduler", "detokenizer"]
# Bars on the shares below, each from 10 runs of this file on the 2-CPU
# test machine loaded by other test suites; 32 requests a run.
# Requests with every stage within 1 ms or 3% of the crossing truth. Joined
# by id, 10 runs x 6 cases: 32 of 32 every time (the bar: 31). By order
# (D17), 10 runs x 2 cases: 28 .. 32 of 32 (misses: a frontend that lagged
# a step behind its reads); the bar, at least 28, is the worst seen.
XING_BAR = {"exact": 0.95, "inferred": 0.85}
# Requests with the spans within 1 ms or 3% of the Python handoffs: these
# stamps lag the socket by what the fixture's own threads wait for the GIL
# and a CPU, which on a loaded machine is often more than 1 ms, so the bar
# is low; the crossing truth above is the tight one. 10 runs x 8 cases:
# 15 .. 32 of 32 (by id: 24 .. 32); the bar three requests below.
HANDOFF_BAR = 0.375
# Requests with a first message out stamped after the next process read it
# (the sender preempted after queueing its bytes; D16; the stage then ends at
# the read). 10 runs x 8 cases: 0 .. 1, 20 more loaded by a second suite: 0;
# one CI run on a fresh machine: 4 of 32 (tcp msgpack, concurrency 8), as
# design.md's -vv run. The bar, 6 of 32, is that run's and two more: what it
# guards against is a crossing stamped at the wrong event, which would be
# late for most of the 32.
OUT_AFTER_IN_MAX = 6
# frontend and ipc_in (the request's own message, by id or by order): misses
# per stage. 10 runs x 8 cases: 0 every time; the bar one.
OWN_MISSED_MAX = 1


def wait_port(port, proc):
    """Until port takes connections; proc (a Popen: ttftrace or the stack) must live."""
    deadline = time.monotonic() + 60
    while True:
        try:
            socket.create_connection(("127.0.0.1", port), timeout=1).close()
            return
        except OSError:
            assert time.monotonic() < deadline and proc.poll() is None, proc.returncode
            time.sleep(0.2)


XING_STAGES = ["frontend", "ipc_in", "queue", "prefill", "ipc_out", "detokenize", "ipc_back",
               "emit"]


def crossing_truth(xs, t, sched_pid, detok_pid):
    """The stack's own crossings of one request (the LD_PRELOAD shim's log),
    as ttftrace's boundaries are defined (docs/design.md D16): {stage: ms}
    and {stage: its start, ns}, clamped to be monotonic the same way."""
    first, outs, sse, http = xs
    fe, rid = t["pid"], t["rid"]
    fe_out, fe_in = first[(fe, "out", rid)]["t_ns"], first[(fe, "in", rid)]["t_ns"]
    s_in, s_out = first[(sched_pid, "in", rid)]["t_ns"], first[(sched_pid, "out", rid)]["t_ns"]
    d_in, d_out = first[(detok_pid, "in", rid)]["t_ns"], first[(detok_pid, "out", rid)]["t_ns"]
    # a send is stamped when it returned: one that returned after the read of its
    # bytes had sent them by that read (D16)
    fe_out, s_out, d_out = min(fe_out, s_in), min(s_out, d_in), min(d_out, fe_in)
    reads = [h["t_ns"] for h in http.get(t["rport"], []) if h["t_ns"] <= fe_out]
    prev = [o for o in outs[sched_pid] if o < s_out]
    b = [max(reads), fe_out, s_in, max(prev[-1] if prev else 0, s_in), s_out, d_in, d_out,
         fe_in, sse[rid]["t_pre_ns"]]
    for i in range(1, len(b)):
        b[i] = min(max(b[i], b[i - 1]), b[-1])
    return ({k: (b[i + 1] - b[i]) / 1e6 for i, k in enumerate(XING_STAGES)},
            {k: b[i] for i, k in enumerate(XING_STAGES)})


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


# msgpack as SGLang with SGLANG_USE_PICKLE_IPC=0, pickle as its default; with
# --wire-ids opaque no rid ttftrace accepts is in the messages: the chain of
# three is joined by order and timing (D17)
@pytest.mark.parametrize("transport,codec,concurrency,wire_ids", [
    ("tcp", "msgpack", 1, "rid"), ("ipc", "msgpack", 1, "rid"), ("tcp", "pickle", 1, "rid"),
    ("tcp", "msgpack", 8, "rid"), ("ipc", "msgpack", 8, "rid"), ("tcp", "pickle", 8, "rid"),
    ("ipc", "msgpack", 8, "opaque"), ("tcp", "pickle", 8, "opaque")])
def test_sglang_shaped_split(tmp_path, tracer, concurrency, transport, codec, wire_ids):
    assert os.path.exists(SHIM), "make builds " + SHIM
    port, log = free_port(), str(tmp_path / "truth.ndjson")
    cmd = " ".join(["LD_PRELOAD=" + SHIM, "TTF_XING_LOG=" + log] +
                   stack_argv(port, log, transport, codec, wire_ids))
    tr = tracer("--capture-bytes", "8192", "-c", cmd)
    wait_port(port, tr.proc)
    results = drive(port, workload(300 * concurrency) + workload(300 * concurrency + 50),
                    concurrency)
    tr.wait_requests(len(results), timeout_s=10)
    assert tr.stop() == 0, tr.stderr
    end_stack(log)
    check_split(tr, results, log, "%s %s, concurrency %d" % (transport, codec, concurrency),
                "inferred" if wire_ids == "opaque" else "exact")


@pytest.mark.parametrize("codec", ["pickle", "msgpack"])
def test_sglang_shaped_attached(procs, tmp_path, tracer, codec):
    """Attached with -p to a stack that already served (its zmq connections
    old, no greeting seen: ZMTP mid-stream), SGLang's default pickle and its
    msgpack alike: the same split, joins and truth as under -c."""
    assert os.path.exists(SHIM), "make builds " + SHIM
    port, log = free_port(), str(tmp_path / "truth.ndjson")
    env = dict(os.environ, LD_PRELOAD=SHIM, TTF_XING_LOG=log)
    stack = procs.add(subprocess.Popen(stack_argv(port, log, "ipc", codec, "rid"), env=env))
    wait_port(port, stack)
    drive(port, workload(7)[:3], 1)     # served before tracing
    tr = tracer("--capture-bytes", "8192", "-p", str(stack.pid))
    results = drive(port, workload(2400) + workload(2450), 8)
    tr.wait_requests(len(results), timeout_s=10)
    assert tr.stop() == 0, tr.stderr
    stack.terminate()
    assert stack.wait(20) == 0
    end_stack(log)
    c = check_split(tr, results, log, "attached, ipc %s, concurrency 8" % codec, "exact")
    assert c["zmtp_mid_stream_connections"] >= 4, c


def stack_argv(port, log, transport, codec, wire_ids):
    return [PYTHON, TM, "--port", str(port), "--log", log, "--transport", transport,
            "--codec", codec, "--wire-ids", wire_ids,
            "--decode-ms", "4", "--prefill-ms", "3", "--prefill-us-per-token", "10",
            "--tokenize-us-per-token", "2", "--detokenize-us", "200"] + RT


def check_split(tr, results, log, case, join):
    """Every driven request split, joined and held to the truth (the module's
    docstring); the summary's counters."""
    truth = [json.loads(l) for l in open(log) if l.strip()]
    req_truth = {t["rport"]: t for t in truth if t["ev"] == "request"}
    sched = {unopaque(t["rid"]): t for t in truth if t["ev"] == "sched_req"}
    detok = {unopaque(t["rid"]): t for t in truth if t["ev"] == "detok_req"}
    pids = {t["ev"]: t["pid"] for t in truth}
    recs = {conn_client_port(r): r for r in tr.requests()}
    assert len(recs) == len(results), [r["conn"] for r in tr.requests()]
    unsplit = [r for r in recs.values() if "hop_stages_ms" not in r]
    assert not unsplit, (unsplit[:1], tr.summary()["counters"])
    xs = crossings(truth)
    good, xing_good, missed = 0, 0, {k: 0 for k in XING_STAGES}
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
        assert all(h["join"] == join for h in rec["hops"][1:]), rec["hops"]
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
        if join == "exact":
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
            print("request %d off the handoff truth:" % rec["id"], bad, st)
        good += not bad
        # the truth of what ttftrace claims: the same crossings, seen by the shim
        want, start = crossing_truth(xs, t, pids["sched_req"], pids["detok_req"])
        bad = [(k, st[k], round(want[k], 3)) for k in XING_STAGES if not within(st[k], want[k])]
        # and where each stage began, on the same clock (a wrong join of look-alike
        # requests can match in durations, not in time)
        bad += [("@" + k, round((bound[k] - start[k]) / 1e6, 3)) for k in XING_STAGES
                if abs(bound[k] - start[k]) > 1e6]
        if bad:
            print("request %d off the crossing truth:" % rec["id"], bad, st)
        for b in bad:
            missed[b[0].lstrip("@")] += 1
        xing_good += not bad
    s = tr.summary()
    n = len(results)
    print("%s: %d of %d requests: every stage within 1 ms or 3%% of the "
          "crossing truth (misses per stage %s); %d of the handoff truth; %d with a first "
          "message out stamped after its read"
          % (case, xing_good, n, missed, good, s["counters"].get("msg_hop_out_after_in", 0)))
    assert xing_good >= XING_BAR[join] * n, (xing_good, n, missed)
    assert good >= HANDOFF_BAR * n, (good, n)
    assert s["counters"].get("msg_hop_out_after_in", 0) <= OUT_AFTER_IN_MAX, s["counters"]
    for k in ("frontend", "ipc_in"):    # the request's own message: by order as by id
        assert missed[k] <= OWN_MISSED_MAX, (k, missed)
    assert s["msg_hops"]["requests"] == len(results), s.get("msg_hops")
    assert list(s["msg_hops"]["stages_ms"]) == STAGES, s["msg_hops"]
    if join == "exact":
        assert s["counters"]["msg_hop_joins"] == len(results)
        assert s["counters"]["msg_hop_unjoined"] == 0
    else:
        assert s["counters"]["msg_hop_joins_inferred"] == len(results), s["counters"]
        assert "msg_hop_joins" not in s["counters"], s["counters"]
    return s["counters"]
