# SPDX-License-Identifier: GPL-2.0-only
"""Security and privacy (docs/deploy.md "Privileges and privacy").

- Payload bytes (prompt, headers, query string, generated text) never reach
  an output: a marker planted in the request is searched in every output of
  a trace (stdout, stderr, -o NDJSON, text mode, --perfetto, Prometheus
  /metrics, the HTML report of `ttftrace report`, `ttftrace replay` output).
  The one exception by design is the --record file: it IS the captured
  payload (replay needs it), so it is created mode 0600 (docs/deploy.md "Privileges
  and privacy"); the test checks that mode, also over an existing file.
- The metrics endpoint binds to loopback unless told otherwise.
- Files are created with fixed modes: reports 0644, recordings 0600, even
  under umask 0.
"""
import gzip
import os
import secrets
import socket
import stat
import subprocess
import sys
import time
import urllib.request

import pytest

from conftest import ROOT, TTFTRACE, Client, free_port, needs_root, require_built

sys.path.insert(0, os.path.join(ROOT, "tests", "engine"))


def marker():
    return "ttfSECRET%s" % secrets.token_hex(8)


def send_marked_requests(port, mark, n=2):
    """Prompts, an Authorization header and a query string carrying the marker."""
    c = Client(port)
    for i in range(n):
        body = {"model": "m", "stream": True, "max_tokens": 4,
                "messages": [{"role": "user", "content": "say %s please" % mark}]}
        c.request(path="/v1/chat/completions?key=%s" % mark if i else "/v1/chat/completions",
                  body=body, extra_headers="Authorization: Bearer %s\r\n" % mark)
    c.close()


def fetch_metrics(port):
    with urllib.request.urlopen("http://127.0.0.1:%d/metrics" % port, timeout=5) as r:
        return r.read().decode()


def umask0():
    os.umask(0)


def run_traced(tmp_path, target_args, send, mark, extra=()):
    """Trace with every output enabled; returns {output name: text}."""
    require_built(TTFTRACE)
    out = str(tmp_path / "run.ndjson")
    perfetto = str(tmp_path / "run.perfetto.json")
    record = str(tmp_path / "run.rec")
    mport = free_port()
    cmd = [TTFTRACE] + target_args + ["--json", "-o", out, "--perfetto", perfetto,
                                      "--record", record, "--metrics", str(mport), "-v"]
    cmd += list(extra)
    p = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                         preexec_fn=umask0)
    try:
        deadline = time.monotonic() + 30
        metrics = None
        while metrics is None:
            try:
                metrics = fetch_metrics(mport)
            except OSError:
                assert p.poll() is None and time.monotonic() < deadline, p.stderr.read()
                time.sleep(0.1)
        send()
        time.sleep(1.0)
        metrics = fetch_metrics(mport)
        p.send_signal(2)
        stdout, stderr = p.communicate(timeout=30)
    finally:
        if p.poll() is None:
            p.kill()
            p.wait()
    assert p.returncode == 0, stderr
    outs = {"stdout": stdout, "stderr": stderr, "metrics": metrics}
    for name, path in (("ndjson", out), ("perfetto", perfetto)):
        with open(path, errors="replace") as f:
            outs[name] = f.read()
    html = str(tmp_path / "report.html")
    r = subprocess.run([TTFTRACE, "report", out, "-o", html], capture_output=True, text=True,
                       timeout=60, preexec_fn=umask0)
    assert r.returncode == 0, r.stderr
    with open(html, errors="replace") as f:
        outs["html"] = f.read()
    outs["report stdio"] = r.stdout + r.stderr
    r = subprocess.run([TTFTRACE, "replay", record, "--json"], capture_output=True, text=True,
                       timeout=60)
    assert r.returncode == 0, r.stderr
    outs["replay stdio"] = r.stdout + r.stderr
    modes = {n: stat.S_IMODE(os.stat(pth).st_mode)
             for n, pth in (("ndjson", out), ("perfetto", perfetto), ("record", record),
                            ("html", html))}
    with gzip.open(record) as f:
        rec_bytes = f.read()
    return outs, modes, rec_bytes


def check_no_marker(outs, mark, min_requests):
    assert outs["ndjson"].count('"type":"request"') + outs["ndjson"].count(
        '"type": "request"') >= min_requests, "the requests were not traced: %s" % outs["stderr"]
    leaked = [name for name, text in outs.items() if mark in text]
    assert not leaked, "payload marker found in: %s" % ", ".join(leaked)


def check_modes(modes):
    assert modes == {"ndjson": 0o644, "perfetto": 0o644, "record": 0o600, "html": 0o644}, modes


@needs_root
def test_no_payload_in_any_output_fixture_server(sse_server, tmp_path):
    mark = marker()
    srv = sse_server("--ttft-ms", "5", "--itl-ms", "1", "--nodelay")
    outs, modes, rec = run_traced(tmp_path, ["-p", str(srv.pid)],
                                  lambda: send_marked_requests(srv.port, mark), mark)
    check_no_marker(outs, mark, 2)
    check_modes(modes)
    # the recording holds the payload by design: that is why it is 0600
    assert mark.encode() in rec


@needs_root
def test_no_payload_in_any_output_demo_server(tmp_path):
    from e2e_helpers import DemoServer, demo_missing_reason
    why = demo_missing_reason()
    if why:
        pytest.skip(why)
    mark = marker()
    srv = DemoServer(str(tmp_path / "demo.log"))
    try:
        outs, modes, _ = run_traced(tmp_path, ["-p", str(srv.pid)],
                                    lambda: send_marked_requests(srv.port, mark), mark)
    finally:
        srv.stop()
    check_no_marker(outs, mark, 2)
    check_modes(modes)


@needs_root
def test_record_over_existing_file_becomes_0600(sse_server, tmp_path):
    srv = sse_server("--ttft-ms", "5", "--itl-ms", "1")
    record = tmp_path / "old.rec"
    record.write_text("old, world-readable\n")
    os.chmod(record, 0o644)
    p = subprocess.run([TTFTRACE, "-p", str(srv.pid), "-d", "1", "--json", "--record",
                        str(record)], capture_output=True, text=True, timeout=60)
    assert p.returncode == 0, p.stderr
    assert stat.S_IMODE(os.stat(record).st_mode) == 0o600


def _listen_addrs(port):
    """Local addresses listening on TCP port (from /proc/net/tcp and tcp6)."""
    addrs = []
    for path, fam in (("/proc/net/tcp", socket.AF_INET), ("/proc/net/tcp6", socket.AF_INET6)):
        with open(path) as f:
            next(f)
            for line in f:
                cols = line.split()
                ip_hex, port_hex = cols[1].split(":")
                if cols[3] != "0A" or int(port_hex, 16) != port:
                    continue
                raw = bytes.fromhex(ip_hex)
                # /proc prints each 32-bit word in host (little-endian) order
                raw = b"".join(raw[i:i + 4][::-1] for i in range(0, len(raw), 4))
                addrs.append(socket.inet_ntop(fam, raw))
    return addrs


@needs_root
def test_metrics_endpoint_binds_loopback_by_default(tracer):
    port = free_port()
    tr = tracer("-p", os.getpid(), "--metrics", port)
    try:
        deadline = time.monotonic() + 10
        while not _listen_addrs(port) and time.monotonic() < deadline:
            time.sleep(0.1)
        assert _listen_addrs(port) == ["127.0.0.1"], _listen_addrs(port)
        assert "ttftrace" in fetch_metrics(port)
    finally:
        tr.stop()


@needs_root
@pytest.mark.parametrize("drop", ["-bpf,-sys_admin", "-perfmon,-sys_admin"])
def test_root_without_bpf_or_perfmon_exits_3(drop):
    """Root is not enough without CAP_BPF and CAP_PERFMON (CAP_SYS_ADMIN implies
    both); CAP_NET_ADMIN is not needed (checked: all probes attach without it)."""
    p = subprocess.run(["setpriv", "--bounding-set", drop, TTFTRACE, "-p", str(os.getpid()),
                        "-d", "1", "--json"], capture_output=True, text=True, timeout=60)
    assert p.returncode == 3, (p.returncode, p.stderr)
    assert "Error:" in p.stderr and "HINT" in p.stderr, p.stderr
    p = subprocess.run(["setpriv", "--bounding-set", "-net_admin", TTFTRACE, "-p",
                        str(os.getpid()), "-d", "1", "--json"], capture_output=True, text=True,
                       timeout=60)
    assert p.returncode == 0, p.stderr


@needs_root
def test_outputs_to_a_device_keep_the_device(tmp_path):
    """--perfetto, --record, -o and `report -o` onto a character device write
    through it: renaming a temporary file over it would replace the node (as
    root, /dev/null itself). A private null device stands in for /dev/null."""
    null = str(tmp_path / "null")
    os.mknod(null, 0o666 | stat.S_IFCHR, os.makedev(1, 3))
    os.chmod(null, 0o666)
    p = subprocess.run([TTFTRACE, "-p", str(os.getpid()), "-d", "1", "--json", "-o", null,
                        "--perfetto", null, "--record", null], capture_output=True, text=True,
                       timeout=60)
    assert p.returncode == 0, p.stderr
    st = os.stat(null)
    assert stat.S_ISCHR(st.st_mode) and stat.S_IMODE(st.st_mode) == 0o666
    ndjson = str(tmp_path / "run.ndjson")
    p = subprocess.run([TTFTRACE, "-p", str(os.getpid()), "-d", "1", "--json", "-o", ndjson],
                       capture_output=True, text=True, timeout=60)
    assert p.returncode == 0, p.stderr
    p = subprocess.run([TTFTRACE, "report", ndjson, "-o", null], capture_output=True, text=True,
                       timeout=60)
    assert p.returncode == 0, p.stderr
    assert stat.S_ISCHR(os.stat(null).st_mode)
    assert sorted(os.listdir(tmp_path)) == ["null", "run.ndjson"], os.listdir(tmp_path)
