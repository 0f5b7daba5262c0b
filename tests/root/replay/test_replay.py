# SPDX-License-Identifier: GPL-2.0-only
"""Record and replay (user/export/record/record.h, user/cmd/replay.h).

- A live trace of the fixture server recorded with --record and replayed
  gives the same NDJSON, request for request and summary, exactly.
- GPU items from a CUPTI collector are recorded and replayed: the same
  GPU counters and requests come back.
- SIGINT/SIGTERM leave a complete recording; SIGKILL a readable prefix.
- Recordings under tests/root/replay/data replay to their committed output
  (regression tests; `make golden` made them, tests/root/replay/make_data.py),
  and their replayed figures hold against what the run's other side logged
  (NAME.truth.ndjson: the servers' own logs, or an independent client's).
- Corrupt recordings: exit 11 with an Error line.
- Long run: 200,000 synthetic requests (tests/drivers/mkrec) in bounded memory.
"""
import glob
import json
import math
import os
import signal
import subprocess
import threading
import time

import pytest

from conftest import (ROOT, TTFTRACE, Client, check_tpot, conn_client_port, needs_root,
                      require_built, vm_rss_kib)

MKREC = os.path.join(ROOT, ".output", "bin", "mkrec")
DATA = os.path.join(os.path.dirname(os.path.abspath(__file__)), "data")
EXIT_BAD_RECORDING = 11


def replay(rec, out, *args):
    require_built(TTFTRACE)
    p = subprocess.run([TTFTRACE, "replay", rec, "--json", "-o", out] + list(args),
                       capture_output=True, text=True, timeout=300)
    return p


def read_text(path):
    with open(path) as f:
        return f.read()


def traffic(port, n_clients=2, n_req=3):
    """n_clients keep-alive connections at once, n_req streamed requests each."""
    errs = []

    def run():
        try:
            c = Client(port)
            for _ in range(n_req):
                r = c.request(max_tokens=6)
                assert r.status == 200
            c.close()
        except Exception as e:  # reported by the test thread
            errs.append(e)

    ts = [threading.Thread(target=run) for _ in range(n_clients)]
    for t in ts:
        t.start()
    for t in ts:
        t.join(60)
    assert not errs, errs


@needs_root
@pytest.mark.parametrize("sig", [signal.SIGINT, signal.SIGTERM], ids=["SIGINT", "SIGTERM"])
def test_live_equals_replay(sse_server, tracer, tmp_path, sig):
    srv = sse_server("--ttft-ms", "40", "--itl-ms", "8")
    rec = str(tmp_path / "run.rec")
    t = tracer("--port", srv.port, "--record", rec)
    traffic(srv.port)
    time.sleep(0.2)
    assert t.stop(sig) == 0, t.stderr
    assert os.stat(rec).st_mode & 0o777 == 0o600
    live = read_text(t.out_path)
    out = str(tmp_path / "replay.ndjson")
    p = replay(rec, out)
    assert p.returncode == 0, p.stderr
    assert "without its END" not in p.stderr
    got = read_text(out)
    assert live.count('"type":"request"') == 6, live
    # Every field of every request, and the summary with its counters, as live.
    assert got.splitlines() == live.splitlines()


def summary_of(text):
    import json
    for line in text.splitlines():
        if '"type":"summary"' in line:
            return json.loads(line)
    raise AssertionError("no summary in:\n" + text[-2000:])


@needs_root
def test_gpu_items_replay(sse_server, tracer, cupti_peer, tmp_path):
    """A CUPTI collector sends kernel records while the tracer records: the
    replay rebuilds the GPU store from the recording (gpu_records is counted
    again by the pipeline, not copied) and gives the live output exactly."""
    sock = "@ttftrace-replay-%d" % os.getpid()
    srv = sse_server("--ttft-ms", "30", "--itl-ms", "5")
    rec = str(tmp_path / "gpu.rec")
    t = tracer("--port", srv.port, "--record", rec, env={"TTFTRACE_CUPTI_SOCK": sock})
    peer = subprocess.run([cupti_peer, sock, "0.5"], capture_output=True, text=True, timeout=30)
    assert peer.returncode == 0, peer.stderr
    traffic(srv.port, n_clients=1, n_req=2)
    time.sleep(0.3)
    assert t.stop(signal.SIGINT) == 0, t.stderr
    live = read_text(t.out_path)
    pushed = int(peer.stdout.split()[1])
    got_live = summary_of(live)["counters"]["gpu_records"]
    assert 0 < got_live <= pushed, (got_live, peer.stdout)
    out = str(tmp_path / "replay.ndjson")
    p = replay(rec, out)
    assert p.returncode == 0, p.stderr
    replayed = read_text(out)
    assert summary_of(replayed)["counters"]["gpu_records"] == got_live
    assert replayed.splitlines() == live.splitlines()


@needs_root
def test_sigkill_leaves_readable_prefix(sse_server, tracer, tmp_path):
    srv = sse_server("--ttft-ms", "20", "--itl-ms", "5")
    rec = str(tmp_path / "run.rec")
    t = tracer("--port", srv.port, "--record", rec)
    traffic(srv.port, n_clients=1, n_req=3)
    time.sleep(2.5)  # the recording is flushed about once a second
    t.stop(signal.SIGKILL)
    out = str(tmp_path / "replay.ndjson")
    p = replay(rec, out)
    assert p.returncode == 0, p.stderr
    assert "ends without its END frame" in p.stderr
    got = [l for l in read_text(out).splitlines() if '"type":"request"' in l]
    assert len(got) == 3, p.stderr


REGRESSION = sorted(glob.glob(os.path.join(DATA, "*.rec")))


@pytest.mark.parametrize("rec", REGRESSION, ids=[os.path.basename(r) for r in REGRESSION])
def test_regression(rec, tmp_path):
    out = str(tmp_path / "replay.ndjson")
    p = replay(rec, out, "-q")
    assert p.returncode == 0, p.stderr
    want = read_text(rec[:-len(".rec")] + ".ndjson")
    assert read_text(out) == want


def by_port(rows, port_of, t_of):
    """{client port: rows in time order}: a keep-alive connection's requests."""
    out = {}
    for r in sorted(rows, key=t_of):
        out.setdefault(port_of(r), []).append(r)
    return out


def check_server_truth(s, t, c):
    """One replayed request against the server's log of it (the fixture's, or the
    split stack's frontend): the request arrived before the server read it (and
    after the client began to send it: check_client_truth), its first token left
    inside the server's write of it, and TPOT is inside the span of the server's
    writes. On a socket without TCP_NODELAY (flag `nagle`) the kernel may hold a
    write back until an ACK: then the first token left after the write began and before the client
    (c, the independent client's record) received it."""
    pre = t.get("t_token_pre_ns") or [t.get("t_first_pre_ns")]
    read_ns = t.get("t_sock_read_ns") or t["t_read_ns"]
    assert s["status"] == 200 and s["tokens"] == t["tokens"], (s, t)
    assert s["t_arrival_ns"] <= read_ns, (s["t_arrival_ns"] - read_ns)
    lo = min(t["t_first_ns"] - 1_000_000, pre[0] - 100_000)
    hi = c["first_token_ns"] if "nagle" in s["flags"] else t["t_first_ns"]
    assert lo < s["t_first_token_ns"] <= hi, (
        "first token %d ns from the server's write" % (s["t_first_token_ns"] - t["t_first_ns"]))
    if t.get("t_token_ns") and t["tokens"] > 1 and "nagle" not in s["flags"]:
        check_tpot(s, t)


def check_client_truth(s, c):
    """One replayed request against tests/indep_client.py's record of it: sent
    between the client's clock reads around send(), its first token left before
    the client's kernel stamped its receipt (at most 1 ms + 2% of TTFT before:
    the softirq delay, as tests/engine/test_demo_llama.py), ended before the
    client saw the end, with the client's token-event count."""
    assert s["status"] == 200 and s["token_events"] == c["events"], (s, c)
    assert c["start_ns"] - 1_000 <= s["t_arrival_ns"] <= c["sent_ns"]
    slack_ns = 1_000_000 + 0.02 * (c["first_token_ns"] - c["start_ns"])
    assert c["first_token_ns"] - slack_ns <= s["t_first_token_ns"] <= c["first_token_ns"]
    assert s["t_end_ns"] <= c["end_ns"]


TRUTH = [r for r in REGRESSION if os.path.exists(r[:-len(".rec")] + ".truth.ndjson")]


@pytest.mark.parametrize("rec", TRUTH, ids=[os.path.basename(r) for r in TRUTH])
def test_regression_truth(rec, tmp_path):
    """Every request of the recording, replayed, against the truth the run logged,
    joined by client port and order on the connection (never by ttftrace's output):
    as many requests as the truth has, each inside its bounds. The truth file
    holds the server's log lines ("rport"), the independent client's records
    ("local_port"), or both."""
    out = str(tmp_path / "replay.ndjson")
    assert replay(rec, out, "-q").returncode == 0
    got = [json.loads(l) for l in open(out)]
    got = by_port([r for r in got if r["type"] == "request"], conn_client_port,
                  lambda r: r["t_arrival_ns"])
    rows = [json.loads(l) for l in open(rec[:-len(".rec")] + ".truth.ndjson")]
    client = by_port([r for r in rows if "local_port" in r], lambda r: r["local_port"],
                     lambda r: r["start_ns"])
    server = by_port([r for r in rows if r.get("ev", "request") == "request" and "rport" in r],
                     lambda r: r["rport"], lambda r: r["t_read_ns"])
    assert client, "no client records in the truth: run make golden"
    for want in (client, server):
        if want:
            assert {p: len(v) for p, v in got.items()} == {p: len(v) for p, v in want.items()}
    for port, rs in got.items():
        for i, s in enumerate(rs):
            c = client[port][i] if client else None
            if c:
                check_client_truth(s, c)
            if server:
                check_server_truth(s, server[port][i], c)


def test_regression_data_present():
    assert len(REGRESSION) >= 4, "tests/root/replay/data lacks recordings"
    assert TRUTH == REGRESSION, "recordings without their truth: run make golden"


def tail_bucket_of(ns):
    """The TTFT bucket of the summary's tail, as user/lib/tail_bucket.h states it:
    exact below 64 ns, then 64 log-linear buckets per power of two."""
    if ns < 64:
        return max(ns, 0)
    e = ns.bit_length() - 1
    return ((e - 5) << 6) + ((ns >> (e - 6)) & 63)


def percentile(v, p):
    """user/lib/stats.h's interpolated percentile."""
    v = sorted(v)
    rank = p / 100 * (len(v) - 1)
    i = int(rank)
    return v[i] if i == len(v) - 1 else v[i] + (rank - i) * (v[i + 1] - v[i])


@pytest.mark.parametrize("name", ["vllm_split", "sglang_split"])
def test_message_hop_summary(tmp_path, name):
    """The vLLM- and SGLang-shaped recordings (message hops across two and
    three processes): the summary gives each hop's
    time per request (its stages summed) as P50/P95/P99, computed again here
    from the requests' hop_stages_ms, and the hop that dominates the tail:
    the largest share of TTFT of the requests at or above P95 TTFT (here the
    slowest of 8), with that share; the text summary says the same."""
    rec = os.path.join(DATA, name + ".rec")
    out = str(tmp_path / "r.ndjson")
    assert replay(rec, out, "-q").returncode == 0
    lines = [json.loads(l) for l in open(out)]
    recs = [r for r in lines if r["type"] == "request"]
    hs = [r for r in lines if r["type"] == "summary"][0]["hop_split"]
    of = {"net": ("net_in", "net_out"), "ipc": ("ipc_in", "ipc_out"),
          "frontend": ("read_wait", "frontend", "emit"), "engine": ("queue", "prefill")}
    if name == "sglang_split":
        of.update(ipc=("ipc_in", "ipc_out", "ipc_back"), output=("detokenize",))
    assert hs["requests"] == len(recs) == 8 and sorted(hs["hops_ms"]) == sorted(of)
    for hop, stages in of.items():
        per = [sum(r["hop_stages_ms"][s] for s in stages) for r in recs]
        for k, p in (("p50", 50), ("p95", 95), ("p99", 99)):
            assert hs["hops_ms"][hop][k] == pytest.approx(percentile(per, p), abs=0.002), (hop, k)
    # the tail: the requests whose TTFT falls in the bucket of the P95 rank or above
    # (user/lib/tail_bucket.h: a bucket spans 1/64 of its values), here the slowest
    # of 8 and any within 1/64 of it
    ttft_ns = sorted(r["t_first_token_ns"] - r["t_arrival_ns"] for r in recs)
    edge = tail_bucket_of(ttft_ns[math.ceil(0.95 * len(recs)) - 1])
    tail = [r for r in recs if tail_bucket_of(r["t_first_token_ns"] - r["t_arrival_ns"]) >= edge]
    tail_ms = sum(r["ttft_ms"] for r in tail)
    share = {h: sum(r["hop_stages_ms"][s] for r in tail for s in st) / tail_ms
             for h, st in of.items()}
    want = max(share, key=share.get)
    assert hs["tail_hop"] == want and hs["tail_hop_share"] == pytest.approx(share[want], abs=2e-4)
    text = subprocess.run([TTFTRACE, "replay", rec, "-q"], capture_output=True, text=True,
                          timeout=60).stdout
    assert "is dominated by hop: %s (%.0f%% of its TTFT)" % (want, 100 * share[want]) in text


def test_corrupt_recording(tmp_path):
    bad = str(tmp_path / "bad.rec")
    with open(bad, "wb") as f:
        f.write(b"not a recording\n" * 8)
    p = replay(bad, str(tmp_path / "o.ndjson"))
    assert p.returncode == EXIT_BAD_RECORDING, p.stderr
    assert "Error: " in p.stderr and "not a ttftrace recording" in p.stderr
    p = replay(str(tmp_path / "missing.rec"), str(tmp_path / "o.ndjson"))
    assert p.returncode == EXIT_BAD_RECORDING, p.stderr


def test_corrupt_frame_keeps_earlier_requests(tmp_path):
    """A recording damaged in the middle: exit 11, the requests before the damage are written."""
    require_built(MKREC)
    import gzip
    good = str(tmp_path / "good.rec")
    subprocess.run([MKREC, "-o", good, "-n", "40", "-c", "2", "-t", "4"], check=True,
                   capture_output=True)
    raw = gzip.open(good).read()
    cut = len(raw) // 2
    bad = str(tmp_path / "bad.rec")
    with gzip.open(bad, "wb") as f:
        # 64 bytes inserted: the frames after them are out of step
        f.write(raw[:cut] + b"\xff" * 64 + raw[cut:])
    out = str(tmp_path / "o.ndjson")
    p = replay(bad, out)
    assert p.returncode == EXIT_BAD_RECORDING, p.stderr
    n = read_text(out).count('"type":"request"')
    assert 10 <= n < 40, n


def test_long_run_bounded_memory(tmp_path):
    """200,000 requests replayed: peak RSS < 64 MiB, flat after warm-up."""
    require_built(MKREC)
    rec = str(tmp_path / "long.rec")
    subprocess.run([MKREC, "-o", rec, "-n", "200000", "-c", "16", "-t", "4", "--engine"],
                   check=True, capture_output=True, timeout=300)
    p = subprocess.Popen([TTFTRACE, "replay", rec, "--json", "-o", "/dev/null"],
                         stderr=subprocess.PIPE, text=True)
    samples = []
    while p.poll() is None:
        try:
            kib = vm_rss_kib(p.pid)
        except (FileNotFoundError, ProcessLookupError):
            break
        if kib:
            samples.append(kib)
        time.sleep(0.2)
    err = p.stderr.read()
    assert p.wait() == 0, err
    print("RSS samples (KiB, every 0.2 s):", samples)
    print(err.strip())
    assert "Replayed 8000000 events" in err, err
    assert len(samples) >= 10, "replay too short to sample: %s" % samples
    peak = max(samples)
    assert peak < 64 * 1024, "peak RSS %d KiB" % peak
    # After warm-up (the first 40% of the run: the timeline and scheduler
    # horizons filling), RSS does not grow by more than 2 MiB. (The last
    # sample can fall in the exit, when memory is being freed: a drop.)
    tail = samples[int(len(samples) * 0.4):]
    assert max(tail) - tail[0] <= 2048, tail
