# SPDX-License-Identifier: GPL-2.0-only
"""ttftrace without root: an unprivileged user given CAP_BPF and CAP_PERFMON
(ambient capabilities through setpriv) traces a server of the same user; one
without them exits 3 naming what is missing."""
import json
import os
import shutil
import signal
import subprocess
import tempfile

import pytest

from conftest import SSE_SERVER, TTFTRACE, Client, needs_root, require_built

AS_NOBODY = ["setpriv", "--reuid=nobody", "--regid=nogroup", "--clear-groups"]


def with_caps(*caps):
    if not caps:
        return AS_NOBODY
    spec = ",".join("+" + c for c in caps)
    return AS_NOBODY + ["--inh-caps=" + spec, "--ambient-caps=" + spec]


@pytest.fixture
def nobody_dir(procs):
    """A directory nobody can read and write, with copies of ttftrace and the
    fixture server (the checkout may not be reachable for nobody)."""
    require_built(TTFTRACE)
    require_built(SSE_SERVER)
    d = tempfile.mkdtemp(prefix="ttftrace-caps-")
    os.chmod(d, 0o777)
    for exe in (TTFTRACE, SSE_SERVER):
        shutil.copy(exe, d)
        os.chmod(os.path.join(d, os.path.basename(exe)), 0o755)
    yield d
    procs.cleanup()
    shutil.rmtree(d)


@needs_root
def test_cap_bpf_and_perfmon_are_enough(nobody_dir, procs):
    log = os.path.join(nobody_dir, "truth.ndjson")
    srv = procs.add(subprocess.Popen(
        AS_NOBODY + [os.path.join(nobody_dir, "sse_server"), "--port", "0", "--ttft-ms", "50",
                     "--itl-ms", "5", "--log", log],
        stdout=subprocess.PIPE, text=True))
    line = srv.stdout.readline()
    assert line.startswith("listening on 127.0.0.1:"), line
    port = int(line.rsplit(":", 1)[1])
    tr = procs.add(subprocess.Popen(
        with_caps("bpf", "perfmon") + [os.path.join(nobody_dir, "ttftrace"), "--json",
                                       "-p", str(srv.pid)],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True))
    # the startup line on stderr says the probes are attached
    early = []
    for err_line in tr.stderr:
        early.append(err_line)
        if err_line.startswith(("Tracing PID", "Error:")):
            break
    assert early[-1].startswith("Tracing PID"), early
    c = Client(port)
    resp = [c.request(max_tokens=3) for _ in range(2)]
    c.close()
    tr.send_signal(signal.SIGINT)
    out, err = tr.communicate(timeout=15)
    err = "".join(early) + err
    assert tr.returncode == 0, err
    assert "Warning: no CAP_SYS_PTRACE" in err, err
    reqs = [r for r in (json.loads(l) for l in out.splitlines() if l.startswith("{"))
            if r.get("type") == "request"]
    assert [r["tokens"] for r in reqs] == [3, 3], (reqs, err)
    assert all(r.status == 200 for r in resp)
    # against the server's own log: arrival -> its first token (a slow wakeup
    # of the server's read on a loaded machine is part of TTFT, not an error)
    truth = [json.loads(l) for l in open(log) if l.strip()]
    assert [x["tokens"] for x in truth] == [3, 3], truth
    for r, x in zip(reqs, truth):
        assert r["ttft_ms"] >= 50, r
        assert abs(r["ttft_ms"] - (x["t_first_ns"] - r["t_arrival_ns"]) / 1e6) <= 2.0, (r, x)


@needs_root
@pytest.mark.parametrize("caps,missing", [
    ((), "CAP_BPF, CAP_PERFMON"),
    (("bpf",), "CAP_PERFMON"),
    (("perfmon", "sys_ptrace"), "CAP_BPF"),
])
def test_missing_bpf_caps_exit_3(nobody_dir, caps, missing):
    p = subprocess.run(with_caps(*caps) + [os.path.join(nobody_dir, "ttftrace"), "-p",
                                           str(os.getpid()), "-d", "1"],
                       capture_output=True, text=True, timeout=30, cwd="/")
    assert p.returncode == 3, (p.returncode, p.stderr)
    assert "Error: ttftrace needs %s to load its BPF programs" % missing in p.stderr, p.stderr
    assert "HINT: run as root, or grant them" in p.stderr, p.stderr
