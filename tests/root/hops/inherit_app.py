#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0-only
"""A parent that binds and listens, and workers that accept on its socket
(tests/root/hops/test_inherited_listen.py), after vLLM's --api-server-count and
gunicorn/uvicorn --workers: the parent never accepts; each worker does.

    inherit_app.py --workers 2 --pass fork|scm --log TRUTH [--host ADDR]

--pass fork: the workers are os.fork() children and use the inherited
descriptor. --pass scm: the workers are fresh interpreters (fork + exec,
close_fds) that receive the listening socket over a unix socketpair with
SCM_RIGHTS (socket.send_fds, as multiprocessing's spawn does for uvicorn).
Either way every worker holds the same socket:[inode] as the parent.

The parent binds ADDR (127.0.0.1 by default) on a free port, prints
"listening on ADDR:PORT" and one "worker PID" line
per worker it starts, and starts a new worker whenever one exits (until
SIGTERM, which ends them all). Workers answer POST with an SSE stream:
{"tokens": N, "ttft_ms": T, "itl_ms": I} in the body, a role chunk at once,
N content chunks I ms apart after T ms, then [DONE]. Truth: one NDJSON line
per request appended to TRUTH, {"id": X-Req-Id, "pid": the worker,
"peer": "ip:port" of the connection, "traceparent": the header or "",
"t_read_ns", "t_first_ns"} (CLOCK_MONOTONIC ns), written before [DONE].
"""
import argparse
import ctypes
import json
import os
import signal
import socket
import subprocess
import sys
import threading
import time

PR_SET_PDEATHSIG = 1

def chunk(payload):
    """One HTTP chunk carrying one SSE event (payload: a str as it is)."""
    data = ("data: " + payload + "\n\n").encode()
    return b"%x\r\n%s\r\n" % (len(data), data)


def serve_conn(conn, log):
    peer = "%s:%d" % conn.getpeername()[:2]
    buf = b""
    with conn:
        while True:
            while b"\r\n\r\n" not in buf:
                d = conn.recv(65536)
                if not d:
                    return
                buf += d
            t_read = time.monotonic_ns()
            head, buf = buf.split(b"\r\n\r\n", 1)
            hdrs = {}
            for line in head.split(b"\r\n")[1:]:
                k, _, v = line.partition(b":")
                hdrs[k.strip().lower()] = v.strip().decode()
            n = int(hdrs.get(b"content-length", "0"))
            while len(buf) < n:
                d = conn.recv(65536)
                if not d:
                    return
                buf += d
            body, buf = json.loads(buf[:n] or b"{}"), buf[n:]
            tokens = int(body.get("tokens", 4))
            conn.sendall(b"HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\n"
                         b"Transfer-Encoding: chunked\r\n\r\n" +
                         chunk(json.dumps({"choices": [{"index": 0, "delta": {"role": "assistant"}}]})))
            time.sleep(body.get("ttft_ms", 30) / 1000)
            t_first = 0
            for i in range(tokens):
                if i:
                    time.sleep(body.get("itl_ms", 5) / 1000)
                conn.sendall(chunk(json.dumps(
                    {"choices": [{"index": 0, "delta": {"content": "t%d " % i}}]})))
                t_first = t_first or time.monotonic_ns()
            with open(log, "a") as f:
                f.write(json.dumps({"id": hdrs.get(b"x-req-id", ""), "pid": os.getpid(),
                                    "peer": peer, "traceparent": hdrs.get(b"traceparent", ""),
                                    "t_read_ns": t_read, "t_first_ns": t_first}) + "\n")
            conn.sendall(chunk("[DONE]") + b"0\r\n\r\n")


def worker(lsock, log):
    """Accept forever on lsock (blocking accept: the kernel wakes one worker)."""
    signal.signal(signal.SIGTERM, signal.SIG_DFL)
    # end with the parent, even when it is killed (prctl(2) PR_SET_PDEATHSIG)
    ctypes.CDLL(None).prctl(PR_SET_PDEATHSIG, signal.SIGTERM)
    if os.getppid() == 1:
        os._exit(0)     # the parent died before the prctl
    while True:
        conn, _ = lsock.accept()
        threading.Thread(target=serve_conn, args=(conn, log), daemon=True).start()


def scm_worker(fd_sock, log):
    """--pass scm child: receive the listening socket on fd_sock, then serve it."""
    with socket.socket(fileno=fd_sock) as s:
        _, fds, _, _ = socket.recv_fds(s, 16, 1)
    worker(socket.socket(fileno=fds[0]), log)


def start_worker(args, lsock):
    if args.pass_how == "fork":
        pid = os.fork()
        if pid == 0:
            try:
                worker(lsock, args.log)
            finally:
                os._exit(1)
        return pid
    a, b = socket.socketpair(socket.AF_UNIX, socket.SOCK_STREAM)
    p = subprocess.Popen([sys.executable, os.path.abspath(__file__), "--scm-child",
                          str(b.fileno()), "--log", args.log], pass_fds=(b.fileno(),))
    b.close()
    socket.send_fds(a, [b"L"], [lsock.fileno()])
    a.close()
    return p.pid


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--workers", type=int, default=2)
    ap.add_argument("--pass", dest="pass_how", choices=("fork", "scm"), default="fork")
    ap.add_argument("--log", required=True)
    ap.add_argument("--host", default="127.0.0.1")
    ap.add_argument("--scm-child", type=int, default=-1)
    args = ap.parse_args()
    if args.scm_child >= 0:
        scm_worker(args.scm_child, args.log)
        return
    lsock = socket.socket()
    lsock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    lsock.bind((args.host, 0))
    lsock.listen(128)
    lsock.set_inheritable(True)
    print("listening on %s:%d" % (args.host, lsock.getsockname()[1]), flush=True)
    workers, stopping = set(), []

    def stop(*_):
        stopping.append(1)
        for w in workers:
            try:
                os.kill(w, signal.SIGTERM)
            except ProcessLookupError:
                pass

    signal.signal(signal.SIGTERM, stop)
    for _ in range(args.workers):
        workers.add(start_worker(args, lsock))
    for w in sorted(workers):
        print("worker %d" % w, flush=True)
    while workers:
        try:
            pid, _ = os.wait()
        except ChildProcessError:
            break
        except InterruptedError:
            continue
        workers.discard(pid)
        if not stopping:
            w = start_worker(args, lsock)
            workers.add(w)
            print("worker %d" % w, flush=True)


if __name__ == "__main__":
    main()
