# SPDX-License-Identifier: GPL-2.0-only
"""--metrics scraped by a real Prometheus server (Debian's `prometheus`).

The fixture server writes the first token 120 ms after reading the request and
then one token every 12 ms; ttftrace serves /metrics, Prometheus scrapes it
every second, and the values come back through Prometheus' HTTP API: request
and token counts, the TTFT mean (sum/count) against ttftrace's own NDJSON, the
bucket the 120 ms TTFTs and 12 ms ITLs fall in, and the stage histograms that
must add up to TTFT.
"""
import json
import os
import re
import shutil
import subprocess
import time
import urllib.parse
import urllib.request

import pytest

from conftest import TTFTRACE, Client, free_port, needs_root, sse_server_cmd, wait_listen

PROMETHEUS = shutil.which("prometheus")
PROMTOOL = shutil.which("promtool")
TTFT_MS, ITL_MS, TOKENS, N_REQ = 120, 12, 5, 6


def _prom_reason():
    if not PROMETHEUS:
        return "prometheus is not installed (apt-get install prometheus; tools/setup.sh does)"
    return None


def promtool_check(text):
    """`promtool check metrics` on a scrape: no error, no lint warning."""
    if not PROMTOOL:
        pytest.skip("promtool is not installed (apt-get install prometheus)")
    p = subprocess.run([PROMTOOL, "check", "metrics"], input=text, capture_output=True,
                       text=True, timeout=30)
    assert p.returncode == 0 and not p.stdout.strip() and not p.stderr.strip(), (
        p.returncode, p.stdout, p.stderr)


def http_get(url, timeout=5):
    with urllib.request.urlopen(url, timeout=timeout) as r:
        return r.status, r.headers, r.read().decode()


def query(api_port, expr):
    url = "http://127.0.0.1:%d/api/v1/query?%s" % (api_port, urllib.parse.urlencode({"query": expr}))
    _, _, body = http_get(url)
    res = json.loads(body)
    assert res["status"] == "success", res
    return res["data"]["result"]


def scalar(api_port, expr):
    r = query(api_port, expr)
    assert len(r) == 1, "%s: %s" % (expr, r)
    return float(r[0]["value"][1])


def start_prometheus(procs, tmp_path, target_port):
    api_port = free_port()
    cfg = tmp_path / "prometheus.yml"
    cfg.write_text("global:\n  scrape_interval: 1s\n  evaluation_interval: 1s\n"
                   "scrape_configs:\n  - job_name: ttftrace\n    static_configs:\n"
                   "      - targets: ['127.0.0.1:%d']\n" % target_port)
    log = open(tmp_path / "prometheus.log", "w")
    p = procs.add(subprocess.Popen(
        [PROMETHEUS, "--config.file=%s" % cfg, "--storage.tsdb.path=%s" % (tmp_path / "tsdb"),
         "--web.listen-address=127.0.0.1:%d" % api_port], stdout=log, stderr=log))
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        assert p.poll() is None, open(tmp_path / "prometheus.log").read()
        try:
            if http_get("http://127.0.0.1:%d/-/ready" % api_port)[0] == 200:
                return api_port
        except OSError:
            pass
        time.sleep(0.2)
    pytest.fail("prometheus not ready: " + open(tmp_path / "prometheus.log").read())


def wait_value(api_port, expr, want, timeout_s=30):
    deadline, got = time.monotonic() + timeout_s, None
    while time.monotonic() < deadline:
        r = query(api_port, expr)
        got = float(r[0]["value"][1]) if len(r) == 1 else None
        if got == want:
            return
        time.sleep(0.5)
    pytest.fail("%s = %s, expected %s" % (expr, got, want))


@needs_root
@pytest.mark.skipif(_prom_reason() is not None, reason=_prom_reason() or "")
def test_prometheus_scrapes_ttftrace(sse_server, tracer, procs, tmp_path):
    srv = sse_server("--ttft-ms", str(TTFT_MS), "--itl-ms", str(ITL_MS), "--tokens", str(TOKENS),
                     "--nodelay")
    mport = free_port()
    tr = tracer("-p", srv.pid, "--metrics", "%d" % mport)
    assert "Serving Prometheus metrics on http://127.0.0.1:%d/metrics" % mport in tr.stderr

    status, headers, text = http_get("http://127.0.0.1:%d/metrics" % mport)
    assert status == 200
    assert headers["Content-Type"].startswith("text/plain; version=0.0.4")
    assert "# TYPE ttftrace_ttft_seconds histogram" in text
    assert "# TYPE ttftrace_requests_total counter" in text
    assert 'ttftrace_build_info{version="' in text
    promtool_check(text)    # no request yet: families without series
    with pytest.raises(urllib.error.HTTPError) as e:
        http_get("http://127.0.0.1:%d/other" % mport)
    assert e.value.code == 404

    api = start_prometheus(procs, tmp_path, mport)
    client_ms = []
    for _ in range(N_REQ):
        c = Client(srv.port)
        r = c.request(max_tokens=TOKENS)
        assert r.status == 200
        client_ms.append((r.t_first_token_ns - r.t_sent_ns) / 1e6)
        c.close()
    ok = 'ttftrace_requests_total{route="chat",comm="sse_server",model="m",status_class="2xx",outcome="ok"}'
    wait_value(api, ok, N_REQ)
    # one more scrape after the counters hook (about once a second) ran
    time.sleep(2.5)

    # labels: the API kind and the server's comm, never the path
    lab = query(api, "ttftrace_ttft_seconds_count")
    assert len(lab) == 1 and lab[0]["metric"]["route"] == "chat", lab
    assert lab[0]["metric"]["comm"] == "sse_server", lab
    assert scalar(api, "ttftrace_ttft_seconds_count") == N_REQ
    prom_mean = scalar(api, "ttftrace_ttft_seconds_sum / ttftrace_ttft_seconds_count")
    # between the server's own mean view (its read to its first token write, from
    # its log) and the client's (its send to the first token's arrival)
    server_ms = [(t["t_token_ns"][0] - t["t_read_ns"]) / 1e6 for t in srv.truth()]
    assert len(server_ms) == N_REQ, server_ms
    assert (sum(server_ms) / N_REQ - 0.5 <= prom_mean * 1e3 <= sum(client_ms) / N_REQ + 0.5), \
        (prom_mean, server_ms, client_ms)
    # 120 ms: above the 0.1 bucket, inside 0.25 (the default buckets are vLLM's)
    assert scalar(api, 'ttftrace_ttft_seconds_bucket{le="0.1"}') == 0
    assert scalar(api, 'ttftrace_ttft_seconds_bucket{le="0.25"}') == N_REQ
    q50 = scalar(api, "histogram_quantile(0.5, ttftrace_ttft_seconds_bucket)")
    assert 0.1 < q50 <= 0.25, q50
    # 12 ms gaps: (0.01, 0.015]
    n_itl = N_REQ * (TOKENS - 1)
    assert scalar(api, "ttftrace_itl_seconds_count") == n_itl
    itl_le = {le: scalar(api, 'ttftrace_itl_seconds_bucket{le="%s"}' % le)
              for le in ("0.005", "0.0075", "0.01", "0.015", "0.02", "0.03")}
    # the (0.01, 0.015] bucket against the server's own gaps between its token
    # writes (its log): at least those 0.5 ms inside the bucket, at most those
    # within 0.5 ms of it. A token the loaded machine wrote late lengthens one
    # gap and shortens the next: the server's log has them too.
    gaps = [(b - a) / 1e9 for t in srv.truth() for a, b in zip(t["t_token_ns"], t["t_token_ns"][1:])]
    assert len(gaps) == n_itl, gaps
    inside = sum(0.0105 < g <= 0.0145 for g in gaps)
    near = sum(0.0095 < g <= 0.0155 for g in gaps)
    assert inside >= n_itl // 2, gaps    # the server kept its schedule, mostly: a test of something
    assert inside <= itl_le["0.015"] - itl_le["0.01"] <= near, (itl_le, gaps)
    # the mean TPOT against the server's: its first-to-last token gap per
    # request (its log), not the programmed ITL a loaded machine stretches
    tpots = [(t["t_token_ns"][-1] - t["t_token_ns"][0]) / (len(t["t_token_ns"]) - 1) / 1e9
             for t in srv.truth()]
    assert abs(scalar(api, "ttftrace_tpot_seconds_sum / ttftrace_tpot_seconds_count")
               - sum(tpots) / len(tpots)) < 1e-3, tpots
    assert scalar(api, "ttftrace_output_tokens_total") == N_REQ * TOKENS
    assert scalar(api, "ttftrace_e2e_seconds_count") == N_REQ
    for outcome in ("aborted", "error", "incomplete", "unknown"):
        assert scalar(api, 'sum(ttftrace_requests_total{outcome="%s"}) or vector(0)'
                      % outcome) == 0
    # the stage histograms hold only disjoint stages: they add up to TTFT
    stage_sum = scalar(api, "sum(ttftrace_ttft_stage_seconds_sum)")
    assert abs(stage_sum - scalar(api, "ttftrace_ttft_seconds_sum")) < 1e-6
    seen = {r["metric"]["stage"] for r in query(api, "ttftrace_ttft_stage_seconds_count > 0")}
    assert {"net_in", "read_wait", "net_out"} <= seen, seen
    assert "tokenize" not in {r["metric"]["stage"]
                              for r in query(api, "ttftrace_ttft_stage_seconds_count")}
    assert len(query(api, "ttftrace_tokenize_seconds_count")) == 1
    # the tracer's counters, each once, and its drops
    assert scalar(api, 'ttftrace_tracer_events_total{name="events"}') > 0
    assert scalar(api, 'ttftrace_dropped_events_total{reason="ringbuf_full"}') == 0
    assert query(api, '{__name__=~"ttftrace_.*", name="ringbuf_full"}') == []
    assert scalar(api, "ttftrace_build_info") == 1
    # a real scrape passes promtool's lint
    promtool_check(http_get("http://127.0.0.1:%d/metrics" % mport)[2])
    assert tr.stop() == 0, tr.stderr
    # the same requests as ttftrace's NDJSON (ttft_ms is rounded to 1 us)
    recs = tr.requests()
    assert len(recs) == N_REQ
    mean_ttft_s = sum(r["ttft_ms"] for r in recs) / N_REQ / 1e3
    assert abs(prom_mean - mean_ttft_s) < 2e-6, (prom_mean, mean_ttft_s)
    # every bucket holds exactly the ITL samples of the NDJSON at or below its bound
    itls = [x for r in recs for x in r["itl_ms"]]
    assert len(itls) == n_itl
    for le, count in itl_le.items():
        # itl_ms is rounded to 1 us: no sample sits that close to a bound here
        assert count == sum(1 for x in itls if x / 1e3 <= float(le)), (le, count, itls)


@needs_root
@pytest.mark.skipif(_prom_reason() is not None, reason=_prom_reason() or "")
def test_prometheus_histogram_quantile_of_a_known_distribution(tracer, procs, tmp_path):
    """Two fixture servers under one `ttftrace -c`: N_FAST requests with a 50 ms
    TTFT, N_SLOW with 300 ms, and a 404 that feeds no latency histogram.
    With --buckets ttft=0.04,0.06,0.28,0.32,1 every TTFT sits inside a known
    bucket, so Prometheus' histogram_quantile (linear inside a bucket) has
    exact values: p50 = 0.04 + 0.02 * 5/6, p90 = 0.28 + 0.04 * 3/4."""
    n_fast, n_slow = 6, 4
    pf, ps = free_port(), free_port()
    # after both servers: a sleep in the shell's place keeps ttftrace serving
    # /metrics, and goes with ttftrace's SIGTERM to its child at exit
    cmd = "%s & %s & wait; exec sleep 120" % (
        sse_server_cmd("--port", pf, "--ttft-ms", 50, "--itl-ms", 5, "--tokens", 3,
                       "--nodelay", "--exit-after", n_fast),
        sse_server_cmd("--port", ps, "--ttft-ms", 300, "--itl-ms", 5, "--tokens", 3,
                       "--nodelay", "--exit-after", n_slow))
    mport = free_port()
    tr = tracer("-c", cmd, "--metrics", mport, "--buckets", "ttft=0.04,0.06,0.28,0.32,1",
                "--buckets", "e2e=0.1,0.5,1")
    api = start_prometheus(procs, tmp_path, mport)
    for port in (pf, ps):
        wait_listen(port)
    # the 404 first: --exit-after counts only completions, and both servers exit
    # after their last one (nothing outlives the test)
    c = Client(pf)
    assert c.request(path="/v1/nope").status == 404
    c.close()
    for port, n in ((pf, n_fast), (ps, n_slow)):
        for _ in range(n):
            c = Client(port)
            assert c.request(max_tokens=3).status == 200
            c.close()
    wait_value(api, 'sum(ttftrace_requests_total{status_class="2xx",outcome="ok"})',
               n_fast + n_slow)
    time.sleep(1.5)
    text = http_get("http://127.0.0.1:%d/metrics" % mport)[2]
    promtool_check(text)
    assert 'ttftrace_ttft_seconds_bucket{route="chat",comm="sse_server",model="m",le="0.06"} %d' \
        % n_fast in text, text
    assert scalar(api, "sum(ttftrace_ttft_seconds_count)") == n_fast + n_slow
    q = "histogram_quantile(%s, sum by (le) (ttftrace_ttft_seconds_bucket))"
    assert abs(scalar(api, q % 0.5) - (0.04 + 0.02 * 5 / 6)) < 1e-9
    assert abs(scalar(api, q % 0.9) - (0.28 + 0.04 * 3 / 4)) < 1e-9
    assert abs(scalar(api, q % 0.6) - 0.06) < 1e-9
    # the 404 is counted by route (an unmatched path is route "unknown", never the
    # path), status class and outcome, and feeds no latency histogram; it came
    # before any successful request, so its body's model made no label value
    assert scalar(api, 'ttftrace_requests_total{route="unknown",comm="sse_server",model="other",'
                  'status_class="4xx",outcome="error"}') == 1
    assert scalar(api, 'ttftrace_ttft_seconds_count{route="unknown"}') == 0
    assert "/v1/nope" not in text
    # e2e buckets from the second --buckets
    assert scalar(api, 'sum(ttftrace_e2e_seconds_bucket{le="0.1"})') == n_fast
    assert scalar(api, 'sum(ttftrace_e2e_seconds_bucket{le="0.5"})') == n_fast + n_slow
    tr.stop()


TREES = os.path.join(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))), "noroot", "pcie", "trees")


@needs_root
@pytest.mark.skipif(_prom_reason() is not None, reason=_prom_reason() or "")
def test_prometheus_scrapes_pcie_link_gauges(sse_server, tracer, procs, tmp_path):
    """The PCIe gauges of a fake sysfs tree (tests/noroot/pcie/mktrees.py switch_x4:
    two Gen4 x16 GPUs behind a switch whose uplink trained at x4), read back
    through Prometheus' API: the uplink shows 4 of 16 lanes, and each path's
    current rate is Gen4 x4 against Gen4 x16 capable."""
    srv = sse_server("--ttft-ms", "10", "--itl-ms", "1")
    mport = free_port()
    tr = tracer("-p", srv.pid, "--metrics", "%d" % mport,
                "--sysfs-root", os.path.join(TREES, "switch_x4"))
    api = start_prometheus(procs, tmp_path, mport)
    wait_value(api, "ttftrace_pcie_gpus", 2)
    for gpu in ("0000:03:00.0", "0000:04:00.0"):
        sel = 'gpu="%s"' % gpu
        # link 0: the GPU's own link, below the switch downstream port
        assert scalar(api, 'ttftrace_pcie_link_width{%s,link="0"}' % sel) == 16
        # link 1: root port -> switch upstream port
        port = query(api, 'ttftrace_pcie_link_width{%s,link="1"}' % sel)[0]["metric"]["port"]
        assert port == "0000:00:01.0"
        assert scalar(api, 'ttftrace_pcie_link_width{%s,link="1"}' % sel) == 4
        assert scalar(api, 'ttftrace_pcie_link_max_width{%s,link="1"}' % sel) == 16
        # 16 GT/s, in base units
        assert scalar(api, 'ttftrace_pcie_link_speed_transfers_per_second{%s,link="1"}'
                      % sel) == 16e9
        assert scalar(api, 'ttftrace_pcie_link_max_speed_transfers_per_second{%s,link="1"}'
                      % sel) == 16e9
        # 16 GT/s x lanes x 128/130 / 8 bytes
        cur = scalar(api, 'ttftrace_pcie_path_bytes_per_second{%s,state="current"}' % sel)
        cap = scalar(api, 'ttftrace_pcie_path_bytes_per_second{%s,state="capable"}' % sel)
        assert cur == round(16e9 * 4 * 128 / 130 / 8), cur
        assert cap == round(16e9 * 16 * 128 / 130 / 8), cap
    assert tr.stop() == 0, tr.stderr


@needs_root
def test_metrics_without_gpu_say_zero_gpus(sse_server, tracer):
    srv = sse_server("--ttft-ms", "10", "--itl-ms", "1")
    mport = free_port()
    tr = tracer("-p", srv.pid, "--metrics", "%d" % mport,
                "--sysfs-root", os.path.join(TREES, "no_gpu"))
    _, _, text = http_get("http://127.0.0.1:%d/metrics" % mport)
    assert "# TYPE ttftrace_pcie_gpus gauge\nttftrace_pcie_gpus 0\n" in text, text
    assert "ttftrace_pcie_link_speed_transfers_per_second" not in text
    assert tr.stop() == 0, tr.stderr


@pytest.mark.parametrize("spec, why", [
    ("ttft", "is not NAME=B1,B2,..."),
    ("latency=1,2", "unknown histogram 'latency'"),
    ("ttft=0.1,0.05", "strictly ascending"),
    ("ttft=0.1,,1", "bad bound ''"),
    ("e2e=-1", "bad bound '-1'"),
    ("itl=inf", "bad bound 'inf'"),
    ("ttft=" + ",".join(str(i) for i in range(1, 34)), "more than 32 bounds"),
])
@needs_root
def test_bad_buckets_exit_2(spec, why):
    p = subprocess.run([TTFTRACE, "-p", "1", "--metrics", "0", "--buckets", spec],
                       capture_output=True, text=True, timeout=10)
    assert p.returncode == 2, (p.returncode, p.stderr)
    assert p.stderr.startswith("Error: --buckets: ") and why in p.stderr, p.stderr
    assert "\nHINT: --buckets NAME=B1,B2,..." in p.stderr, p.stderr
    assert p.stdout == ""


@needs_root
def test_buckets_need_metrics():
    p = subprocess.run([TTFTRACE, "-p", "1", "--buckets", "ttft=1,2"], capture_output=True,
                       text=True, timeout=10)
    assert p.returncode == 2 and "Error: --buckets is for --metrics" in p.stderr, p.stderr


DATA = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "replay", "data")
# the hop of each message hop stage (docs/metrics.md M22; user/model/hops/view.c)
MSG_HOP_OF = {"net_in": "net", "read_wait": "frontend", "frontend": "frontend", "ipc_in": "ipc",
              "queue": "engine", "prefill": "engine", "ipc_out": "ipc", "detokenize": "output",
              "ipc_back": "ipc", "emit": "frontend", "net_out": "net"}


def parse_exposition(text):
    """{(name, frozenset(labels.items())): value} of every sample line."""
    out = {}
    for line in text.splitlines():
        if not line or line.startswith("#"):
            continue
        m = re.match(r'^(\w+)\{(.*)\} (\S+)$', line) or re.match(r'^(\w+)() (\S+)$', line)
        labels = dict(re.findall(r'(\w+)="((?:[^"\\]|\\.)*)"', m.group(2)))
        out[(m.group(1), frozenset(labels.items()))] = float(m.group(3))
    return out


@pytest.mark.parametrize("name", ["vllm_split", "sglang_split"])
def test_message_hop_stages_from_replay(tmp_path, name):
    """The vLLM-shaped recording (frontend -> engine over zmq) and the
    SGLang-shaped one (tokenizer manager -> scheduler -> detokenizer ->
    tokenizer manager) replayed with
    --metrics-out (no root): ttftrace_hop_stage_seconds has a bounded hop
    label (the fixed stage -> hop map), each (route, hop, stage) series
    counts that route's requests and sums their NDJSON hop stage, the stages
    of a series add up to its TTFT sum, and promtool finds nothing to say."""
    out, base_path = tmp_path / "m.prom", os.path.join(DATA, name)
    subprocess.run([TTFTRACE, "replay", base_path + ".rec", "-q", "-o", os.devnull,
                    "--metrics-out", str(out)], check=True, timeout=60)
    text = out.read_text()
    recs = [json.loads(l) for l in open(base_path + ".ndjson") if '"type":"request"' in l]
    assert len(recs) == 8 and all("hop_stages_ms" in r for r in recs)
    stages = list(recs[0]["hop_stages_ms"])
    assert ("detokenize" in stages) == (name == "sglang_split"), stages
    hop_of = {st: MSG_HOP_OF[st] for st in stages}
    samples = parse_exposition(text)
    hop_series = {dict(k[1])["hop"] + "/" + dict(k[1])["stage"]
                  for k in samples if k[0] == "ttftrace_hop_stage_seconds_count"}
    assert hop_series == {"%s/%s" % (h, st) for st, h in hop_of.items()}, hop_series
    by_route = {}
    for r in recs:
        by_route.setdefault(r["api"], []).append(r)
    for route, rs in by_route.items():
        base = {"route": route, "comm": rs[0]["comm"], "model": "m"}
        total = 0.0
        for st, hop in hop_of.items():
            key = frozenset(dict(base, hop=hop, stage=st).items())
            assert samples[("ttftrace_hop_stage_seconds_count", key)] == len(rs), (route, st)
            got = samples[("ttftrace_hop_stage_seconds_sum", key)]
            want = sum(r["hop_stages_ms"][st] for r in rs) / 1e3
            assert got == pytest.approx(want, abs=1e-6 * len(rs)), (route, st, got, want)
            total += got
        ttft = samples[("ttftrace_ttft_seconds_sum", frozenset(base.items()))]
        assert total == pytest.approx(ttft, abs=1e-6 * len(rs)), (route, total, ttft)
    lint = subprocess.run([PROMTOOL or "promtool", "check", "metrics"], input=text,
                          capture_output=True, text=True, timeout=30)
    assert lint.returncode == 0 and not lint.stdout.strip(), lint.stdout + lint.stderr
