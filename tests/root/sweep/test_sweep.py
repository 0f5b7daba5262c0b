# SPDX-License-Identifier: GPL-2.0-only
"""Load sweeps and SLO gates: loadgen --sweep/--slo/--sweep-result, ttftrace --slo,
bench/sweep.sh on the demo server, and the live progress line (only on a terminal)."""
import json
import os
import pty
import re
import select
import subprocess
import sys
import time

import pytest

from conftest import ROOT, TTFTRACE, Client, needs_root, require_built

sys.path.insert(0, os.path.join(ROOT, "tests", "engine"))
from e2e_helpers import LOADGEN, demo_missing_reason  # noqa: E402

ROW_RE = re.compile(r"^\s*(\d*)\s+(client|ttftrace)\s+(\d+)((?:\s+(?:[\d.]+|-)){7})\s*(met|FAILED|)$",
                    re.M)


def loadgen(*args, timeout_s=60, **kw):
    require_built(LOADGEN)
    return subprocess.run([LOADGEN] + [str(a) for a in args], capture_output=True, text=True,
                          timeout=timeout_s, **kw)


def rows(text):
    """Table rows: (C or '', source, n, [ttft p50 p95 p99 tpot p50 p95 p99 req/s], SLO)."""
    out = []
    for m in ROW_RE.finditer(text):
        nums = [None if x == "-" else float(x) for x in m.group(4).split()]
        out.append((m.group(1), m.group(2), int(m.group(3)), nums, m.group(5)))
    return out


# --- no root: the fixture server and hand-made files ---------------------------------

def test_sweep_fixture_table_json_and_slo(sse_server, tmp_path):
    srv = sse_server("--ttft-ms", "40", "--itl-ms", "4", "--tokens", "6")
    url = "http://127.0.0.1:%d/v1/chat/completions" % srv.port
    out = tmp_path / "sweep.json"
    p = loadgen("-u", url, "--sweep", "1,2", "-n", "4", "-m", "6", "--slo", "ttft_p95=5s",
                "-o", out)
    assert p.returncode == 0, p.stderr
    # stderr is not a terminal: no progress line
    assert "\r" not in p.stderr and "\x1b[" not in p.stderr, repr(p.stderr)
    r = rows(p.stderr)
    assert [(x[0], x[1], x[2], x[4]) for x in r] == [("1", "client", 4, "met"),
                                                      ("2", "client", 4, "met")], p.stderr
    for x in r:
        # programmed 40 ms TTFT (the fixture's truth: never less); 4 ms token spacing,
        # bounds loose for a busy 2-core machine
        assert 40.0 <= x[3][0] < 200.0 and 0 < x[3][3] < 20.0, p.stderr
    assert "highest concurrency that meets the SLO: 2" in p.stderr
    res = json.loads(out.read_text())
    assert res["sweep"]["slo"] == "ttft_p95=5s" and res["best_concurrency"] == 2
    steps = res["steps"]
    assert [s["concurrency"] for s in steps] == [1, 2]
    assert [s["warmup"] for s in steps] == [1, 2]          # default W = C
    assert all(s["requests"] == 4 and s["ok"] == 4 and s["slo_met"] for s in steps)
    # windows in order, and the fixture saw warm-up + measured requests
    assert steps[0]["t_window_ns"] <= steps[0]["t_start_ns"] < steps[0]["t_end_ns"] \
        < steps[1]["t_window_ns"] <= steps[1]["t_start_ns"] < steps[1]["t_end_ns"]
    # the fixture logs a request after its last write: give the last one a moment
    deadline = time.monotonic() + 3
    while len(srv.truth()) < 11 and time.monotonic() < deadline:
        time.sleep(0.05)
    assert len(srv.truth()) == (1 + 4) + (2 + 4)

    # the same server, an SLO nobody meets: exit 4 with the failing values
    p = loadgen("-u", url, "--sweep=1", "-n", "2", "-m", "4", "--slo", "ttft_p50=1us",
                "-o", tmp_path / "s2.json")
    assert p.returncode == 4, p.stderr
    assert re.search(r"c=1: SLO ttft_p50 <= 0.001 ms: FAILED \((4\d|5\d)\.\d{3} ms\)", p.stderr), \
        p.stderr
    assert "no step meets the SLO" in p.stderr
    # a plain run: checked on the whole run
    p = loadgen("-u", url, "-n", "2", "-m", "4", "--slo", "ttft_p50=1us,tpot_p95=1s",
                "-o", tmp_path / "r.json")
    assert p.returncode == 4, p.stderr
    assert "loadgen: SLO tpot_p95 <= 1000 ms: met (" in p.stderr
    assert "loadgen: 1 of 2 SLOs not met (exit 4)" in p.stderr


def test_sweep_result_splits_ttftrace_by_window(tmp_path):
    """Hand-made sweep and ttftrace files: the join and its percentiles are exact."""
    def step(c, t0, t1, ttft):
        d = {"p50": ttft, "p90": ttft, "p95": ttft, "p99": ttft}
        return {"concurrency": c, "warmup": c, "requests": 3, "ok": 3, "failed": 0,
                "wall_s": 1.0, "req_s": 3.0, "throughput_tok_s": 30.0, "t_start_ns": t0,
                "t_end_ns": t1, "t_window_ns": t0 - 10,
                "client": {"ttft_ms": d, "tpot_ms": d, "e2e_ms": d}, "slo_met": True}
    sweep = {"sweep": {"url": "u", "prompt_chars": 8, "max_tokens": 4, "slo": "ttft_p95=25ms"},
             "steps": [step(1, 1000, 2000, 10.0), step(4, 3000, 4000, 30.0)],
             "best_concurrency": 1}
    reqs = [(500, 99.0, 1.0, []),            # warm-up: outside both windows
            (1100, 10.0, 2.0, []), (1200, 20.0, 4.0, []), (1300, 30.0, 6.0, []),
            (1400, 500.0, 9.0, ["unknown"]),  # counted, feeds no percentile
            (3500, 22.0, 1.0, []), (3600, 24.0, 1.0, [])]
    lines = [json.dumps({"type": "request", "t_arrival_ns": t, "ttft_ms": a, "tpot_ms": b,
                         "e2e_ms": 100.0, "flags": f}) for t, a, b, f in reqs]
    lines.append(json.dumps({"type": "summary", "requests": 7}))
    (tmp_path / "s.json").write_text(json.dumps(sweep))
    (tmp_path / "t.ndjson").write_text("\n".join(lines) + "\n")
    p = loadgen("--sweep-result", tmp_path / "s.json", "--ttftrace-ndjson", tmp_path / "t.ndjson")
    r = rows(p.stdout)
    assert p.returncode == 0, p.stdout + p.stderr
    assert [(x[0], x[1], x[2], x[4]) for x in r] == [
        ("1", "client", 3, "met"), ("", "ttftrace", 4, "FAILED"),   # ttftrace p95 29 > 25
        ("4", "client", 3, "FAILED"), ("", "ttftrace", 2, "met")], p.stdout
    # ttftrace step 1: TTFT 10, 20, 30 -> p50 20, p95 29, p99 29.8; TPOT 2, 4, 6 -> 4, 5.8, 5.96
    assert r[1][3][:6] == [20.0, 29.0, 29.8, 4.0, 5.8, 5.96], p.stdout
    # step 2: TTFT 22, 24 -> p50 23, p95 23.9, p99 23.98 (printed with 2 decimals)
    assert r[3][3][:3] == [23.0, 23.9, 23.98], p.stdout
    assert "outside the measured windows (warm-up, other clients): 1" in p.stdout
    assert "client: highest concurrency that meets the SLO: 1" in p.stdout
    assert "ttftrace: highest concurrency that meets the SLO: 4" in p.stdout
    # an SLO given here replaces the file's
    p = loadgen("--sweep-result", tmp_path / "s.json", "--slo", "ttft_p50=5ms")
    assert p.returncode == 4 and "client: no step meets the SLO" in p.stdout, p.stdout


@pytest.mark.parametrize("spec,msg", [("ttft_p95=2", "needs a unit"),
                                      ("ttft_p97=2s", "unknown percentile"),
                                      ("latency_p50=1s", "unknown metric"),
                                      ("ttft_p95=1s,ttft_p95=2s", "given twice")])
def test_bad_slo_is_a_usage_error(spec, msg):
    p = loadgen("-u", "http://127.0.0.1:1/", "--slo", spec)
    assert p.returncode == 2 and "Error: --slo: " in p.stderr and msg in p.stderr, p.stderr
    assert "HINT: --slo METRIC_PCT=LIMIT" in p.stderr
    require_built(TTFTRACE)
    p = subprocess.run([TTFTRACE, "--port", "1", "--slo", spec], capture_output=True, text=True,
                       timeout=30)
    assert p.returncode == 2 and "Error: --slo: " in p.stderr and msg in p.stderr, p.stderr
    assert "HINT: --slo METRIC_PCT=LIMIT" in p.stderr


def test_loadgen_refuses_slo_it_cannot_measure():
    p = loadgen("-u", "http://127.0.0.1:1/", "--slo", "itl_p99=50ms")
    assert p.returncode == 2 and "loadgen does not measure itl" in p.stderr, p.stderr


def pty_run(cmd, timeout_s=60, on_tty=None, **kw):
    """Run cmd with stderr on a pseudo-terminal (stdout to a pipe); returns (rc, tty text).
    on_tty(text so far) is called after each read from the terminal."""
    master, slave = pty.openpty()
    p = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=slave, **kw)
    os.close(slave)
    buf = b""
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        r, _, _ = select.select([master], [], [], 0.2)
        if r:
            try:
                d = os.read(master, 65536)
            except OSError:     # EIO: every writer closed the terminal
                break
            if not d:
                break
            buf += d
            if on_tty:
                on_tty(buf.decode(errors="replace"))
        elif p.poll() is not None:
            break
    os.close(master)
    p.stdout.read()
    return p.wait(timeout=10), buf.decode(errors="replace")


def test_progress_line_on_a_terminal(sse_server, tmp_path):
    srv = sse_server("--ttft-ms", "100", "--itl-ms", "5", "--tokens", "4")
    url = "http://127.0.0.1:%d/v1/chat/completions" % srv.port
    rc, tty = pty_run([LOADGEN, "-u", url, "--sweep=1,2", "-n", "4", "-m", "4",
                       "-o", str(tmp_path / "s.json")])
    assert rc == 0, tty
    # redrawn in place; the step's requests and its P50 TTFT once one finished
    assert "\r\x1b[Kloadgen: " in tty, repr(tty)
    assert re.search(r"step 1/2 c=1  \d/5 requests", tty), repr(tty)
    assert re.search(r"step 2/2 c=2  \d/6 requests  TTFT p50 1\d\d\.\d ms", tty), repr(tty)
    # erased before the table rows, which stay readable once the erase is a line break
    assert [x[:2] for x in rows(tty.replace("\r\x1b[K", "\n"))] == [("1", "client"), ("2", "client")], repr(tty)


# --- root: ttftrace ------------------------------------------------------------------

@needs_root
def test_ttftrace_slo_exit_code_after_summary(sse_server, tracer):
    srv = sse_server("--ttft-ms", "30", "--itl-ms", "5", "--tokens", "4")
    t = tracer("--port", srv.port, "--slo", "ttft_p50=1us,tpot_p95=10s,e2e_p99=10s")
    for _ in range(2):
        c = Client(srv.port)
        c.request(max_tokens=4)
        c.close()
    t.wait_requests(2)
    rc = t.stop()
    summary = t.summary()        # the summary was written before the verdict
    assert summary["requests"] == 2, t.stderr
    assert rc == 10, t.stderr
    ttft = summary["ttft_ms"]["p50"]
    assert "ttftrace: SLO ttft_p50 <= 0.001 ms: FAILED (%.3f ms)" % ttft in t.stderr, t.stderr
    assert "ttftrace: SLO tpot_p95 <= 10000 ms: met (" in t.stderr
    assert "ttftrace: 1 of 3 SLOs not met (exit 10)" in t.stderr
    # goodput: no request is within a 1 us TTFT
    assert "ttftrace: goodput 0 of 2 successful requests within every SLO limit" in t.stderr
    # not a terminal: no progress line
    assert "\r" not in t.stderr


@needs_root
def test_ttftrace_slo_met_exits_0(sse_server, tracer):
    srv = sse_server("--ttft-ms", "30", "--itl-ms", "5", "--tokens", "4")
    t = tracer("--port", srv.port, "--slo", "ttft_p95=10s")
    c = Client(srv.port)
    c.request(max_tokens=4)
    c.close()
    t.wait_requests(1)
    assert t.stop() == 0, t.stderr
    assert "ttftrace: SLO ttft_p95 <= 10000 ms: met (" in t.stderr
    assert re.search(r"ttftrace: goodput 1 of 1 successful requests within every SLO limit, "
                     r"[0-9.]+ requests/s\n", t.stderr), t.stderr


@needs_root
def test_ttftrace_progress_on_a_terminal(sse_server, tmp_path):
    require_built(TTFTRACE)
    srv = sse_server("--ttft-ms", "30", "--itl-ms", "5", "--tokens", "4")
    out = tmp_path / "run.ndjson"

    import threading
    idle_shown = threading.Event()

    def client():
        # after the first progress line (0 requests), however long the attach took
        if idle_shown.wait(30):
            c = Client(srv.port)
            c.request(max_tokens=4)
            c.close()

    def on_tty(text):
        if re.search(r"ttftrace: \d+\.\d/3 s  0 requests", text):
            idle_shown.set()
    th = threading.Thread(target=client, daemon=True)
    th.start()
    rc, tty = pty_run([TTFTRACE, "--port", str(srv.port), "-d", "3", "--json", "-o", str(out)],
                      on_tty=on_tty)
    th.join(5)
    assert rc == 0, tty
    assert re.search(r"\r\x1b\[Kttftrace: \d+\.\d/3 s  0 requests", tty), repr(tty)
    assert re.search(r"\r\x1b\[Kttftrace: \d+\.\d/3 s  1 requests  TTFT p50 3\d\.\d ms", tty), \
        repr(tty)


# --- root + demo engine: the whole sweep -----------------------------------------------

@needs_root
@pytest.mark.skipif(demo_missing_reason() is not None, reason=demo_missing_reason() or "")
def test_sweep_script_on_demo_server(tmp_path):
    require_built(TTFTRACE)
    require_built(LOADGEN)
    run = tmp_path / "run"
    env = dict(os.environ, STEPS="1,2", N="4", M="8", P="32", SLO="ttft_p95=30s,tpot_p95=5s",
               RUNDIR=str(run))
    p = subprocess.run([os.path.join(ROOT, "bench", "sweep.sh")], env=env, cwd=ROOT,
                       capture_output=True, text=True, timeout=240)
    assert p.returncode == 0, p.stdout + p.stderr
    r = rows(p.stdout)
    assert [(x[0], x[1], x[2], x[4]) for x in r] == [
        ("1", "client", 4, "met"), ("", "ttftrace", 4, "met"),
        ("2", "client", 4, "met"), ("", "ttftrace", 4, "met")], p.stdout + p.stderr
    for x in r:
        assert all(v is not None and v > 0 for v in x[3][:6]), p.stdout
    assert "client: highest concurrency that meets the SLO: 2" in p.stdout
    assert "ttftrace: highest concurrency that meets the SLO: 2" in p.stdout
    # the same recorded run against an SLO nobody meets
    p = loadgen("--sweep-result", run / "sweep.json", "--ttftrace-ndjson", run / "ttftrace.ndjson",
                "--slo", "ttft_p50=1us")
    assert p.returncode == 4, p.stdout + p.stderr
    assert "client: no step meets the SLO" in p.stdout
    assert "ttftrace: no step meets the SLO" in p.stdout
