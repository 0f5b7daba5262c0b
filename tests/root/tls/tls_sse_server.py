# SPDX-License-Identifier: GPL-2.0-only
"""A streaming SSE server behind Python's ssl module (OpenSSL 3 through
/usr/bin/python3's _ssl): the TLS tier's ground truth.

usage: tls_sse_server.py CERT KEY LOG [TTFT_MS ITL_MS TOKENS]

Prints "listening on 127.0.0.1:PORT". Per request: reads the head and the
Content-Length body, writes the response head, then the first token event
(content "FIRST") TTFT_MS after the read returned and one more every ITL_MS,
each in its own chunk and write; logs one JSON line with CLOCK_MONOTONIC ns:
t_read_ns (the read that completed the request returned), t_first_ns,
t_token_ns (each token write returned), t_token_pre_ns (each token
write began), t_end_ns, rport, conn_seq.
"""
import json
import socket
import ssl
import sys
import threading
import time


def sleep_until(deadline_ns):
    while True:
        left = deadline_ns - time.monotonic_ns()
        if left <= 0:
            return
        time.sleep(left / 1e9 if left > 2e6 else 0)


def chunk(data):
    return b"%x\r\n%s\r\n" % (len(data), data)


def serve(conn, rport, cfg, log, lock):
    ttft_ms, itl_ms, tokens = cfg
    buf = b""
    seq = 0
    while True:
        while b"\r\n\r\n" not in buf:
            d = conn.recv(65536)
            if not d:
                conn.close()
                return
            buf += d
        head, _, rest = buf.partition(b"\r\n\r\n")
        n = 0
        for line in head.split(b"\r\n")[1:]:
            k, _, v = line.partition(b":")
            if k.strip().lower() == b"content-length":
                n = int(v)
        while len(rest) < n:
            rest += conn.recv(65536)
        t_read = time.monotonic_ns()
        buf = rest[n:]
        conn.sendall(b"HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\n"
                     b"Transfer-Encoding: chunked\r\n\r\n")
        ts, pre = [], []
        for i in range(tokens):
            sleep_until(t_read + int((ttft_ms + i * itl_ms) * 1e6))
            text = "FIRST" if i == 0 else "t%d" % i
            ev = json.dumps({"choices": [{"index": 0, "delta": {"content": text}}]})
            pre.append(time.monotonic_ns())
            conn.sendall(chunk(("data: %s\n\n" % ev).encode()))
            ts.append(time.monotonic_ns())
        conn.sendall(chunk(b"data: [DONE]\n\n") + b"0\r\n\r\n")
        t_end = time.monotonic_ns()
        with lock:
            log.write(json.dumps({"rport": rport, "conn_seq": seq, "t_read_ns": t_read,
                                  "t_first_ns": ts[0], "t_token_ns": ts,
                                  "t_token_pre_ns": pre, "t_end_ns": t_end,
                                  "tokens": tokens}) + "\n")
            log.flush()
        seq += 1


def main():
    cert, key, log_path = sys.argv[1:4]
    cfg = tuple(int(x) for x in sys.argv[4:7]) if len(sys.argv) >= 7 else (100, 20, 8)
    ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    ctx.load_cert_chain(cert, key)
    ls = socket.socket()
    ls.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    ls.bind(("127.0.0.1", 0))
    ls.listen(16)
    print("listening on 127.0.0.1:%d" % ls.getsockname()[1], flush=True)
    log = open(log_path, "a")
    lock = threading.Lock()
    while True:
        s, addr = ls.accept()
        s.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        try:
            conn = ctx.wrap_socket(s, server_side=True)
        except (ssl.SSLError, OSError):
            s.close()
            continue
        threading.Thread(target=serve, args=(conn, addr[1], cfg, log, lock),
                         daemon=True).start()


if __name__ == "__main__":
    main()
