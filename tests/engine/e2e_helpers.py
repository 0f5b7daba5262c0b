# SPDX-License-Identifier: GPL-2.0-only
"""Helpers for the end-to-end tier: the demo llama.cpp server and the join of
a client's records to ttftrace's.

The demo server (tools/demo/server.mjs) runs a real llama.cpp engine through
node-llama-cpp on a random-weight GGUF model. The truth on the client side is
tests/indep_client.py, which shares no code with ttftrace; loadgen
(tools/loadgen) splits the stream with ttftrace's own SSE code, so it is only
the tool under test of the demo script and sweep tests (LOADGEN).
"""
import json
import os
import re
import shutil
import subprocess
import threading
import time

from conftest import ROOT

DEMO_DIR = os.path.join(ROOT, "tools", "demo")
SERVER_JS = os.path.join(DEMO_DIR, "server.mjs")
MODEL = os.path.join(DEMO_DIR, "model", "demo.gguf")
NODE_LLAMA = os.path.join(DEMO_DIR, "node_modules", "node-llama-cpp")
LOADGEN = os.path.join(ROOT, ".output", "bin", "loadgen")

# Loading node-llama-cpp and the model takes about 3 s here; allow for a slow machine.
SERVER_START_TIMEOUT_S = 120

# ttftrace's "conn" is "laddr:lport<-raddr:rport"; on the server the remote
# port is the client's local port (addresses may be bracketed IPv6).
CONN_RE = re.compile(r"<-\[?[^\]]*\]?:(\d+)$")


def demo_missing_reason():
    """Why the demo engine cannot run here, or None."""
    if shutil.which("node") is None:
        return "node not installed (tools/setup.sh)"
    if not os.path.isdir(NODE_LLAMA):
        return "node-llama-cpp not installed (tools/demo/install.sh)"
    if not os.path.isfile(MODEL):
        return "demo model missing (tools/demo/install.sh)"
    return None


class DemoServer:
    """A running tools/demo/server.mjs on 127.0.0.1; .port, .pid, .log()."""

    def __init__(self, log_path, parallel=1):
        self.log_path = log_path
        self._log = open(log_path, "w")
        self.proc = subprocess.Popen(
            ["node", SERVER_JS, "--port", "0", "--parallel", str(parallel)],
            stdout=subprocess.PIPE, stderr=self._log, text=True, cwd=ROOT)
        line = [None]

        def read():
            line[0] = self.proc.stdout.readline()

        t = threading.Thread(target=read, daemon=True)
        t.start()
        t.join(SERVER_START_TIMEOUT_S)
        got = line[0] or ""
        if not got.startswith("listening on "):
            self.stop()
            raise AssertionError("demo server did not start (said %r): %s" % (got, self.log()))
        self.port = int(got.strip().rsplit(":", 1)[1])
        self.pid = self.proc.pid

    def log(self):
        self._log.flush()
        with open(self.log_path) as f:
            return f.read()

    def stop(self):
        if self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(timeout=10)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait(timeout=10)
        self._log.close()


def join(client_reqs, traced):
    """Map each client record to ttftrace's record of the same request.

    Key: (client local port, position on the keep-alive connection). Returns
    (pairs, unmatched client records, duplicate traced keys).
    """
    by_key, dups = {}, []
    for s in traced:
        m = CONN_RE.search(s.get("conn") or "")
        assert m, "ttftrace conn field not 'L:lp<-R:rp': %r" % s.get("conn")
        key = (int(m.group(1)), s.get("conn_seq"))
        if key in by_key:
            dups.append(key)
        by_key[key] = s
    pairs, unmatched = [], []
    for r in client_reqs:
        s = by_key.get((r["local_port"], r["conn_seq"]))
        if s is None:
            unmatched.append(r)
        else:
            pairs.append((r, s))
    return pairs, unmatched, dups


def wait_for_file_lines(path, pred, n, timeout_s=5.0):
    """Wait until n NDJSON lines in path satisfy pred (ttftrace writes as requests end)."""
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        try:
            with open(path) as f:
                k = sum(1 for l in f if l.strip().startswith("{") and pred(json.loads(l)))
        except (OSError, ValueError):
            k = 0
        if k >= n:
            return
        time.sleep(0.05)
