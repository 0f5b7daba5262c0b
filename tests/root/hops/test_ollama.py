# SPDX-License-Identifier: GPL-2.0-only
"""An Ollama-shaped stack (tests/root/hops/ollama, Go): a server that starts a
runner child on its first request (a cold start that loads a model), queues
requests on one slot, posts each to the runner over loopback HTTP and
relays its NDJSON lines as /api/chat NDJSON or /v1/chat/completions SSE.

`ttftrace --port SERVER` follows the runner (a child, and the upstream the
server calls). Case 29: the model load is its own time, in the server's hop
(gateway_in), not the runner's prefill. Truth: the fixture's own log, its
rows matched by the client port curl reports.
"""
import json
import os
import shutil
import subprocess
import threading

import pytest

from conftest import conn_client_port, needs_root

pytestmark = needs_root

SRC = os.path.join(os.path.dirname(os.path.abspath(__file__)), "ollama")
LOAD_MS, PREFILL_MS, TOKENS = 300, 40, 6


@pytest.fixture
def ollama(procs, tmp_path):
    go = shutil.which("go")
    if not go:
        pytest.fail("the Go toolchain is missing: run tools/setup.sh (golang-go)")
    exe = str(tmp_path / "ollamashaped")
    env = dict(os.environ, GOCACHE=str(tmp_path / "gocache"), GOPATH=str(tmp_path / "gopath"),
               GOFLAGS="-mod=mod", CGO_ENABLED="0", GOPROXY="off")
    subprocess.run([go, "build", "-o", exe, "."], cwd=SRC, env=env, check=True, timeout=300)
    log = str(tmp_path / "truth.ndjson")
    p = procs.add(subprocess.Popen([exe, "-load-ms", str(LOAD_MS), "-prefill-ms",
                                    str(PREFILL_MS), "-tokens", str(TOKENS), "-log", log,
                                    "serve"], stdout=subprocess.PIPE, text=True))
    line = p.stdout.readline()
    assert line.startswith("listening on 127.0.0.1:"), line
    return p, int(line.rsplit(":", 1)[1]), log


def chat(port, path, ports=None):
    """One streamed chat with curl; its local port (curl's own -w) goes to ports."""
    body = {"model": "m", "stream": True, "messages": [{"role": "user", "content": "hi"}]}
    out = subprocess.run(["curl", "-s", "-N", "-w", "\nlocal_port=%{local_port}\n",
                          "http://127.0.0.1:%d%s" % (port, path), "-d", json.dumps(body)],
                         capture_output=True, text=True, timeout=30)
    assert out.returncode == 0 and "t0" in out.stdout, out.stdout + out.stderr
    if ports is not None:
        ports.append(int(out.stdout.rsplit("local_port=", 1)[1]))
    return out.stdout


def close(a, b):
    return abs(a - b) <= max(1.0, 0.03 * b)


def test_ollama_shaped_hops(ollama, tracer):
    srv, port, log = ollama
    tr = tracer("--port", port)
    ports = []
    chat(port, "/api/chat", ports)            # cold start: the runner loads first
    for _ in range(2):
        chat(port, "/api/chat", ports)
        chat(port, "/v1/chat/completions", ports)
    th = [threading.Thread(target=chat, args=(port, "/api/chat", ports)) for _ in range(3)]
    for t in th:
        t.start()
    for t in th:
        t.join(60)
    tr.wait_requests(8, timeout_s=15)
    assert tr.stop() == 0, tr.stderr
    recs = tr.requests()
    assert len(recs) == 8, [(r["comm"], r["path"], r["flags"]) for r in recs]
    # truth rows by the port curl reported and the server logged, never by ttftrace's times
    truth = {t["rport"]: t for t in map(json.loads, open(log))}
    assert sorted(truth) == sorted(ports) and len(ports) == 8, (sorted(truth), ports)
    for r in recs:
        assert r["pid"] == srv.pid and r["tokens"] == TOKENS, r
        assert abs(sum(r["hop_stages_ms"].values()) - r["ttft_ms"]) <= 0.02, r["hop_stages_ms"]
        up = r["hops"][1]
        assert up["join"] == "exact" and up["pid"] not in (None, srv.pid), up   # the runner
        t = truth[conn_client_port(r)]
        assert r["path"] == t["path"], (r["path"], t)
        runner_ms = (t["runner_first_ns"] - t["runner_read_ns"]) / 1e6
        assert close(up["stages_ms"]["server"], runner_ms), (up["stages_ms"], runner_ms)
        # load and queue (one slot) are the server's, gateway_in: from its read of
        # the request to its upstream request's write, which net/http made between
        # t_up_pre and WroteRequest. ttftrace starts at the read syscall, the log
        # after Go's handler read the body: later by up to 1 ms + 3 % here.
        lo = (t["t_up_pre_ns"] - t["t_read_ns"]) / 1e6
        hi = (t["t_up_wrote_ns"] - t["t_read_ns"]) / 1e6
        got = r["hop_stages_ms"]["gateway_in"]
        assert lo - 0.1 <= got <= hi + 1.0 + 0.03 * hi, (got, lo, hi, r["hop_stages_ms"])
    first = min(recs, key=lambda r: r["t_arrival_ns"])
    assert first["hop_stages_ms"]["gateway_in"] >= LOAD_MS, first["hop_stages_ms"]  # case 29
    assert first["hops"][1]["stages_ms"]["server"] < LOAD_MS / 2   # not in the runner's time
    # three at once on one slot: the later ones queue in the server
    queued = sorted(r["hop_stages_ms"]["gateway_in"] for r in recs[-3:])
    assert queued[-1] >= PREFILL_MS, queued
    assert {r["path"] for r in recs} == {"/api/chat", "/v1/chat/completions"}
