# SPDX-License-Identifier: GPL-2.0-only
"""llama.cpp's own llama-server for tests (tools/demo/build_llama_server.sh).

start_llama_server() runs it with the demo model and SLOTS slots; completion()
and load() drive it with streamed /completion requests and return the
engine's own per-request timings (timings.prompt_ms, prompt_n, cache_n).
"""
import json
import os
import random
import socket
import subprocess
import threading
import time

import pytest

from conftest import ROOT, free_port

BIN = os.path.join(ROOT, "tools", "demo", "llama-server", "bin")
SERVER = os.path.join(BIN, "llama-server")
MODEL = os.path.join(ROOT, "tools", "demo", "model", "demo.gguf")
SLOTS = 4
THREADS = min(2, os.cpu_count() or 1)   # more threads than cores runs ~20x slower


def start_llama_server(procs, tmp_path):
    """llama-server with the demo model and SLOTS slots on a free port; returns the port."""
    if not os.access(SERVER, os.X_OK) or not os.path.exists(MODEL):
        pytest.fail("llama-server or the demo model is missing: run tools/setup.sh")
    port = free_port()
    env = dict(os.environ, LD_LIBRARY_PATH=BIN)
    log = open(str(tmp_path / "llama-server.log"), "w")
    p = procs.add(subprocess.Popen(
        [SERVER, "-m", MODEL, "-np", str(SLOTS), "-t", str(THREADS), "-c", str(2048 * SLOTS),
         "--host", "127.0.0.1", "--port", str(port)], stdout=log, stderr=log, env=env))
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        assert p.poll() is None, open(log.name).read()
        try:
            with socket.create_connection(("127.0.0.1", port), timeout=1) as s:
                s.sendall(b"GET /health HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n")
                if b" 200 " in s.recv(256):
                    return port
        except OSError:
            pass
        time.sleep(0.2)
    pytest.fail("llama-server did not become healthy: %s" % open(log.name).read())


def completion(port, prompt, n_predict=16):
    """One streamed /completion; returns {port, timings} (the client's local port)."""
    # ignore_eos: the random-weights model may otherwise end before any token
    body = json.dumps({"prompt": prompt, "n_predict": n_predict, "stream": True,
                       "cache_prompt": True, "ignore_eos": True}).encode()
    with socket.create_connection(("127.0.0.1", port), timeout=60) as s:
        lport = s.getsockname()[1]
        # Connection: close, so that a gateway in front closes it too at the end
        s.sendall(b"POST /completion HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
                  b"Connection: close\r\nContent-Length: %d\r\n\r\n" % len(body) + body)
        buf = b""
        while True:     # llama-server closes the connection after a streamed response
            d = s.recv(65536)
            if not d:
                break
            buf += d
    timings = None
    for line in buf.split(b"\n"):
        if line.startswith(b"data: ") and b'"timings"' in line:
            timings = json.loads(line[6:])["timings"]
    assert timings, buf[-500:]
    return {"port": lport, "timings": timings}


def load(port, clients, per_client, words, unequal):
    out, errors, rnd = [], [], random.Random(7)
    prompts = [[" ".join("w%d%s" % (c, chr(97 + rnd.randrange(26)))
                         for _ in range(words + ((c * 11 + i * 5) if unequal else 0)))
                for i in range(per_client)] for c in range(clients)]

    def client(c):
        try:
            for p in prompts[c]:
                out.append(completion(port, p))
        except Exception as e:  # reported below
            errors.append(repr(e))

    th = [threading.Thread(target=client, args=(c,)) for c in range(clients)]
    for t in th:
        t.start()
    for t in th:
        t.join(300)
    assert not errors, errors
    return out
