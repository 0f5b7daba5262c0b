# SPDX-License-Identifier: GPL-2.0-only
"""A real nginx in front of a real uvicorn over a unix stream socket.

nginx (`proxy_pass http://unix:PATH:`, a master and two workers) proxies to
uvicorn (`--uds PATH`, tests/root/hops/uds_app.py), which streams SSE tokens at
a known cadence and logs its truth (CLOCK_MONOTONIC ns of the request's read
and of each token's write). `ttftrace -p NGINX_MASTER` must find uvicorn
across the unix socket ("Hop: ... calls unix:PATH"), and report each client
request with the upstream hop joined `exact` by the inode pair (the same
connection seen from both ends, docs/design.md D11), its stages summing to
its TTFT, and the upstream server's TTFT within 2 ms of uvicorn's own (its read, and its
first token's write between uvicorn's stamps before and after it); with both
net sources (socket tracepoints, and raw syscalls as on kernels before 6.3).
"""
import json
import os
import shutil
import signal
import socket
import subprocess
import threading
import time

import pytest

from conftest import TTFTRACE, Client, conn_client_port, free_port, needs_root
from test_gateway import CONF as GATEWAY_CONF, chain_sum_ok, wait_stderr

pytestmark = needs_root

NGINX = shutil.which("nginx") or "/usr/sbin/nginx"
HERE = os.path.dirname(os.path.abspath(__file__))
TTFT_MS, ITL_MS, TOKENS = 40, 10, 6

# test_gateway's nginx, with a master and two workers (root: the socket is in
# the test's private tmp dir) and the unix upstream
CONF = GATEWAY_CONF
for old, new in (("master_process off;\nworker_processes 1;", "user root;\nworker_processes 2;"),
                 ("http://127.0.0.1:%(upstream)d", "http://unix:%(sock)s:"),
                 ("proxy_buffering %(buffering)s;\n      %(gzip)s", "proxy_buffering off;")):
    assert old in CONF, old
    CONF = CONF.replace(old, new)


def stop_gracefully(p):
    """SIGTERM first: nginx's master ends its workers, uvicorn its loop."""
    if p.poll() is None:
        p.terminate()
    try:
        p.wait(timeout=10)
    except subprocess.TimeoutExpired:
        p.kill()


@pytest.fixture
def uvicorn_uds(procs, tmp_path):
    """uvicorn serving uds_app on a unix socket; (proc, socket path, truth path)."""
    d = tmp_path / "uds"
    d.mkdir()
    sock, truth = str(d / "up.sock"), str(d / "truth.ndjson")
    env = dict(os.environ, UDS_TRUTH=truth)
    p = procs.add(subprocess.Popen(
        ["/usr/bin/python3", "-m", "uvicorn", "--app-dir", HERE, "uds_app:app", "--uds", sock,
         "--http", "h11", "--loop", "asyncio", "--log-level", "warning"],
        env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True))
    deadline = time.monotonic() + 15
    while True:
        assert p.poll() is None, "uvicorn exited: %s" % p.stderr.read()
        try:
            with socket.socket(socket.AF_UNIX) as s:
                s.connect(sock)
            break
        except OSError:
            assert time.monotonic() < deadline, "uvicorn did not listen on %s" % sock
            time.sleep(0.1)
    yield p, sock, truth
    stop_gracefully(p)


@pytest.fixture
def nginx_unix(procs, tmp_path, uvicorn_uds):
    """nginx (master + 2 workers) on a free port in front of uvicorn_uds; (proc, port)."""
    if not os.access(NGINX, os.X_OK):
        pytest.fail("nginx is missing: run tools/setup.sh (apt-get install nginx)")
    d = tmp_path / "nginx"
    d.mkdir()
    port = free_port()
    conf = d / "nginx.conf"
    conf.write_text(CONF % {"dir": d, "port": port, "sock": uvicorn_uds[1],
                            "access_log": "access_log off;"})
    p = procs.add(subprocess.Popen([NGINX, "-c", str(conf)], stdout=subprocess.DEVNULL,
                                   stderr=subprocess.DEVNULL))
    deadline = time.monotonic() + 10
    while True:
        assert p.poll() is None, (d / "error.log").read_text()
        try:
            Client(port, timeout_s=1).close()
            break
        except OSError:
            assert time.monotonic() < deadline, (d / "error.log").read_text()
            time.sleep(0.1)
    yield p, port
    stop_gracefully(p)


def one_request(port, rid):
    """One streamed request on its own connection; its body names it (the r-U join)."""
    c = Client(port)
    body = {"model": "m", "stream": True, "tokens": TOKENS, "ttft_ms": TTFT_MS,
            "itl_ms": ITL_MS, "messages": [{"role": "user", "content": "request %d" % rid}]}
    r = c.request(body=body, extra_headers="X-Req-Id: %d\r\n" % rid)
    c.close()
    assert r.status == 200 and len(c.token_events(r)) == TOKENS, (r.status, r.body[:200])
    return r.local_port


def run_clients(port, clients, per_client, first_id):
    """clients threads, per_client requests each; {client port: request id}."""
    ports, errors, lock = {}, [], threading.Lock()

    def run(k):
        try:
            for i in range(per_client):
                rid = first_id + k * per_client + i
                lp = one_request(port, rid)
                with lock:
                    ports[lp] = rid
        except Exception as e:  # reported below
            errors.append(repr(e))

    th = [threading.Thread(target=run, args=(k,)) for k in range(clients)]
    for t in th:
        t.start()
    for t in th:
        t.join(120)
    assert not errors, errors
    return ports


def truth_by_id(path):
    with open(path) as f:
        return {int(t["id"]): t for t in map(json.loads, f) if t["id"]}


@pytest.mark.parametrize("clients,source", [(1, "sock"), (8, "sock"), (1, "syscall")])
def test_nginx_to_uvicorn_over_unix(uvicorn_uds, nginx_unix, tracer, tmp_path, clients, source):
    uv, sock, truth_path = uvicorn_uds
    ng, port = nginx_unix
    rec = str(tmp_path / "run.rec")
    tr = tracer("-p", ng.pid, "--net-source", source, "--record", rec)
    lp0 = one_request(port, 0)      # the first upstream call names the peer: discovery
    wait_stderr(tr, "tracing PID %d" % uv.pid)
    assert "calls unix:%s: tracing PID %d, which listens there" % (sock, uv.pid) \
        in tr.stderr, tr.stderr
    time.sleep(0.5)                 # uvicorn is in the filters
    ports = run_clients(port, clients, 24 // clients, 1)
    tr.wait_requests(25, timeout_s=20)
    assert tr.stop() == 0, tr.stderr
    recs = [r for r in tr.requests() if conn_client_port(r) in ports]
    if lp0 in ports:
        # a later connection reused the discovery request's client port (nginx
        # closed first, so the client's end was free at once): not one of the 24
        recs.remove(min((r for r in recs if conn_client_port(r) == lp0),
                        key=lambda r: r["t_arrival_ns"]))
    assert len(recs) == 24, [(r["id"], r["conn"]) for r in tr.requests()]
    truth = truth_by_id(truth_path)
    bad, diffs = [], []
    for r in recs:
        assert r["comm"] == "nginx" and "hops" in r, r
        assert chain_sum_ok(r), (r["hop_stages_ms"], r["ttft_ms"])
        gw, up = r["hops"]
        assert up["pid"] == uv.pid and up["join"] == "exact", up
        assert "unix socket" in up["join_why"] and up["port"] is None, up
        assert up["unix_inode"] and up["gateway_unix_inode"], up
        t = truth[ports[conn_client_port(r)]]
        # the read returned between uvicorn's stamps before its recv and in
        # data_received, the first token's write between its stamps before and after it
        lo = (t["t_first_start_ns"] - t["t_read_ns"]) / 1e6
        hi = (t["t_first_ns"] - t["t_read_pre_ns"]) / 1e6
        got = up["stages_ms"]["server"]
        diffs.append(max(0.0, lo - got, got - hi))
        # the hop criterion: within 1 ms or 3% of the truth for at least 95% of
        # requests; a wrong join is off by tens of ms, which none may be
        if diffs[-1] > max(1.0, 0.03 * hi):
            bad.append("request %s: upstream server %.3f ms, uvicorn's truth %.3f-%.3f ms"
                       % (r["id"], got, lo, hi))
    print("upstream server TTFT outside uvicorn's window, %d requests: mean %.3f ms, max %.3f ms"
          % (len(diffs), sum(diffs) / len(diffs), max(diffs)))
    assert len(bad) <= 0.05 * len(recs), "\n".join(bad)
    assert max(diffs) < 10.0, "\n".join(bad)
    s = tr.summary()
    assert s["hops"]["requests"] >= 24
    assert s["counters"]["hop_held_unclaimed"] == 0
    # the recording gives the same chains again, without /proc
    out = str(tmp_path / "replay.ndjson")
    subprocess.run([TTFTRACE, "replay", rec, "--json", "-q", "-o", out], check=True, timeout=60)
    again = [json.loads(l) for l in open(out) if '"type":"request"' in l]
    assert [(r["id"], r["conn"], r.get("hops"), r.get("hop_stages_ms")) for r in again] == \
        [(r["id"], r["conn"], r.get("hops"), r.get("hop_stages_ms")) for r in tr.requests()]


def test_unix_peer_not_traced_with_no_hops(uvicorn_uds, nginx_unix, tracer):
    uv, sock, _ = uvicorn_uds
    ng, port = nginx_unix
    tr = tracer("-p", ng.pid, "--no-hops")
    run_clients(port, 1, 3, 100)
    tr.wait_requests(3, timeout_s=10)
    time.sleep(0.5)
    assert tr.stop() == 0, tr.stderr
    assert "Hop:" not in tr.stderr, tr.stderr
    recs = tr.records()
    assert not [r for r in recs if r.get("pid") == uv.pid], "uvicorn was traced"
    reqs = tr.requests()
    assert len(reqs) == 3 and all(r["comm"] == "nginx" for r in reqs), reqs
    # nginx's own upstream calls over the socket are still seen: chains whose upstream is not traced
    for r in reqs:
        up = r["hops"][1]
        assert up["pid"] is None and up["unix_inode"], up
        assert up["merged_why"].startswith("upstream unix:%d: " % up["unix_inode"]), up
        assert chain_sum_ok(r), (r["hop_stages_ms"], r["ttft_ms"])
