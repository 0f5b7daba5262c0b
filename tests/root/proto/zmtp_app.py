#!/usr/bin/python3
# SPDX-License-Identifier: GPL-2.0-only
"""A pyzmq PUSH -> PULL pair in one process over tcp://127.0.0.1, shaped like
vLLM's API server -> engine core hop: each message is multipart, a
request-type frame then a msgpack body carrying a request id (and a prompt
text that must never appear in ttftrace's output). Prints "listening" once
started, connects when a line comes on stdin (so that ttftrace, attached by
then, sees the greeting), sends and receives every message, prints "done",
closes the sockets and exits. argv: the number of requests N; the last
message is an "outputs" batch naming every request id."""
import sys
import time

import msgpack
import zmq


def rid(i):
    return "chatcmpl-%032x" % (0xfeed0000000000000000000000000000 + i)


def main():
    n = int(sys.argv[1])
    ctx = zmq.Context()
    print("listening", flush=True)
    sys.stdin.readline()
    pull = ctx.socket(zmq.PULL)
    port = pull.bind_to_random_port("tcp://127.0.0.1")
    push = ctx.socket(zmq.PUSH)
    push.connect("tcp://127.0.0.1:%d" % port)
    msgs = [[b"\x00", msgpack.packb([rid(i), list(range(i + 3)), "a secret prompt %d" % i,
                                     {"temperature": 0.5}])] for i in range(n)]
    msgs.append([b"\x01", msgpack.packb({"outputs": [[rid(i), [42]] for i in range(n)],
                                         "text": "secret output"})])
    for m in msgs:
        push.send_multipart(m)
        time.sleep(0.01)
    for m in msgs:
        assert pull.recv_multipart() == m
    time.sleep(0.2)
    push.close(linger=1000)
    pull.close(linger=1000)
    ctx.term()
    print("done", flush=True)
    time.sleep(0.5)


if __name__ == "__main__":
    main()
