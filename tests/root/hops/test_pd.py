# SPDX-License-Identifier: GPL-2.0-only
"""Disaggregated prefill and decode behind a proxy (docs/design.md D13).

tests/root/hops/pd_proxy.py sends each client request first to a prefill server
(max_tokens=1, not streamed, 300 ms) and then, with kv_transfer_params, to a
decode server that waits 120 ms (the KV pull) plus a 10 ms first step before
it streams. Both are the fixture server. `ttftrace -p PROXY` finds both
upstreams; each client request must then carry the chain gateway -> prefill
-> decode, its TTFT split into disjoint stages that sum to it, the prefill
call and the decode server's own time within 1 ms or 3% of the truth logs,
and the prefill's token counted as discarded.
"""
import json
import os
import subprocess
import threading
import time

import pytest

from conftest import Client, needs_root

pytestmark = needs_root

HERE = os.path.dirname(os.path.abspath(__file__))
PREFILL_MS, KV_PULL_MS, STEP_MS, TOKENS = 300, 120, 10, 12


def start_proxy(procs, tmp_path, pf_port, dec_port, buffer=False):
    log = str(tmp_path / "proxy.ndjson")
    args = ["/usr/bin/python3", os.path.join(HERE, "pd_proxy.py"), str(pf_port), str(dec_port),
            log] + (["--buffer"] if buffer else [])
    p = procs.add(subprocess.Popen(args, stdout=subprocess.PIPE, text=True))
    line = p.stdout.readline()
    assert line.startswith("listening on 127.0.0.1:"), line
    return p, int(line.rsplit(":", 1)[1]), log


def drive(port, clients, per_client):
    errors = []

    def one():
        try:
            for _ in range(per_client):
                c = Client(port)
                r = c.request(max_tokens=TOKENS)
                assert r.status == 200 and len(c.token_events(r)) == TOKENS, r.body[:200]
                c.close()
        except Exception as e:  # noqa: BLE001 - reported below
            errors.append(repr(e))

    ts = [threading.Thread(target=one) for _ in range(clients)]
    for t in ts:
        t.start()
    for t in ts:
        t.join()
    assert not errors, errors


def within(got, want):
    return abs(got - want) <= max(1.0, 0.03 * want)


@pytest.mark.parametrize("clients", [1, 4])
def test_pd_chain(procs, tmp_path, sse_server, tracer, clients):
    pf = sse_server("--ttft-ms", str(PREFILL_MS), "--tokens", "1", "--threads")
    dec = sse_server("--ttft-ms", str(KV_PULL_MS + STEP_MS), "--itl-ms", "10", "--threads")
    proxy, port, log = start_proxy(procs, tmp_path, pf.port, dec.port)
    tr = tracer("-p", proxy.pid)
    drive(port, 1, 1)                  # the first calls name both upstreams
    deadline = time.monotonic() + 5
    while tr.stderr.count("Hop: PID") < 2 and time.monotonic() < deadline:
        time.sleep(0.05)
    assert "calls port %d" % pf.port in tr.stderr and "calls port %d" % dec.port in tr.stderr, \
        tr.stderr
    time.sleep(0.3)
    n = 8
    drive(port, clients, n // clients)
    tr.wait_requests(n + 1, timeout_s=15)
    assert tr.stop() == 0, tr.stderr
    recs = [r for r in tr.requests() if r["comm"] == "python3"]
    assert len(recs) == n + 1 == len(tr.requests()), [(r["comm"], r["conn"]) for r in
                                                        tr.requests()]
    truth = {t["client_port"]: t for t in map(json.loads, open(log))}
    pf_truth = {t["rport"]: t for t in pf.truth()}
    dec_truth = {t["rport"]: t for t in dec.truth()}
    good = 0
    for r in recs[1:]:
        assert [h["hop"] for h in r["hops"]] == ["gateway", "prefill", "upstream"], r["hops"]
        gw, pre, up = r["hops"]
        st = r["hop_stages_ms"]
        assert list(st) == ["net_in", "read_wait", "gateway_in", "prefill_call", "handoff",
                            "upstream", "upstream_out", "gateway_out", "net_out"], st
        assert abs(sum(st.values()) - r["ttft_ms"]) <= 0.002 * len(st), (st, r["ttft_ms"])
        assert gw["join"] == "inferred" and gw["join_why"].startswith("disaggregated"), gw
        assert pre["pid"] == pf.pid and pre["join"] == "exact", pre
        assert pre["tokens_discarded"] == 1, pre
        assert up["pid"] == dec.pid and up["join"] == "exact", up
        t = truth[int(r["conn"].rsplit(":", 1)[1])]
        ok = within(st["prefill_call"], (t["t_pf_done_ns"] - t["t_pf_sent_ns"]) / 1e6)
        pt = pf_truth[t["pf_lport"]]
        ok &= within(pre["server_ms"], (pt["t_end_ns"] - pt["t_read_ns"]) / 1e6)
        dt = dec_truth[t["dec_lport"]]
        ok &= within(up["stages_ms"]["server"], (dt["t_first_ns"] - dt["t_read_ns"]) / 1e6)
        ok &= st["prefill_call"] >= PREFILL_MS and up["stages_ms"]["server"] >= KV_PULL_MS
        good += ok
    assert good >= 0.95 * n, good
    s = tr.summary()
    # the first one too: its calls named the upstreams, whose requests were not seen yet
    assert s["hops"]["disaggregated"] == n + 1, s["hops"]
    assert s["counters"]["hop_joins_disaggregated"] == n + 1
    assert s["counters"]["hop_held_unclaimed"] == 0
    assert "prefill_call" in s["hops"]["stages_ms"]


def test_pd_proxy_that_buffers(procs, tmp_path, sse_server, tracer):
    """The variant: the proxy reads the whole decode stream and answers with one
    JSON body. The buffering is the proxy's (named at the gateway hop), not the
    decode server's, which streamed."""
    pf = sse_server("--ttft-ms", "100", "--tokens", "1", "--threads")
    dec = sse_server("--ttft-ms", "50", "--itl-ms", "10", "--threads")
    proxy, port, log = start_proxy(procs, tmp_path, pf.port, dec.port, buffer=True)
    tr = tracer("-p", proxy.pid)
    for i in range(4):
        c = Client(port)
        r = c.request(max_tokens=TOKENS)
        assert r.status == 200 and r.headers["content-type"] == "application/json"
        c.close()
        if i == 0:
            time.sleep(0.5)    # both upstreams traced before the rest
    tr.wait_requests(4, timeout_s=15)
    assert tr.stop() == 0, tr.stderr
    recs = tr.requests()
    assert len(recs) == 4, [(r["comm"], r["conn"], r["flags"]) for r in recs]
    for r in recs[1:]:
        gw, pre, up = r["hops"]
        assert pre["pid"] == pf.pid and up["pid"] == dec.pid, r["hops"]
        # every decode token read before the one write to the client
        assert gw["buffering"] and gw["held_reads"] >= TOKENS - 2, gw
        assert gw["held_ms"] >= 10 * (TOKENS - 2), gw
        # ... while the decode server sent its first token at its own 50 ms
        assert 50 <= up["stages_ms"]["server"] < 60, up
        assert "nonstream" in r["flags"], r["flags"]
