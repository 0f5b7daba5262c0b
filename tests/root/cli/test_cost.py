# SPDX-License-Identifier: GPL-2.0-only
"""The summary's cost of tracing (cost_* counters, user/cmd/self_cost.c),
attached to a fixture server that was already running.

Truth is read by the test from the kernel, not from ttftrace: the tracer's
and the server's on-CPU time from /proc/PID/task/*/schedstat (ns, every
thread; the clients stay connected until the last reading, so that no
server thread ends inside the window), and the tracer's BPF
programs' runs and run time from /proc/PID/fdinfo of each BPF program the
tracer holds (the kernel's bpf_prog_show_fdinfo). The test counts from the
moment ttftrace says it is attached to just before its SIGINT; ttftrace
counts from a little before the first to a little after the second, so its
figures hold the test's and exceed them by that slack only.
"""
import math
import os
import threading
import time
import urllib.request

from conftest import Client, _token_text, free_port, needs_root
from proc_truth import bpf_stats, cpu_ns

pytestmark = needs_root

STATS = "/proc/sys/kernel/bpf_stats_enabled"
N_CLIENTS, N_REQ, TOKENS = 4, 10, 64


def stats_sysctl():
    with open(STATS) as f:
        return int(f.read().strip())


def traffic(port, clients):
    """N_CLIENTS keep-alive clients (left open in clients: the server's thread
    of each lives on), N_REQ streamed requests each; tokens received."""
    got, errs = [], []

    def run():
        try:
            c = Client(port)
            clients.append(c)
            for _ in range(N_REQ):
                r = c.request(max_tokens=TOKENS)
                assert r.status == 200, r.status
                got.append(sum(1 for ev in r.events if _token_text(ev)))
        except Exception as e:      # reported by the caller
            errs.append(e)

    ts = [threading.Thread(target=run) for _ in range(N_CLIENTS)]
    for t in ts:
        t.start()
    for t in ts:
        t.join(60)
    assert not errs, errs
    return sum(got)


def run_traced(sse_server, tracer, *args):
    """Attach to a running server, stream, stop; ttftrace's summary and the test's truth."""
    srv = sse_server("--ttft-ms", "20", "--itl-ms", "5")
    port = free_port()
    t = tracer("--port", srv.port, "--metrics", str(port), *args)
    t0, cpu0, bpf0 = time.monotonic(), cpu_ns(t.proc.pid), bpf_stats(t.proc.pid)
    srv0, clients = cpu_ns(srv.pid), []
    tokens = traffic(srv.port, clients)
    with urllib.request.urlopen("http://127.0.0.1:%d/metrics" % port, timeout=5) as r:
        scrape = r.read().decode()
    time.sleep(0.3)     # the last lines out
    t1, cpu1, bpf1 = time.monotonic(), cpu_ns(t.proc.pid), bpf_stats(t.proc.pid)
    srv1 = cpu_ns(srv.pid)
    assert t.stop() == 0, t.stderr
    for c in clients:
        c.close()
    truth = {"wall_s": t1 - t0, "cpu_ns": cpu1 - cpu0, "runs": bpf1[0] - bpf0[0],
             "run_ns": bpf1[1] - bpf0[1], "tokens": tokens, "srv_cpu_ns": srv1 - srv0}
    return t.summary(), truth, scrape


def per_token_us(ns, tokens):
    """ns / tokens in us, to the ns, a half rounded up as C's round() does."""
    return math.floor(ns / tokens + 0.5) / 1e3


def metric(scrape, name):
    for line in scrape.splitlines():
        if line.startswith(name + " "):
            return float(line.split()[1])
    raise AssertionError("%s not in the scrape:\n%s" % (name, scrape[-3000:]))


def test_cost_counts_tracer_cpu_and_bpf_time(sse_server, tracer):
    before = stats_sysctl()
    s, truth, scrape = run_traced(sse_server, tracer, "--cost")
    c, cost = s["counters"], s["cost"]
    print("truth", truth, "ttftrace", {k: v for k, v in c.items() if k.startswith("cost_")})
    assert s["total_output_tokens"] == truth["tokens"] == N_CLIENTS * N_REQ * TOKENS
    # The tracer's CPU: the test's window, plus the slack at both ends (0.7 ms
    # in three runs here; the window held 8 to 17 ms at a quarter of this traffic).
    assert truth["cpu_ns"] <= c["cost_tracer_cpu_ns"] <= truth["cpu_ns"] * 1.15 + 8e6
    # Its BPF programs, every run on every hook of the machine (120 runs and
    # 20 us of slack in those runs).
    assert truth["runs"] > 1000, truth
    assert truth["runs"] <= c["cost_bpf_runs"] <= truth["runs"] * 1.1 + 3000
    assert truth["run_ns"] <= c["cost_bpf_run_ns"] <= truth["run_ns"] * 1.1 + 3e6
    assert truth["wall_s"] - 0.05 <= c["cost_wall_ns"] / 1e9 <= truth["wall_s"] + 0.5
    # The traced server's CPU: ttftrace reads /proc/PID/stat, in clock ticks
    # (10 ms), and counts from its first reading.
    assert truth["srv_cpu_ns"] - 20e6 <= c["cost_targets_cpu_ns"] <= \
        truth["srv_cpu_ns"] * 1.15 + 20e6
    # per output token, in us, rounded to the ns (C rounds halves away from 0)
    assert cost["tracer_us_per_token"] == per_token_us(c["cost_tracer_cpu_ns"], truth["tokens"])
    assert cost["bpf_us_per_token"] == per_token_us(c["cost_bpf_run_ns"], truth["tokens"])
    assert cost["bpf_runs"] == c["cost_bpf_runs"]
    assert cost["targets_us_per_token"] == per_token_us(c["cost_targets_cpu_ns"], truth["tokens"])
    # Prometheus, scraped before the end: seconds, at most the run's total
    assert 0 < metric(scrape, "ttftrace_cost_bpf_run_seconds_total") <= c["cost_bpf_run_ns"] / 1e9
    assert 0 < metric(scrape, "ttftrace_cost_tracer_cpu_seconds_total") <= \
        c["cost_tracer_cpu_ns"] / 1e9
    # the statistics were the run's only: off again as they were
    assert stats_sysctl() == before


def test_cost_without_statistics(sse_server, tracer):
    if stats_sysctl():
        import pytest
        pytest.skip("kernel.bpf_stats_enabled is 1 on this machine: the run would count")
    s, truth, _ = run_traced(sse_server, tracer)
    c, cost = s["counters"], s["cost"]
    assert truth["cpu_ns"] <= c["cost_tracer_cpu_ns"] <= truth["cpu_ns"] * 1.15 + 8e6
    assert "cost_bpf_run_ns" not in c and "cost_bpf_runs" not in c, c
    assert cost["bpf_us_per_token"] is None and cost["bpf_runs"] is None, cost
    assert cost["tracer_us_per_token"] == per_token_us(c["cost_tracer_cpu_ns"], truth["tokens"])
    assert stats_sysctl() == 0


def test_cost_text_summary(sse_server, tracer):
    """The text summary: its own section, not among the drops and health counters."""
    srv = sse_server("--ttft-ms", "20", "--itl-ms", "5")
    t = tracer("--port", srv.port, "--cost", json_out=False)
    clients = []
    tokens = traffic(srv.port, clients)
    time.sleep(0.3)
    assert t.stop() == 0, t.stderr
    out = t.stdout
    health = out.split("Drops and health:", 1)[1].split("Cost of tracing", 1)[0]
    assert "cost_" not in health, health
    assert "Cost of tracing, from attach to the end (" in out
    assert "%d output tokens):" % tokens in out, out[-1500:]
    lines = out.split("Cost of tracing", 1)[1].splitlines()
    print("Cost of tracing" + "\n".join(lines[:4]))
    assert lines[1].startswith("  tracer process: ") and "us per output token" in lines[1], lines
    assert lines[1].endswith(" ms to load the programs"), lines
    assert lines[2].startswith("  BPF programs: ") and " runs (" in lines[2], lines
    assert lines[3].startswith("  for scale, the traced processes: ") and \
        "us per output token" in lines[3], lines


def test_cost_counts_a_server_that_ends(sse_server, tracer):
    """A traced server that ends inside the run: its CPU up to its end counts,
    from its EXIT record, though no one reads /proc/PID/stat after it is reaped.
    Truth: the kernel's rusage of the server at its reaping (os.wait4, its
    parent here), less what the server had used when ttftrace attached."""
    n = N_CLIENTS * 4
    srv = sse_server("--ttft-ms", "20", "--itl-ms", "5", "--exit-after", str(n))
    t = tracer("-p", srv.pid)
    base = cpu_ns(srv.pid)
    clients = []

    def run():
        c = Client(srv.port)
        clients.append(c)
        for _ in range(n // N_CLIENTS):
            assert c.request(max_tokens=TOKENS).status == 200

    ts = [threading.Thread(target=run) for _ in range(N_CLIENTS)]
    for th in ts:
        th.start()
    for th in ts:
        th.join(60)
    _, _, ru = os.wait4(srv.pid, 0)     # it exits after its n responses
    srv.proc.returncode = 0             # reaped here: Popen must not wait for it
    truth_ns = (ru.ru_utime + ru.ru_stime) * 1e9 - base
    assert t.wait_exit(15) == 7, t.stderr      # the target is gone (exit 7)
    c = t.summary()["counters"]
    print("server's CPU after the attach: %.1f ms (wait4); ttftrace %.1f ms" % (
        truth_ns / 1e6, c["cost_targets_cpu_ns"] / 1e6))
    assert truth_ns > 50e6, truth_ns    # it spins the last ms before each token
    # the EXIT record's sum is taken just before the thread's last steps; the
    # rusage has microseconds
    assert abs(c["cost_targets_cpu_ns"] - truth_ns) <= 0.05 * truth_ns + 5e6, (c, truth_ns)
