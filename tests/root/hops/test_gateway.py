# SPDX-License-Identifier: GPL-2.0-only
"""A real nginx in front of a traced server: hop discovery, the join, the split.

`ttftrace --port NGINX` traces nginx; nginx's first upstream call names the
port of the server behind it, which ttftrace then traces too ("Hop: ..." on
stderr). Each client request then carries its chain (docs/design.md D11):
hop_stages_ms sums to its TTFT, hops[1] is the upstream server's own split,
joined by the TCP connection both ends see. Truth: the fixture server's log
(its read and first token write) and llama-server's own timings.
"""
import json
import os
import re
import shutil
import subprocess
import threading
import time

import pytest

from conftest import TTFTRACE, Client, conn_client_port, free_port, needs_root, server_stage_ok
from gateway_timers import (HAPROXY_LOG_FORMAT, NGINX_LOG_FORMAT, over_bar_ms, pairs,
                            parse_haproxy, parse_nginx)
from llama_server import completion, load, start_llama_server

pytestmark = needs_root

NGINX = shutil.which("nginx") or "/usr/sbin/nginx"

CONF = """daemon off;
master_process off;
worker_processes 1;
error_log %(dir)s/error.log;
pid %(dir)s/nginx.pid;
events { worker_connections 512; }
http {
  %(access_log)s
  client_body_temp_path %(dir)s/body;
  proxy_temp_path %(dir)s/proxy;
  fastcgi_temp_path %(dir)s/fcgi;
  uwsgi_temp_path %(dir)s/uwsgi;
  scgi_temp_path %(dir)s/scgi;
  server {
    listen 127.0.0.1:%(port)d;
    location / {
      proxy_pass http://127.0.0.1:%(upstream)d;
      proxy_http_version 1.1;
      proxy_buffering %(buffering)s;
      %(gzip)s
    }
  }
}
"""


def rt_prefix(rt):
    """The command prefix that starts a gateway SCHED_FIFO (as root; threads and
    children inherit it), as the fixture server runs (conftest.RT_ARGS). Both
    gateways start their timers when their event loop wakes (nginx's
    ngx_current_msec and HAProxy's now_ms are read once per poll return), so a
    gateway preempted between its wake-up and its read or write moves its own
    timer off the instant it names; at real-time priority it is not preempted
    by the test's other work on 2 cores."""
    return ["chrt", "-f", "10"] if rt and os.geteuid() == 0 else []


def start_nginx(procs, tmp_path, upstream, buffering=False, access_log=None, rt=False):
    """nginx on a free port proxying to 127.0.0.1:upstream, one process (no
    master: a test's kill ends it all). buffering: gzip on for
    text/event-stream, so nginx holds tokens until its gzip buffer fills.
    access_log: a path for one line of nginx's timers per request
    (gateway_timers.NGINX_LOG_FORMAT); default off. rt: run it SCHED_FIFO (rt_prefix)."""
    if not os.access(NGINX, os.X_OK):
        pytest.fail("nginx is missing: run tools/setup.sh (apt-get install nginx)")
    d = tmp_path / ("nginx%d" % upstream)
    d.mkdir()
    port = free_port()
    conf = d / "nginx.conf"
    log = ("log_format timers '%s';\n  access_log %s timers;" % (NGINX_LOG_FORMAT, access_log)
           if access_log else "access_log off;")
    conf.write_text(CONF % {"dir": d, "port": port, "upstream": upstream, "access_log": log,
                            "buffering": "on" if buffering else "off",
                            "gzip": "gzip on; gzip_types text/event-stream; gzip_min_length 0;"
                            if buffering else ""})
    p = procs.add(subprocess.Popen(rt_prefix(rt) + [NGINX, "-c", str(conf)],
                                   stdout=subprocess.DEVNULL,
                                   stderr=subprocess.DEVNULL))
    deadline = time.monotonic() + 10
    while time.monotonic() < deadline:
        assert p.poll() is None, (d / "error.log").read_text()
        try:
            Client(port, timeout_s=1).close()
            return port
        except OSError:
            time.sleep(0.1)
    pytest.fail("nginx did not start: %s" % (d / "error.log").read_text())


HAPROXY = shutil.which("haproxy") or "/usr/sbin/haproxy"

HAPROXY_CONF = """global
  nbthread 2
  %(log_global)s
defaults
  mode http
  %(log)s
  timeout connect 5s
  timeout client 60s
  timeout server 60s
frontend fe
  bind 127.0.0.1:%(port)d
  default_backend be
backend be
  server s1 127.0.0.1:%(upstream)d
"""


def start_haproxy(procs, tmp_path, upstream, access_log=None, rt=False):
    """HAProxy (2 threads, keep-alive to the server) on a free port in front of
    upstream. access_log: a path for one raw log line of HAProxy's timers per
    request (gateway_timers.HAPROXY_LOG_FORMAT), from its stdout; default off.
    rt: run it, all its threads, SCHED_FIFO (rt_prefix)."""
    if not os.access(HAPROXY, os.X_OK):
        pytest.fail("haproxy is missing: run tools/setup.sh (apt-get install haproxy)")
    port = free_port()
    conf = tmp_path / ("haproxy%d.cfg" % upstream)
    logs = {"log_global": "log stdout format raw local0", "log": "log global\n  log-format \"%s\""
            % HAPROXY_LOG_FORMAT} if access_log else {"log_global": "", "log": ""}
    conf.write_text(HAPROXY_CONF % dict(logs, port=port, upstream=upstream))
    out = open(access_log, "w") if access_log else subprocess.DEVNULL
    p = procs.add(subprocess.Popen(rt_prefix(rt) + [HAPROXY, "-db", "-f", str(conf)], stdout=out,
                                   stderr=subprocess.DEVNULL))
    deadline = time.monotonic() + 10
    while time.monotonic() < deadline:
        assert p.poll() is None, "haproxy exited: %s" % p.returncode
        try:
            Client(port, timeout_s=1).close()
            return port
        except OSError:
            time.sleep(0.1)
    pytest.fail("haproxy did not start")


GATEWAYS = {"nginx": start_nginx, "haproxy": start_haproxy}


def gzip_request(port, n_tokens):
    """One streamed request asking for gzip (curl decodes); returns its local port."""
    out = subprocess.run(["curl", "-s", "-N", "--compressed", "-o", "/dev/null", "-w",
                          "%{local_port}", "http://127.0.0.1:%d/v1/chat/completions" % port,
                          "-d", json.dumps({"model": "m", "stream": True, "max_tokens": n_tokens,
                                            "messages": [{"role": "user", "content": "hi"}]})],
                         capture_output=True, text=True, timeout=30)
    assert out.returncode == 0, out.stderr
    return int(out.stdout)


def concurrent(port, clients, per_client):
    drive_ports(port, clients, per_client, True)


def chain_sum_ok(r):
    return abs(sum(r["hop_stages_ms"].values()) - r["ttft_ms"]) <= 0.002 * len(r["hop_stages_ms"])


def upstream_truth(recs, truth_rows):
    """The server's log row of each record's upstream call, by record id.

    A gateway that keeps its upstream connections alive (HAProxy) sends
    several requests over one, so the connection's port alone names
    several rows: on one connection requests follow one another, so the
    k-th request the gateway received among those it sent over that
    connection is the connection's k-th in the server's log (conn_seq).
    Counted from the connection's last request: the discovery call, first
    on its connection, may have no upstream hop to place it by."""
    rows = {}
    for t in truth_rows:
        rows.setdefault(t["rport"], []).append(t)
    by_port = {}
    for r in sorted(recs, key=lambda r: r["t_arrival_ns"]):
        up = (r.get("hops") or [None, {}])[1]
        if up.get("gateway_port"):
            by_port.setdefault(up["gateway_port"], []).append(r)
    out = {}
    for p, rs in by_port.items():
        ts = sorted(rows.get(p, []), key=lambda t: t["conn_seq"])
        assert len(ts) >= len(rs), (p, len(ts), len(rs))
        out.update((r["id"], t) for r, t in zip(reversed(rs), reversed(ts)))
    return out


@pytest.mark.parametrize("gateway", ["nginx", "haproxy"])
@pytest.mark.parametrize("clients", [1, 8])
def test_fixture_behind_gateway(procs, tmp_path, sse_server, tracer, clients, gateway):
    srv = sse_server("--ttft-ms", "40", "--itl-ms", "10", "--tokens", "6", "--threads")
    port = GATEWAYS[gateway](procs, tmp_path, srv.port)
    rec = str(tmp_path / "run.rec")
    tr = tracer("--port", port, "--record", rec)
    concurrent(port, 1, 1)          # the first call names the upstream: discovery
    deadline = time.monotonic() + 5
    while "Hop: PID" not in tr.stderr and time.monotonic() < deadline:
        time.sleep(0.05)
    assert "calls port %d" % srv.port in tr.stderr, tr.stderr
    time.sleep(0.3)                 # its upstream probes attach
    concurrent(port, clients, 24 // clients)
    tr.wait_requests(25, timeout_s=15)
    assert tr.stop() == 0, tr.stderr
    recs = tr.requests()
    odd = [(r["id"], r["comm"], r["conn"], r["flags"], r.get("hops")) for r in recs
           if "hops" not in r or not r["hops"][1]["pid"]]
    for o in odd:
        print("without its upstream:", json.dumps(o))
    if odd:
        shutil.copy(rec, "/tmp/hops-failed.rec")
    assert len(recs) == 25, "%d requests without their upstream (stdout)" % len(odd)
    assert all(r["comm"] == gateway for r in recs)
    truth = upstream_truth(recs, srv.truth())
    good = 0
    for r in recs[1:]:
        assert "hops" in r, r
        assert chain_sum_ok(r), (r["hop_stages_ms"], r["ttft_ms"])
        gw, up = r["hops"]
        assert not gw["buffering"], gw
        assert up["pid"] == srv.pid and up["join"] == "exact", up
        t = truth[r["id"]]
        good += server_stage_ok(up["stages_ms"]["server"], t)
    assert good >= 0.95 * (len(recs) - 1), good
    s = tr.summary()
    assert s["hops"]["requests"] >= 24
    assert s["counters"]["hop_held_unclaimed"] == 0
    if clients == 1:
        assert s["hops"]["joined_exact"] == s["hops"]["requests"]
    # the recording gives the same chains again, without root; and the text line shows them
    out = str(tmp_path / "replay.ndjson")
    subprocess.run([TTFTRACE, "replay", rec, "--json", "-q", "-o", out], check=True, timeout=60)
    again = [json.loads(l) for l in open(out) if '"type":"request"' in l]
    assert [(r["id"], r.get("hops"), r.get("hop_stages_ms")) for r in again] == \
        [(r["id"], r.get("hops"), r.get("hop_stages_ms")) for r in recs]
    text = subprocess.run([TTFTRACE, "replay", rec, "-q"], capture_output=True, text=True,
                          timeout=60, check=True).stdout
    assert text.count("    hops(ms): %s gateway_in " % gateway) == 25, text[-2000:]
    assert "| sse_server net_in " in text


def drive_ports(port, clients, per_client, stream):
    """clients threads, per_client requests each on its own connection; the
    client ports, as the client's sockets name them."""
    ports, errors, lock = [], [], threading.Lock()

    def run():
        try:
            for _ in range(per_client):
                c = Client(port)
                r = c.request(stream=stream)
                c.close()
                assert r.status == 200 and r.t_first_token_ns, r.status
                with lock:
                    ports.append(c.local_port)

        except Exception as e:  # reported below
            errors.append(repr(e))

    th = [threading.Thread(target=run) for _ in range(clients)]
    for t in th:
        t.start()
    for t in th:
        t.join(120)
    assert not errors, errors
    return ports


# The share of requests within the bar, per check: the 95%. Measured
# over 10 runs of each case with the gateway at real-time priority (rt_prefix),
# 7 of them while other root tests ran on the same 2 cores: 38 to 40 of 40, the
# one 38 an nginx whole-body connect timer of 0 ms against ttftrace's 6.3 ms
# (nginx reads its clock once per event-loop turn, so a turn that took 6 ms
# still reads 0) beside the one nginx whole-body pair that may go unjoined
# (below). Before the gateways ran SCHED_FIFO the share fell to 34 of 40 on a
# loaded machine and to 37 of 40 on a quiet one (2 of 130 checks): a gateway
# preempted between its wake-up and its read or write, where its timers start
# and stop, by up to 25 ms.
TIMER_SHARE_BAR = 0.95


@pytest.mark.parametrize("gateway,body", [
    ("nginx", "stream"), ("haproxy", "stream"), ("haproxy", "whole"),
    # the upstream answers and closes (Connection: close); its FIN can reach nginx's
    # socket before nginx reads the response: the close waits for that read (B1.13;
    # before, 40 of 40 such upstream calls were cut, aborted with status null)
    ("nginx", "whole")])
def test_gateway_own_timers(procs, tmp_path, sse_server, tracer, gateway, body):
    """Each gateway stage held to the gateway's own timers, per request, 8
    clients at once; the pairing of stages and timers, and the stages no
    timer covers (net_in, read_wait; HAProxy's Th, Ti, Tt cover none), are
    in gateway_timers.py. Rows are matched by the port the test's client
    connected from, in the gateway's log and in ttftrace's `conn`.
    Rounding: the timers are whole milliseconds, the bar max(1 ms, 3%) plus
    one tick (gateway_timers.over_bar_ms)."""
    srv = sse_server("--ttft-ms", "40", "--itl-ms", "10", "--tokens", "6", "--threads")
    log = str(tmp_path / ("%s-timers.log" % gateway))
    port = GATEWAYS[gateway](procs, tmp_path, srv.port, access_log=log, rt=True)
    tr = tracer("--port", port)
    warm = drive_ports(port, 1, 1, True)    # the first call names the upstream
    wait_stderr(tr, "calls port %d" % srv.port)
    time.sleep(0.3)                         # its upstream probes attach
    ports = drive_ports(port, 8, 5, body == "stream")
    tr.wait_requests(41, timeout_s=15)
    assert tr.stop() == 0, tr.stderr
    assert len(set(ports)) == len(ports) == 40, ports
    recs = {conn_client_port(r): r for r in tr.requests()}
    # every upstream call and upstream request folded into its client request; nginx
    # whole bodies: at most one pair left alone (a FIN taken between a read's copy and
    # its record, docs/kernel.md B1.13: one pair of 40 in 2 of 11 runs, none in the rest;
    # two in one run of the whole suite beside other tests; since the close of a call
    # with no answer seen waits for that read, none in 16 runs, 10 of them under load)
    alone = [(r["conn"], r["flags"]) for r in tr.requests()
             if conn_client_port(r) not in ports + warm]
    cut = 2 if (gateway, body) == ("nginx", "whole") else 0
    assert len(alone) <= cut and set(ports + warm) <= set(recs), (len(alone), alone[:2])
    assert tr.summary()["counters"]["hop_held_unclaimed"] <= cut
    unjoined = [p for p in ports if "hops" not in recs[p]]
    assert len(unjoined) <= cut // 2, unjoined
    truth = (parse_nginx if gateway == "nginx" else parse_haproxy)(log)
    probes = [p for p, t in truth.items() if t["status"] == 400 and not t["ran"]]
    assert sorted(set(truth) - set(probes)) == sorted(ports + warm), (sorted(truth), probes)
    worst, inside = {}, {}
    for p in ports:
        if p in unjoined:
            continue
        rec, t = recs[p], truth[p]
        assert t["status"] == 200 and t["ran"] and rec["status"] == 200, (t, rec["status"])
        assert rec["hops"][1]["pid"] == srv.pid and chain_sum_ok(rec), rec["hops"]
        assert body == "stream" or rec["ttft_ms"] == rec["e2e_ms"], json.dumps(rec)
        for name, got, want in pairs(gateway, rec, t, body == "whole"):
            over = over_bar_ms(got, want)
            inside[name] = inside.get(name, 0) + (over <= 0)
            if over > worst.get(name, (-1e9,))[0]:
                worst[name] = (over, got, want, p)
    for name in worst:
        print("%s %s: %d/40 within the bar; worst %+.3f ms past it (ttftrace %.3f, timer %.0f,"
              " port %d)" % (gateway, name, inside[name], *worst[name]))
    assert all(inside[n] >= TIMER_SHARE_BAR * len(ports) for n in inside), (inside, worst)


def test_buffering_named(procs, tmp_path, sse_server, tracer):
    srv = sse_server("--ttft-ms", "30", "--itl-ms", "10", "--tokens", "8")
    on = start_nginx(procs, tmp_path, srv.port, buffering=True)
    mport = free_port()
    tr = tracer("--port", on, "--metrics", mport)
    for _ in range(6):
        gzip_request(on, 8)
    tr.wait_requests(6, timeout_s=15)
    # the exporter takes the counters about once a second (later on a loaded machine)
    deadline = time.monotonic() + 15
    while True:
        time.sleep(0.5)
        prom = subprocess.run(["curl", "-s", "http://127.0.0.1:%d/metrics" % mport],
                              capture_output=True, text=True, timeout=10).stdout
        # a bounded label: the seven hop stages, on the gateway's series
        m = re.search(r'^ttftrace_hop_stage_seconds_count\{[^}]*comm="nginx"[^}]*'
                      r'stage="gateway_out"[^}]*\} (\d+)$', prom, re.M)
        if (m and int(m.group(1)) >= 6) or time.monotonic() > deadline:
            break
    assert tr.stop() == 0, tr.stderr
    assert m and int(m.group(1)) == 6, prom[-3000:]
    assert len(set(re.findall(r'^ttftrace_hop_stage_seconds_count\{.*stage="(\w+)"', prom,
                              re.M))) == 7
    lint = subprocess.run([shutil.which("promtool") or "promtool", "check", "metrics"],
                          input=prom, capture_output=True, text=True, timeout=30)
    assert lint.returncode == 0 and not lint.stdout.strip(), lint.stdout + lint.stderr
    recs = tr.requests()
    assert len(recs) == 6
    for r in recs:
        gw = r["hops"][0]
        assert gw["buffering"], gw
        # nginx held every token: its first write came after the upstream's last
        # read, 7 ITLs (70 ms) after its first. Its reads of the 8 tokens: one each
        # on a quiet machine, fewer where it wakes late and finds two waiting (5 in
        # one CI run), but never one read for them all.
        assert gw["held_reads"] >= 3 and gw["held_ms"] >= 60, gw
        assert gw["stages_ms"]["gateway_out"] == r["hop_stages_ms"]["gateway_out"]
        assert chain_sum_ok(r)
    assert tr.summary()["hops"]["buffered"] == 6


def test_no_hops_and_untraced(procs, tmp_path, sse_server, tracer):
    srv = sse_server("--ttft-ms", "20", "--itl-ms", "5", "--tokens", "4")
    port = start_nginx(procs, tmp_path, srv.port)
    tr = tracer("--port", port, "--no-hops")
    concurrent(port, 1, 3)
    tr.wait_requests(3, timeout_s=10)
    assert tr.stop() == 0, tr.stderr
    assert "Hop:" not in tr.stderr
    assert [("hops" in r) for r in tr.requests()] == [False] * 3
    # with hops: the request that names the upstream joins it already (the kernel
    # traces the server at its first read, test_first_call.py)
    tr = tracer("--port", port)
    concurrent(port, 1, 1)
    tr.wait_requests(1, timeout_s=10)
    assert tr.stop() == 0, tr.stderr
    (r,) = tr.requests()
    up = r["hops"][1]
    assert up["pid"] == srv.pid and up["join"] == "exact", up
    assert chain_sum_ok(r)


def test_llama_server_behind_nginx(procs, tmp_path, tracer):
    """8 clients, 4 slots, unequal prompts: each client request's upstream hop
    carries llama-server's own prefill for that request (its timings)."""
    engine = start_llama_server(procs, tmp_path)
    port = start_nginx(procs, tmp_path, engine)
    tr = tracer("--port", port)
    completion(port, "warm up", 2)      # discovery: names llama-server's port
    deadline = time.monotonic() + 5
    while "calls port %d" % engine not in tr.stderr and time.monotonic() < deadline:
        time.sleep(0.05)
    assert "calls port %d" % engine in tr.stderr, tr.stderr
    time.sleep(0.5)                     # engine uprobes attach
    out = load(port, 8, 3, 150, True)
    tr.wait_requests(25, timeout_s=15)
    assert tr.stop() == 0, tr.stderr
    by_port = {c["port"]: c["timings"] for c in out}
    recs = [r for r in tr.requests() if int(r["conn"].rsplit(":", 1)[1]) in by_port]
    assert len(recs) == 24, tr.stderr
    bad = []
    for r in recs:
        t = by_port[int(r["conn"].rsplit(":", 1)[1])]
        assert chain_sum_ok(r), (r["hop_stages_ms"], r["ttft_ms"])
        up = r["hops"][1]
        assert up["comm"] == "llama-server" and up["join"] == "exact", up
        pf = up["stages_ms"]["prefill"]
        if pf is None or abs(pf - t["prompt_ms"]) > 3 + 0.1 * t["prompt_ms"]:
            bad.append("id %s: upstream prefill %s ms, engine %.2f ms (gateway join %s)"
                       % (r["id"], pf, t["prompt_ms"], r["hops"][0]["join"]))
    assert len(bad) <= 0.05 * len(recs), "\n".join(bad)
    # every prompt differs: the forwarded body names each client request's upstream call
    exact = sum(r["hops"][0]["join"] == "exact" for r in recs)
    assert exact >= 0.95 * len(recs), [r["hops"][0]["join_why"] for r in recs]


def wait_stderr(tr, text, timeout_s=5):
    deadline = time.monotonic() + timeout_s
    while text not in tr.stderr and time.monotonic() < deadline:
        time.sleep(0.05)
    assert text in tr.stderr, tr.stderr


def test_upstream_restart_followed(procs, tmp_path, sse_server, tracer):
    """The server behind nginx restarts on the same port: the next upstream
    call finds the new process, and the chains name it."""
    up = free_port()
    old = sse_server("--port", str(up), "--ttft-ms", "20", "--itl-ms", "5", "--tokens", "4")
    port = start_nginx(procs, tmp_path, up)
    tr = tracer("--port", port)
    concurrent(port, 1, 1)          # names the upstream
    wait_stderr(tr, "tracing PID %d" % old.pid)
    time.sleep(0.3)
    concurrent(port, 1, 1)
    old.stop()
    new = sse_server("--port", str(up), "--ttft-ms", "20", "--itl-ms", "5", "--tokens", "4")
    time.sleep(1.1)                 # a known port is looked at again at most once a second
    concurrent(port, 1, 1)          # finds the new process (and merges)
    wait_stderr(tr, "tracing PID %d" % new.pid)
    time.sleep(0.3)
    concurrent(port, 1, 3)
    tr.wait_requests(6, timeout_s=10)
    assert tr.stop() == 0, tr.stderr
    recs = sorted(tr.requests(), key=lambda r: r["t_arrival_ns"])   # output order differs
    assert len(recs) == 6
    pids = [r["hops"][1]["pid"] for r in recs]
    assert pids[1] == old.pid and pids[3:] == [new.pid] * 3, [r["hops"][1] for r in recs]
