#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0-only
"""Make the regression recordings under tests/root/replay/data (root; run from the repo root).

  make golden      (all four, then the diff against the committed files)
  /usr/bin/python3 tests/root/replay/make_data.py [fixture] [demo] [vllm_split] [sglang_split]

For each: trace a short run with `ttftrace --json --record NAME.rec`,
replay it, check that the replay's NDJSON equals the live one, and keep the
recording with that output as NAME.ndjson. `fixture` uses
tests/fixtures/sse_server (two keep-alive clients, 3 streamed requests
each); `demo` the llama.cpp demo server (tools/demo, engine uprobes, 2
requests at --parallel 2); `vllm_split` the vLLM-shaped stack
(tests/fixtures/vllm_shaped, zmq over tcp) under `-c` with
`--capture-bytes 8192`, 8 requests 4 at a time, each split across the
frontend and the engine process (message hops, docs/design.md D15);
`sglang_split` the SGLang-shaped stack (tests/fixtures/sglang_shaped, tcp,
msgpack) alike, each request across three processes (D16).
Recordings hold payload bytes: these runs send only the fixed test prompts.

Each recording comes with NAME.truth.ndjson, what the run's other side saw,
which tests/root/replay/test_replay.py holds the replay to: the fixture
server's own log (`fixture`), the frontend's and engine's logs (the split
stacks: their `request` and `eng_req` lines, times and ids only), and for
`demo` the records of tests/indep_client.py, a client that shares no code
with ttftrace (kernel receive stamps).
"""
import json
import os
import signal
import socket
import subprocess
import sys
import threading
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.dirname(os.path.dirname(HERE)))
from conftest import ROOT, SSE_SERVER, TTFTRACE  # noqa: E402
from indep_client import stream_load, stream_work  # noqa: E402

DATA = os.path.join(HERE, "data")


def start_tracer(port, name):
    rec = os.path.join(DATA, name + ".rec")
    live = os.path.join(DATA, name + ".live.ndjson")
    p = subprocess.Popen([TTFTRACE, "--port", str(port), "--json", "-o", live, "--record", rec],
                         stderr=subprocess.PIPE, text=True)
    for line in p.stderr:
        if "Hit Ctrl-C" in line:
            break
    threading.Thread(target=p.stderr.read, daemon=True).start()
    return p, rec, live


def finish(p, rec, live, name):
    p.send_signal(signal.SIGINT)
    assert p.wait(30) == 0
    out = os.path.join(DATA, name + ".ndjson")
    subprocess.run([TTFTRACE, "replay", rec, "--json", "-o", out, "-q"], check=True)
    with open(live) as a, open(out) as b:
        assert a.read() == b.read(), "replay differs from the live output"
    os.unlink(live)
    os.chmod(rec, 0o644)  # test data: fixed prompts only
    print("wrote", rec, out)


def truth_path(name):
    path = os.path.join(DATA, name + ".truth.ndjson")
    if os.path.exists(path):
        os.unlink(path)
    return path


def keep_lines(path, events):
    """Keep only the truth log's lines whose "ev" is in events."""
    with open(path) as f:
        lines = [l for l in f if json.loads(l).get("ev") in events]
    with open(path, "w") as f:
        f.writelines(lines)


def save_client(name, recs):
    """Append tests/indep_client.py's records to NAME.truth.ndjson (they carry "local_port")."""
    assert all(r["error"] is None and r["status"] == 200 for r in recs), recs
    with open(os.path.join(DATA, name + ".truth.ndjson"), "a") as f:
        f.writelines(json.dumps(r, sort_keys=True) + "\n" for r in recs)


def fixture():
    truth = truth_path("fixture")
    srv = subprocess.Popen([SSE_SERVER, "--port", "0", "--ttft-ms", "30", "--itl-ms", "6",
                            "--rt", "10", "--log", truth], stdout=subprocess.PIPE, text=True)
    port = int(srv.stdout.readline().rsplit(":", 1)[1])
    try:
        p, rec, live = start_tracer(port, "fixture")
        # two keep-alive connections, 3 requests each; no TCP_NODELAY, so Nagle
        # holds some first tokens back (the `nagle` flag): the client's receipt
        # bounds those from above
        recs = stream_load(port, n=6, c=2, max_tokens=5, include_usage=False)
        time.sleep(0.2)
        finish(p, rec, live, "fixture")
    finally:
        srv.terminate()
        srv.wait()
    save_client("fixture", recs)
    os.chmod(truth, 0o644)


def demo():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    srv = subprocess.Popen(["node", os.path.join(ROOT, "tools/demo/server.mjs"), "--port",
                            str(port), "--parallel", "2"])
    try:
        for _ in range(600):
            try:
                with socket.create_connection(("127.0.0.1", port), 0.2) as s:
                    s.sendall(b"GET /health HTTP/1.1\r\nHost: x\r\n\r\n")
                    if b"200" in s.recv(100):
                        break
            except OSError:
                pass
            time.sleep(0.2)
        p, rec, live = start_tracer(port, "demo")
        truth_path("demo")
        save_client("demo", stream_load(port, n=2, c=2, max_tokens=8))
        time.sleep(0.3)
        finish(p, rec, live, "demo")
    finally:
        srv.terminate()
        srv.wait()


def split_run(name, script, *args):
    """A message-hop stack under `-c`, 8 requests 4 at a time (vllm_split, sglang_split)."""
    sys.path.insert(0, os.path.join(ROOT, "tests", "root", "hops"))
    from conftest import free_port
    from test_vllm_shaped import PYTHON, workload
    port = free_port()
    rec, live = os.path.join(DATA, name + ".rec"), os.path.join(DATA, name + ".live.ndjson")
    truth = truth_path(name)
    cmd = " ".join([PYTHON, script, "--port", str(port), "--log", truth] + list(args))
    p = subprocess.Popen([TTFTRACE, "--capture-bytes", "8192", "-c", cmd, "--json", "-o", live,
                          "--record", rec], stderr=subprocess.DEVNULL)
    deadline = time.monotonic() + 60
    while True:
        try:
            socket.create_connection(("127.0.0.1", port), timeout=1).close()
            break
        except OSError:
            assert time.monotonic() < deadline and p.poll() is None
            time.sleep(0.2)
    # ttftrace looks for the command's listening port 5 times a second (user/cmd/trace.c)
    time.sleep(1.5)
    work = []
    for path, prompt, max_tokens in workload(100)[:8]:
        body = {"model": "m", "stream": True, "max_tokens": max_tokens}
        body["messages" if path == "/v1/chat/completions" else "prompt"] = \
            [{"role": "user", "content": prompt}] if path == "/v1/chat/completions" else prompt
        work.append((path, body))
    # one connection per request, as the split tests' clients: 4 at a time
    recs = []
    for i in range(0, len(work), 4):
        batch = [threading.Thread(target=lambda w=w: recs.extend(stream_work(port, [w])))
                 for w in work[i:i + 4]]
        for t in batch:
            t.start()
        for t in batch:
            t.join(120)
    time.sleep(1.0)
    finish(p, rec, live, name)
    keep_lines(truth, ("request", "eng_req"))
    save_client(name, recs)
    os.chmod(truth, 0o644)


def vllm_split():
    sys.path.insert(0, os.path.join(ROOT, "tests", "root", "hops"))
    from test_vllm_shaped import BLOCK, FRONTEND, PREFILL_US, STEP_MS
    split_run("vllm_split", FRONTEND, "--transport", "tcp", "--prefix-caching", "--step-ms",
              str(STEP_MS), "--prefill-us-per-token", str(PREFILL_US), "--block-size", str(BLOCK))


def sglang_split():
    split_run("sglang_split", os.path.join(ROOT, "tests", "fixtures", "sglang_shaped",
                                           "tokenizer_manager.py"),
              "--transport", "tcp", "--codec", "msgpack", "--decode-ms", "4", "--prefill-ms", "3",
              "--prefill-us-per-token", "10", "--tokenize-us-per-token", "2", "--detokenize-us",
              "200")


if __name__ == "__main__":
    os.makedirs(DATA, exist_ok=True)
    for what in sys.argv[1:] or ["fixture"]:
        {"fixture": fixture, "demo": demo, "vllm_split": vllm_split,
         "sglang_split": sglang_split}[what]()
