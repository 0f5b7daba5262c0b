# SPDX-License-Identifier: GPL-2.0-only
"""A server in a container's network namespace, traced from the host (docs/kernel.md B14).

The traced server runs in a network namespace of its own and waits
READ_DELAY_MS after each request arrives before it reads it (docs/cases.md
#14). The request arrived before the connection's first read, so only the
listening port tells the kernel-side programs that it is wanted: its arrival
is noted when the port is in listen_ports under the server's namespace. That
port is read from the server's own /proc/PID/net/tcp, not from the tracer's
namespace. An untraced server in the host namespace listens on the same port
number and gets traffic at the same time: the listener map must name only
the traced one, and the namespace. Both network sources (their programs
share the check, bpf/net_common.bpf.h sock_wanted).
"""
import os
import re
import secrets
import subprocess
import threading

import pytest

from conftest import Client, in_netns, needs_root

pytestmark = needs_root

READ_DELAY_MS = 60
TTFT_MS = 30
N_CONN = 4


@pytest.fixture
def netns():
    name = "ttfT" + secrets.token_hex(3)
    subprocess.run(["ip", "netns", "add", name], check=True)
    try:
        subprocess.run(["ip", "-n", name, "link", "set", "lo", "up"], check=True)
        yield name
    finally:
        subprocess.run(["ip", "netns", "del", name], check=False)


@pytest.mark.parametrize("source", ["sock", "syscall"])
def test_container_server_port_is_its_namespace(netns, sse_server, tracer, source):
    args = ("--ttft-ms", str(TTFT_MS), "--itl-ms", "5", "--tokens", "4", "--nodelay",
            "--read-delay-ms", str(READ_DELAY_MS))
    srv = in_netns(netns, lambda: sse_server(*args))
    # The same port number in the host's namespace, not traced.
    host = sse_server("--ttft-ms", "1", "--itl-ms", "1", "--tokens", "2", "--nodelay",
                      "--port", str(srv.port))
    assert host.port == srv.port
    srv_ns = os.stat("/proc/%d/ns/net" % srv.pid).st_ino
    assert srv_ns != os.stat("/proc/self/ns/net").st_ino

    tr = tracer("-p", srv.pid, "--net-source", source)
    assert "listening on port %d (net:[%d])" % (srv.port, srv_ns) in tr.stderr, tr.stderr
    held = re.findall(r"Listener port %d in net:\[%d\] \(socket:\[\d+\]\): held by (.*)\n"
                      % (srv.port, srv_ns), tr.stderr)
    assert held == ["PID %d (sse_server)" % srv.pid], tr.stderr

    stop = threading.Event()

    def host_load():   # untraced traffic on the same port number, meanwhile
        c = Client(host.port)
        while not stop.is_set():
            c.request(max_tokens=2)
        c.close()

    load = threading.Thread(target=host_load)
    load.start()
    try:
        resp = []
        for _ in range(N_CONN):     # each request the first of its connection
            c = in_netns(netns, lambda: Client(srv.port))
            resp.append(c.request(max_tokens=4))
            c.close()
    finally:
        stop.set()
        load.join()
    tr.wait_requests(N_CONN)
    assert tr.stop() == 0, tr.stderr
    recs = tr.requests()
    assert len(recs) == N_CONN, recs
    assert all(r["pid"] == srv.pid for r in recs), recs
    truth = {t["rport"]: t for t in srv.truth()}
    for rec, r in zip(sorted(recs, key=lambda x: x["t_arrival_ns"]),
                      resp):
        st = rec["stages_ms"]
        client_ms = (r.t_first_token_ns - r.t_sent_ns) / 1e6
        # The wait before the first read is seen: its arrival was noted. Truth:
        # the client's send (before and after) to the server's read (its log),
        # at least the delay it was told (a loaded machine sleeps longer)
        read_ns = truth[r.local_port]["t_read_ns"]
        lo, hi = (read_ns - r.t_sent_after_ns) / 1e6 - 3, (read_ns - r.t_sent_ns) / 1e6 + 0.5
        assert max(lo, READ_DELAY_MS - 1) <= st["read_wait"] <= hi, (st, lo, hi)
        assert rec["ttft_ms"] >= READ_DELAY_MS + TTFT_MS - 1, rec
        assert rec["ttft_ms"] <= client_ms + 0.5, (rec["ttft_ms"], client_ms)
