# SPDX-License-Identifier: GPL-2.0-only
"""An asyncio loop blocked by another request's CPU work (docs/cases.md #31).

tests/root/sched/loop_app.py (uvicorn + Starlette, one event loop) streams a long
request A (a token every 20 ms) while five "heavy" requests B arrive, each
holding the loop thread on CPU for 300 ms before it streams. Every B stalls
A's stream: ttftrace must name each such ITL outlier of A after the B that
held the loop ("frontend loop busy with request ID", user/model/loop_busy.h),
from the scheduler (A's writer thread on CPU through the gap) and B's window
on that thread. A light request C sent while a B works waits unread: its
wait is read_wait, as uvicorn does not recv until the loop is free.
"""
import json
import os
import sys
import threading
import time

from conftest import Client, free_port, needs_root

pytestmark = needs_root

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "proto"))
from proto_helpers import by_client_port, start_server  # noqa: E402

N_HEAVY, WORK_MS, ITL_MS = 5, 300, 20


def post(port, body, out, key):
    c = Client(port, timeout_s=30)
    r = c.request(body=dict(body, model="m", stream=True,
                            messages=[{"role": "user", "content": "hi"}]))
    c.close()
    out[key] = r


def test_loop_blocked_by_another_request(procs, tracer, tmp_path):
    port, log = free_port(), str(tmp_path / "work.ndjson")
    srv = start_server(procs, ["/usr/bin/python3", os.path.join(HERE, "loop_app.py"), str(port),
                               log])
    tr = tracer("-p", srv.pid)
    got = {}
    n_a = 120
    ta = threading.Thread(target=post, args=(port, {"tokens": n_a, "itl_ms": ITL_MS}, got, "A"))
    ta.start()
    time.sleep(0.3)
    threads = []
    for i in range(N_HEAVY):
        t = threading.Thread(target=post, args=(port, {"tokens": 3, "itl_ms": ITL_MS,
                                                       "work_ms": WORK_MS}, got, "B%d" % i))
        t.start()
        threads.append(t)
        if i == 2:
            time.sleep(0.1)        # C arrives while B2 holds the loop
            tc = threading.Thread(target=post, args=(port, {"tokens": 3, "itl_ms": ITL_MS},
                                                     got, "C"))
            tc.start()
            threads.append(tc)
            time.sleep(0.4)
        else:
            time.sleep(0.5)
    for t in threads + [ta]:
        t.join()
    tr.wait_requests(N_HEAVY + 2, timeout_s=10)
    assert tr.stop() == 0, tr.stderr
    recs = {k: by_client_port(tr.requests())[r.local_port][0] for k, r in got.items()}
    work = {w["client_port"]: w for w in map(json.loads, open(log))}
    assert len(work) == N_HEAVY
    a = recs["A"]
    assert a["tokens"] == n_a, a
    # each B's block is one outlier of A, named after that B
    named = {}
    for o in a["outliers"]:
        print("A outlier:", o)
        if o["cause"].startswith("frontend loop busy with request "):
            named[int(o["cause"].rsplit(" ", 1)[1])] = o["itl_ms"]
    for i in range(N_HEAVY):
        b = recs["B%d" % i]
        assert b["id"] in named, (b["id"], a["outliers"])
        assert named[b["id"]] >= WORK_MS * 0.8, named
    assert len(named) == N_HEAVY, named
    # C waited unread while B2 worked
    c = recs["C"]
    w = work[got["B2"].local_port]
    left_ms = (w["t_work_end_ns"] - got["C"].t_sent_ns) / 1e6
    assert c["stages_ms"]["read_wait"] >= left_ms - 5, (c["stages_ms"], left_ms)
