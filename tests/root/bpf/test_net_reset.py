# SPDX-License-Identifier: GPL-2.0-only
"""A connection reset before the server read its request must not leak into
the next connection (bpf/net_common.bpf.h sk_id, docs/kernel.md B1.9).

A reset socket is in TCP_CLOSE, yet read() still returns what it had queued.
The syscall source names sockets by their struct sock address; an id given
to such a socket would never be forgotten (its CLOSE transition is past), and
the next connection accepted at the same address would inherit it, with the
dead one's tuple. Each round here is one reset client, then one normal one;
every normal request must carry its own client port and the server's port.
"""
import json
import os
import socket
import struct
import subprocess

import pytest

from conftest import needs_root

pytestmark = needs_root

HERE = os.path.dirname(os.path.abspath(__file__))
ROUNDS = 6
REQ = (b"POST /v1/completions HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
       b"Content-Length: %d\r\n\r\n")


def send_request(port, reset):
    body = json.dumps({"prompt": "p", "stream": True, "max_tokens": 3}).encode()
    c = socket.create_connection(("127.0.0.1", port))
    c.sendall(REQ % len(body) + body)
    lport = c.getsockname()[1]
    if reset:
        c.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
    else:
        got = b""
        while b"[DONE]" not in got:
            chunk = c.recv(65536)
            assert chunk, got
            got += chunk
    c.close()
    return lport


@pytest.mark.parametrize("source", ["sock", "syscall"])
def test_reset_does_not_leak_into_next_connection(procs, tracer, source):
    p = procs.add(subprocess.Popen(["/usr/bin/python3", os.path.join(HERE, "reset_server.py"),
                                    "100"], stdout=subprocess.PIPE, text=True))
    line = p.stdout.readline()
    assert line.startswith("listening on 127.0.0.1:"), line
    port = int(line.rsplit(":", 1)[1])
    tr = tracer("-p", p.pid, "--net-source", source)
    good, reset = [], []
    for _ in range(ROUNDS):
        reset.append(send_request(port, reset=True))
        assert p.stdout.readline().startswith("reset "), "the server read no reset"
        good.append(send_request(port, reset=False))
        assert p.stdout.readline().startswith("served ")
    tr.wait_requests(2 * ROUNDS)
    # the reset connections' requests are out before tracing stops
    early = {r["conn"] for r in tr.requests()}
    assert tr.stop() == 0, tr.stderr
    conn = "127.0.0.1:%d<-127.0.0.1:%d"
    assert {conn % (port, c) for c in reset} <= early, (early, reset)
    by_conn = {r["conn"]: r for r in tr.requests()}
    assert sorted(by_conn) == sorted(conn % (port, c) for c in good + reset), by_conn.keys()
    for c in good:
        r = by_conn[conn % (port, c)]
        assert ("aborted" not in r["flags"], r["tokens"]) == (True, 3), r
    for c in reset:
        r = by_conn[conn % (port, c)]
        assert ("aborted" in r["flags"], r["tokens"]) == (True, 0), r
