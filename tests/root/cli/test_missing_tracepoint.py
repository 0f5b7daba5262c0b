# SPDX-License-Identifier: GPL-2.0-only
"""A kernel without one of the tracepoints ttftrace uses (older than 6.3, or
built without them): with --net-source sock the required ones exit 4 naming
the tracepoint (auto then picks the syscall source: tests/root/bpf/test_net_source.py);
optional ones are left out with a warning and tracing goes on.

The "older kernel" is this kernel's BTF with one btf_trace_<tp> typedef
renamed in a copy of its string section (same length, so every offset stays
valid), given to ttftrace through TTFTRACE_SYS_BTF. ttftrace's check reads
that copy; libbpf still loads against the real kernel.
"""
import os

import pytest

from conftest import Client, needs_root

SYS_BTF = "/sys/kernel/btf/vmlinux"


def btf_without(tmp_path, tp):
    """Path of a copy of the kernel BTF in which tracepoint tp is missing."""
    blob = open(SYS_BTF, "rb").read()
    name = b"\0btf_trace_%s\0" % tp.encode()
    assert blob.count(name) == 1, "expected one %r in the kernel BTF" % name
    path = tmp_path / ("vmlinux-no-%s" % tp)
    path.write_bytes(blob.replace(name, b"\0xtf_trace_%s\0" % tp.encode()))
    return str(path)


@needs_root
@pytest.mark.parametrize("tp", ["sock_send_length", "sock_recv_length", "sys_enter"])
def test_required_tracepoint_missing_exits_4(tmp_path, tracer, tp):
    tr = tracer("-p", os.getpid(), "-d", "1", "--net-source", "sock",
                env={"TTFTRACE_SYS_BTF": btf_without(tmp_path, tp)}, wait_attach=False)
    rc = tr.wait_exit()
    assert rc == 4, (rc, tr.stderr)
    assert "Error: this kernel has no %s tracepoint" % tp in tr.stderr, tr.stderr
    assert "HINT:" in tr.stderr and "--net-source auto or syscall" in tr.stderr, tr.stderr


@needs_root
def test_optional_tracepoints_missing_trace_goes_on(tmp_path, sse_server, tracer):
    """No sk_data_ready nor tcp_probe (arrival taken at the read) and no
    sched_switch (no scheduler overlay): requests are still reported with
    their tokens."""
    blob_path = btf_without(tmp_path, "sk_data_ready")
    blob = open(blob_path, "rb").read().replace(b"\0btf_trace_tcp_probe\0",
                                                 b"\0xtf_trace_tcp_probe\0")
    open(blob_path, "wb").write(blob)
    blob = open(blob_path, "rb").read().replace(b"\0btf_trace_sched_switch\0",
                                                 b"\0xtf_trace_sched_switch\0")
    open(blob_path, "wb").write(blob)
    srv = sse_server("--ttft-ms", "60", "--itl-ms", "5")
    tr = tracer("-p", srv.pid, env={"TTFTRACE_SYS_BTF": blob_path})
    c = Client(srv.port)
    responses = [c.request(max_tokens=4) for _ in range(3)]
    c.close()
    tr.wait_requests(3, timeout_s=5)
    rc = tr.stop()
    assert rc == 0, tr.stderr
    err = tr.stderr
    assert "this kernel has no sk_data_ready tracepoint: handle_data_ready not loaded" in err, err
    assert "sk_data_ready not attached: request arrival is taken at the read" in err, err
    assert "scheduler probes unavailable (this kernel has no sched_switch tracepoint)" in err, err
    reqs = tr.requests()
    assert [r["tokens"] for r in reqs] == [4, 4, 4], reqs
    truth = srv.truth()
    assert len(truth) == 3, truth
    for r, resp, x in zip(reqs, responses, truth):
        assert resp.status == 200
        # without sk_data_ready TTFT starts at the read: the server's own
        # read -> first token (60 ms programmed, plus any late wakeup)
        assert r["ttft_ms"] >= 60, r
        assert abs(r["ttft_ms"] - (x["t_first_ns"] - x["t_read_ns"]) / 1e6) <= 2.0, (r, x)
        assert r["overlay"] == {}, r
