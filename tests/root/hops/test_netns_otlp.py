# SPDX-License-Identifier: GPL-2.0-only
"""A hop across hosts, joined through OTLP: two network namespaces as hosts.

Namespace A holds a gateway (tests/root/hops/fwd_proxy.py on A's loopback) and
its client; namespace B an engine-like SSE server (tests/root/hops/inherit_app.py,
one worker) on B's end of a veth pair; the gateway calls it over the veth
addresses. One ttftrace per namespace (`nsenter --net`), each with --otlp to
one receiver in the root namespace on a veth address of its own (a
namespace cannot reach the root namespace's 127.0.0.1). For every request:
the gateway's `hop.upstream` CLIENT span has as network.local.address/port
the gateway's end of its upstream connection, and the engine's SERVER span
has the same ip:port as network.peer.address/port and client.address/port
(docs/otel.md O8); both agree with the gateway's and the engine's own logs,
so socket tuples are those of each namespace, not of the root. The client's
W3C traceparent (forwarded by the gateway) is the trace id and parent of
both hosts' server spans.
"""
import json
import os
import random
import secrets
import subprocess
import sys
import time

import pytest

import conftest
from conftest import Client, in_netns, needs_root

sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))),
                                "export"))
from test_otlp import Receiver, attrs  # noqa: E402

pytestmark = needs_root

HERE = os.path.dirname(os.path.abspath(__file__))
TOKENS = 4
N_REQ = 6       # with the client's traceparent
N_BARE = 2      # without: joined by the tuple alone


def ip(*args, check=True):
    return subprocess.run(["ip"] + list(args), check=check, capture_output=True, text=True)


def free_subnet():
    """10.X.Y.0/28 that no interface of the root namespace uses."""
    used = ip("-4", "-o", "addr").stdout
    for _ in range(100):
        x, y = random.randint(200, 254), random.randint(0, 255)
        if " 10.%d.%d." % (x, y) not in used:
            return "10.%d.%d." % (x, y)
    pytest.fail("no free 10.x.y.0/28")


@pytest.fixture
def netns():
    """Namespaces A and B joined by a veth pair, each also linked to the root namespace.

    A-B: .1 (A) - .2 (B); root-A: .5 (root) - .6 (A); root-B: .9 (root) - .10 (B),
    and B reaches .5 (the receiver) through .9. Deleted at the end, whatever happened."""
    tag = secrets.token_hex(3)
    a, b = "ttfA" + tag, "ttfB" + tag
    net = free_subnet()
    links = [("xa" + tag, "xb" + tag), ("ra" + tag, "rA" + tag), ("rb" + tag, "rB" + tag)]
    made = []

    def cleanup():
        for n in made:
            ip("netns", "del", n, check=False)
        for root_end, _ in links:
            ip("link", "del", root_end, check=False)

    try:
        for n in (a, b):
            ip("netns", "add", n)
            made.append(n)
            ip("-n", n, "link", "set", "lo", "up")
        (ab_a, ab_b), (ra, ra_ns), (rb, rb_ns) = links
        ip("link", "add", ab_a, "type", "veth", "peer", "name", ab_b)
        ip("link", "set", ab_a, "netns", a)
        ip("link", "set", ab_b, "netns", b)
        ip("-n", a, "addr", "add", net + "1/30", "dev", ab_a)
        ip("-n", b, "addr", "add", net + "2/30", "dev", ab_b)
        for root_end, ns_end, ns, k in ((ra, ra_ns, a, 4), (rb, rb_ns, b, 8)):
            ip("link", "add", root_end, "type", "veth", "peer", "name", ns_end)
            ip("link", "set", ns_end, "netns", ns)
            ip("addr", "add", net + "%d/30" % (k + 1), "dev", root_end)
            ip("-n", ns, "addr", "add", net + "%d/30" % (k + 2), "dev", ns_end)
            ip("link", "set", root_end, "up")
        for ns, dev in ((a, ab_a), (a, ra_ns), (b, ab_b), (b, rb_ns)):
            ip("-n", ns, "link", "set", dev, "up")
        ip("-n", b, "route", "add", net + "5/32", "via", net + "9")
        yield {"a": a, "b": b, "gw_ip": net + "1", "engine_ip": net + "2",
               "receiver_ip": net + "5"}
    finally:
        cleanup()


def start_in(procs, ns, cmd):
    """cmd in namespace ns; (process, its first line: "listening on HOST:PORT")."""
    p = procs.add(subprocess.Popen(["nsenter", "--net=/run/netns/" + ns, "--"] + cmd,
                                   stdout=subprocess.PIPE, text=True))
    line = p.stdout.readline()
    assert line.startswith("listening on "), line
    return p, int(line.rsplit(":", 1)[1])


def tracer_in(tracer, tmp_path, ns, *args, env=None):
    """ttftrace in namespace ns (nsenter --net execs it: the pid stays)."""
    wrapper = tmp_path / ("ttftrace-" + ns)
    wrapper.write_text('#!/bin/sh\nexec nsenter --net=/run/netns/%s -- %s "$@"\n'
                       % (ns, conftest.TTFTRACE))
    wrapper.chmod(0o755)
    real = conftest.TTFTRACE
    conftest.TTFTRACE = str(wrapper)
    try:
        return tracer(*args, env=env)
    finally:
        conftest.TTFTRACE = real


def spans_by_trace(rx):
    """{trace id: [(resource, span, attributes)]} of everything received."""
    out = {}
    for res, sp in rx.spans():
        out.setdefault(sp["traceId"], []).append((res, sp, attrs(sp.get("attributes", []))))
    return out


def test_gateway_and_engine_join_by_tuple_and_traceparent(netns, procs, tracer, tmp_path):
    engine_log, gw_log = str(tmp_path / "engine.ndjson"), str(tmp_path / "gw.ndjson")
    engine, engine_port = start_in(procs, netns["b"], [
        "/usr/bin/python3", os.path.join(HERE, "inherit_app.py"), "--workers", "1",
        "--host", netns["engine_ip"], "--log", engine_log])
    engine_worker = int(engine.stdout.readline().split()[1])
    gw, gw_port = start_in(procs, netns["a"], [
        "/usr/bin/python3", os.path.join(HERE, "fwd_proxy.py"), netns["engine_ip"],
        str(engine_port), gw_log])
    rx = Receiver(host=netns["receiver_ip"])
    try:
        env = {"OTEL_EXPORTER_OTLP_PROTOCOL": "http/json"}
        tr_b = tracer_in(tracer, tmp_path, netns["b"], "--port", engine_port, "--otlp",
                         rx.base, env=env)
        tr_a = tracer_in(tracer, tmp_path, netns["a"], "--port", gw_port, "--otlp", rx.base,
                         env=env)
        # each sees its own namespace's listener: /proc/net/tcp is per namespace
        assert "Listener port %d" % engine_port in tr_b.stderr, tr_b.stderr
        assert "Listener port %d" % gw_port in tr_a.stderr, tr_a.stderr
        sent, bare = {}, []
        for i in range(N_REQ + N_BARE):
            trace_id, parent_id = secrets.token_hex(16), secrets.token_hex(8)
            rid = "n%d" % i
            c = in_netns(netns["a"], lambda: Client(gw_port))
            body = {"tokens": TOKENS, "ttft_ms": 30, "itl_ms": 5,
                    "messages": [{"role": "user", "content": "request %d" % i}]}
            tp = "traceparent: 00-%s-%s-01\r\n" % (trace_id, parent_id) if i < N_REQ else ""
            r = c.request(body=body, extra_headers="X-Req-Id: %s\r\n%s" % (rid, tp))
            c.close()
            assert r.status == 200 and len(c.token_events(r)) == TOKENS, r.body[:200]
            if tp:
                sent[rid] = (trace_id, parent_id)
            else:
                bare.append(rid)
        time.sleep(0.5)
        assert tr_a.stop() == 0, tr_a.stderr
        assert tr_b.stop() == 0, tr_b.stderr
    finally:
        rx.close()
    gw_truth = {t["id"]: t for t in map(json.loads, open(gw_log))}
    engine_truth = {t["id"]: t for t in map(json.loads, open(engine_log))}
    assert sorted(gw_truth) == sorted(engine_truth) == sorted(list(sent) + bare)
    # BPF reads the tuples of each namespace's sockets (ns B's NDJSON: its veth addresses)
    b_conns = sorted(r["conn"] for r in tr_b.requests())
    assert b_conns == sorted("%s:%d<-%s" % (netns["engine_ip"], engine_port,
                                              engine_truth[rid]["peer"])
                             for rid in engine_truth), b_conns
    by_trace = spans_by_trace(rx)
    for rid, (trace_id, parent_id) in sent.items():
        spans = by_trace.get(trace_id, [])
        servers = [(res, sp, a) for res, sp, a in spans if sp["kind"] == 2]
        gw_server = [x for x in servers if x[0]["process.pid"] == gw.pid]
        eng_server = [x for x in servers if x[0]["process.pid"] == engine_worker]
        assert len(gw_server) == 1 and len(eng_server) == 1, (rid, [x[0] for x in servers])
        # the client's traceparent: trace id and parent of both hosts' server spans
        for _, sp, _ in (gw_server[0], eng_server[0]):
            assert sp["parentSpanId"] == parent_id, (rid, sp)
        up = [(sp, a) for res, sp, a in spans if sp["name"] == "hop.upstream"]
        assert len(up) == 1 and up[0][0]["kind"] == 3, (rid, up)
        up_sp, up_a = up[0]
        eng_a = eng_server[0][2]
        local = "%s:%d" % (up_a["network.local.address"], up_a["network.local.port"])
        peer = "%s:%d" % (eng_a["network.peer.address"], eng_a["network.peer.port"])
        # the gateway's upstream source ip:port is the engine's peer ip:port ...
        assert local == peer, (rid, up_a, eng_a)
        # ... and both are what the gateway's and the engine's sockets said
        assert local == gw_truth[rid]["up_local"] == engine_truth[rid]["peer"], rid
        assert local.startswith(netns["gw_ip"] + ":"), local
        assert "%s:%d" % (eng_a["client.address"], eng_a["client.port"]) == peer
        assert (up_a["network.peer.address"], up_a["network.peer.port"]) == \
            (eng_a["network.local.address"], eng_a["network.local.port"]) == \
            (netns["engine_ip"], engine_port), (up_a, eng_a)
        assert up_a["server.address"] == netns["engine_ip"] and up_a["server.port"] == engine_port
        gw_a = gw_server[0][2]
        assert (gw_a["network.local.address"], gw_a["network.local.port"]) == \
            ("127.0.0.1", gw_port), gw_a
        assert "%s:%d" % (gw_a["client.address"], gw_a["client.port"]) == gw_truth[rid]["client"]
        assert engine_truth[rid]["traceparent"] == "00-%s-%s-01" % (trace_id, parent_id)

    # without trace context each host starts a trace of its own; the tuple still joins them
    def tuple_of(a, side):
        return "%s:%d" % (a["network.%s.address" % side], a["network.%s.port" % side])

    ups = {tuple_of(a, "local"): sp for t in by_trace.values() for _, sp, a in t
           if sp["name"] == "hop.upstream"}
    engines = {tuple_of(a, "peer"): sp for t in by_trace.values() for res, sp, a in t
               if sp["kind"] == 2 and res["process.pid"] == engine_worker}
    assert len(ups) == len(engines) == N_REQ + N_BARE, (sorted(ups), sorted(engines))
    for rid in bare:
        local = gw_truth[rid]["up_local"]
        assert local in ups and local in engines, (rid, local, sorted(ups), sorted(engines))
        assert ups[local]["traceId"] != engines[local]["traceId"]
        assert "parentSpanId" not in engines[local], engines[local]
