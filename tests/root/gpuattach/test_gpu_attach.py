# SPDX-License-Identifier: GPL-2.0-only
"""`ttftrace gpu-attach` and `ttftrace -p PID --gpu-attach` on a machine
without a GPU (docs/cupti.md A9): the collector is loaded into a running C
program and a running Python program with ptrace; each keeps printing its
counter without a gap; the collector finds no CUDA and says so over the
CUPTI socket; what must be refused is refused with exit 14 and the process
left as it was; a process that exits during the attach leaves nothing
stopped behind. Runs as root (it drops privileges where a test needs to)."""
import os
import re
import shutil
import signal
import subprocess
import tempfile
import threading
import time

import pytest

from conftest import ROOT, TTFTRACE, needs_root, require_built, require_cupti

COUNTER = os.path.join(ROOT, ".output", "tests", "fixtures", "counter")
LIB = os.path.join(ROOT, ".output", "libttftrace-cupti.so")
HERE = os.path.dirname(os.path.abspath(__file__))
AS_NOBODY = ["setpriv", "--reuid=nobody", "--regid=nogroup", "--clear-groups"]
NO_PTRACE_CAP = ["setpriv", "--inh-caps=-all", "--bounding-set=-sys_ptrace"]

EXIT_NOT_ATTACHED, EXIT_GONE, EXIT_NO_CUDA, EXIT_REFUSED = 6, 7, 12, 14

PY_COUNTER = r"""
import threading, time
def tick():
    n = 0
    while True:
        print("tick %d" % n, flush=True)
        n += 1
        time.sleep(0.01)
threading.Thread(target=tick, daemon=True).start()
while True:
    time.sleep(1)
"""

pytestmark = pytest.mark.skipif(os.geteuid() != 0, reason="needs root (drops to nobody itself)")

_socks = [0]


def new_sock():
    """A CUPTI socket name of this test alone (another ttftrace may hold the default)."""
    _socks[0] += 1
    return "@ttftrace-test-%d-%d" % (os.getpid(), _socks[0])


class Target:
    """A running counter program; its stdout lines are collected as they come."""

    def __init__(self, procs, argv, env=None):
        self.proc = procs.add(subprocess.Popen(argv, stdout=subprocess.PIPE, text=True,
                                               env=env))
        self.pid = self.proc.pid
        self.lines = []
        self._t = threading.Thread(target=self._read, daemon=True)
        self._t.start()

    def _read(self):
        for line in self.proc.stdout:
            self.lines.append((time.monotonic(), line))

    def wait_ticks(self, n, timeout_s=15):
        deadline = time.monotonic() + timeout_s
        while len(self.lines) < n and time.monotonic() < deadline:
            time.sleep(0.01)
        assert len(self.lines) >= n, "only %d lines: %r" % (len(self.lines), self.lines[-3:])

    def assert_unbroken(self):
        """Every line is "tick N", N = 0, 1, 2, ... with no gap; returns the longest pause (s)."""
        lines = list(self.lines)
        for i, (_, line) in enumerate(lines):
            assert line == "tick %d\n" % i, "line %d is %r" % (i, line)
        return max(b[0] - a[0] for a, b in zip(lines, lines[1:]))

    def tasks(self):
        return sorted(int(t) for t in os.listdir("/proc/%d/task" % self.pid))

    def assert_running_untraced(self):
        """No thread is stopped or traced (State not T/t, TracerPid 0)."""
        for tid in self.tasks():
            status = open("/proc/%d/task/%d/status" % (self.pid, tid)).read()
            state = re.search(r"^State:\s+(\S)", status, re.M).group(1)
            tracer = int(re.search(r"^TracerPid:\s+(\d+)", status, re.M).group(1))
            assert state not in "Tt" and tracer == 0, (tid, state, tracer)

    def maps(self):
        return open("/proc/%d/maps" % self.pid).read()


def c_target(procs, env=None):
    require_built(COUNTER)
    t = Target(procs, [COUNTER, "10"], env=env)
    t.wait_ticks(20)
    return t


def attach(pid, *args, sock=None, prefix=(), exe=TTFTRACE, timeout=60, env=None):
    require_built(TTFTRACE)
    require_cupti()
    e = dict(os.environ)
    e.update(env or {})
    return subprocess.run(list(prefix) + [exe, "gpu-attach", "-p", str(pid), "--sock",
                                          sock or new_sock(), *args],
                          capture_output=True, text=True, timeout=timeout, env=e)


def assert_refused(p, *words):
    assert p.returncode == EXIT_REFUSED, (p.returncode, p.stdout, p.stderr)
    assert p.stderr.startswith("Error: gpu-attach refused: "), p.stderr
    assert "\nHINT: " in p.stderr, p.stderr
    for w in words:
        assert w in p.stderr, p.stderr
    assert "Attached" not in p.stdout, p.stdout


def check_attached_no_cuda(t, p, threads_before):
    """The attach worked and the collector's report came back over the socket."""
    assert p.returncode == EXIT_NO_CUDA, (p.returncode, p.stdout, p.stderr)
    m = re.search(r"^Attached to PID %d: loaded (\S+) through thread (\d+) \(blocked in "
                  r"[^)]*\)+, held stopped ([\d.]+) ms$" % t.pid, p.stdout, re.M)
    assert m, p.stdout
    assert m.group(1) == os.path.realpath(LIB)
    assert int(m.group(2)) in threads_before
    assert 0 < float(m.group(3)) < 3000, m.group(3)
    assert ("PID %d: GPU: no CUDA in this process (libcuda.so.1 is not loaded)\n" % t.pid
            in p.stdout), p.stdout
    assert os.path.realpath(LIB) in t.maps()
    return float(m.group(3))


def attach_and_check(t):
    before = t.tasks()
    n_before = len(t.lines)
    p = attach(t.pid)
    held_ms = check_attached_no_cuda(t, p, before)
    # The collector's thread reported and exited: the same threads as before.
    deadline = time.monotonic() + 5
    while t.tasks() != before and time.monotonic() < deadline:
        time.sleep(0.05)
    assert t.tasks() == before
    t.assert_running_untraced()
    t.wait_ticks(n_before + 50)
    gap = t.assert_unbroken()
    assert gap < 1.0, gap
    return held_ms


def test_attach_to_a_c_program(procs):
    t = c_target(procs)
    attach_and_check(t)
    assert t.proc.poll() is None


def test_attach_to_a_python_program(procs):
    t = Target(procs, ["/usr/bin/python3", "-c", PY_COUNTER])
    t.wait_ticks(20)
    attach_and_check(t)
    assert t.proc.poll() is None


def test_second_attach_is_refused(procs):
    t = c_target(procs)
    assert attach(t.pid).returncode == EXIT_NO_CUDA
    n = len(t.lines)
    p = attach(t.pid)
    assert_refused(p, "mapped already", "never loaded twice")
    assert t.maps().count(os.path.realpath(LIB)) == sum(
        1 for l in t.maps().splitlines() if l.endswith(os.path.realpath(LIB)))
    t.wait_ticks(n + 20)
    t.assert_unbroken()
    t.assert_running_untraced()


def test_injected_at_start_is_refused(procs):
    """A process started with the collector (as by CUDA_INJECTION64_PATH) is not attached to."""
    t = c_target(procs, env=dict(os.environ, LD_PRELOAD=os.path.realpath(LIB)))
    assert_refused(attach(t.pid), "mapped already")
    t.assert_running_untraced()


def test_no_such_process():
    p = attach(2 ** 22 + 12345)
    assert p.returncode == 5, (p.returncode, p.stderr)
    assert p.stderr.startswith("Error: no process "), p.stderr


@pytest.fixture(scope="session")
def test_libs(tmp_path_factory):
    """ctor_lib.c built three ways, and fake_cuda.c as libcuda.so.1, initialised or not."""
    d = tmp_path_factory.mktemp("attach-libs")
    out = {}
    for name, src, defs in (("exit", "ctor_lib.c", ["-DCTOR_EXIT"]),
                            ("kill", "ctor_lib.c", ["-DCTOR_KILL"]),
                            ("hang", "ctor_lib.c", ["-DCTOR_HANG"]),
                            ("cuda_up", "fake_cuda.c", ["-DINITIALISED"]),
                            ("cuda_down", "fake_cuda.c", [])):
        sub = d / name
        sub.mkdir()
        so = str(sub / ("libcuda.so.1" if src == "fake_cuda.c" else "libmisbehave.so"))
        subprocess.run(["cc", "-shared", "-fPIC", "-Wall", "-Werror", *defs,
                        "-Wl,-soname," + os.path.basename(so), os.path.join(HERE, src),
                        "-o", so], check=True)
        out[name] = so
    return out


@pytest.mark.parametrize("how,status", [("exit", 3), ("kill", -signal.SIGKILL)])
def test_target_exits_during_the_attach(procs, test_libs, how, status):
    t = c_target(procs)
    p = attach(t.pid, "--lib", test_libs[how])
    assert p.returncode == EXIT_GONE, (p.returncode, p.stdout, p.stderr)
    assert p.stderr.startswith("Error: PID %d exited during the attach" % t.pid), p.stderr
    # It really ended (not stopped, not left for us to reap): its parent collects it now.
    assert t.proc.wait(timeout=5) == status
    assert not os.path.exists("/proc/%d" % t.pid)
    # and no ttftrace helper is left behind either
    out = subprocess.run(["ps", "-eo", "pid,stat,args"], capture_output=True, text=True).stdout
    assert not [l for l in out.splitlines() if "gpu-attach" in l and "-p %d" % t.pid in l], out


def test_a_call_that_does_not_return_is_abandoned_and_the_thread_restored(procs, test_libs):
    t = c_target(procs)
    t0 = time.monotonic()
    p = attach(t.pid, "--lib", test_libs["hang"], "--timeout-ms", "300")
    took = time.monotonic() - t0
    assert p.returncode == EXIT_NOT_ATTACHED, (p.returncode, p.stdout, p.stderr)
    assert "did not return in PID %d in time" % t.pid in p.stderr, p.stderr
    assert took < 10, took
    n = len(t.lines)
    t.wait_ticks(n + 30)
    t.assert_unbroken()
    t.assert_running_untraced()
    assert t.proc.poll() is None


def test_dlopen_failure_is_reported_with_dlerror(procs, tmp_path):
    bad = tmp_path / "libnot-an-elf.so"
    bad.write_text("not a shared object\n")
    t = c_target(procs)
    p = attach(t.pid, "--lib", str(bad))
    assert p.returncode == EXIT_NOT_ATTACHED, (p.returncode, p.stdout, p.stderr)
    assert p.stderr.startswith("Error: dlopen() failed in PID %d: %s: " % (t.pid, bad)), p.stderr
    assert "invalid ELF header" in p.stderr or "file too short" in p.stderr, p.stderr
    t.assert_running_untraced()
    n = len(t.lines)
    t.wait_ticks(n + 20)
    t.assert_unbroken()


@pytest.mark.parametrize("initialised", [False, True])
def test_cuda_in_the_process(procs, test_libs, initialised):
    """libcuda.so.1 loaded: before cuInit nothing starts; after it, the collector tries CUPTI
    (disabled here, so that no real CUPTI runs against the stand-in driver)."""
    lib = test_libs["cuda_up" if initialised else "cuda_down"]
    t = c_target(procs, env=dict(os.environ, LD_PRELOAD=lib, TTFTRACE_CUPTI_DISABLE="1"))
    p = attach(t.pid)
    if initialised:
        assert p.returncode == EXIT_NOT_ATTACHED, (p.returncode, p.stdout, p.stderr)
        assert ("PID %d: GPU: CUDA is initialised (1 devices), GPU breakdown unavailable: "
                "disabled by TTFTRACE_CUPTI_DISABLE\n" % t.pid) in p.stdout, p.stdout
    else:
        assert p.returncode == EXIT_NO_CUDA, (p.returncode, p.stdout, p.stderr)
        assert ("PID %d: GPU: no CUDA in this process yet (libcuda.so.1 is loaded, cuInit "
                "was not called)\n" % t.pid) in p.stdout, p.stdout
    t.assert_running_untraced()


def test_stopped_process_is_refused_and_stays_stopped(procs):
    t = c_target(procs)
    os.kill(t.pid, signal.SIGSTOP)
    try:
        time.sleep(0.1)
        assert_refused(attach(t.pid), "is stopped")
        state = open("/proc/%d/stat" % t.pid).read().rsplit(")", 1)[1].split()[0]
        assert state == "T", state
        assert os.path.realpath(LIB) not in t.maps()
    finally:
        os.kill(t.pid, signal.SIGCONT)


def test_traced_process_is_refused(procs):
    t = c_target(procs)
    st = procs.add(subprocess.Popen(["strace", "-f", "-o", "/dev/null", "-p", str(t.pid)],
                                    stderr=subprocess.DEVNULL))
    deadline = time.monotonic() + 5
    while "TracerPid:\t0\n" in open("/proc/%d/status" % t.pid).read():
        assert time.monotonic() < deadline, "strace did not attach"
        time.sleep(0.05)
    assert_refused(attach(t.pid), "traced already by PID %d" % st.pid)
    st.terminate()
    st.wait(timeout=10)
    assert os.path.realpath(LIB) not in t.maps()


def test_yama_ptrace_scope_3_is_refused(procs, tmp_path):
    scope = tmp_path / "ptrace_scope"
    scope.write_text("3\n")
    t = c_target(procs)
    p = attach(t.pid, env={"TTFTRACE_YAMA_PTRACE_SCOPE": str(scope)})
    assert_refused(p, "ptrace_scope is 3")
    assert os.path.realpath(LIB) not in t.maps()


def test_yama_ptrace_scope_2_needs_cap_sys_ptrace(procs, tmp_path, nobody_dir):
    scope = tmp_path / "ptrace_scope"
    scope.write_text("2\n")
    env = {"TTFTRACE_YAMA_PTRACE_SCOPE": str(scope)}
    t = c_target(procs)
    p = attach(t.pid, env=env, prefix=NO_PTRACE_CAP, exe=os.path.join(nobody_dir, "ttftrace"))
    assert_refused(p, "ptrace_scope is 2: only a tracer with CAP_SYS_PTRACE may attach")
    assert "libttftrace-cupti" not in t.maps()
    p = attach(t.pid, env=env)  # root with CAP_SYS_PTRACE
    assert p.returncode == EXIT_NO_CUDA, (p.returncode, p.stdout, p.stderr)


def test_another_mount_namespace_is_refused(procs):
    require_built(COUNTER)
    t = Target(procs, ["unshare", "--mount", COUNTER, "10"])
    t.wait_ticks(5)
    assert_refused(attach(t.pid), "another mnt namespace (a container)")


@pytest.fixture
def nobody_dir():
    """ttftrace and the collector where nobody can run and load them."""
    require_built(TTFTRACE)
    require_cupti()
    require_built(COUNTER)
    d = tempfile.mkdtemp(prefix="ttftrace-attach-")
    os.chmod(d, 0o755)
    for f in (TTFTRACE, LIB, COUNTER):
        shutil.copy(f, d)
        os.chmod(os.path.join(d, os.path.basename(f)), 0o755)
    yield d
    shutil.rmtree(d)


def test_nobody_without_cap_sys_ptrace_is_refused_on_roots_process(procs, nobody_dir):
    t = c_target(procs)
    p = attach(t.pid, prefix=AS_NOBODY, exe=os.path.join(nobody_dir, "ttftrace"))
    assert_refused(p, "PID %d runs as uid 0, this ttftrace as uid 65534 without "
                   "CAP_SYS_PTRACE" % t.pid)
    assert os.path.realpath(LIB) not in t.maps()


def test_root_without_cap_sys_ptrace_is_refused_on_another_users_process(procs, nobody_dir):
    t = Target(procs, AS_NOBODY + [os.path.join(nobody_dir, "counter"), "10"])
    t.wait_ticks(10)
    p = attach(t.pid, prefix=NO_PTRACE_CAP, exe=os.path.join(nobody_dir, "ttftrace"))
    assert_refused(p, "runs as uid 65534, this ttftrace as uid 0 without CAP_SYS_PTRACE")
    assert "libttftrace-cupti" not in t.maps()


def test_nobody_attaches_to_its_own_process(procs, nobody_dir):
    """The same-user rule allows it without any capability: the refusals above are not blanket."""
    t = Target(procs, AS_NOBODY + [os.path.join(nobody_dir, "counter"), "10"])
    t.wait_ticks(10)
    p = attach(t.pid, prefix=AS_NOBODY, exe=os.path.join(nobody_dir, "ttftrace"))
    assert p.returncode == EXIT_NO_CUDA, (p.returncode, p.stdout, p.stderr)
    assert "PID %d: GPU: no CUDA in this process" % t.pid in p.stdout, p.stdout
    assert os.path.join(nobody_dir, "libttftrace-cupti.so") in t.maps()
    t.assert_running_untraced()


@needs_root
def test_trace_with_gpu_attach(procs, tracer):
    require_cupti()
    t = c_target(procs)
    sock = new_sock()
    tr = tracer("-p", t.pid, "--gpu-attach", env={"TTFTRACE_CUPTI_SOCK": sock})
    want = "PID %d: GPU: no CUDA in this process (libcuda.so.1 is not loaded)\n" % t.pid
    deadline = time.monotonic() + 10
    while want not in tr.stderr and time.monotonic() < deadline:
        time.sleep(0.05)
    assert want in tr.stderr, tr.stderr
    assert re.search(r"^Attached to PID %d: loaded " % t.pid, tr.stderr, re.M), tr.stderr
    assert tr.stop() == 0, tr.stderr
    t.assert_running_untraced()
    n = len(t.lines)
    t.wait_ticks(n + 20)
    t.assert_unbroken()


@needs_root
def test_trace_gpu_attach_refusal_exits_14(procs, tracer):
    require_cupti()
    t = c_target(procs, env=dict(os.environ, LD_PRELOAD=os.path.realpath(LIB)))
    tr = tracer("-p", t.pid, "--gpu-attach", env={"TTFTRACE_CUPTI_SOCK": new_sock()},
                wait_attach=False)
    assert tr.wait_exit(30) == EXIT_REFUSED, tr.stderr
    assert "Error: gpu-attach refused: PID %d has " % t.pid in tr.stderr, tr.stderr


def test_main_thread_is_used_among_many(procs):
    """With 60 more threads asleep, the one held is still the main thread."""
    many = PY_COUNTER.replace("threading.Thread(target=tick",
                              "[threading.Thread(target=time.sleep, args=(3600,), daemon=True)"
                              ".start() for _ in range(60)]\nthreading.Thread(target=tick", 1)
    t = Target(procs, ["/usr/bin/python3", "-c", many])
    t.wait_ticks(20)
    assert len(t.tasks()) == 62
    p = attach(t.pid)
    assert p.returncode == EXIT_NO_CUDA, (p.returncode, p.stdout, p.stderr)
    assert "through thread %d (blocked in clock_nanosleep (230))" % t.pid in p.stdout, p.stdout
    t.assert_running_untraced()
    n = len(t.lines)
    t.wait_ticks(n + 20)
    t.assert_unbroken()
