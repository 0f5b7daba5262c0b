# SPDX-License-Identifier: GPL-2.0-only
"""Engine uprobes end to end (root): programs under progs/ are built with cc
(and go) into a tmp dir, traced with .output/bin/uprobe-probe, and the hit
counts and durations it reports are compared with what the programs did.

Cases (docs/cases.md): #1 (PIE and non-PIE, stripped, by symbol), #2 (a
library visible only in another mount namespace; dedupe by inode), #4 (Go:
RET-site probes, no crash, true durations)."""
import glob
import json
import os
import shutil
import subprocess
import time

import pytest

from conftest import ROOT, needs_root, require_built

PROBE = os.path.join(ROOT, ".output", "bin", "uprobe-probe")
PROGS = os.path.join(os.path.dirname(os.path.abspath(__file__)), "progs")
LLAMA_LIB = glob.glob(os.path.join(ROOT, "tools", "demo", "node_modules", "@node-llama-cpp",
                                   "linux-x64", "bins", "linux-x64", "libllama.v*.so"))

pytestmark = needs_root


def cc(out, *args):
    subprocess.run(["cc", "-O2", "-o", str(out)] + [str(a) for a in args], check=True)
    return str(out)


class Target:
    """A program that waits for bytes on stdin before doing its work."""

    def __init__(self, argv, wrap=None):
        self.proc = subprocess.Popen((wrap or []) + argv, stdin=subprocess.PIPE,
                                     stdout=subprocess.PIPE, text=True)
        self.pid = self.proc.pid

    def go(self):
        self.proc.stdin.write("x")
        self.proc.stdin.flush()

    def wait_line(self):
        return self.proc.stdout.readline().strip()

    def finish(self):
        self.proc.stdin.close()
        out = self.proc.stdout.read()
        return self.proc.wait(timeout=60), out

    def kill(self):
        if self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait()


@pytest.fixture
def targets():
    ts = []
    yield ts
    for t in ts:
        t.kill()


class Probe:
    """uprobe-probe attached to pids; .result() is its JSON once they ended."""

    def __init__(self, pids, args):
        require_built(PROBE)
        cmd = [PROBE] + sum([["--pid", str(p)] for p in pids], []) + list(args)
        self.proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                     text=True)
        self.log = []
        while True:
            line = self.proc.stderr.readline()
            self.log.append(line)
            if line.strip() == "ready":
                break
            assert line, "uprobe-probe failed: %s" % "".join(self.log)

    def result(self):
        out, err = self.proc.communicate(timeout=60)
        self.log.append(err)
        assert self.proc.returncode == 0, "".join(self.log)
        return json.loads(out)


def only(res):
    assert len(res["attachments"]) == 1, res
    return res["attachments"][0]


def wait_mapped(pid, name, timeout_s=10):
    deadline = time.time() + timeout_s
    while time.time() < deadline:
        with open("/proc/%d/maps" % pid) as f:
            if name in f.read():
                return
        time.sleep(0.02)
    pytest.fail("%s never mapped in pid %d" % (name, pid))


@pytest.mark.parametrize("pie", ["-no-pie", "-pie"])
def test_case1_stripped_pie_and_nopie_hit_once_per_call(tmp_path, targets, pie):
    exe = cc(tmp_path / "hot", pie, "-fPIE" if pie == "-pie" else "-fno-pie", "-rdynamic",
             os.path.join(PROGS, "hot.c"))
    subprocess.run(["strip", exe], check=True)
    syms = subprocess.run(["nm", exe], capture_output=True, text=True)
    assert "no symbols" in syms.stderr  # .symtab is gone; hot is only in .dynsym
    n = 1000
    t = Target([exe, str(n)])
    targets.append(t)
    p = Probe([t.pid], ["--probe", "%s:hot=step:reg:1" % exe])
    t.go()
    rc, out = t.finish()
    assert rc == 0 and int(out) == sum(3 * i + 1 for i in range(n))
    res = p.result()
    a = only(res)
    assert (a["hits"], a["returns"], a["last_value"]) == (n, n, n - 1)
    assert len(a["durations_ns"]) == n
    assert a["path"] == "/proc/%d/root%s" % (t.pid, exe)
    assert (res["drops"], res["foreign"], res["missing"]) == (0, 0, [])


def test_maps_path_with_spaces(tmp_path, targets):
    d = tmp_path / "dir with space"
    d.mkdir()
    exe = cc(d / "hot prog", "-rdynamic", os.path.join(PROGS, "hot.c"))
    t = Target([exe, "300"])
    targets.append(t)
    p = Probe([t.pid], ["--probe", "hot prog:hot=step"])  # a glob on the mapped basename
    t.go()
    assert t.finish()[0] == 0
    a = only(p.result())
    assert (a["hits"], a["returns"]) == (300, 300)
    assert a["path"].endswith("/dir with space/hot prog")


def build_dl(tmp_path):
    lib = cc(tmp_path / "libhot.so", "-shared", "-fPIC", os.path.join(PROGS, "libhot.c"))
    exe = cc(tmp_path / "dl", os.path.join(PROGS, "dl.c"), "-ldl")
    return lib, exe


def write_profile(tmp_path, extra=""):
    prof = tmp_path / "hot.ini"
    prof.write_text("[engine]\nname = hot\nmatch = libhot.so\n\n"
                    "[probe hot_lib]\nsymbol = hot_lib\nrole = step\nwant_return = yes\n"
                    "arg = reg:1\n" + extra)
    return str(prof)


def run_dl(t, prof, n):
    """Let t dlopen, attach, let it call hot_lib n times; the probe's result."""
    t.go()
    assert t.wait_line() == "loaded"
    p = Probe([t.pid], ["--profile", prof])
    t.go()
    rc, out = t.finish()
    assert rc == 0 and int(out) == sum(i + 7 for i in range(n)), out
    return p.result()


def test_case2_library_only_in_mount_namespace(tmp_path, targets):
    if not shutil.which("unshare"):
        pytest.skip("needs unshare(1)")
    lib, exe = build_dl(tmp_path)
    prof = write_profile(tmp_path)
    n = 500
    bare = Target([exe, str(n), lib])
    targets.append(bare)
    a_bare = only(run_dl(bare, prof, n))

    nsdir = tmp_path / "nsdir"
    nsdir.mkdir()
    script = "mount -t tmpfs none %s && cp %s %s/ && exec %s %d %s/libhot.so" % (
        nsdir, lib, nsdir, exe, n, nsdir)
    t = Target(["unshare", "-m", "--propagation", "private", "sh", "-c", script])
    targets.append(t)
    t.go()
    assert t.wait_line() == "loaded"
    assert not os.path.exists(nsdir / "libhot.so")  # invisible from here
    p = Probe([t.pid], ["--profile", prof])
    t.go()
    assert t.finish()[0] == 0
    res = p.result()
    a = only(res)
    assert a["path"] == "/proc/%d/root%s/libhot.so" % (t.pid, nsdir)
    assert (a["hits"], a["returns"]) == (a_bare["hits"], a_bare["returns"]) == (n, n)
    assert res["missing"] == []


def test_case2_dedupe_by_inode_and_foreign_processes(tmp_path, targets):
    lib, exe = build_dl(tmp_path)
    prof = write_profile(tmp_path)
    ns = [200, 300, 50]
    ts = [Target([exe, str(k), lib]) for k in ns]
    targets.extend(ts)
    for t in ts:
        t.go()
        assert t.wait_line() == "loaded"
    # traces the first two; the third maps the same inode but is not traced
    p = Probe([ts[0].pid, ts[1].pid], ["--profile", prof])
    for t in ts:
        t.go()
        assert t.finish()[0] == 0
    res = p.result()
    a = only(res)  # one attachment for the shared inode
    assert (a["hits"], a["returns"]) == (ns[0] + ns[1], ns[0] + ns[1])
    # pid -1 attach: the untraced process traps too, and is filtered in user space
    assert res["foreign"] == 2 * ns[2]


def test_dlopen_after_attach_is_picked_up(tmp_path, targets):
    lib, exe = build_dl(tmp_path)
    prof = write_profile(tmp_path)
    t = Target([exe, "400", lib])
    targets.append(t)
    p = Probe([t.pid], ["--profile", prof])
    t.go()
    assert t.wait_line() == "loaded"
    time.sleep(2.5)  # uprobe-probe rescans once a second
    t.go()
    assert t.finish()[0] == 0
    res = p.result()
    a = only(res)
    assert (a["hits"], a["returns"]) == (400, 400)
    assert res["missing"] == []


def test_missing_symbol_warns_and_keeps_the_rest(tmp_path, targets):
    lib, exe = build_dl(tmp_path)
    prof = write_profile(tmp_path, "\n[probe tok]\nsymbol = nothere\nrole = tokenize\n")
    t = Target([exe, "100", lib])
    targets.append(t)
    res = run_dl(t, prof, 100)
    a = only(res)
    assert (a["symbol"], a["hits"]) == ("hot_lib", 100)
    assert res["missing"] == ["nothere not found in /proc/%d/root%s: tokenize stage merges "
                              "into frontend" % (t.pid, lib)]


def test_case4_go_ret_sites_true_durations(tmp_path, targets):
    go = shutil.which("go")
    if not go:
        pytest.skip("needs the Go toolchain (apt-get install golang-go)")
    src = tmp_path / "hotgo"
    shutil.copytree(os.path.join(PROGS, "hotgo"), src)
    env = dict(os.environ, GOCACHE=str(tmp_path / "gocache"), GOPATH=str(tmp_path / "gopath"),
               GOFLAGS="-mod=mod", CGO_ENABLED="0", GOPROXY="off")
    exe = str(tmp_path / "hotgo.bin")
    subprocess.run([go, "build", "-o", exe, "."], cwd=src, env=env, check=True)
    calls, depth = 5, 6
    t = Target([exe, str(calls), str(depth)])
    targets.append(t)
    p = Probe([t.pid], ["--probe", "%s:main.hot=step" % exe])
    t.go()
    rc, out = t.finish()
    assert rc == 0, "traced Go process died (rc %d)" % rc
    # per call: (inside hot, its caller around the call)
    real = [tuple(int(x) for x in l.split()) for l in out.splitlines() if l.strip()]
    n = calls * (depth + 1)
    assert len(real) == n
    res = p.result()
    a = only(res)
    assert a["go"] and a["n_ret_sites"] >= 1
    # entry after the stack check: one entry per call even when the stack grows
    assert a["entry_offset"] > 0
    assert (a["hits"], a["returns"], res["unpaired_returns"]) == (n, n, 0)
    traced = a["durations_ns"]
    assert len(traced) == n
    # both lists are in return order (innermost first): each traced call within
    # what hot measured inside and what its caller measured around it (a busy
    # machine may stretch the gap between them), 0.2 ms for the clock reads
    for (inner, around), m in zip(real, traced):
        assert inner - 200_000 < m < around + 200_000, (inner, m, around)


@pytest.mark.skipif(not LLAMA_LIB, reason="demo libllama not installed (tools/setup.sh)")
def test_llamacpp_profile_resolves_in_libllama(tmp_path, targets):
    _, exe = build_dl(tmp_path)
    t = Target([exe, "0", LLAMA_LIB[0]])
    targets.append(t)
    t.go()
    assert t.wait_line() == "loaded"
    p = Probe([t.pid], ["--profile", "llamacpp"])
    t.go()
    assert t.finish()[0] == 0
    res = p.result()
    got = {a["symbol"]: a for a in res["attachments"]}
    # no GPU backend mapped: llama_synchronize waits for nothing and is held back
    assert sorted(got) == ["llama_decode", "llama_sampler_sample", "llama_tokenize"]
    assert res["held_back"] == "llama_synchronize"
    assert res["missing"] == []
    d = got["llama_decode"]
    # endbr64 then push %r12: the probe sits on the (emulated) push
    assert (d["insn"], d["entry_offset"], d["insn_class"]) == ("endbr64", 4, 1)
    assert d["path"].startswith("/proc/%d/root/" % t.pid)


@pytest.mark.skipif(not LLAMA_LIB, reason="demo libllama not installed (tools/setup.sh)")
def test_llamacpp_sync_attached_once_a_gpu_backend_is_mapped(tmp_path, targets):
    """profiles/llamacpp.ini: llama_synchronize only_with a GPU backend. The
    backend comes after libllama (ggml loads backends with dlopen), so the
    rescan offers libllama again, seen before while the gate was shut."""
    lib, exe = build_dl(tmp_path)
    backend = tmp_path / "libggml-cuda.so"
    shutil.copy(lib, backend)
    t = Target([exe, "0", LLAMA_LIB[0], str(backend)])
    targets.append(t)
    t.go()
    assert t.wait_line() == "loaded"
    p = Probe([t.pid], ["--profile", "llamacpp"])
    t.go()
    assert t.wait_line() == "loaded2"
    wait_mapped(t.pid, "libggml-cuda.so")
    time.sleep(2.5)  # the driver rescans once a second when executable mappings changed
    t.go()
    assert t.finish()[0] == 0
    res = p.result()
    got = sorted(a["symbol"] for a in res["attachments"])
    assert got == ["llama_decode", "llama_sampler_sample", "llama_synchronize",
                   "llama_tokenize"], res
    assert res["held_back"] == "", res
