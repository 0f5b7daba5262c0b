# SPDX-License-Identifier: GPL-2.0-only
"""Helpers of the protocol tests (tests/root/proto): a timing HTTP/1.1 client that
keeps each received byte's arrival time (time.monotonic_ns, the clock of
bpf_ktime_get_ns), mock servers started as processes, and the shared
assertion that ttftrace's times match the client's within a tolerance."""
import json
import os
import re
import socket
import subprocess
import sys
import time
import zlib

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.dirname(HERE))
from conftest import check_server_interval, free_port  # noqa: E402

# ttftrace's times (server-observed) against the client's own: within this.
TOL_MS = 2.0

# As root, servers and clients run SCHED_FIFO (as the fixture server does,
# tests/conftest.py), so that other work on a small machine does not delay
# the client's timestamps by more than the tolerance.
RT = ["chrt", "-f", "10"] if os.geteuid() == 0 else []


class realtime:
    """`with realtime():` runs the calling thread (and threads it starts)
    SCHED_FIFO 10 as root, as RT does for processes; a no-op otherwise."""

    def __enter__(self):
        self.was = None
        if os.geteuid() == 0:
            self.was = (os.sched_getscheduler(0), os.sched_getparam(0))
            os.sched_setscheduler(0, os.SCHED_FIFO, os.sched_param(10))
        return self

    def __exit__(self, *exc):
        if self.was:
            os.sched_setscheduler(0, self.was[0], self.was[1])
        return False


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
        self.t_first_body_ns = 0    # first body byte (coded or not)
        self.status = 0
        self.headers = {}
        self.events = []            # (data object or "[DONE]", time ns)
        self.local_port = 0
        self.interim = []           # 1xx status codes seen before the final response


def post_stream(sock, timed, path, body, is_token, is_visible=None, extra_headers="",
                headers=None):
    """One POST on a keep-alive connection; reads a chunked SSE response,
    decoding a gzip or deflate Content-Encoding (each chunk at the arrival of
    its last byte); a body in another coding is only timed."""
    if headers:
        extra_headers += "".join("%s: %s\r\n" % kv for kv in headers.items())
    data = json.dumps(body).encode()
    req = ("POST %s HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n"
           "%sContent-Length: %d\r\n\r\n" % (path, extra_headers, len(data))).encode() + data
    base = len(timed.buf)
    t_sent = time.monotonic_ns()
    sock.sendall(req)
    r = read_response(timed, base, is_token, is_visible)
    r.t_sent_ns = t_sent
    r.local_port = sock.getsockname()[1]
    return r


def read_response(timed, base, is_token, is_visible=None):
    """One chunked SSE response starting at timed.buf[base:], with its times."""
    r = StreamResult()
    timed.need(base + 1)
    r.t_head_ns = timed.time_at(base + 1)
    end = timed.until(b"\r\n\r\n", base)
    lines = timed.buf[base:end].decode().split("\r\n")
    r.status = int(lines[0].split()[1])
    for l in lines[1:]:
        k, _, v = l.partition(":")
        r.headers[k.strip().lower()] = v.strip()
    pos = end + 4
    pending = b""
    coding = r.headers.get("content-encoding")
    dec = None
    if coding in ("gzip", "deflate"):
        dec = zlib.decompressobj(31 if coding == "gzip" else 15)
    while True:
        e = timed.until(b"\r\n", pos)
        size = int(timed.buf[pos:e].split(b";")[0], 16)
        timed.need(e + 2 + size + 2)
        piece = timed.buf[e + 2:e + 2 + size]
        if size and not r.t_first_body_ns:
            r.t_first_body_ns = timed.time_at(e + 3)
        pos = e + 2 + size + 2
        if size == 0:
            break
        if coding and not dec:
            continue
        t_piece = timed.time_at(e + 2 + size)
        if dec:
            piece = dec.decompress(piece)
        # each event's time: when its last byte arrived (coded: its chunk's last byte)
        for i in range(len(piece)):
            pending += piece[i:i + 1]
            if pending.endswith(b"\n\n"):
                t = t_piece if dec else timed.time_at(e + 2 + i + 1)
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


def server_stamps(path, n, timeout_s=5):
    """mock_sse.py's log of `n` requests: {(client port, request number):
    stamps}. It logs a request after its last write, so it may lag the
    client's read of it."""
    deadline = time.monotonic() + timeout_s
    while True:
        lines = []
        if os.path.exists(path):
            with open(path) as f:
                lines = f.read().splitlines()
        if len(lines) >= n or time.monotonic() > deadline:
            break
        time.sleep(0.05)
    assert len(lines) == n, "the server logged %d requests, not %d" % (len(lines), n)
    return {(st["port"], st["seq"]): st for st in map(json.loads, lines)}


def server_ms(stamps, key):
    """The server's own interval from its read of the request to its write of `key`."""
    return (stamps[key] - stamps["t_read_ns"]) / 1e6


def by_client_port(recs):
    out = {}
    for rec in recs:
        port = int(rec["conn"].rsplit(":", 1)[1])
        out.setdefault(port, []).append(rec)
    for v in out.values():
        v.sort(key=lambda x: x["conn_seq"])
    return out


def close_ms(got_ms, want_ns, since_ns, what, tol=TOL_MS, floor_ms=None, server_ms=None):
    """ttftrace's interval `got_ms` against the client's (want_ns - since_ns).

    Without a floor: within `tol` either way. With `floor_ms`, the least the
    server was told to wait before the event: conftest.check_server_interval
    (at least the floor, never more than the client saw, and below it by no
    more than a loaded machine delays the client's own timestamps, or, given
    `server_ms`, no less than the server's own log of it)."""
    want_ms = (want_ns - since_ns) / 1e6
    assert got_ms is not None, "%s: ttftrace reported null, client saw %.3f ms" % (what, want_ms)
    if floor_ms is not None:
        check_server_interval(what, got_ms, want_ms, floor_ms, server_ms)
        return
    assert abs(got_ms - want_ms) <= tol, "%s: ttftrace %.3f ms, client %.3f ms" % (
        what, got_ms, want_ms)


_TRACE_LINE = re.compile(r"^(\d\d):(\d\d):(\d\d)\.(\d{6}) (=>|<=|==) (.*)$")


def parse_curl_trace(path):
    """curl --trace FILE --trace-time (hex dump): [(t_ns, dir, title, bytes)].

    The times are curl's own clock, good for differences within one run."""
    out = []
    with open(path, errors="replace") as f:
        for raw in f:
            raw = raw.rstrip("\n")
            m = _TRACE_LINE.match(raw)
            if m:
                h, mi, s, us = (int(x) for x in m.groups()[:4])
                t = ((h * 60 + mi) * 60 + s) * 10**9 + us * 1000
                out.append([t, m.group(5), m.group(6), b""])
            elif out and re.match(r"^[0-9a-f]{4}: ", raw):
                out[-1][3] += bytes.fromhex(raw[6:6 + 48].replace(" ", ""))
    return out


def request_sent_ns(ev):
    """A stamp curl took before it began writing the request, from
    parse_curl_trace() events. curl traces the request head ("=> Send
    header") after the write returned (curl 7.88 lib/http.c
    Curl_buffer_send: Curl_debug after Curl_write, with the count written),
    so a curl preempted there stamps it late (CI: a client TTFT 1 ms short of
    the server's). The event traced just before it (the h2 "Using Stream ID",
    HTTP/1's "Connected to") was traced before the write."""
    i = next(i for i, (_, d, ti, _) in enumerate(ev) if d == "=>" and ti.startswith("Send header"))
    return ev[max(0, i - 1)][0]


class _Replayed(Timed):
    """A Timed filled from a recording; fill() means the bytes ended."""

    def __init__(self, pieces):
        super().__init__(None)
        for t, b in pieces:
            self.buf += b
            self.marks.append((len(self.buf), t))

    def fill(self):
        raise ConnectionError("the trace ends here")


def curl_stream(trace_path, is_token, is_visible=None):
    """What a traced curl saw of one SSE response: read_response() over its
    received bytes (head and chunked body, as curl's --trace shows them)."""
    ev = parse_curl_trace(trace_path)
    t_sent = request_sent_ns(ev)
    pieces = []
    for t, d, ti, b in ev:
        if d == "<=" and (ti.startswith("Recv header") or ti.startswith("Recv data")):
            pieces.append((t, b))
    r = read_response(_Replayed(pieces), 0, is_token, is_visible)
    r.t_sent_ns = t_sent
    return r


class H2Client:
    """HTTP/2 cleartext (prior knowledge) with python3-h2 on one socket:
    several streams in flight, each response's SSE events timed when the
    recv that completed them returned (time.monotonic_ns)."""

    def __init__(self, port):
        import h2.config
        import h2.connection
        self.sock = socket.create_connection(("127.0.0.1", port))
        self.sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        self.local_port = self.sock.getsockname()[1]
        self.conn = h2.connection.H2Connection(h2.config.H2Configuration(client_side=True))
        self.conn.initiate_connection()
        self.sock.sendall(self.conn.data_to_send())
        self.results = {}

    def start(self, path, body, is_token):
        sid = self.conn.get_next_available_stream_id()
        data = json.dumps(body).encode()
        self.conn.send_headers(sid, [(":method", "POST"), (":path", path),
                                     (":scheme", "http"), (":authority", "127.0.0.1"),
                                     ("content-type", "application/json")])
        self.conn.send_data(sid, data, end_stream=True)
        r = StreamResult()
        r.local_port = self.local_port
        r.is_token = is_token
        r.pending = b""
        r.done = False
        r.t_sent_ns = time.monotonic_ns()
        self.sock.sendall(self.conn.data_to_send())
        self.results[sid] = r
        return sid

    def run(self, timeout_s=20):
        import h2.events
        deadline = time.monotonic() + timeout_s
        while not all(r.done for r in self.results.values()):
            assert time.monotonic() < deadline, "h2 responses did not end"
            d = self.sock.recv(65536)
            t = time.monotonic_ns()
            if not d:
                raise ConnectionError("server closed")
            for ev in self.conn.receive_data(d):
                r = self.results.get(getattr(ev, "stream_id", None))
                if isinstance(ev, h2.events.ResponseReceived):
                    r.t_head_ns = t
                    r.status = int(dict(ev.headers)[b":status"])
                    r.headers = {k.decode(): v.decode() for k, v in ev.headers}
                elif isinstance(ev, h2.events.DataReceived):
                    self.conn.acknowledge_received_data(ev.flow_controlled_length, ev.stream_id)
                    r.pending += ev.data
                    while b"\n\n" in r.pending:
                        e, r.pending = r.pending.split(b"\n\n", 1)
                        for line in e.split(b"\n"):
                            if line.startswith(b"data:"):
                                p = line[5:].strip().decode()
                                obj = p if p == "[DONE]" else json.loads(p)
                                r.events.append((obj, t))
                                if not r.t_first_event_ns:
                                    r.t_first_event_ns = t
                                if r.is_token(obj) and not r.t_first_token_ns:
                                    r.t_first_token_ns = t
                elif isinstance(ev, h2.events.StreamEnded):
                    r.done = True
            out = self.conn.data_to_send()
            if out:
                self.sock.sendall(out)
        return self.results

    def close(self):
        self.conn.close_connection()
        self.sock.sendall(self.conn.data_to_send())
        self.sock.close()


def curl_h2_stream(trace_path, is_token, decode=None):
    """What a traced `curl --http2-prior-knowledge` saw: the response head
    and the body's SSE events, timed by curl's trace (curl shows HTTP/2
    bodies out of their frames, still content-coded: decode="gzip")."""
    ev = parse_curl_trace(trace_path)
    dec = zlib.decompressobj(31) if decode == "gzip" else None
    r = StreamResult()
    r.t_sent_ns = request_sent_ns(ev)
    pending = b""
    for t, d, ti, b in ev:
        if d != "<=":
            continue
        if ti.startswith("Recv header") and b.startswith(b"HTTP/2 "):
            r.t_head_ns = t
            r.status = int(b.split()[1])
        elif ti.startswith("Recv data"):
            pending += dec.decompress(b) if dec else b
            while b"\n\n" in pending:
                e, pending = pending.split(b"\n\n", 1)
                for line in e.split(b"\n"):
                    if line.startswith(b"data:"):
                        p = line[5:].strip().decode()
                        obj = p if p == "[DONE]" else json.loads(p)
                        r.events.append((obj, t))
                        if not r.t_first_event_ns:
                            r.t_first_event_ns = t
                        if is_token(obj) and not r.t_first_token_ns:
                            r.t_first_token_ns = t
    return r
