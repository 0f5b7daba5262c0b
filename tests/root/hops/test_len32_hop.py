# SPDX-License-Identifier: GPL-2.0-only
"""A frontend and engine that speak 4-byte length-prefixed JSON messages over
a unix socket (tests/root/hops/len32_pair.py), traced from after they began
serving: the connection is recognized as len32 messages (docs/protocols.md,
"Length-prefixed messages") and every request sent after the attach is
split by the hop and joined exactly by its id, as over ZMTP (docs/design.md
D15).
"""
import os
import select
import subprocess
import sys

import pytest

from conftest import needs_root

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from hop_checks import assert_split_exact  # noqa: E402
from test_vllm_shaped import drive, one, workload  # noqa: E402

pytestmark = needs_root

PAIR = os.path.join(os.path.dirname(os.path.abspath(__file__)), "len32_pair.py")


def start_pair(procs, endian):
    p = procs.add(subprocess.Popen(["/usr/bin/python3", PAIR, "frontend", "--endian", endian],
                                   stdout=subprocess.PIPE, text=True))
    r, _, _ = select.select([p.stdout], [], [], 30)
    line = p.stdout.readline() if r else ""
    assert line.startswith("listening on 127.0.0.1:"), "frontend said %r" % line
    with open("/proc/%d/task/%d/children" % (p.pid, p.pid)) as f:
        (engine,) = [int(x) for x in f.read().split()]
    return p, int(line.rsplit(":", 1)[1]), engine


@pytest.mark.parametrize("endian", ["big", "little"])
@pytest.mark.parametrize("concurrency", [1, 8])
def test_len32_hop_after_attach(procs, tracer, concurrency, endian):
    p, port, engine = start_pair(procs, endian)
    try:
        for w in workload(3)[:2]:
            one(port, *w)
        tr = tracer("--capture-bytes", "8192", "-p", str(p.pid))
        results = drive(port, workload(200 + concurrency), concurrency)
        tr.wait_requests(len(results), timeout_s=10)
        assert tr.stop() == 0, tr.stderr
    finally:
        p.terminate()
        assert p.wait(timeout=20) == 0
    c = assert_split_exact(tr, results, p.pid, engine)
    # the one unix connection, both its ends
    zl = [r for r in tr.records() if r.get("type") == "zmtp"]
    framing = "len32be" if endian == "big" else "len32le"
    assert len(zl) == 2 and all(z["framing"] == framing and not z["mid_stream"] for z in zl), zl
    assert c["len32_connections"] == 2 and c["zmtp_mid_stream_connections"] == 0, c
    fe_z = [z for z in zl if z["pid"] == p.pid]
    eng_z = [z for z in zl if z["pid"] == engine]
    assert len(fe_z) == len(eng_z) == 1, zl
    # every request message written by the frontend was read by the engine, and back
    assert fe_z[0]["out"]["messages"] == eng_z[0]["in"]["messages"] == len(results), zl
    assert fe_z[0]["in"]["messages"] == eng_z[0]["out"]["messages"] > 0, zl
    assert fe_z[0]["local"].startswith("unix:"), fe_z
