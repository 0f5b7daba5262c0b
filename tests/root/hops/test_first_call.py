# SPDX-License-Identifier: GPL-2.0-only
"""No hop lost at start (bpf/net_hop.bpf.h): a gateway traced with --port
after it started, the server behind it started before it and never traced;
the very first request through the gateway names the upstream, and the
kernel traces the server at its first read of that call, so that request
already carries its chain: the server's hop, joined exactly, its server
stage within the gateway suite's bar of the server's own log. One request
only, and one more after it."""
import time

import pytest

from conftest import Client, needs_root, server_stage_ok
from test_gateway import GATEWAYS, chain_sum_ok, upstream_truth

pytestmark = needs_root


def one_request(port):
    c = Client(port)
    r = c.request(stream=True)
    c.close()
    assert r.status == 200 and r.t_first_token_ns
    return c.local_port


@pytest.mark.parametrize("gateway", ["nginx", "haproxy"])
@pytest.mark.parametrize("source", ["sock", "syscall"])
def test_first_request_through_a_new_upstream_joins(procs, tmp_path, sse_server, tracer,
                                                    gateway, source):
    srv = sse_server("--ttft-ms", "40", "--itl-ms", "10", "--tokens", "6")
    port = GATEWAYS[gateway](procs, tmp_path, srv.port)
    tr = tracer("--port", port, "--net-source", source)
    one_request(port)
    tr.wait_requests(1, timeout_s=10)
    time.sleep(0.3)
    one_request(port)
    tr.wait_requests(2, timeout_s=10)
    assert tr.stop() == 0, tr.stderr
    assert "calls port %d: tracing PID %d" % (srv.port, srv.pid) in tr.stderr, tr.stderr
    recs = sorted(tr.requests(), key=lambda r: r["t_arrival_ns"])
    assert len(recs) == 2, recs
    truth = upstream_truth(recs, srv.truth())
    for r in recs:
        assert "hops" in r, r
        gw, up = r["hops"]
        assert up["pid"] == srv.pid and up["join"] == "exact", r["hops"]
        assert chain_sum_ok(r), (r["hop_stages_ms"], r["ttft_ms"])
        t = truth[r["id"]]
        assert server_stage_ok(up["stages_ms"]["server"], t), (up["stages_ms"], t)
    c = tr.summary()["counters"]
    assert c["hop_kernel_marked"] >= 1 and c["hop_kernel_followed"] == 1, c
