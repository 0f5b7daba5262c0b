# SPDX-License-Identifier: GPL-2.0-only
"""A streaming HTTP/1.1 gateway for tests/root/hops/test_netns_otlp.py.

Usage: fwd_proxy.py UPSTREAM_HOST UPSTREAM_PORT LOG

Listens on 127.0.0.1 (prints "listening on 127.0.0.1:PORT"); each POST is
sent on a new connection to UPSTREAM_HOST:UPSTREAM_PORT with its body,
Content-Type, X-Req-Id and traceparent as they came (a gateway that
propagates the caller's trace context unchanged), and the upstream's SSE
stream is relayed chunk by chunk as it is read. LOG gets one JSON line per
request: {"id": X-Req-Id, "client": "ip:port" of the client connection,
"up_local": "ip:port" of the gateway's end of its upstream connection,
"up_peer": the upstream's end}.
"""
import http.client
import json
import sys
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

UP_HOST, UP_PORT, LOG = sys.argv[1], int(sys.argv[2]), sys.argv[3]
log_lock = threading.Lock()
log = open(LOG, "a")


class Proxy(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def log_message(self, *args):
        pass

    def do_POST(self):
        body = self.rfile.read(int(self.headers["Content-Length"]))
        fwd = {"Content-Type": self.headers.get("Content-Type", "application/json")}
        for h in ("X-Req-Id", "traceparent"):
            if self.headers.get(h):
                fwd[h] = self.headers[h]
        up = http.client.HTTPConnection(UP_HOST, UP_PORT)
        up.request("POST", self.path, body, fwd)
        t = {"id": self.headers.get("X-Req-Id", ""),
             "client": "%s:%d" % self.client_address[:2],
             "up_local": "%s:%d" % up.sock.getsockname()[:2],
             "up_peer": "%s:%d" % up.sock.getpeername()[:2]}
        resp = up.getresponse()
        self.send_response(resp.status)
        self.send_header("Content-Type", resp.getheader("Content-Type", "text/event-stream"))
        self.send_header("Transfer-Encoding", "chunked")
        self.end_headers()
        self.wfile.flush()
        while True:
            chunk = resp.read1(65536)
            if not chunk:
                break
            self.wfile.write(b"%x\r\n%s\r\n" % (len(chunk), chunk))
            self.wfile.flush()
        self.wfile.write(b"0\r\n\r\n")
        self.wfile.flush()
        up.close()
        with log_lock:
            log.write(json.dumps(t) + "\n")
            log.flush()


srv = ThreadingHTTPServer(("127.0.0.1", 0), Proxy)
srv.daemon_threads = True
print("listening on 127.0.0.1:%d" % srv.server_address[1], flush=True)
srv.serve_forever()
