# SPDX-License-Identifier: GPL-2.0-only
"""Field cases 14 and 5 (docs/cases.md #14, #5), root.

14: the server's own histogram starts its clock when it reads the request;
    the client's includes the time the request waited in the socket. ttftrace
    must make that gap visible as a stage instead of picking one number.
5:  multi-process servers: the tree is built from the listening socket's
    owner down through its children, so engine/worker processes spawned by
    the API process are traced too.
"""
import json
import os
import subprocess
import sys
import time

from conftest import SSE_SERVER, Client, conn_client_port, needs_root, free_port

pytestmark = needs_root

READ_DELAY_MS = 80
TTFT_MS = 50


def test_case14_read_wait_shows_what_the_server_histogram_misses(sse_server, tracer):
    srv = sse_server("--ttft-ms", str(TTFT_MS), "--itl-ms", "5", "--tokens", "4",
                     "--nodelay", "--read-delay-ms", str(READ_DELAY_MS))
    tr = tracer("-p", srv.pid)
    c = Client(srv.port)
    resp = [c.request(max_tokens=4) for _ in range(2)]
    c.close()
    tr.wait_requests(2)
    assert tr.stop() == 0, tr.stderr
    recs = sorted(tr.requests(), key=lambda r: r["conn_seq"])
    truth = {t["conn_seq"]: t for t in srv.truth()}
    for rec, r in zip(recs, resp):
        t = truth[rec["conn_seq"]]
        server_view_ms = (t["t_token_ns"][0] - t["t_read_ns"]) / 1e6   # what the server sees
        client_ms = (r.t_first_token_ns - r.t_sent_ns) / 1e6
        st = rec["stages_ms"]
        # The server's own clock says ~50 ms; the client waited ~130 ms. The
        # fixture sleeps, so it is never early; a loaded machine makes it
        # late, and its log and the client's clock say by how much: the
        # request arrived while the client's send ran (loopback), and the
        # first token left inside the write the log brackets.
        assert server_view_ms >= TTFT_MS - 0.1, server_view_ms
        ttft_lo_ms = (t["t_token_pre_ns"][0] - r.t_sent_after_ns) / 1e6 - 1.0
        assert READ_DELAY_MS + TTFT_MS - 4 <= rec["ttft_ms"], rec["ttft_ms"]
        assert ttft_lo_ms <= rec["ttft_ms"] <= client_ms + 0.5, (rec["ttft_ms"], ttft_lo_ms,
                                                                  client_ms)
        # The gap is a stage of its own, not hidden in "server": from the
        # arrival to the server's read, which the fixture logged.
        wait_lo_ms = (t["t_read_ns"] - r.t_sent_after_ns) / 1e6
        wait_hi_ms = (t["t_read_ns"] - r.t_sent_ns) / 1e6
        assert READ_DELAY_MS - 3 <= st["read_wait"], st
        assert wait_lo_ms - 3 <= st["read_wait"] <= wait_hi_ms + 3, (st, wait_lo_ms, wait_hi_ms)
        assert abs(st["server"] - server_view_ms) < 2, (st, server_view_ms)
        assert abs(rec["stage_sum_ms"] - rec["ttft_ms"]) <= 0.002, rec


def test_case14_read_wait_under_c_new_connections(tracer, tmp_path):
    """The same gap under `ttftrace -c`, each request on a new connection: the
    server was not running when ttftrace started, so the bytes of a connection it
    has not accepted yet can be timed only once ttftrace knows the port it listens
    on (it looks 5 times a second until it finds one: user/cmd/trace.c). Truth:
    the client's clock reads around send() bound the arrival, the fixture's log
    bounds the read."""
    port, log = free_port(), str(tmp_path / "srv.ndjson")
    tr = tracer("-c", "%s --port %d --ttft-ms %d --itl-ms 5 --tokens 3 --nodelay "
                "--read-delay-ms %d --log %s" % (SSE_SERVER, port, TTFT_MS, READ_DELAY_MS, log))
    deadline = time.monotonic() + 10
    while True:
        try:
            Client(port, timeout_s=1).close()
            break
        except OSError:
            assert time.monotonic() < deadline, tr.stderr
            time.sleep(0.05)
    time.sleep(1.5)
    sent = []
    for _ in range(3):
        c = Client(port)
        sent.append((c.local_port, c.request(max_tokens=3)))
        c.close()
    tr.wait_requests(3)
    assert tr.stop() == 0, tr.stderr
    recs = {conn_client_port(r): r for r in tr.requests()}
    with open(log) as f:
        truth = {t["rport"]: t for t in map(json.loads, f)}
    for lport, r in sent:
        rec, t = recs[lport], truth[lport]
        assert r.t_sent_ns - 1000 <= rec["t_arrival_ns"] <= r.t_sent_after_ns, (
            rec["t_arrival_ns"] - r.t_sent_ns, r.t_sent_after_ns - r.t_sent_ns)
        wait_ms = (t["t_read_ns"] - rec["t_arrival_ns"]) / 1e6
        assert wait_ms >= READ_DELAY_MS, wait_ms
        # read_wait ends when the read returned: before the fixture logged it
        assert READ_DELAY_MS <= rec["stages_ms"]["read_wait"] <= wait_ms, (rec["stages_ms"],
                                                                           wait_ms)


PARENT = r"""
import os, socket, subprocess, sys, time
port = int(sys.argv[1])
s = socket.socket(); s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
s.bind(("127.0.0.1", port)); s.listen(4)
child = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(20)"])
print(child.pid, flush=True)
try:
    time.sleep(20)
finally:
    child.kill()
"""


def test_case5_port_owner_and_its_children_are_traced(tracer, procs):
    port = free_port()
    p = subprocess.Popen([sys.executable, "-c", PARENT, str(port)], stdout=subprocess.PIPE,
                         text=True)
    procs.add(p)
    child = int(p.stdout.readline())
    time.sleep(0.2)
    tr = tracer("--port", port, json_out=False)
    time.sleep(0.3)
    tr.stop()
    line = [l for l in tr.stderr.splitlines() if l.startswith("Tracing PID")]
    assert line, tr.stderr
    pids = line[0].split("Tracing PID ")[1].split(",")
    pids = {int(x.split()[0].rstrip(";")) for x in pids if x.strip()[0].isdigit()}
    os.kill(child, 9)
    assert p.pid in pids and child in pids, (line, p.pid, child)
