# SPDX-License-Identifier: GPL-2.0-only
"""What a scanner, a fuzzer or a broken client sends a server: the byte
strings of the hostile-traffic test (test_hostile.py) and a client that sends
one of them and keeps what the server answered.

The truth of each exchange is what came back on the socket, read here with
the standard library only: the status line of every HTTP/1.x response the
server wrote (nothing of ttftrace's parsers), or for HTTP/2 whether the
server sent a GOAWAY. HTTP/2 frames and HPACK are written by hand from RFC
9113 section 4.1 and RFC 7541 (appendix A, the static table), gRPC's
message prefix from the gRPC HTTP/2 protocol document
(https://github.com/grpc/grpc/blob/master/doc/PROTOCOL-HTTP2.md).
"""
import json
import random
import re
import socket
import struct
import time

from conftest import conn_client_port, conn_server_port

CHAT = json.dumps({"model": "m", "stream": True,
                   "messages": [{"role": "user", "content": "hi"}]}).encode()
# a response's status line: at the start of what came back or after a line end
STATUS_RE = re.compile(rb"(?:^|\n)HTTP/1\.[01] (\d{3}) ")


CLOSE = b"Connection: close\r\n"


def post(path=b"/v1/chat/completions", body=CHAT, extra=b""):
    return (b"POST %s HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n%s"
            b"Content-Length: %d\r\n\r\n%s" % (path, extra, len(body), body))


def _chunked(size_line):
    return (b"POST /v1/chat/completions HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
            b"Transfer-Encoding: chunked\r\n\r\n" + size_line + b"\r\n" + CHAT + b"\r\n0\r\n\r\n")


def http1_cases(rnd):
    """(kind, how to send it) for an HTTP/1.1 server; the how is exchange()'s keywords."""
    return [
        ("bad request line", dict(data=b"GARBAGE\x01\x02 / HTTP/9.9\r\nHost: x\r\n\r\n")),
        ("bad version", dict(data=b"GET / HTTP/9.9\r\nHost: x\r\n\r\n")),
        ("no version", dict(data=b"GET\r\n\r\n")),
        ("header 64 KB", dict(data=post(extra=b"X-Big: " + b"a" * 65536 + b"\r\n"))),
        ("header 1 MB", dict(data=post(extra=b"X-Big: " + b"a" * (1 << 20) + b"\r\n"))),
        ("chunk size invalid", dict(data=_chunked(b"zz"))),
        ("chunk size huge", dict(data=_chunked(b"fffffffffffffffffffff"))),
        # the head a byte at a time, then gone before it ends
        ("slowloris", dict(data=[post()[i:i + 8] for i in range(0, 64, 8)], pause_s=0.05,
                           read=False)),
        ("h2 preface to http/1", dict(data=b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n" + rnd.randbytes(256))),
        ("tls client hello", dict(data=tls_hello(rnd))),
        ("random bytes", dict(data=rnd.randbytes(4096))),
        ("reset mid-request", dict(data=post()[:40], reset=True)),
        ("reset mid-response", dict(data=post(), reset=True, reset_after_s=0.01)),
        ("half-closed mid-body", dict(data=post()[:-5], shut_wr=True)),
        ("half-closed after request", dict(data=post(extra=CLOSE), shut_wr=True)),
        ("pipelined", dict(data=post() * 2 + post(extra=CLOSE))),
    ]


def tls_hello(rnd):
    """A TLS 1.2 record header and handshake header with a random body."""
    body = rnd.randbytes(300)
    hs = b"\x01" + struct.pack(">I", len(body))[1:] + body
    return b"\x16\x03\x01" + struct.pack(">H", len(hs)) + hs


# ---- HTTP/2 (RFC 9113) ----

PREFACE = b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n"
DATA, HEADERS, SETTINGS, GOAWAY = 0, 1, 4, 7
END_STREAM, END_HEADERS = 0x1, 0x4


def frame(kind, flags, stream, payload, length=None):
    n = len(payload) if length is None else length
    return struct.pack(">I", n)[1:] + bytes([kind, flags]) + struct.pack(">I", stream) + payload


def _lit(name, value):
    """HPACK literal header field without indexing, new name, no Huffman (RFC 7541 6.2.2)."""
    assert len(name) < 127 and len(value) < 127
    return b"\x00" + bytes([len(name)]) + name + bytes([len(value)]) + value


def grpc_head(path=b"/llm.Generator/Stream"):
    """A gRPC request's header block: :method POST (static 3), :scheme http (static 6),
    :path and :authority literal with indexed names (static 4, 1)."""
    return (b"\x83\x86" + b"\x04" + bytes([len(path)]) + path + b"\x01\x09127.0.0.1" +
            _lit(b"content-type", b"application/grpc") + _lit(b"te", b"trailers"))


def grpc_msg(payload, length=None):
    """A length-prefixed gRPC message: not compressed, 4-byte big-endian length."""
    return b"\x00" + struct.pack(">I", len(payload) if length is None else length) + payload


def h2_cases(rnd):
    """(kind, how) for an HTTP/2 cleartext (prior knowledge) server."""
    start = PREFACE + frame(SETTINGS, 0, 0, b"")
    req = json.dumps({"plan": [1], "ttft_ms": 5, "itl_ms": 5}).encode()
    return [
        ("h2 garbage after preface", dict(data=start + rnd.randbytes(512))),
        ("h2 lying frame length", dict(data=start + frame(HEADERS, END_HEADERS, 1, grpc_head(),
                                                          length=0xffffff))),
        # index 0 is never valid; 70 is past the static table with an empty dynamic one
        ("hpack invalid index", dict(data=start + frame(HEADERS, END_HEADERS | END_STREAM, 1,
                                                        b"\x83\x86\xc6\x80"))),
        # an integer that never ends (every continuation byte has its top bit set)
        ("hpack endless integer", dict(data=start + frame(HEADERS, END_HEADERS | END_STREAM, 3,
                                                          b"\x83\xff" + b"\xff" * 40))),
        # a string literal that says 100 bytes and has 3
        ("hpack short string", dict(data=start + frame(HEADERS, END_HEADERS | END_STREAM, 5,
                                                       b"\x83\x04\x64abc"))),
        ("grpc length past the frame", dict(data=start + frame(HEADERS, END_HEADERS, 1, grpc_head()) +
                                            frame(DATA, END_STREAM, 1, grpc_msg(req, 1 << 30)))),
        ("grpc length short of the frame", dict(data=start + frame(HEADERS, END_HEADERS, 1,
                                                                   grpc_head()) +
                                                frame(DATA, END_STREAM, 1,
                                                      grpc_msg(req, 3) + rnd.randbytes(64)))),
        ("http/1 to h2", dict(data=post())),
        ("tls client hello", dict(data=tls_hello(rnd))),
        ("random bytes", dict(data=rnd.randbytes(4096))),
        ("reset after preface", dict(data=start + frame(HEADERS, END_HEADERS, 1, grpc_head()),
                                     reset=True)),
    ]


# ---- the client ----

LATE_ARRIVAL_NS = 1_000_000_000


class Exchange:
    """One hostile connection: its client port and what came back."""

    def __init__(self, kind, server_port, port, t0_ns):
        self.kind = kind
        self.server_port = server_port
        self.port = port
        self.got = b""
        self.t0_ns, self.t1_ns = t0_ns, None     # CLOCK_MONOTONIC, as ttftrace's

    def owns(self, rec):
        """Whether ttftrace's request record rec is of this connection: its ports,
        and an arrival while it was open. The port alone is not enough: a good
        connection opened later may be given the same client port (seen: a good
        gRPC channel on the port a "random bytes" connection had). The arrival may
        follow the close by LATE_ARRIVAL_NS: loopback delivery can run late, in
        ksoftirqd, on a loaded machine."""
        t = rec.get("t_arrival_ns")
        ports = (conn_server_port(rec), conn_client_port(rec))
        return ports == (self.server_port, self.port) and \
            (t is None or self.t0_ns <= t <= self.t1_ns + LATE_ARRIVAL_NS)

    def statuses(self):
        """Status codes of the HTTP/1.x responses the server wrote, in order."""
        return [int(m) for m in STATUS_RE.findall(self.got)]

    def h2_header_blocks(self):
        """The payloads of the HTTP/2 HEADERS frames the server wrote."""
        out, i = [], 0
        while i + 9 <= len(self.got):
            n = struct.unpack(">I", b"\x00" + self.got[i:i + 3])[0]
            if self.got[i + 3] == HEADERS:
                out.append(self.got[i + 9:i + 9 + n])
            i += 9 + n
        return out

    def grpc_failed(self):
        """Whether a HEADERS block of the server's says grpc-status other than 0 (a
        literal with a new name, as grpcio writes it: a length byte, the value)."""
        for b in self.h2_header_blocks():
            i = b.find(b"grpc-status")
            if i >= 0 and b[i + 12:i + 12 + b[i + 11]] != b"0":
                return True
        return False


def exchange(kind, port, data, pause_s=0.0, shut_wr=False, reset=False, reset_after_s=0.0,
             read=True, idle_s=1.5):
    """Send data (bytes, or parts pause_s apart) on a new connection, then reset it
    (after reset_after_s), half-close it, or read until the server closes or is
    idle_s quiet (a busy llama-server takes a while to begin a response)."""
    t0_ns = time.monotonic_ns()
    s = socket.create_connection(("127.0.0.1", port), timeout=2)
    x = Exchange(kind, port, s.getsockname()[1], t0_ns)
    try:
        for part in data if isinstance(data, list) else [data]:
            s.sendall(part)
            if pause_s:
                time.sleep(pause_s)
        if reset:
            time.sleep(reset_after_s)
            s.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
            return x
        if shut_wr:
            s.shutdown(socket.SHUT_WR)
        if read:
            s.settimeout(idle_s)
            while True:
                d = s.recv(65536)
                if not d:
                    break
                x.got += d
    except OSError:     # the server closed or reset first: what came back is kept
        pass
    finally:
        s.close()
        x.t1_ns = time.monotonic_ns()
    return x


def churn(port, n):
    """n connections opened and dropped without a byte: every other one reset."""
    for i in range(n):
        try:
            s = socket.create_connection(("127.0.0.1", port), timeout=2)
            if i % 2:
                s.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
            s.close()
        except OSError:
            pass


def seeded():
    return random.Random(28)
