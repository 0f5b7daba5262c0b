# SPDX-License-Identifier: GPL-2.0-only
"""A disaggregated prefill/decode proxy for tests/root/hops/test_pd.py (the
llm-d / vLLM PD-proxy shape, docs/design.md D13).

Usage: pd_proxy.py PREFILL_PORT DECODE_PORT LOG [--buffer]

For each POST /v1/chat/completions (or /v1/completions) it
  1. POSTs the request with max_tokens=1 and stream=false to the prefill
     server on 127.0.0.1:PREFILL_PORT and reads its answer to the end (that
     token is thrown away: the decode server makes the first one the client
     sees);
  2. POSTs the original request plus kv_transfer_params to the decode server
     on 127.0.0.1:DECODE_PORT and relays its SSE stream to the client as it
     reads it (chunked); with --buffer it reads the whole stream first and
     answers with one application/json body.
Each call is a new connection. Prints "listening on 127.0.0.1:PORT". LOG
gets one JSON line per request (time.monotonic_ns()): t_read_ns (request
read), t_pf_sent_ns / t_pf_done_ns (prefill request written / answer read),
t_dec_sent_ns (decode request written), t_first_fwd_ns (first relayed write
returned), client_port, pf_lport, dec_lport.
"""
import http.client
import json
import sys
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

PREFILL, DECODE, LOG = int(sys.argv[1]), int(sys.argv[2]), sys.argv[3]
BUFFER = "--buffer" in sys.argv[4:]
log_lock = threading.Lock()
log = open(LOG, "a")


class Proxy(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def log_message(self, *args):
        pass

    def do_POST(self):
        body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
        t = {"t_read_ns": time.monotonic_ns(), "client_port": self.client_address[1]}
        pf = http.client.HTTPConnection("127.0.0.1", PREFILL)
        pf.request("POST", self.path, json.dumps(dict(body, max_tokens=1, stream=False)),
                   {"Content-Type": "application/json"})
        t["t_pf_sent_ns"] = time.monotonic_ns()
        t["pf_lport"] = pf.sock.getsockname()[1]
        pf.getresponse().read()
        t["t_pf_done_ns"] = time.monotonic_ns()
        pf.close()
        kv = {"remote_engine_id": "prefill-0", "remote_block_ids": [1, 2, 3],
              "remote_host": "127.0.0.1", "remote_port": PREFILL}
        dec = http.client.HTTPConnection("127.0.0.1", DECODE)
        dec.request("POST", self.path, json.dumps(dict(body, kv_transfer_params=kv)),
                    {"Content-Type": "application/json"})
        t["t_dec_sent_ns"] = time.monotonic_ns()
        t["dec_lport"] = dec.sock.getsockname()[1]
        resp = dec.getresponse()
        if BUFFER:
            data = resp.read()
            self.send_response(200)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)
            self.wfile.flush()
            t["t_first_fwd_ns"] = time.monotonic_ns()
        else:
            self.send_response(200)
            self.send_header("Content-Type", "text/event-stream")
            self.send_header("Transfer-Encoding", "chunked")
            self.end_headers()
            self.wfile.flush()
            while True:
                chunk = resp.read1(65536)
                if not chunk:
                    break
                self.wfile.write(b"%x\r\n%s\r\n" % (len(chunk), chunk))
                self.wfile.flush()
                t.setdefault("t_first_fwd_ns", time.monotonic_ns())
            self.wfile.write(b"0\r\n\r\n")
            self.wfile.flush()
        dec.close()
        with log_lock:
            log.write(json.dumps(t) + "\n")
            log.flush()


srv = ThreadingHTTPServer(("127.0.0.1", 0), Proxy)
srv.daemon_threads = True
print("listening on 127.0.0.1:%d" % srv.server_address[1], flush=True)
srv.serve_forever()
