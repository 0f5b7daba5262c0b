# SPDX-License-Identifier: GPL-2.0-only
"""Helpers of the protocol tests (tests/proto): a timing HTTP/1.1 client that
keeps each received byte's arrival time (time.monotonic_ns, the clock of
bpf_ktime_get_ns), mock servers started as processes, and the shared
assertion that ttftrace's times match the client's within a tolerance."""
import json
import os
import socket
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.dirname(HERE))
from conftest import free_port  # noqa: E402

# ttftrace's times (server-observed) against the client's own: within this.
TOL_MS = 2.0

# As root, servers and clients run SCHED_FIFO (as the fixture server does,
# tests/conftest.py), so that other work on a small machine does not delay
# the client's timestamps by more than the tolerance.
RT = ["chrt", "-f", "10"] if os.geteuid() == 0 else []


class Timed:
    """Bytes received on a socket, with the time each recv returned."""

    def __init__(self, sock):
        self.sock = sock
        self.buf = b""
        self.marks = []  # (end offset, recv time ns)

    def fill(self):
        d = self.sock.recv(65536)
        t = time.monotonic_ns()
        if not d:
            raise ConnectionError("peer closed")
        self.buf += d
        self.marks.append((len(self.buf), t))

    def time_at(self, off):
        """When byte off-1 (the last of a prefix of length off) arrived."""
        for end, t in self.marks:
            if end >= off:
                return t
        raise ValueError(off)

    def until(self, sep, start):
        while self.buf.find(sep, start) < 0:
            self.fill()
        return self.buf.find(sep, start)

    def need(self, n):
        while len(self.buf) < n:
            self.fill()


class StreamResult:
    def __init__(self):
        self.t_sent_ns = 0
        self.t_head_ns = 0          # status line received
        self.t_first_event_ns = 0   # first SSE event complete
        self.t_first_token_ns = 0
        self.t_first_visible_ns = 0
        self.status = 0
        self.headers = {}
        self.events = []            # (data object or "[DONE]", time ns)
        self.local_port = 0
        self.interim = []           # 1xx status codes seen before the final response


def post_stream(sock, timed, path, body, is_token, is_visible=None, extra_headers=""):
    """One POST on a keep-alive connection; reads a chunked SSE response."""
    r = StreamResult()
    r.local_port = sock.getsockname()[1]
    data = json.dumps(body).encode()
    req = ("POST %s HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n"
           "%sContent-Length: %d\r\n\r\n" % (path, extra_headers, len(data))).encode() + data
    base = len(timed.buf)
    r.t_sent_ns = time.monotonic_ns()
    sock.sendall(req)
    timed.need(base + 1)
    r.t_head_ns = timed.time_at(base + 1)
    end = timed.until(b"\r\n\r\n", base)
    lines = timed.buf[base:end].decode().split("\r\n")
    r.status = int(lines[0].split()[1])
    for l in lines[1:]:
        k, _, v = l.partition(":")
        r.headers[k.strip().lower()] = v.strip()
    pos = end + 4
    pending, pend_end = b"", pos
    while True:
        e = timed.until(b"\r\n", pos)
        size = int(timed.buf[pos:e].split(b";")[0], 16)
        timed.need(e + 2 + size + 2)
        piece = timed.buf[e + 2:e + 2 + size]
        pos = e + 2 + size + 2
        if size == 0:
            break
        # each event's time: when its last byte arrived
        for i in range(len(piece)):
            pending += piece[i:i + 1]
            if pending.endswith(b"\n\n"):
                t = timed.time_at(e + 2 + i + 1)
                for line in pending.split(b"\n"):
                    if line.startswith(b"data:"):
                        p = line[5:].strip().decode()
                        obj = p if p == "[DONE]" else json.loads(p)
                        r.events.append((obj, t))
                        if not r.t_first_event_ns:
                            r.t_first_event_ns = t
                        if is_token(obj) and not r.t_first_token_ns:
                            r.t_first_token_ns = t
                        if is_visible and is_visible(obj) and not r.t_first_visible_ns:
                            r.t_first_visible_ns = t
                pending = b""
    timed.buf = timed.buf[pos:]
    timed.marks = [(o - pos, t) for o, t in timed.marks if o > pos]
    return r


def start_server(procs, argv, ready=b"listening", timeout_s=15):
    """Start a server process that prints `ready` on stdout once it listens."""
    p = procs.add(subprocess.Popen(RT + list(argv), stdout=subprocess.PIPE, stderr=subprocess.PIPE))
    deadline = time.monotonic() + timeout_s
    line = b""
    while time.monotonic() < deadline:
        line = p.stdout.readline()
        if ready in line or not line:
            break
    assert ready in line, "server %s did not start: %s" % (argv, p.stderr.read().decode())
    return p


def by_client_port(recs):
    out = {}
    for rec in recs:
        port = int(rec["conn"].rsplit(":", 1)[1])
        out.setdefault(port, []).append(rec)
    for v in out.values():
        v.sort(key=lambda x: x["conn_seq"])
    return out


def close_ms(got_ms, want_ns, since_ns, what, tol=TOL_MS):
    want_ms = (want_ns - since_ns) / 1e6
    assert got_ms is not None, "%s: ttftrace reported null, client saw %.3f ms" % (what, want_ms)
    assert abs(got_ms - want_ms) <= tol, "%s: ttftrace %.3f ms, client %.3f ms" % (
        what, got_ms, want_ms)
