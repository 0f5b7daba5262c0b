# SPDX-License-Identifier: GPL-2.0-only
"""--perfetto against the fixture server under load from tests/indep_client.py (root, BTF): the size bound,
bounded request lanes, flows from each request to the threads that served it, the
--perfetto-sched modes and .json.gz output; every file is parsed by DevTools' trace
engine (npm @paulirish/trace_engine, the Performance panel's parser, installed by
tools/setup.sh) and checked for slices that would not nest (Perfetto's importer
counts those as misplaced_end_event)."""
import gzip
import json
import os
import subprocess
import sys
import threading
from collections import defaultdict

import pytest

from conftest import ROOT, TTFTRACE, needs_root

sys.path.insert(0, os.path.join(ROOT, "tests", "engine"))
import client_bracket  # noqa: E402
from e2e_helpers import CONN_RE, join  # noqa: E402
from indep_client import stream_load  # noqa: E402

ENGINE_DIR = os.path.join(ROOT, "tests", "root", "export", "trace_engine")
REQUESTS_PID = 0x40000001
CONNS_PID = 0x40000002
BYTES_PER_100_REQUESTS = 1000000    # the default's bound on the fixture


def devtools_parse(path):
    """What DevTools' trace engine made of the file (tests/root/export/trace_engine/check_trace.mjs)."""
    if not os.path.isdir(os.path.join(ENGINE_DIR, "node_modules", "@paulirish", "trace_engine")):
        pytest.fail("DevTools' trace engine is not installed: run tools/setup.sh")
    p = subprocess.run(["node", os.path.join(ENGINE_DIR, "check_trace.mjs"), str(path)],
                       capture_output=True, text=True, timeout=120)
    assert p.returncode == 0, p.stderr
    return json.loads(p.stdout)


def load(path):
    op = gzip.open if str(path).endswith(".gz") else open
    with op(path, "rt") as f:
        return json.load(f)


def assert_nested(evs):
    """On every track, complete events nest or are disjoint (never partly overlap)."""
    tracks = defaultdict(list)
    for e in evs:
        if e["ph"] == "X":
            tracks[(e["pid"], e["tid"])].append((e["ts"], -e["dur"], e))
    for key, sl in tracks.items():
        sl.sort(key=lambda x: (x[0], x[1]))
        stack = []
        for ts, ndur, e in sl:
            end = ts - ndur
            while stack and stack[-1] <= ts + 5e-4:   # 1 ns is 1e-3 us; floats near 3e10 us
                stack.pop()
            assert not stack or end <= stack[-1] + 5e-4, (key, e, stack[-1])
            stack.append(end)


def traced_run(sse_server, tracer, tmp_path, name, n, c, *args):
    srv = sse_server()
    pf = tmp_path / name
    tr = tracer("--port", srv.port, "--perfetto", pf, *args)
    client = stream_load(srv.port, n=n, c=c, max_tokens=32, include_usage=False, timeout_s=180)
    tr.wait_requests(n, timeout_s=10)
    assert tr.stop() == 0, tr.stderr
    reqs = tr.requests()
    assert len(reqs) == n, tr.stderr
    check_against_client(client, reqs)
    return srv, pf, reqs


def check_against_client(client, reqs):
    """Every request the client made was traced once, with its TTFT, ITL and TPOT
    inside the client's bracket (tests/client_bracket.py): writing the timeline
    changes none of them."""
    assert [q["error"] for q in client] == [None] * len(client), client
    pairs, unmatched, dups = join(client, reqs)
    assert not unmatched and not dups, (unmatched, dups)
    bad = [p for q, r in pairs for p in client_bracket.check(q, r)]
    print(client_bracket.SPREAD_FMT % client_bracket.spread(pairs))
    assert not bad, "\n".join(bad[:20])


@needs_root
def test_default_size_lanes_flows(sse_server, tracer, tmp_path):
    """100 requests, 4 at a time, 32 tokens each: at most 1 MB per 100 requests;
    4 lanes at most; per request two flows that DevTools binds, from its slice to
    the mark on its reader thread where the read of its last byte returned and to
    the mark on its writer thread where its first token's write began; scheduler
    slices only of those threads and only inside their requests' TTFT."""
    n, c = 100, 4
    srv, pf, reqs = traced_run(sse_server, tracer, tmp_path, "run.json", n, c)
    size = os.path.getsize(pf)
    per100 = size * 100 / n
    print("perfetto: %d bytes for %d requests (%.0f per 100)" % (size, n, per100))
    assert per100 <= BYTES_PER_100_REQUESTS, per100
    trace = load(pf)
    evs = trace["traceEvents"]
    assert_nested(evs)
    assert trace["otherData"]["sched"] == "served"
    # lanes: as many as requests were open at once at the server (the client's next request
    # may arrive while the last bytes of the one before are still leaving: c + 1)
    opened = sorted((r["t_arrival_ns"], 1) for r in reqs)
    opened += sorted((e["ts"] * 1000 + e["dur"] * 1000, -1) for e in evs
                     if e["pid"] == REQUESTS_PID and e.get("cat") == "request" and e["ph"] == "X")
    most, now = 0, 0
    for _, d in sorted(opened, key=lambda x: (x[0], x[1])):
        now += d
        most = max(most, now)
    assert most <= trace["otherData"]["lanes"] <= c + 1, (most, trace["otherData"]["lanes"])
    assert trace["otherData"]["requests_over_lanes"] == 0
    lanes = {e["tid"] for e in evs if e["pid"] == REQUESTS_PID and e["ph"] == "X"}
    assert len(lanes) == trace["otherData"]["lanes"]

    by_id = {r["id"]: r for r in reqs}
    spans = {}
    for e in evs:
        if e["pid"] == REQUESTS_PID and e["ph"] == "X" and e.get("cat") == "request":
            spans[(e["tid"], e["ts"])] = e["args"]["id"]
    assert sorted(spans.values()) == sorted(by_id)

    parsed = devtools_parse(pf)
    assert parsed["events"] == len(evs)
    assert parsed["warnings"] == {}, parsed["warnings"]
    got = defaultdict(dict)
    for fl in parsed["flows"]:
        assert len(fl) == 2, fl
        src, dst = fl
        rid = spans[(src["tid"], src["ts"])]
        assert src["pid"] == REQUESTS_PID and src["cat"] == "request"
        assert dst["ph"] == "X" and dst["cat"] == "request"
        kind = dst["name"].split()[0]
        assert dst["name"] == "%s req %d" % (kind, rid), dst
        got[rid][kind] = dst
    assert sorted(got) == sorted(by_id)
    for rid, r in by_id.items():
        rd, wr = got[rid]["read"], got[rid]["write"]
        assert (rd["pid"], rd["tid"]) == (r["pid"], r["tid_rx"])
        assert (wr["pid"], wr["tid"]) == (r["pid"], r["tid_tx"])
        t0, t1 = r["t_arrival_ns"] / 1000, r["t_first_token_ns"] / 1000
        # read: after arrival, by read_wait; the write began before the first token left
        assert rd["ts"] == pytest.approx(t0 + r["stages_ms"]["net_in"] * 1000 +
                                         r["stages_ms"]["read_wait"] * 1000, abs=2)
        assert t0 <= rd["ts"] <= wr["ts"] <= t1 + 1e-3
        assert wr["ts"] == pytest.approx(t1 - r["stages_ms"]["net_out"] * 1000, abs=2)

    # served: only threads that served a request, only inside one's [arrival, first
    # token], or its [arrival, end] when it had ITL outliers (their gaps are drawn too)
    windows = defaultdict(list)
    for r in reqs:
        till = r["t_end_ns"] if r["outliers"] else r["t_first_token_ns"]
        for tid in {r["tid_rx"], r["tid_tx"]}:
            windows[tid].append((r["t_arrival_ns"] / 1000, till / 1000))
    sched = [e for e in evs if e.get("cat") == "sched"]
    assert sched, "no scheduler slices"
    for e in sched:
        assert e["pid"] == srv.pid and e["tid"] in windows, e
        assert any(a - 1e-3 <= e["ts"] and e["ts"] + e["dur"] <= b + 1e-3
                   for a, b in windows[e["tid"]]), e
    assert not [e for e in sched if e["tid"] == srv.pid]   # the accept thread served none

    # connections: the join instant carries the request's conn, conn_seq and cookie
    reqslice = {e["args"]["id"]: e["args"] for e in evs
                if e["pid"] == REQUESTS_PID and e.get("cat") == "request" and e["ph"] == "X"}
    joins = [e for e in evs if e["pid"] == CONNS_PID and e["ph"] == "i" and "req" in e.get("args", {})]
    assert len(joins) == n
    for e in joins:
        a, r = reqslice[e["args"]["req"]], by_id[e["args"]["req"]]
        assert e["tid"] == a["conn"] and e["args"]["conn_seq"] == a["conn_seq"] == r["conn_seq"]
        assert e["args"]["cookie"] == a["conn_cookie"] == r["sock_cookie"]


@needs_root
def test_sched_modes_none_and_all(sse_server, tracer, tmp_path):
    """none: no scheduler slice at all; all: every traced thread as it switched,
    the accept thread (which served no request) included."""
    _, pf, reqs = traced_run(sse_server, tracer, tmp_path, "none.json", 8, 2,
                             "--perfetto-sched", "none")
    trace = load(pf)
    assert trace["otherData"]["sched"] == "none"
    assert not [e for e in trace["traceEvents"] if e.get("cat") == "sched"]
    assert len([e for e in trace["traceEvents"] if e["ph"] == "f"]) == 2 * len(reqs)
    devtools_parse(pf)

    srv, pf, reqs = traced_run(sse_server, tracer, tmp_path, "all.json", 8, 2,
                               "--perfetto-sched", "all")
    trace = load(pf)
    assert trace["otherData"]["sched"] == "all"
    assert_nested(trace["traceEvents"])
    sched = [e for e in trace["traceEvents"] if e.get("cat") == "sched"]
    assert {e["tid"] for e in sched} >= {srv.pid} | {r["tid_rx"] for r in reqs}
    assert not [e for e in sched if "args" in e]    # as they came: nothing merged
    parsed = devtools_parse(pf)
    assert len(parsed["flows"]) == 2 * len(reqs)


@needs_root
def test_gzip_output(sse_server, tracer, tmp_path):
    """FILE.json.gz is a gzip stream of the same trace, which DevTools reads too."""
    _, pf, reqs = traced_run(sse_server, tracer, tmp_path, "run.json.gz", 6, 2)
    with open(pf, "rb") as f:
        assert f.read(2) == b"\x1f\x8b"
    trace = load(pf)
    assert trace["otherData"]["generator"] == "ttftrace"
    ids = sorted(e["args"]["id"] for e in trace["traceEvents"]
                 if e["pid"] == REQUESTS_PID and e.get("cat") == "request" and e["ph"] == "X")
    assert ids == sorted(r["id"] for r in reqs)
    parsed = devtools_parse(pf)
    assert parsed["events"] == len(trace["traceEvents"])
    assert len(parsed["flows"]) == 2 * len(reqs)


def test_bad_sched_mode():
    p = subprocess.run([TTFTRACE, "--perfetto", "/tmp/x.json", "--perfetto-sched", "some",
                        "-p", "1"], capture_output=True, text=True, timeout=30)
    assert p.returncode == 2, p.stderr
    assert "Error: --perfetto-sched must be served, all or none, not 'some'" in p.stderr
    assert "HINT: " in p.stderr
    p = subprocess.run([TTFTRACE, "--perfetto-sched", "all", "-p", "1"], capture_output=True,
                       text=True, timeout=30)
    assert p.returncode == 2, p.stderr
    assert "Error: --perfetto-sched is for --perfetto: give --perfetto FILE too" in p.stderr


def test_replay_perfetto_gzip_equals_plain(tmp_path):
    """`ttftrace replay REC --perfetto F` on the demo recording (llama.cpp, engine
    probes): F.json.gz decodes to F.json byte for byte; DevTools binds, per request,
    a flow to the reader, to the engine thread at its prefill step and to the writer."""
    rec = os.path.join(ROOT, "tests", "root", "replay", "data", "demo.rec")
    plain, gz = tmp_path / "demo.json", tmp_path / "demo.json.gz"
    for out in (plain, gz):
        p = subprocess.run([TTFTRACE, "replay", rec, "--json", "-q", "-o", str(tmp_path / "x"),
                            "--perfetto", str(out)], capture_output=True, text=True, timeout=60)
        assert p.returncode == 0, p.stderr
    with open(plain, "rb") as f:
        text = f.read()
    with gzip.open(gz, "rb") as f:
        assert f.read() == text
    with open(tmp_path / "x") as f:
        reqs = [json.loads(l) for l in f if '"type":"request"' in l]
    trace = json.loads(text)
    assert_nested(trace["traceEvents"])
    parsed = devtools_parse(gz)
    assert parsed["warnings"] == {}
    kinds = defaultdict(set)
    for src, dst in parsed["flows"]:
        kinds[dst["name"].split()[0]].add((dst["pid"], dst["tid"]))
    assert kinds["read"] == {(r["pid"], r["tid_rx"]) for r in reqs}
    assert kinds["write"] == {(r["pid"], r["tid_tx"]) for r in reqs}
    assert kinds["prefill"], parsed["flows"]   # the engine thread's steps
    assert len(parsed["flows"]) == sum(2 + r["prefill_steps"] for r in reqs)


DATA = os.path.join(ROOT, "tests", "root", "replay", "data")
PROC_STAGES = {"frontend": ("read_wait", "frontend", "emit"), "engine": ("queue", "prefill"),
               "output": ("detokenize",)}


@pytest.mark.parametrize("name", ["vllm_split", "sglang_split"])
def test_message_hop_flows_from_replay(tmp_path, name):
    """The vLLM-shaped recording (frontend -> engine over zmq) and the
    SGLang-shaped one (-> scheduler -> detokenizer ->) replayed with
    --perfetto (no root): per request a slice on a hop lane of the frontend
    over its TTFT and one on a hop lane of each other process over its
    stages, and one flow that DevTools binds frontend -> each process ->
    frontend (where the first token left the last of them); no
    track holds slices that would not nest (4 requests were in flight at
    once: they take lanes)."""
    pf = tmp_path / "p.json"
    subprocess.run([TTFTRACE, "replay", os.path.join(DATA, name + ".rec"), "-q", "-o",
                    os.devnull, "--perfetto", str(pf)], check=True, timeout=60)
    recs = {r["id"]: r for r in (json.loads(l) for l in open(os.path.join(DATA, name + ".ndjson")))
            if r["type"] == "request"}
    trace = load(pf)
    evs = trace["traceEvents"]
    assert_nested(evs)
    assert trace["otherData"]["hop_slices_over_lanes"] == 0
    hops = {e["name"]: e for e in evs if e.get("cat") == "hop" and e["ph"] == "X"}
    parsed = devtools_parse(pf)
    assert parsed["warnings"] == {}, parsed["warnings"]
    flows = [fl for fl in parsed["flows"] if fl[0]["cat"] == "hop"]
    assert len(flows) == len(recs) == 8
    lanes = set()
    for fl in flows:
        # DevTools gives the slices each flow event bound to
        names = [e["name"] for e in fl]
        rid = int(names[0].split()[-1])
        r, st = recs[rid], recs[rid]["hop_stages_ms"]
        procs = ["frontend", "engine", "output"][:len(r["hops"])]
        assert names == ["%s: req %d" % (p, rid) for p in procs] + \
            ["first token from %s" % procs[-1]], names
        assert [e["pid"] for e in fl] == [h["pid"] for h in r["hops"]] + [r["hops"][0]["pid"]]
        assert fl[-1]["tid"] == fl[0]["tid"]
        t0, order = r["t_arrival_ns"] / 1e3, list(st)
        fe = hops[names[0]]
        assert fl[0]["ts"] == pytest.approx(t0, abs=1e-3) == fe["ts"]
        assert fe["dur"] == pytest.approx(r["ttft_ms"] * 1e3, abs=1)
        for p, e in zip(procs[1:], fl[1:-1]):
            sl = hops["%s: req %d" % (p, rid)]
            first = min(order.index(k) for k in PROC_STAGES[p])
            last = max(order.index(k) for k in PROC_STAGES[p])
            start = sum(st[k] for k in order[:first]) * 1e3
            assert (e["tid"], e["ts"]) == (sl["tid"], sl["ts"])
            assert sl["ts"] == pytest.approx(t0 + start, abs=3)
            assert sl["dur"] == pytest.approx(sum(st[k] for k in order[first:last + 1]) * 1e3,
                                              abs=3)
            assert sl["args"] == {"%s_ms" % k: st[k] for k in PROC_STAGES[p]}
        back = sum(st[k] for k in order[:max(order.index(k) for k in PROC_STAGES[procs[-1]]) + 1])
        assert fl[-1]["ts"] == pytest.approx(t0 + back * 1e3, abs=4)
        lanes.add(fl[0]["tid"])
    assert 1 < len(lanes) <= 4     # concurrent requests on their own hop lanes


# The documented bound (docs/timeline.md): scheduler slices at most 32 per request, and
# the whole file at most 13 KB per request of 32 tokens on the fixture, CPU-bound or not.
SLICES_PER_REQUEST = 32
BYTES_PER_REQUEST_32_TOKENS = 13000
SEND_SLACK_US = 200


def contend(procs, pid, n_hogs=4):
    """Puts every thread of pid (and the threads it creates later) on one CPU, under
    SCHED_OTHER, with n_hogs busy loops on that CPU: the server is preempted every few
    ms while it works. Returns the CPU."""
    cpu = min(os.sched_getaffinity(0))
    for tid in os.listdir("/proc/%d/task" % pid):
        os.sched_setscheduler(int(tid), os.SCHED_OTHER, os.sched_param(0))
        os.sched_setaffinity(int(tid), {cpu})
    for _ in range(n_hogs):
        hog = procs.add(subprocess.Popen(["sh", "-c", "while :; do :; done"]))
        os.sched_setaffinity(hog.pid, {cpu})
    return cpu


@needs_root
def test_bounded_under_cpu_contention(sse_server, tracer, procs, tmp_path):
    """The fixture server busy-waits through its 300 ms TTFT and every token gap while
    4 CPU hogs share its one CPU: its threads switch hundreds of times per request.
    The default file stays under 13 KB per request (32 slices per request at most,
    the rest merged coarser and counted in otherData and the summary); DevTools'
    trace engine opens it; every slice kept is on a thread of the server other than
    its accept thread (the kernel's task list), inside the request's own span on the
    client's and the server's clocks (the client's send, the fixture log's end), and its
    state split adds up to no more than its length."""
    n, c = 40, 4
    srv = sse_server("--ttft-ms", "300", "--spin-us", "1000000")
    contend(procs, srv.pid)
    pf = tmp_path / "busy.json"
    tr = tracer("--port", srv.port, "--perfetto", pf)
    tasks = set()
    done = threading.Event()

    def watch():
        while not done.is_set():
            try:
                tasks.update(int(t) for t in os.listdir("/proc/%d/task" % srv.pid))
            except OSError:
                pass
            done.wait(0.02)
    w = threading.Thread(target=watch, daemon=True)
    w.start()
    try:
        client = stream_load(srv.port, n=n, c=c, max_tokens=32, include_usage=False,
                             timeout_s=300)
    finally:
        done.set()
        w.join(5)
    tr.wait_requests(n, timeout_s=10)
    assert tr.stop() == 0, tr.stderr
    reqs = tr.requests()
    assert len(client) == len(reqs) == n, tr.stderr
    check_against_client(client, reqs)

    size = os.path.getsize(pf)
    trace = load(pf)
    evs, od = trace["traceEvents"], trace["otherData"]
    sched = [e for e in evs if e.get("cat") == "sched"]
    print("perfetto under contention: %d bytes for %d requests (%.0f per request); %d "
          "scheduler slices, %d intervals merged, %d of %d requests summarised" %
          (size, n, size / n, len(sched), od["sched_merged"], od["sched_requests_summarised"], n))
    assert size <= n * BYTES_PER_REQUEST_32_TOKENS, size / n
    assert od["sched_slices_per_request"] == SLICES_PER_REQUEST
    assert len(sched) == od["sched_slices"] <= n * SLICES_PER_REQUEST
    # a request's slices follow its request slice in the file (perfetto.c on_request)
    per_req, last = defaultdict(int), None
    for e in evs:
        if e["pid"] == REQUESTS_PID and e.get("cat") == "request" and e["ph"] == "X":
            last = e["args"]["id"]
        elif e.get("cat") == "sched":
            per_req[last] += 1
    assert None not in per_req and max(per_req.values()) <= SLICES_PER_REQUEST, per_req
    # the contention was real: the finest grain did not fit, and the trace says so
    assert od["sched_requests_summarised"] >= 1, od
    assert od["sched_merged"] > len(sched)
    assert od["sched_slices_over_cap"] == 0
    summary = tr.summary()["counters"]
    assert summary["perfetto_requests_sched_summarised"] == od["sched_requests_summarised"]
    assert summary["perfetto_sched_slices"] == len(sched)

    parsed = devtools_parse(pf)
    assert parsed["events"] == len(evs)
    assert parsed["warnings"] == {}, parsed["warnings"]
    assert len(parsed["flows"]) == 2 * n
    assert_nested(evs)

    # truth: the request's span from the client's clock read before its send() to the
    # fixture's last write
    ends = {(t["rport"], t["conn_seq"]): t["t_end_ns"] for t in srv.truth()}
    span = {(q["local_port"], q["conn_seq"]): (q["start_ns"] / 1e3,
                                               ends[(q["local_port"], q["conn_seq"])] / 1e3)
            for q in client}
    by_thread = defaultdict(list)
    for r in reqs:
        port = int(CONN_RE.search(r["conn"]).group(1))
        for tid in {r["tid_rx"], r["tid_tx"]}:
            assert tid in tasks and tid != srv.pid, (tid, tasks)
            by_thread[tid].append(span[(port, r["conn_seq"])])
    names = {"running": "on_cpu_us", "runnable": "runnable_us", "blocked": "blocked_us"}
    for e in sched:
        assert e["pid"] == srv.pid and e["tid"] in by_thread, e
        assert any(a - SEND_SLACK_US <= e["ts"] and e["ts"] + e["dur"] <= b + 1e-3
                   for a, b in by_thread[e["tid"]]), e
        if "args" in e:     # merged: its main state names it; the split fits its length
            split = {k: e["args"][v] for k, v in names.items()}
            assert sum(split.values()) <= e["dur"] + 1e-2, e
            assert split[e["name"]] == max(split.values()), e
