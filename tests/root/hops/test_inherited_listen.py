# SPDX-License-Identifier: GPL-2.0-only
"""Workers that accept on a listening socket their parent bound (case 35).

tests/root/hops/inherit_app.py binds a port, listens, and starts 2 workers that
accept on that socket: fork-inherited, or passed with SCM_RIGHTS to fresh
interpreters. The parent never accepts. `ttftrace --port P` (the socket's
owners: every process holding socket:[inode]) and `ttftrace -p PARENT`
must name the workers in the start-up map of listeners, report every
request each worker served with that worker's pid, and, when a worker is
killed and the parent starts another, the new worker's requests too.
"""
import json
import os
import re
import signal
import subprocess
import threading
import time

import pytest

from conftest import Client, conn_client_port, needs_root

pytestmark = needs_root

HERE = os.path.dirname(os.path.abspath(__file__))
TOKENS = 4


class App:
    """inherit_app.py running: .port, .pid, .workers (in start order), .truth()."""

    def __init__(self, procs, how, log):
        self.log = log
        self.proc = procs.add(subprocess.Popen(
            ["/usr/bin/python3", os.path.join(HERE, "inherit_app.py"), "--workers", "2",
             "--pass", how, "--log", log], stdout=subprocess.PIPE, text=True))
        line = self.proc.stdout.readline()
        assert line.startswith("listening on 127.0.0.1:"), line
        self.port = int(line.rsplit(":", 1)[1])
        self.pid = self.proc.pid
        self.workers = [self.next_worker(), self.next_worker()]

    def next_worker(self):
        line = self.proc.stdout.readline()
        assert line.startswith("worker "), line
        return int(line.split()[1])

    def wait_holds(self, pid, timeout_s=10):
        """Until pid holds the listening socket (an SCM_RIGHTS worker gets it late)."""
        ino = listen_inode(self.pid)
        deadline = time.monotonic() + timeout_s
        while ino not in socket_inodes(pid):
            assert time.monotonic() < deadline, "worker %d never got socket:[%d]" % (pid, ino)
            time.sleep(0.05)

    def truth(self):
        with open(self.log) as f:
            return {t["id"]: t for t in map(json.loads, f)}

    def stop(self):
        if self.proc.poll() is None:
            self.proc.terminate()
        self.proc.wait(timeout=10)


def socket_inodes(pid):
    out = set()
    d = "/proc/%d/fd" % pid
    for fd in os.listdir(d):
        try:
            m = re.match(r"socket:\[(\d+)\]", os.readlink(os.path.join(d, fd)))
        except OSError:
            continue
        if m:
            out.add(int(m.group(1)))
    return out


def listen_inode(pid):
    (ino,) = socket_inodes(pid)     # the parent holds only its listening socket
    return ino


@pytest.fixture
def app(procs, tmp_path):
    started = []

    def start(how):
        a = App(procs, how, str(tmp_path / "truth.ndjson"))
        started.append(a)
        for w in a.workers:
            a.wait_holds(w)
        return a

    yield start
    for a in started:
        a.stop()


def requests(port, ids):
    """One streamed request per id, 4 clients at a time; {client port: id}."""
    ports, errors, lock = {}, [], threading.Lock()
    todo = list(ids)

    def run():
        while True:
            with lock:
                if not todo:
                    return
                rid = todo.pop(0)
            try:
                c = Client(port)
                body = {"tokens": TOKENS, "ttft_ms": 20, "itl_ms": 5, "messages": [
                    {"role": "user", "content": "request %s" % rid}]}
                r = c.request(body=body, extra_headers="X-Req-Id: %s\r\n" % rid)
                c.close()
                assert r.status == 200 and len(c.token_events(r)) == TOKENS, r.body[:200]
                with lock:
                    ports[r.local_port] = rid
            except Exception as e:  # reported below
                errors.append(repr(e))

    th = [threading.Thread(target=run) for _ in range(4)]
    for t in th:
        t.start()
    for t in th:
        t.join(60)
    assert not errors, errors
    return ports


def serve_until(a, prefix, pids, n_each=3, max_rounds=10):
    """Requests in rounds of 8 until each of pids served n_each of them; {client port: id}."""
    ports = {}
    for k in range(max_rounds):
        ports.update(requests(a.port, ["%s-%d-%d" % (prefix, k, i) for i in range(8)]))
        truth = a.truth()
        served = [sum(1 for rid in ports.values() if truth[rid]["pid"] == p) for p in pids]
        if min(served) >= n_each:
            return ports
    pytest.fail("workers %s served %s of %d requests" % (pids, served, len(ports)))


@pytest.mark.parametrize("how", ["fork", "scm"])
@pytest.mark.parametrize("by", ["port", "pid"])
def test_workers_on_inherited_listener(app, tracer, how, by):
    a = app(how)
    w1, w2 = a.workers
    tr = tracer("--port", a.port) if by == "port" else tracer("-p", a.pid)
    # the start-up map: the listener and every process that holds it
    ino = listen_inode(a.pid)
    m = re.search(r"Listener port %d \(socket:\[%d\]\): held by (.*)" % (a.port, ino), tr.stderr)
    assert m, tr.stderr
    held = [int(p) for p in re.findall(r"PID (\d+)", m.group(1))]
    assert sorted(held) == sorted([a.pid, w1, w2]), (held, tr.stderr)
    ports = serve_until(a, "a", [w1, w2])

    # a worker dies; the parent starts another, which accepts on the same socket
    os.kill(w1, signal.SIGKILL)
    w3 = a.next_worker()
    a.wait_holds(w3)
    ports.update(serve_until(a, "b", [w2, w3]))
    truth = a.truth()
    tr.wait_requests(len(ports), timeout_s=10)
    time.sleep(0.3)
    assert tr.stop() == 0, tr.stderr
    # the new worker is named when it starts to hold the listener
    assert "Listener port %d (socket:[%d]): PID %d (python3), forked by PID %d, holds it " \
        "too" % (a.port, ino, w3, a.pid) in tr.stderr, \
        tr.stderr
    got = {conn_client_port(r): r for r in tr.requests()}
    missing = [rid for lp, rid in ports.items() if lp not in got]
    assert not missing, (missing, sorted(got))
    wrong = ["%s: worker %d, ttftrace pid %d" % (rid, truth[rid]["pid"], got[lp]["pid"])
             for lp, rid in ports.items() if got[lp]["pid"] != truth[rid]["pid"]]
    assert not wrong, wrong
    by_pid = {}
    for lp, rid in ports.items():
        by_pid.setdefault(got[lp]["pid"], []).append(got[lp])
    assert set(by_pid) >= {w1, w2, w3} and a.pid not in by_pid, sorted(by_pid)
    for pid in (w1, w2, w3):
        for r in by_pid[pid]:
            assert r["tokens"] == TOKENS and r["ttft_ms"] >= 19, r
