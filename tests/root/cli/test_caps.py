# SPDX-License-Identifier: GPL-2.0-only
"""ttftrace without root: an unprivileged user given CAP_BPF and CAP_PERFMON
(ambient capabilities through setpriv) traces a server of the same user; one
without them exits 3 naming what is missing. Under the documented set (UID 0
with CAP_BPF, CAP_PERFMON and CAP_SYS_PTRACE only, as the systemd unit and the
DaemonSet run it) the llama.cpp and OpenSSL uprobes attach, through tracefs
uprobe events on kernels that refuse perf uprobes without CAP_SYS_ADMIN."""
import json
import os
import re
import shutil
import signal
import subprocess
import tempfile
import time

import pytest

from conftest import SSE_SERVER, TTFTRACE, Client, needs_root, require_built
from llama_server import completion, start_llama_server

AS_NOBODY = ["setpriv", "--reuid=nobody", "--regid=nogroup", "--clear-groups"]


def with_caps(*caps):
    if not caps:
        return AS_NOBODY
    spec = ",".join("+" + c for c in caps)
    return AS_NOBODY + ["--inh-caps=" + spec, "--ambient-caps=" + spec]


@pytest.fixture
def nobody_dir(procs):
    """A directory nobody can read and write, with copies of ttftrace and the
    fixture server (the checkout may not be reachable for nobody)."""
    require_built(TTFTRACE)
    require_built(SSE_SERVER)
    d = tempfile.mkdtemp(prefix="ttftrace-caps-")
    os.chmod(d, 0o777)
    for exe in (TTFTRACE, SSE_SERVER):
        shutil.copy(exe, d)
        os.chmod(os.path.join(d, os.path.basename(exe)), 0o755)
    yield d
    procs.cleanup()
    shutil.rmtree(d)


@needs_root
def test_cap_bpf_and_perfmon_are_enough(nobody_dir, procs):
    log = os.path.join(nobody_dir, "truth.ndjson")
    srv = procs.add(subprocess.Popen(
        AS_NOBODY + [os.path.join(nobody_dir, "sse_server"), "--port", "0", "--ttft-ms", "50",
                     "--itl-ms", "5", "--log", log],
        stdout=subprocess.PIPE, text=True))
    line = srv.stdout.readline()
    assert line.startswith("listening on 127.0.0.1:"), line
    port = int(line.rsplit(":", 1)[1])
    tr = procs.add(subprocess.Popen(
        with_caps("bpf", "perfmon") + [os.path.join(nobody_dir, "ttftrace"), "--json",
                                       "-p", str(srv.pid)],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True))
    # the startup line on stderr says the probes are attached
    early = []
    for err_line in tr.stderr:
        early.append(err_line)
        if err_line.startswith(("Tracing PID", "Error:")):
            break
    assert early[-1].startswith("Tracing PID"), early
    c = Client(port)
    resp = [c.request(max_tokens=3) for _ in range(2)]
    c.close()
    tr.send_signal(signal.SIGINT)
    out, err = tr.communicate(timeout=15)
    err = "".join(early) + err
    assert tr.returncode == 0, err
    assert "Warning: no CAP_SYS_PTRACE" in err, err
    reqs = [r for r in (json.loads(l) for l in out.splitlines() if l.startswith("{"))
            if r.get("type") == "request"]
    assert [r["tokens"] for r in reqs] == [3, 3], (reqs, err)
    assert all(r.status == 200 for r in resp)
    # against the server's own log: arrival -> its first token (a slow wakeup
    # of the server's read on a loaded machine is part of TTFT, not an error)
    truth = [json.loads(l) for l in open(log) if l.strip()]
    assert [x["tokens"] for x in truth] == [3, 3], truth
    for r, x in zip(reqs, truth):
        assert r["ttft_ms"] >= 50, r
        assert abs(r["ttft_ms"] - (x["t_first_ns"] - r["t_arrival_ns"]) / 1e6) <= 2.0, (r, x)


@needs_root
@pytest.mark.parametrize("caps,missing", [
    ((), "CAP_BPF, CAP_PERFMON"),
    (("bpf",), "CAP_PERFMON"),
    (("perfmon", "sys_ptrace"), "CAP_BPF"),
])
def test_missing_bpf_caps_exit_3(nobody_dir, caps, missing):
    p = subprocess.run(with_caps(*caps) + [os.path.join(nobody_dir, "ttftrace"), "-p",
                                           str(os.getpid()), "-d", "1"],
                       capture_output=True, text=True, timeout=30, cwd="/")
    assert p.returncode == 3, (p.returncode, p.stderr)
    assert "Error: ttftrace needs %s to load its BPF programs" % missing in p.stderr, p.stderr
    assert "HINT: run as root, or grant them" in p.stderr, p.stderr
    assert "Uprobes need CAP_SYS_ADMIN on 6.16+, or UID 0 and tracefs" in p.stderr, p.stderr


# The documented privilege set (docs/deploy.md "Capabilities, per kernel"): UID 0
# with only these capabilities, as the systemd unit and the DaemonSet run it.
DOCUMENTED_CAPS = ("bpf", "perfmon", "sys_ptrace")
AS_DOCUMENTED = ["setpriv", "--reuid=0", "--bounding-set=-all," +
                 ",".join("+" + c for c in DOCUMENTED_CAPS), "--inh-caps=-all", "--"]
CAP_NUMBERS = {"sys_ptrace": 19, "sys_admin": 21, "perfmon": 38, "bpf": 39}


def documented_cap_eff():
    """CapEff of a process started like ttftrace below, as the kernel reports it."""
    out = subprocess.run(AS_DOCUMENTED + ["grep", "^CapEff:", "/proc/self/status"],
                         capture_output=True, text=True, check=True).stdout
    return int(out.split()[1], 16)


def start_documented(procs, args):
    """ttftrace under AS_DOCUMENTED; returns (process, stderr lines up to its start-up line)."""
    tr = procs.add(subprocess.Popen(AS_DOCUMENTED + [TTFTRACE, "--json"] + [str(a) for a in args],
                          stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True))
    early = []
    for line in tr.stderr:
        early.append(line)
        if "Hit Ctrl-C to end" in line or line.startswith("Error:"):
            break
    assert early and "Hit Ctrl-C to end" in early[-1], "".join(early)
    return tr, early


def stop_documented(tr, early):
    tr.send_signal(signal.SIGINT)
    out, err = tr.communicate(timeout=30)
    err = "".join(early) + err
    assert tr.returncode == 0, err
    recs = [json.loads(l) for l in out.splitlines() if l.startswith("{")]
    return [r for r in recs if r.get("type") == "request"], err


def own_uprobe_events(pid):
    """Lines of the kernel's uprobe_events that ttftrace PID created (uprobe_attach.c)."""
    for root in ("/sys/kernel/tracing", "/sys/kernel/debug/tracing"):
        path = os.path.join(root, "uprobe_events")
        if os.path.exists(path):
            return [l for l in open(path) if ":ttftrace_%d/" % pid in l]
    return []


@pytest.fixture
def host_tracefs():
    """The host's tracefs at /sys/kernel/tracing, as docs/deploy.md asks of the
    documented set (which cannot mount it): mounted here where missing (a root
    ttftrace that mounted it unmounts it at exit), and unmounted after."""
    mounted = False
    if not os.path.exists("/sys/kernel/tracing/uprobe_events"):
        subprocess.run(["mount", "-t", "tracefs", "nodev", "/sys/kernel/tracing"], check=True)
        mounted = True
    yield
    if mounted:
        subprocess.run(["umount", "-l", "/sys/kernel/tracing"], check=False)


def check_uprobe_path(err, pid):
    """Uprobes attached through the PMU (kernels that let CAP_PERFMON) or, where the
    kernel refuses it, through tracefs events, said on stderr; none refused."""
    assert "attach refused" not in err and "not found" not in err, err
    if "Uprobes: the kernel refused perf uprobes" in err:
        assert "(EACCES: it requires CAP_SYS_ADMIN" in err, err
    # its tracefs events are gone after it: the exit-time cleaner's, within its 20 s
    deadline = time.monotonic() + 25
    while own_uprobe_events(pid) and time.monotonic() < deadline:
        time.sleep(0.2)
    assert not own_uprobe_events(pid), own_uprobe_events(pid)


@needs_root
def test_documented_caps_have_no_sys_admin():
    eff = documented_cap_eff()
    assert eff == sum(1 << CAP_NUMBERS[c] for c in DOCUMENTED_CAPS), hex(eff)
    assert not eff & (1 << CAP_NUMBERS["sys_admin"])


@needs_root
def test_documented_caps_attach_llama_uprobes(procs, tmp_path, host_tracefs):
    """llama.cpp's uprobes attach under the documented set: the stages split
    (tokenize, queue, prefill), and prefill agrees with the engine's own
    timings.prompt_ms (the bar of tests/engine/test_llama_server.py)."""
    require_built(TTFTRACE)
    port = start_llama_server(procs, tmp_path)
    srv = procs.procs[-1]
    tr, early = start_documented(procs, ["-v", "-p", srv.pid])
    client = [completion(port, "the documented privileges number %d" % i, n_predict=4)
              for i in range(3)]
    time.sleep(0.5)
    reqs, err = stop_documented(tr, early)
    for sym in ("llama_decode", "llama_tokenize"):
        assert re.search(r"attached %s \(\w+\) in \S*libllama" % sym, err), err
    check_uprobe_path(err, tr.pid)
    by_port = {c["port"]: c["timings"] for c in client}
    assert len(reqs) == 3, (reqs, err)
    within = []
    for r in reqs:
        t = by_port[int(r["conn"].rsplit(":", 1)[1])]
        st = r["stages_ms"]
        assert st["server"] is None, r
        assert None not in (st["tokenize"], st["queue"], st["prefill"]), r
        # the engine's prompt_ms window holds the prompt's decode calls: never less
        assert 0 < st["prefill"] <= t["prompt_ms"] + 3, (st, t)
        within.append((abs(st["prefill"] - t["prompt_ms"]) <= 3 + 0.1 * t["prompt_ms"],
                       st["prefill"], t["prompt_ms"]))
    # but it also holds the batch's set-up and sampling, which a loaded machine
    # stretches: one CI run had one of three 5.5 ms under prompt_ms (bar 5.0).
    # The accuracy's own share is test_llama_server's; here two of three.
    assert sum(ok for ok, _, _ in within) >= 2, within


@needs_root
def test_documented_caps_attach_openssl_uprobes(procs, tmp_path, host_tracefs):
    """The OpenSSL uprobes attach under the documented set: HTTPS requests are
    read in plaintext (path, status, tokens; opaque without them), against the
    server's own log."""
    require_built(TTFTRACE)
    d = tmp_path
    crt, key, log = str(d / "cert.pem"), str(d / "key.pem"), str(d / "truth.ndjson")
    subprocess.run(["openssl", "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-keyout", key,
                    "-out", crt, "-days", "1", "-subj", "/CN=127.0.0.1"], check=True,
                   capture_output=True)
    tls_server = os.path.join(os.path.dirname(os.path.dirname(__file__)), "tls",
                              "tls_sse_server.py")
    srv = procs.add(subprocess.Popen(["/usr/bin/python3", tls_server, crt, key, log, "30", "5",
                                      "4"], stdout=subprocess.PIPE, text=True))
    line = srv.stdout.readline()
    assert line.startswith("listening on 127.0.0.1:"), line
    port = int(line.rsplit(":", 1)[1])
    tr, early = start_documented(procs, ["-p", srv.pid])
    body = json.dumps({"model": "m", "stream": True, "max_tokens": 4,
                       "messages": [{"role": "user", "content": "hi"}]})
    for _ in range(2):
        subprocess.run(["curl", "-sk", "-N", "--http1.1", "-H", "Content-Type: application/json",
                        "https://127.0.0.1:%d/v1/chat/completions" % port, "-d", body],
                       check=True, capture_output=True, timeout=30)
    time.sleep(0.5)
    reqs, err = stop_documented(tr, early)
    assert re.search(r"tls: OpenSSL 3 at \S*libssl\.so\.3 in PID %d" % srv.pid, err), err
    check_uprobe_path(err, tr.pid)
    truth = [json.loads(l) for l in open(log) if l.strip()]
    assert len(truth) == 2 and len(reqs) == 2, (reqs, truth, err)
    for r, t in zip(sorted(reqs, key=lambda r: r["t_arrival_ns"]),
                    sorted(truth, key=lambda t: t["t_read_ns"])):
        assert "tls" in r["flags"], r
        assert (r["status"], r["path"], r["tokens"]) == (200, "/v1/chat/completions",
                                                         len(t["t_token_ns"])), (r, t)
        assert r["conn"].endswith(":%d" % t["rport"]), (r, t)


@needs_root
def test_refused_uprobe_says_refused_without_tracefs(procs, tmp_path):
    """With tracefs out of reach (a mount namespace without it), the documented set
    loses the TLS uprobes where the kernel refuses perf uprobes: ttftrace says the
    attach was refused and why, not that the symbol is missing, and says that raw
    sys_enter stands in for the syscall tracepoints and what it costs."""
    require_built(TTFTRACE)
    log = str(tmp_path / "truth.ndjson")
    crt, key = str(tmp_path / "cert.pem"), str(tmp_path / "key.pem")
    subprocess.run(["openssl", "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-keyout", key,
                    "-out", crt, "-days", "1", "-subj", "/CN=127.0.0.1"], check=True,
                   capture_output=True)
    tls_server = os.path.join(os.path.dirname(os.path.dirname(__file__)), "tls",
                              "tls_sse_server.py")
    srv = procs.add(subprocess.Popen(["/usr/bin/python3", tls_server, crt, key, log],
                                     stdout=subprocess.PIPE, text=True))
    assert srv.stdout.readline().startswith("listening on 127.0.0.1:")
    hide = "; ".join("umount -l %s 2>/dev/null" % m for m in
                     ("/sys/kernel/tracing", "/sys/kernel/debug/tracing", "/sys/kernel/debug"))
    cmd = " ".join(AS_DOCUMENTED + [TTFTRACE, "-p", str(srv.pid), "-d", "1"])
    p = subprocess.run(["unshare", "-m", "sh", "-c", "%s; exec %s" % (hide, cmd)],
                       capture_output=True, text=True, timeout=60)
    assert p.returncode == 0, p.stderr
    if re.search(r"tls: OpenSSL 3 at \S+ in PID", p.stderr):
        pytest.skip("this kernel lets CAP_PERFMON create perf uprobes (before the "
                    "CVE-2025-38466 fix): nothing is refused")
    assert "Warning: uprobes refused: the kernel creates perf uprobes only with CAP_SYS_ADMIN " \
           "(EACCES), and the tracefs uprobe events that stand in failed: tracefs with " \
           "uprobe_events is not mounted" in p.stderr, p.stderr
    assert re.search(r"Warning: tls: SSL_\w+ in \S+libssl\.so\.3: attach refused \(EACCES\): "
                     r"needs CAP_SYS_ADMIN on this kernel, or tracefs \(see above\): its TLS "
                     r"plaintext is not seen", p.stderr), p.stderr
    assert "not found" not in p.stderr, p.stderr
    assert "Net source: raw sys_enter instead of the tracefs syscall tracepoints: tracefs is " \
           "not mounted and mounting it failed (Operation not permitted: needs " \
           "CAP_SYS_ADMIN); it runs a BPF program on every syscall of the whole host" \
           in p.stderr, p.stderr


@needs_root
def test_documented_caps_cost_is_refused_and_tracing_goes_on(procs, sse_server):
    """--cost under the documented set: the kernel refuses the BPF run-time
    statistics without CAP_SYS_ADMIN (docs/kernel.md B15). A warning says so,
    tracing goes on, and the summary says why the BPF time is not counted."""
    srv = sse_server("--ttft-ms", "10", "--itl-ms", "2")
    tr, early = start_documented(procs, ["--cost", "--port", srv.port])
    assert any("Warning: --cost: cannot turn on BPF run-time statistics: Operation not "
               "permitted" in l for l in early), "".join(early)
    c = Client(srv.port)
    resp = [c.request(max_tokens=4) for _ in range(2)]
    c.close()
    tr.send_signal(signal.SIGINT)
    out, err = tr.communicate(timeout=30)
    assert tr.returncode == 0, "".join(early) + err
    recs = [json.loads(l) for l in out.splitlines() if l.startswith("{")]
    assert all(r.status == 200 for r in resp)
    assert [r["tokens"] for r in recs if r["type"] == "request"] == [4, 4], err
    (s,) = [r for r in recs if r["type"] == "summary"]
    assert s["cost"]["bpf_stats"] == "refused" and s["cost"]["bpf_us_per_token"] is None, s["cost"]
    assert s["counters"]["cost_bpf_stats_errno"] == 1, s["counters"]   # EPERM
    assert s["cost"]["tracer_us_per_token"] > 0, s["cost"]
