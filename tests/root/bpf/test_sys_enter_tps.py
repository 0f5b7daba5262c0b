# SPDX-License-Identifier: GPL-2.0-only
"""The sock source's syscall arguments (bpf/net.bpf.c): from the per-syscall
tracepoints syscalls:sys_enter_X where tracefs has them (the default here),
else from raw sys_enter. TTFTRACE_SKIP_PROGS leaving one of the five
programs out forces the fallback; both must give the same records on every
read and write syscall variant, with no payload missing. Reads run no
program at their entry: their arguments come from the registers at
sock_recv_length (docs/kernel.md B1.5).
"""
import json
import os
import shutil
import subprocess
import sys

import pytest

from conftest import TTFTRACE, Client, needs_root

sys.path.insert(0, os.path.dirname(__file__))
from test_net_source import ITL_MS, TTFT_MS, check_run, trace_run  # noqa: E402

pytestmark = needs_root

TPS = "syscall arguments from the per-syscall tracepoints syscalls:sys_enter_X"
RAW = "syscall arguments from raw sys_enter"


def test_tracepoints_and_raw_sys_enter_agree(sse_server, tracer):
    srv = sse_server("--ttft-ms", str(TTFT_MS), "--itl-ms", str(ITL_MS), "--nodelay",
                     "--syscalls", "cycle", "--usage")
    runs = {}
    for name, env, line in (("tp", None, TPS),
                            ("raw", {"TTFTRACE_SKIP_PROGS": "enter_sendmsg"}, RAW)):
        tr, rs, recs = trace_run(srv, tracer, ("--net-source", "sock", "-v"), env=env)
        assert "Net source: sock, socket tracepoints sock_recv_length/sock_send_length, " \
            + line in tr.stderr, tr.stderr
        if name == "raw":
            # said at any verbosity, with the reason and the cost
            assert "Net source: raw sys_enter instead of the tracefs syscall tracepoints: " \
                "enter_sendmsg is not loaded; it runs a BPF program on every syscall of the " \
                "whole host" in tr.stderr, tr.stderr
        check_run(srv, rs, recs)
        counters = tr.summary()["counters"]
        assert counters["payload_args_missing"] == 0, counters
        assert counters["ringbuf_full"] == 0, counters
        runs[name] = recs
    for a, b in zip(runs["tp"], runs["raw"]):
        assert a["tokens"] == b["tokens"] and a["token_events"] == b["token_events"], (a, b)
        assert a["path"] == b["path"] and a["status"] == b["status"]


@pytest.mark.skipif(not shutil.which("bpftool"), reason="needs bpftool")
def test_reads_run_no_program_at_their_entry(sse_server, tracer):
    """The tracer's syscall tracepoints, as the kernel lists them: the four
    write-like syscalls and close, no read of any kind; the reads of a
    traced request still carry their payload (the request is recognised and
    no arguments are missing)."""
    srv = sse_server("--ttft-ms", "20", "--itl-ms", "5", "--syscalls", "cycle")
    tr = tracer("-p", srv.pid)
    c = Client(srv.port)
    rs = [c.request(max_tokens=3) for _ in range(5)]
    c.close()
    tr.wait_requests(len(rs), timeout_s=5)
    out = subprocess.run(["bpftool", "-j", "perf", "list"], capture_output=True, text=True,
                         timeout=30)
    assert out.returncode == 0, out.stderr
    tps = sorted(x["tracepoint"] for x in json.loads(out.stdout)
                 if x.get("pid") == tr.proc.pid and x.get("fd_type") == "tracepoint")
    assert tps == ["sys_enter_close", "sys_enter_sendmsg", "sys_enter_sendto",
                   "sys_enter_write", "sys_enter_writev"], tps
    assert tr.stop() == 0, tr.stderr
    assert len(tr.requests()) == len(rs), tr.requests()
    counters = tr.summary()["counters"]
    assert counters["payload_args_missing"] == 0, counters


@pytest.mark.skipif(not shutil.which("unshare"), reason="needs unshare (util-linux)")
def test_mounts_tracefs_when_missing_and_unmounts_it():
    """In a mount namespace of its own without tracefs, ttftrace mounts it,
    uses the tracepoints, and leaves no tracefs mounted behind it."""
    script = (
        "umount /sys/kernel/tracing 2>/dev/null; umount /sys/kernel/debug/tracing 2>/dev/null; "
        "test -e /sys/kernel/tracing/events && exit 9; "
        "%s -p $$ -d 1 --no-sched --no-profile --json -o /dev/null; rc=$?; "
        "grep -c ' tracefs ' /proc/self/mounts; exit $rc" % TTFTRACE)
    r = subprocess.run(["unshare", "-m", "--propagation", "private", "sh", "-c", script],
                       capture_output=True, text=True, timeout=60)
    assert r.returncode == 0, (r.returncode, r.stderr)
    assert "Net source: sock, socket tracepoints sock_recv_length/sock_send_length, " \
        + TPS in r.stderr, r.stderr
    assert r.stdout.split() == ["0"], r.stdout
