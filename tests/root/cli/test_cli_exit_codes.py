# SPDX-License-Identifier: GPL-2.0-only
"""ttftrace's command line: usage, documented exit codes, and targets that end.

Exit codes: 0 ok, 2 bad command line, 3 not root, 4 no BTF / tracepoints
(test_missing_tracepoint.py),
5 no such process, 6 nothing attached, 7 target gone, 8 output error.
"""
import os
import shutil
import signal
import socket
import subprocess
import tempfile
import time

import pytest

from conftest import (TTFTRACE, Client, check_server_interval, free_port, needs_root, require_built,
                      sse_server_cmd)

RUN_TIMEOUT_S = 30


def ttftrace(*args, env=None):
    require_built(TTFTRACE)
    e = dict(os.environ)
    e.update(env or {})
    cmd = [TTFTRACE] + [str(a) for a in args]
    t0 = time.monotonic()
    p = subprocess.run(cmd, capture_output=True, text=True, env=e, timeout=RUN_TIMEOUT_S,
                       cwd="/")
    p.elapsed_s = time.monotonic() - t0
    return p


def test_help_has_examples():
    p = ttftrace("--help")
    assert p.returncode == 0, p.stderr
    assert "EXAMPLES" in p.stdout
    for opt in ("-p", "--comm", "--port", "-c", "-d", "--json", "-o", "-v"):
        assert opt in p.stdout, opt


@pytest.mark.parametrize("args", [
    ("--no-such-option",),
    ("-p", "notapid"),
    ("-d", "soon", "-p", "1"),
    ("-p",),
], ids=["unknown-option", "pid-not-a-number", "duration-not-a-number", "missing-argument"])
def test_bad_command_line_exits_2(args):
    p = ttftrace(*args)
    assert p.returncode == 2, (p.returncode, p.stderr)
    assert "usage" in p.stderr.lower() or "Error:" in p.stderr, p.stderr
    assert p.stdout == ""


def test_unknown_option_says_error_and_hint():
    p = ttftrace("--bogus")
    assert p.returncode == 2
    assert p.stderr == ("Error: unknown or incomplete option '--bogus'\n"
                        "HINT: see `ttftrace --help`\n"), p.stderr


def test_flag_given_a_value_says_it_takes_none():
    p = ttftrace("--cost=1", "-p", "1")
    assert p.returncode == 2
    assert p.stderr == ("Error: option '--cost' takes no value (in '--cost=1')\n"
                        "HINT: see `ttftrace --help`\n"), p.stderr


def test_not_root_exits_3():
    # A copy in a directory that nobody can reach (pytest's tmp dirs are 0700).
    d = tempfile.mkdtemp(prefix="ttftrace-cli-")
    try:
        os.chmod(d, 0o755)
        exe = os.path.join(d, "ttftrace")
        require_built(TTFTRACE)
        shutil.copy(TTFTRACE, exe)
        os.chmod(exe, 0o755)
        p = subprocess.run(["setpriv", "--reuid=nobody", "--regid=nogroup", "--clear-groups",
                            exe, "-p", str(os.getpid()), "-d", "1"],
                           capture_output=True, text=True, timeout=RUN_TIMEOUT_S, cwd="/")
    finally:
        shutil.rmtree(d)
    assert p.returncode == 3, (p.returncode, p.stderr)
    assert "Error:" in p.stderr
    assert "HINT" in p.stderr


@needs_root
def test_no_such_pid_exits_5():
    p = ttftrace("-p", "99999999", "-d", "1")
    assert p.returncode == 5, (p.returncode, p.stderr)
    assert "Error:" in p.stderr


@needs_root
def test_no_such_comm_exits_5():
    p = ttftrace("--comm", "nosuchcommxyz", "-d", "1")
    assert p.returncode == 5, (p.returncode, p.stderr)
    assert "Error:" in p.stderr


@needs_root
def test_port_nobody_listens_on_exits_5():
    p = ttftrace("--port", free_port(), "-d", "1")
    assert p.returncode == 5, (p.returncode, p.stderr)
    assert "Error:" in p.stderr


@needs_root
def test_no_btf_exits_4():
    p = ttftrace("-p", os.getpid(), "-d", "1", env={"TTFTRACE_SYS_BTF": "/nonexistent"})
    assert p.returncode == 4, (p.returncode, p.stderr)
    assert "Error:" in p.stderr and "HINT" in p.stderr, p.stderr


@needs_root
def test_nothing_attached_exits_6():
    p = ttftrace("-p", os.getpid(), "-d", "1", env={"TTFTRACE_SKIP_PROGS": "all"})
    assert p.returncode == 6, (p.returncode, p.stderr)
    assert "Error:" in p.stderr


@needs_root
def test_unwritable_output_exits_8():
    p = ttftrace("-p", os.getpid(), "-d", "1", "-o", "/nonexistent-dir/x")
    assert p.returncode == 8, (p.returncode, p.stderr)
    assert "Error:" in p.stderr


@needs_root
@pytest.mark.parametrize("case", ["metrics-busy", "otlp-protocol", "record", "perfetto"])
def test_output_errors_come_before_the_probes(case):
    """An output that cannot open fails before the targets are looked up and the
    probes load: with a port nobody listens on (exit 5 once looked up), the
    output's own error and exit code come out, and nothing else."""
    busy = socket.socket()
    busy.bind(("127.0.0.1", 0))
    busy.listen()
    args, env, code, what = {
        "metrics-busy": (("--metrics", "127.0.0.1:%d" % busy.getsockname()[1]), {}, 8,
                         "cannot serve metrics"),
        "otlp-protocol": (("--otlp", "http://127.0.0.1:4318"),
                          {"OTEL_EXPORTER_OTLP_PROTOCOL": "grpc"}, 2, "'grpc' is not supported"),
        "record": (("--record", "/nonexistent-dir/x.rec"), {}, 8, "cannot write"),
        "perfetto": (("--perfetto", "/nonexistent-dir/x.json"), {}, 8, "cannot write"),
    }[case]
    p = ttftrace("--port", free_port(), "-d", "1", *args, env=env)
    busy.close()
    assert p.returncode == code, (p.returncode, p.stderr)
    lines = p.stderr.splitlines()
    assert len(lines) == 2 and what in lines[0] and lines[0].startswith("Error: "), p.stderr
    assert lines[1].startswith("HINT: "), p.stderr


@needs_root
def test_duration_ends_after_one_second(tracer):
    tr = tracer("-p", os.getpid(), "-d", "1")
    rc = tr.wait_exit(timeout_s=10)
    assert rc == 0, tr.stderr
    took_s = time.monotonic() - tr.t_attached
    assert 0.9 <= took_s <= 2.0, took_s
    s = tr.summary()
    assert s["requests"] == 0


@needs_root
def test_sigterm_prints_summary_and_exits_0(tracer):
    tr = tracer("-p", os.getpid())
    rc = tr.stop(signal.SIGTERM)
    assert rc == 0, tr.stderr
    assert tr.summary()["requests"] == 0


@needs_root
def test_target_exits_mid_trace_exits_7_and_loses_nothing(sse_server, tracer):
    srv = sse_server("--ttft-ms", "50", "--itl-ms", "10", "--nodelay", "--exit-after", "2")
    tr = tracer("-p", srv.pid)
    c = Client(srv.port)
    r1 = c.request(max_tokens=3)
    r2 = c.request(max_tokens=4)
    c.close()
    assert srv.proc.wait(timeout=10) == 0
    rc = tr.wait_exit(timeout_s=15)
    assert rc == 7, (rc, tr.stderr)
    reqs = tr.requests()
    assert sorted((r["conn_seq"], r["tokens"]) for r in reqs) == [(0, 3), (1, 4)], reqs
    assert all(r["pid"] == srv.pid for r in reqs)
    assert tr.summary()["requests"] == 2
    assert r1.status == r2.status == 200


@needs_root
def test_command_mode_ends_what_cmd_started(tracer, tmp_path):
    """-c CMD runs in its own process group: stopping ttftrace ends the
    commands CMD started in the background too (sh waits for them, it does
    not exec them)."""
    mark = "ttf-bg-%d" % os.getpid()
    script = tmp_path / mark
    script.write_text("#!/bin/sh\nsleep 300\n")
    script.chmod(0o755)
    tr = tracer("-c", "%s & %s & wait" % (script, script))
    deadline = time.monotonic() + 10

    def sleepers():
        out = subprocess.run(["pgrep", "-f", str(script)], capture_output=True, text=True)
        return [int(x) for x in out.stdout.split()]

    while len(sleepers()) < 2:
        assert time.monotonic() < deadline, "the two background commands never started"
        time.sleep(0.05)
    assert tr.stop() == 0, tr.stderr
    deadline = time.monotonic() + 5
    while sleepers() and time.monotonic() < deadline:
        time.sleep(0.05)
    assert not sleepers(), "left running after ttftrace ended: %s" % sleepers()


@needs_root
def test_command_mode_traces_child_and_exits_0(tracer):
    port = free_port()
    cmd = sse_server_cmd("--port", port, "--ttft-ms", "80", "--itl-ms", "10", "--nodelay",
                         "--exit-after", "1")
    tr = tracer("-c", cmd)
    c = None
    deadline = time.monotonic() + 10
    while c is None:
        try:
            c = Client(port)
        except ConnectionRefusedError:
            assert time.monotonic() < deadline, "sse_server under -c never listened"
            time.sleep(0.05)
    r = c.request(max_tokens=5)
    c.close()
    rc = tr.wait_exit(timeout_s=15)
    assert rc == 0, (rc, tr.stderr)
    (rec,) = tr.requests()
    assert rec["tokens"] == 5 and rec["path"] == "/v1/chat/completions"
    check_server_interval("TTFT", rec["ttft_ms"], (r.t_first_token_ns - r.t_sent_ns) / 1e6, 80)
    assert rec["conn"].endswith(":%d" % r.local_port)
    assert tr.summary()["requests"] == 1


@needs_root
def test_comm_and_port_targets_find_the_server(sse_server, tracer):
    srv = sse_server("--ttft-ms", "30", "--itl-ms", "5", "--nodelay")
    for args in (("--comm", "sse_server"), ("--port", srv.port)):
        tr = tracer(*args)
        c = Client(srv.port)
        c.request(max_tokens=3)
        c.close()
        tr.wait_requests(1)
        assert tr.stop() == 0, tr.stderr
        # --comm traces every sse_server on the machine: keep this test's own
        (rec,) = [r for r in tr.requests() if r["pid"] == srv.pid]
        assert rec["tokens"] == 3, (args, rec)


@needs_root
def test_text_mode_live_line_and_summary(sse_server, tracer):
    srv = sse_server("--ttft-ms", "40", "--itl-ms", "5", "--nodelay")
    tr = tracer("-p", srv.pid, json_out=False)
    c = Client(srv.port)
    c.request(max_tokens=3)
    c.close()
    time.sleep(0.5)
    assert tr.stop() == 0, tr.stderr
    out = tr.stdout
    assert "/v1/chat/completions" in out, out
    assert "P50" in out.upper() and "P99" in out.upper(), out
    assert "Tracing" in tr.stderr


def test_version_names_commit_libbpf_and_kernel():
    p = ttftrace("--version")
    assert p.returncode == 0, p.stderr
    lines = p.stdout.splitlines()
    assert lines[0].startswith("ttftrace "), lines
    assert lines[1].startswith("commit ") and lines[1] != "commit ", lines
    assert lines[2].startswith("libbpf v1."), lines
    assert lines[3] == "kernel " + os.uname().release, lines
