#!/usr/bin/python3
# SPDX-License-Identifier: GPL-2.0-only
"""A frontend and an engine that speak 4-byte length-prefixed JSON messages
over a unix socket, as custom RPCs do (tests/root/hops/test_len32_hop.py;
docs/protocols.md, "Length-prefixed messages").

  len32_pair.py frontend --endian big|little [--step-ms MS]

serves POST /v1/completions and /v1/chat/completions on 127.0.0.1 (a free
port; prints `listening on 127.0.0.1:PORT` once the engine is connected):
stream true only, SSE chunks in the OpenAI format (chunked), then
`data: [DONE]`. Each request gets an id cmpl-<hex> / chatcmpl-<hex>, sent
to the engine as {"op": "add", "request_id": ID, "max_tokens": N}. The
engine (this file, `engine`, a child of the frontend) runs a step every
MS ms and writes one message per step naming every request it made a token
for: {"step": K, "outputs": [[ID, TOKEN, DONE], ...]}. Both read after
poll(2), through a buffer (reads of up to 64 KiB: a record holds whole
messages; a reader that takes the length and the body in two reads is
recognized only once its process wrote a message, docs/protocols.md).
SIGTERM ends both.
"""
import argparse
import http.server
import json
import os
import queue
import select
import signal
import socket
import struct
import subprocess
import sys
import tempfile
import threading
import time
import uuid


def fmt(endian):
    return ">I" if endian == "big" else "<I"


def send_msg(sock, obj, endian, lock):
    body = json.dumps(obj, separators=(",", ":")).encode()
    with lock:
        sock.sendall(struct.pack(fmt(endian), len(body)) + body)


def read_msgs(sock, endian):
    """The messages (dicts) read from sock, through a buffer; ends at EOF.
    Each read waits in poll(2) first, as event loops do: a read blocked in
    recv(2) when tracing begins is seen without its bytes (docs/protocols.md)."""
    buf = b""
    while True:
        select.select([sock], [], [])
        data = sock.recv(65536)
        if not data:
            return
        buf += data
        while len(buf) >= 4:
            n = struct.unpack(fmt(endian), buf[:4])[0]
            if len(buf) < 4 + n:
                break
            yield json.loads(buf[4:4 + n])
            buf = buf[4 + n:]


def engine(opt):
    srv = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    srv.bind(opt.sock)
    srv.listen(1)
    print("ready", flush=True)
    conn, _ = srv.accept()
    srv.close()
    active, lock, wlock = {}, threading.Lock(), threading.Lock()

    def reader():
        for msg in read_msgs(conn, opt.endian):
            with lock:
                active[msg["request_id"]] = [msg["max_tokens"], 0]
        os._exit(0)

    threading.Thread(target=reader, daemon=True).start()
    step = 0
    while True:
        time.sleep(opt.step_ms / 1000.0)
        with lock:
            outs = []
            for rid, st in list(active.items()):
                st[1] += 1
                outs.append([rid, 100000 + st[1] % 26, st[1] >= st[0]])
                if st[1] >= st[0]:
                    del active[rid]
        if outs:
            send_msg(conn, {"step": step, "outputs": outs}, opt.endian, wlock)
            step += 1


class Frontend:
    def __init__(self, opt):
        self.opt = opt
        self.dir = tempfile.mkdtemp(prefix="len32-")
        path = os.path.join(self.dir, "engine.sock")
        self.child = subprocess.Popen([sys.executable, os.path.abspath(__file__), "engine",
                                       "--sock", path, "--endian", opt.endian,
                                       "--step-ms", str(opt.step_ms)], stdout=subprocess.PIPE)
        assert self.child.stdout.readline().strip() == b"ready"
        self.sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        self.sock.connect(path)
        os.unlink(path)
        os.rmdir(self.dir)
        self.queues, self.lock, self.wlock = {}, threading.Lock(), threading.Lock()
        threading.Thread(target=self.reader, daemon=True).start()

    def reader(self):
        for msg in read_msgs(self.sock, self.opt.endian):
            for rid, tok, done in msg["outputs"]:
                with self.lock:
                    q = self.queues.get(rid)
                if q:
                    q.put((tok, done))
        os._exit(0)     # the engine ended (SIGTERM ends it first)

    def submit(self, rid, max_tokens):
        q = queue.Queue()
        with self.lock:
            self.queues[rid] = q
        send_msg(self.sock, {"op": "add", "request_id": rid, "max_tokens": max_tokens},
                 self.opt.endian, self.wlock)
        return q


def handler(fe):
    class H(http.server.BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def log_message(self, *a):
            pass

        def chunk(self, obj):
            data = ("data: " + (obj if isinstance(obj, str) else
                                json.dumps(obj, separators=(",", ":"))) + "\n\n").encode()
            self.wfile.write(b"%x\r\n%s\r\n" % (len(data), data))

        def do_POST(self):
            body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
            chat = self.path == "/v1/chat/completions"
            rid = ("chatcmpl-" if chat else "cmpl-") + uuid.uuid4().hex
            q = fe.submit(rid, int(body.get("max_tokens", 16)))
            self.send_response(200)
            self.send_header("Content-Type", "text/event-stream")
            self.send_header("Transfer-Encoding", "chunked")
            self.end_headers()
            while True:
                tok, done = q.get()
                text = chr(ord("a") + (tok - 100000) % 26)
                if chat:
                    obj = {"id": rid, "object": "chat.completion.chunk",
                           "choices": [{"index": 0, "delta": {"content": text},
                                        "finish_reason": "length" if done else None}]}
                else:
                    obj = {"id": rid, "object": "text_completion",
                           "choices": [{"index": 0, "text": text,
                                        "finish_reason": "length" if done else None}]}
                self.chunk(obj)
                if done:
                    break
            with fe.lock:
                del fe.queues[rid]
            self.chunk("[DONE]")
            self.wfile.write(b"0\r\n\r\n")

    return H


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("role", choices=["frontend", "engine"])
    ap.add_argument("--endian", choices=["big", "little"], default="big")
    ap.add_argument("--step-ms", type=float, default=4.0)
    ap.add_argument("--sock")
    opt = ap.parse_args()
    if opt.role == "engine":
        engine(opt)
        return
    fe = Frontend(opt)

    def term(*_):
        fe.child.terminate()
        fe.child.wait(10)
        os._exit(0)

    signal.signal(signal.SIGTERM, term)
    srv = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler(fe))
    print("listening on 127.0.0.1:%d" % srv.server_address[1], flush=True)
    srv.serve_forever()


if __name__ == "__main__":
    main()
