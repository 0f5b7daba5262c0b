# SPDX-License-Identifier: GPL-2.0-only
"""A one-connection-at-a-time SSE server for tests/root/bpf/test_net_reset.py.

Accepts, waits DELAY_MS (so a client that resets has done so), reads the
request (a reset socket still hands out what it had queued), answers with a
short event stream, closes. Prints "listening on 127.0.0.1:PORT", then one
line per connection: "served RPORT" or "reset RPORT".
"""
import socket
import sys
import time

DELAY_MS = int(sys.argv[1]) if len(sys.argv) > 1 else 100
BODY = b"".join(b'data: {"choices":[{"text":"t%d"}]}\n\n' % i for i in range(3)) + b"data: [DONE]\n\n"
HEAD = (b"HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nConnection: close\r\n"
        b"Content-Length: %d\r\n\r\n" % len(BODY))

ls = socket.socket()
ls.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
ls.bind(("127.0.0.1", 0))
ls.listen(16)
print("listening on 127.0.0.1:%d" % ls.getsockname()[1], flush=True)
while True:
    s, peer = ls.accept()
    time.sleep(DELAY_MS / 1e3)
    try:
        s.recv(65536)
        s.sendall(HEAD)
        time.sleep(0.01)
        s.sendall(BODY)
        s.recv(1)  # the client's close
        what = "served"
    except OSError:
        what = "reset"
    # closed before it says so: the next connection's socket may take its memory
    s.close()
    print("%s %d" % (what, peer[1]), flush=True)
