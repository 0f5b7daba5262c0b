# SPDX-License-Identifier: GPL-2.0-only
"""Bad input: each a clear `Error:` (or argp's usage line) and the
documented exit code (README "Exit codes", user/lib/exit.h enum ttf_exit)."""
import gzip
import os
import shutil
import subprocess
import tempfile

import pytest

from conftest import ROOT, TTFTRACE, needs_root, require_built

USAGE, PRIV, KERNEL, NOT_ATTACHED, BAD_RECORDING = 2, 3, 4, 6, 11


def run(*args, env=None, timeout=60):
    require_built(TTFTRACE)
    e = dict(os.environ)
    e.update(env or {})
    return subprocess.run([TTFTRACE] + [str(a) for a in args], capture_output=True, text=True,
                          env=e, timeout=timeout, cwd="/")


def says_error(p):
    """Every usage error, argp's too, reads 'Error: ...' then a HINT naming --help."""
    return "Error: " in p.stderr and "HINT: see `ttftrace --help`" in p.stderr


@pytest.mark.parametrize("args", [
    ("--ringbuf-mb", "3", "-p", "1"),
    ("--capture-bytes", "99999", "-p", "1"),
    ("-p", "1", "--comm", "x"),
    (),
    ("--metrics", "nope", "-p", "1"),
    ("-d", "-5", "-p", "1"),
    ("-d", "nan", "-p", "1"),
    ("--bogus", "-p", "1"),
    ("-p",),
    ("--drain-ms", "5", "-p", "1"),
    ("--drain-ms", "10001", "-p", "1"),
    ("--profile", "fixture", "--no-profile", "-p", "1"),
    ("--no-sched", "--perfetto-sched", "all", "--perfetto", "/dev/null", "-p", "1"),
    ("--sysfs-root", "/nonexistent", "-p", "1"),
], ids=["ringbuf-not-pow2", "capture-too-big", "two-targets", "no-target", "metrics-addr",
        "negative-duration", "nan-duration", "unknown-option", "missing-value", "drain-too-short",
        "drain-too-long", "profile-and-no-profile", "sched-slices-without-sched",
        "sysfs-root-missing"])
def test_malformed_cli_exits_2(args):
    p = run(*args)
    assert p.returncode == USAGE, (p.returncode, p.stderr)
    assert says_error(p), p.stderr
    assert p.stdout == ""


@needs_root
def test_kernel_thread_is_no_target():
    """-p 2 (kthreadd, whose children are every kernel thread) is refused, exit 5."""
    p = run("-p", "2", "-d", "1")
    assert p.returncode == 5, (p.returncode, p.stderr)
    assert "Error: PID 2 is a kernel thread" in p.stderr, p.stderr
    assert "HINT: " in p.stderr, p.stderr


@pytest.mark.parametrize("flag", ["-h", "--help", "-?", "--usage", "-V", "--version"])
def test_help_and_version_go_to_stdout(flag):
    p = run(flag)
    assert p.returncode == 0, (p.returncode, p.stderr)
    assert p.stderr == ""
    assert "ttftrace" in p.stdout


@needs_root
@pytest.mark.parametrize("spec", ["nocolon", "/bin/true:sym=badrole", "/bin/true:=step",
                                  "/bin/true:sym=step:reg:99"])
def test_bad_probe_spec_exits_2(spec):
    p = run("--probe", spec, "-p", os.getpid(), "-d", "1")
    assert p.returncode == USAGE, (p.returncode, p.stderr)
    assert "Error: --probe" in p.stderr and "HINT" in p.stderr, p.stderr


@needs_root
def test_bad_profile_file_exits_2(tmp_path):
    bad = tmp_path / "bad.ini"
    bad.write_text("[probe]\nsymbol = \nrole = flying\n")
    for prof in (str(bad), "/etc/passwd", "no-such-profile"):
        p = run("--profile", prof, "-p", os.getpid(), "-d", "1")
        assert p.returncode == USAGE, (prof, p.returncode, p.stderr)
        assert "Error: profile %s" % prof in p.stderr, p.stderr


@pytest.mark.parametrize("slo", ["ttft_p95=fast", "nonsense", "ttft_p101=1s", "ttft_p95=-1ms"])
def test_bad_slo_exits_2(slo):
    p = run("--slo", slo, "-p", "1", "-d", "1")
    assert p.returncode == USAGE, (p.returncode, p.stderr)
    assert "Error: --slo" in p.stderr, p.stderr


@needs_root
def test_binary_without_the_symbol_warns_and_traces_on():
    """A probe whose symbol is absent: a warning naming it, tracing goes on
    (the stages it would have split merge), exit 0."""
    p = run("--probe", "/bin/true:no_such_symbol_xyz=step", "-p", os.getpid(), "-d", "1",
            "--json")
    assert p.returncode == 0, (p.returncode, p.stderr)
    assert "no_such_symbol_xyz" in p.stderr, p.stderr
    assert '"type":"summary"' in p.stdout.replace(" ", ""), p.stdout


@needs_root
def test_kernel_without_btf_exits_4():
    p = run("-p", os.getpid(), "-d", "1", env={"TTFTRACE_SYS_BTF": "/nonexistent"})
    assert p.returncode == KERNEL, (p.returncode, p.stderr)
    assert "Error:" in p.stderr and "BTF" in p.stderr and "HINT" in p.stderr, p.stderr


@needs_root
def test_missing_socket_tracepoints_exit_6():
    """Simulated: the recv/send programs do not attach (TTFTRACE_SKIP_PROGS).
    Exit 6 (nothing traced). A kernel that lacks the tracepoint itself exits 4
    naming it (tests/root/cli/test_missing_tracepoint.py)."""
    p = run("-p", os.getpid(), "-d", "1", env={"TTFTRACE_SKIP_PROGS": "handle_recv,handle_send"})
    assert p.returncode == NOT_ATTACHED, (p.returncode, p.stderr)
    assert "Error:" in p.stderr, p.stderr


def run_unprivileged(*args):
    """ttftrace ARGS as nobody (a copy nobody can run)."""
    d = tempfile.mkdtemp(prefix="ttftrace-bad-")
    try:
        os.chmod(d, 0o755)
        exe = os.path.join(d, "ttftrace")
        require_built(TTFTRACE)
        shutil.copy(TTFTRACE, exe)
        os.chmod(exe, 0o755)
        cmd = [exe] + [str(a) for a in args]
        if os.geteuid() == 0:
            cmd = ["setpriv", "--reuid=nobody", "--regid=nogroup", "--clear-groups"] + cmd
        return subprocess.run(cmd, capture_output=True, text=True, timeout=60, cwd="/")
    finally:
        shutil.rmtree(d)


def test_not_root_exits_3():
    p = run_unprivileged("--port", "1", "-d", "1")
    assert p.returncode == PRIV, (p.returncode, p.stderr)
    assert "Error:" in p.stderr and "HINT" in p.stderr, p.stderr


@pytest.mark.parametrize("args", [("--probe", "nocolon"), ("--profile", "/etc/passwd"),
                                  ("--profile", "no-such-profile")])
def test_bad_engine_args_exit_2_before_privileges(args):
    """A bad --probe or --profile is a bad command line, whoever runs it."""
    p = run_unprivileged(*args, "--port", "1", "-d", "1")
    assert p.returncode == USAGE, (p.returncode, p.stderr)
    assert p.stderr.startswith("Error: ") and "HINT" in p.stderr, p.stderr
    assert "Net source" not in p.stderr, p.stderr


def _replay(path):
    return run("replay", path, "--json")


@pytest.mark.parametrize("kind", ["garbage", "empty", "gzip-garbage", "bad-version",
                                  "truncated-gzip"])
def test_corrupt_recording_is_a_clear_error(tmp_path, kind):
    path = str(tmp_path / ("bad-%s.rec" % kind))
    hdr = (b"TTFREC\r\n" + (1).to_bytes(4, "little") + (40).to_bytes(4, "little") +
           bytes(16) + bytes(4) + (0x01020304).to_bytes(4, "little"))
    if kind == "garbage":
        data = b"this is not a recording\n" * 10
    elif kind == "empty":
        data = b""
    elif kind == "gzip-garbage":
        data = gzip.compress(os.urandom(4096))
    elif kind == "bad-version":
        data = gzip.compress(hdr[:8] + (99).to_bytes(4, "little") + hdr[12:])
    else:
        # a valid header and a frame, then the compressed stream is cut
        frame = (8).to_bytes(4, "little") + (4).to_bytes(2, "little") + bytes(2) + bytes(8)
        data = gzip.compress(hdr + frame * 100)[:-20]
    with open(path, "wb") as f:
        f.write(data)
    p = _replay(path)
    assert p.returncode == BAD_RECORDING, (kind, p.returncode, p.stderr)
    assert "Error:" in p.stderr and path in p.stderr, p.stderr


def test_missing_recording_is_a_clear_error():
    p = _replay("/nonexistent/x.rec")
    assert p.returncode != 0
    assert "Error:" in p.stderr and "/nonexistent/x.rec" in p.stderr, p.stderr


def test_usage_errors_read_error_and_hint():
    p = run("--port", "0", "-d", "1")
    assert p.returncode == USAGE, (p.returncode, p.stderr)
    assert p.stderr == "Error: invalid port '0' (expected 1..65535)\nHINT: see `ttftrace --help`\n"
    p = run("replay")
    assert p.returncode == USAGE, (p.returncode, p.stderr)
    assert p.stderr.startswith("Error: give the recording"), p.stderr
    assert "HINT: see `ttftrace replay --help`" in p.stderr, p.stderr


@pytest.mark.parametrize("a,b", [("-o", "--record"), ("-o", "--perfetto"),
                                 ("--record", "--perfetto")])
def test_two_outputs_in_one_file_exit_2(tmp_path, a, b):
    """Two outputs would overwrite each other: refused before anything is
    written, also when the names differ (./x and DIR/x)."""
    p = subprocess.run([TTFTRACE, "-p", "1", "-d", "1", a, "same.out", b,
                        str(tmp_path / "same.out")], capture_output=True, text=True,
                       timeout=60, cwd=str(tmp_path))
    assert p.returncode == USAGE, (p.returncode, p.stderr)
    assert "Error: %s and %s name the same file" % (a, b) in p.stderr, p.stderr
    assert not (tmp_path / "same.out").exists()


@needs_root
def test_directories_as_inputs_say_so(tmp_path):
    p = run("--profile", str(tmp_path), "-p", os.getpid(), "-d", "1")
    assert p.returncode == USAGE, (p.returncode, p.stderr)
    assert "Is a directory" in p.stderr, p.stderr
    p = _replay(str(tmp_path))
    assert p.returncode == BAD_RECORDING, (p.returncode, p.stderr)
    assert "Error: cannot read %s: Is a directory" % tmp_path in p.stderr, p.stderr
    assert "Replayed" not in p.stderr, p.stderr


@needs_root
@pytest.mark.parametrize("path", ["/etc/passwd", "/tmp"])
def test_probe_on_a_file_that_is_no_program_warns(path):
    p = run("--probe", path + ":main=step", "-p", os.getpid(), "-d", "1", "--json")
    assert p.returncode == 0, (p.returncode, p.stderr)
    assert "Warning: --probe %s:main: " % path in p.stderr, p.stderr
    assert "is not an ELF executable or library" in p.stderr, p.stderr


@needs_root
@pytest.mark.parametrize("cmd,says", [
    ("exit 3", "the command exited with status 3"),
    ("/nonexistent/server", "the command exited with status 127 (command not found?)"),
    ("kill -KILL $$", "the command was killed by signal 9"),
])
def test_failed_command_is_not_a_clean_run(cmd, says):
    """-c ends when the command ends (exit 0, README), but says how it ended."""
    p = run("-c", cmd, "--json")
    assert p.returncode == 0, (p.returncode, p.stderr)
    assert "Warning: " + says in p.stderr, p.stderr


@needs_root
def test_probe_never_called_is_explained():
    """A probe that attached but saw no call (libc's strfry) is named in the
    engine summary, so 0 hits does not read as a broken probe."""
    p = run("--probe", "/lib/x86_64-linux-gnu/libc.so.6:strfry=step", "-p", os.getpid(),
            "-d", "1")
    assert p.returncode == 0, (p.returncode, p.stderr)
    out = p.stdout + p.stderr
    assert "strfry: attached, but the engine never called it in this run" in out, out


@needs_root
def test_profile_matching_nothing_is_explained():
    """A --profile whose match lines name no file the target maps (ttftrace itself
    here) attaches nothing: the engine summary says so, not an empty table."""
    prof = os.path.join(ROOT, "profiles", "fixture.ini")
    p = run("--profile", prof, "-p", os.getpid(), "-d", "1")
    assert p.returncode == 0, (p.returncode, p.stderr)
    out = p.stdout + p.stderr
    assert "none attached: no traced process mapped a file a profile's `match` names" in out, out


FIXTURE_REC = os.path.join(ROOT, "tests", "root", "replay", "data", "fixture.rec")
FIXTURE_NDJSON = os.path.join(ROOT, "tests", "root", "replay", "data", "fixture.ndjson")


def test_input_named_as_output_is_refused(tmp_path):
    """replay and report never truncate their own input: exit 2, the input intact."""
    rec = str(tmp_path / "run.rec")
    shutil.copy(FIXTURE_REC, rec)
    size = os.path.getsize(rec)
    p = run("replay", rec, "-o", rec)
    assert p.returncode == USAGE, (p.returncode, p.stderr)
    assert "Error: -o %s is the recording itself" % rec in p.stderr, p.stderr
    assert os.path.getsize(rec) == size
    nd = str(tmp_path / "run.ndjson")
    shutil.copy(FIXTURE_NDJSON, nd)
    with open(nd) as f:
        before = f.read()
    p = run("report", nd, "-o", nd)
    assert p.returncode == USAGE, (p.returncode, p.stderr)
    assert "Error: -o %s is the input itself" % nd in p.stderr, p.stderr
    with open(nd) as f:
        assert f.read() == before


@pytest.mark.parametrize("opt", ["--perfetto", "--metrics-out", "--otlp-out"])
def test_replay_never_writes_over_its_recording(tmp_path, opt):
    """Each of replay's outputs, named as the recording (./run.rec against
    DIR/run.rec), is refused before the recording is opened for writing."""
    rec = str(tmp_path / "run.rec")
    shutil.copy(FIXTURE_REC, rec)
    with open(rec, "rb") as f:
        before = f.read()
    p = subprocess.run([TTFTRACE, "replay", rec, opt, "./run.rec"], capture_output=True,
                       text=True, timeout=60, cwd=str(tmp_path))
    assert p.returncode == USAGE, (p.returncode, p.stderr)
    assert "Error: %s ./run.rec is the recording itself" % opt in p.stderr, p.stderr
    assert "HINT: " in p.stderr, p.stderr
    with open(rec, "rb") as f:
        assert f.read() == before


@pytest.mark.parametrize("a,b", [("-o", "--perfetto"), ("--perfetto", "--otlp-out"),
                                 ("-o", "--metrics-out")])
def test_replay_two_outputs_in_one_file_exit_2(tmp_path, a, b):
    p = subprocess.run([TTFTRACE, "replay", FIXTURE_REC, a, "same.out", b,
                        str(tmp_path / "same.out")], capture_output=True, text=True,
                       timeout=60, cwd=str(tmp_path))
    assert p.returncode == USAGE, (p.returncode, p.stderr)
    assert "Error: %s and %s name the same file" % (a, b) in p.stderr, p.stderr
    assert not (tmp_path / "same.out").exists()


def test_replay_output_write_error_is_an_output_error(tmp_path):
    """A write that fails (EIO from /proc/version) is exit 8 naming the output, not the input."""
    p = run("replay", FIXTURE_REC, "-q", "-o", "/proc/version")
    assert p.returncode == 8, (p.returncode, p.stderr)
    assert "Error: writing /proc/version" in p.stderr, p.stderr


def test_report_of_a_directory_is_bad_input(tmp_path):
    p = run("report", str(tmp_path), "-o", str(tmp_path / "r.html"))
    assert p.returncode == 11, (p.returncode, p.stderr)
    assert "Error: cannot read %s: Is a directory" % tmp_path in p.stderr, p.stderr


def test_replay_file_sink_error_is_said_once(tmp_path):
    """A file sink that cannot write (--metrics-out into a missing folder) says so
    itself: exit 8, one error naming that file, and -o written whole, not blamed."""
    out = tmp_path / "out.txt"
    p = run("replay", FIXTURE_REC, "-q", "--metrics-out", str(tmp_path / "no" / "m.prom"),
            "-o", str(out))
    assert p.returncode == 8, (p.returncode, p.stderr)
    errors = [l for l in p.stderr.splitlines() if l.startswith("Error:")]
    assert errors == ["Error: cannot write %s: No such file or directory"
                      % (tmp_path / "no" / "m.prom")], p.stderr
    assert "Summary" in out.read_text()
