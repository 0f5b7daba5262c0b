# SPDX-License-Identifier: GPL-2.0-only
"""`make install DESTDIR=... PREFIX=/usr`, then the installed tree is used.

The installed binary prints its version and help, and finds the installed
engine profiles (`--profile llamacpp` resolves from DESTDIR/usr/share/ttftrace,
and fails once that file is gone, with the PREFIX's path in the error); the
systemd unit names the installed binary and passes `systemd-analyze verify`;
`make uninstall` removes every file it installed. A binary copied alone
says that it found no built-in profile.
"""
import os
import shutil
import subprocess

import pytest

from conftest import ROOT, cupti_build, needs_root, require_built

MAKE_TIMEOUT_S = 600
FILES = {
    "usr/bin/ttftrace": 0o755,
    "usr/share/ttftrace/profiles/llamacpp.ini": 0o644,
    "usr/share/ttftrace/ttftrace-dashboard.json": 0o644,
    "usr/share/ttftrace/ttftrace-alerts.yml": 0o644,
    "usr/share/ttftrace/ttftrace.default": 0o644,
    "usr/share/man/man8/ttftrace.8": 0o644,
    "usr/share/bash-completion/completions/ttftrace": 0o644,
    "usr/lib/systemd/system/ttftrace.service": 0o644,
}
CUPTI = "usr/lib/ttftrace/libttftrace-cupti.so"


def make(*args):
    p = subprocess.run(["make", "--no-print-directory"] + list(args), cwd=ROOT,
                       capture_output=True, text=True, timeout=MAKE_TIMEOUT_S)
    assert p.returncode == 0, p.stdout + p.stderr
    return p


def installed_files(dest):
    out = set()
    for d, _, files in os.walk(dest):
        for f in files:
            out.add(os.path.relpath(os.path.join(d, f), dest))
    return out


def run(binary, *args):
    env = dict(os.environ)
    env.pop("TTFTRACE_PROFILE_DIR", None)
    return subprocess.run([binary] + list(args), capture_output=True, text=True, env=env,
                          timeout=60, cwd="/")


@pytest.fixture(scope="module")
def dest(tmp_path_factory):
    require_built(os.path.join(ROOT, "ttftrace"))
    d = str(tmp_path_factory.mktemp("destdir"))
    make("install", "DESTDIR=" + d, "PREFIX=/usr")
    return d


def test_install_puts_every_file_in_place(dest):
    got = installed_files(dest)
    for f, mode in FILES.items():
        assert f in got, (f, sorted(got))
        assert os.stat(os.path.join(dest, f)).st_mode & 0o777 == mode, f
    if cupti_build()["built"]:
        assert CUPTI in got, sorted(got)
        assert os.stat(os.path.join(dest, CUPTI)).st_mode & 0o777 == 0o755
    # nothing but what is listed: profiles of the source tree (engines, stacks), the collector
    stacks = {"usr/share/ttftrace/profiles/stacks/" + f
              for f in os.listdir(os.path.join(ROOT, "profiles", "stacks"))}
    assert "usr/share/ttftrace/profiles/stacks/sglang.ini" in got & stacks, sorted(got)
    extra = got - set(FILES) - {CUPTI} - stacks - {
        "usr/share/ttftrace/profiles/" + f for f in os.listdir(os.path.join(ROOT, "profiles"))}
    assert not extra, extra
    # the man page and the unit name the installed paths, not the default PREFIX
    with open(os.path.join(dest, "usr/share/man/man8/ttftrace.8")) as f:
        man = f.read()
    assert "/usr/share/ttftrace/profiles" in man and "/usr/local/" not in man
    with open(os.path.join(dest, "usr/lib/systemd/system/ttftrace.service")) as f:
        unit = f.read()
    assert "ExecStart=/usr/bin/ttftrace $TTFTRACE_ARGS" in unit and "@" not in unit


def test_installed_binary_runs(dest):
    b = os.path.join(dest, "usr/bin/ttftrace")
    p = run(b, "--version")
    assert p.returncode == 0, p.stderr
    lines = p.stdout.splitlines()
    assert lines[0].startswith("ttftrace ") and lines[1].startswith("commit "), lines
    assert lines[2].startswith("libbpf ") and lines[3].startswith("kernel "), lines
    p = run(b, "--help")
    assert p.returncode == 0 and "EXAMPLES:" in p.stdout and "--interval" in p.stdout
    for cmd in ("pcie", "copybw", "replay", "report", "gpu-attach"):
        p = run(b, cmd, "--help")
        assert p.returncode == 0 and ("Usage: ttftrace " + cmd) in p.stdout, (cmd, p.stderr)
    # the collector is found in DESTDIR/usr/lib/ttftrace (relative to the binary)
    if os.path.exists(os.path.join(dest, CUPTI)):
        p = run(b, "gpu-attach", "-p", str(2 ** 22 + 1))
        # past the library (exit 2 without it) to the missing process
        assert p.returncode == 5 and "no process" in p.stderr, p.stderr


@needs_root
def test_installed_binary_finds_installed_profiles(dest, sse_server):
    b = os.path.join(dest, "usr/bin/ttftrace")
    srv = sse_server()
    p = run(b, "-p", str(srv.pid), "--profile", "llamacpp", "-d", "0.5", "-o", "/dev/null")
    assert p.returncode == 0, p.stderr
    assert "no profile named" not in p.stderr, p.stderr
    prof = os.path.join(dest, "usr/share/ttftrace/profiles/llamacpp.ini")
    saved = prof + ".saved"
    os.rename(prof, saved)
    try:
        p = run(b, "-p", str(srv.pid), "--profile", "llamacpp", "-d", "0.5", "-o", "/dev/null")
    finally:
        os.rename(saved, prof)
    assert p.returncode == 2, p.stderr
    # the PREFIX it was installed for is compiled in: the last place it looks
    assert "no profile named 'llamacpp'" in p.stderr and "/usr/share/ttftrace/profiles)" \
        in p.stderr, p.stderr


@needs_root
def test_binary_without_profiles_says_so(tmp_path, sse_server):
    """A copied binary finds no built-in profile: it traces, and says the engine
    uprobes are off and where it looked (not only under -v)."""
    b = str(tmp_path / "ttftrace")
    shutil.copy(os.path.join(ROOT, "ttftrace"), b)
    srv = sse_server()
    p = run(b, "-p", str(srv.pid), "-d", "0.5", "-o", "/dev/null")
    assert p.returncode == 0, p.stderr
    assert "built-in engine profile not loaded" in p.stderr, p.stderr
    assert "no profile named 'llamacpp'" in p.stderr and "next to the binary" in p.stderr, p.stderr
    p = run(os.path.join(ROOT, "ttftrace"), "-p", str(srv.pid), "-d", "0.5", "-o", "/dev/null")
    assert p.returncode == 0 and "profile not loaded" not in p.stderr, p.stderr


@pytest.mark.skipif(shutil.which("systemd-analyze") is None, reason="no systemd-analyze")
def test_systemd_unit_verifies(dest, tmp_path):
    # verify checks that ExecStart's binary exists: point it at the installed one,
    with open(os.path.join(dest, "usr/lib/systemd/system/ttftrace.service")) as f:
        unit = f.read().replace("ExecStart=/usr/bin/ttftrace",
                                "ExecStart=" + os.path.join(dest, "usr/bin/ttftrace"))
    u = tmp_path / "ttftrace.service"
    u.write_text(unit)
    # ... and Documentation=man:ttftrace(8) at the installed man page
    env = dict(os.environ, MANPATH=os.path.join(dest, "usr/share/man"))
    p = subprocess.run(["systemd-analyze", "verify", str(u)], capture_output=True, text=True,
                       timeout=60, env=env)
    out = "\n".join(l for l in (p.stdout + p.stderr).splitlines()
                    if "ttftrace" in l)   # other units of this machine may say things
    assert p.returncode == 0 and not out, p.stdout + p.stderr


def test_uninstall_removes_everything(tmp_path):
    d = str(tmp_path / "dest")
    make("install", "DESTDIR=" + d, "PREFIX=/usr")
    assert installed_files(d)
    make("uninstall", "DESTDIR=" + d, "PREFIX=/usr")
    assert installed_files(d) == set()
