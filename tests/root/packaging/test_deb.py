# SPDX-License-Identifier: GPL-2.0-only
"""`make deb`: the Debian package (deploy/debian/build.sh, docs/deploy.md "Debian
package") is built, linted, installed on this machine and removed again.

lintian finds no error in it (its warnings are listed as pytest warnings), and
finds the error planted in a copy without its copyright file (the lint can
fail). Its Depends name the package of every library the binary links (readelf
NEEDED, resolved with ldconfig and dpkg -S); its version is git describe's and
agrees with `ttftrace --version`. `apt-get install -y ./ttftrace_*.deb` installs
it here; /usr/bin/ttftrace prints its version, finds the installed profiles and
traces a curl request to the fixture server; `apt-get remove` takes every file
but the conffile, `apt-get purge` that too. A fresh Debian 12 root, where apt pulls the
run-time libraries, is `make container-test`'s (tests/container/).
"""
import json
import os
import re
import shutil
import signal
import subprocess
import tempfile
import time
import warnings

import pytest

from conftest import ATTACH_TIMEOUT_S, ROOT, TTFTRACE, needs_root, require_built

MAKE_TIMEOUT_S = 600
APT_TIMEOUT_S = 300
# wait for another apt or dpkg run to let go of the lock, rather than fail
LOCK_WAIT = "-oDPkg::Lock::Timeout=240"
CUDA_HOME = os.environ.get("CUDA_HOME", "/usr/local/cuda-13.0")
# what make install PREFIX=/usr puts there (tests/root/packaging/test_install.py),
# the man page compressed, and what a package adds
FILES = {
    "/usr/bin/ttftrace", "/usr/share/ttftrace/profiles/llamacpp.ini",
    "/usr/share/ttftrace/profiles/stacks/vllm.ini",
    "/usr/share/ttftrace/ttftrace-dashboard.json", "/usr/share/ttftrace/ttftrace-alerts.yml",
    "/usr/share/ttftrace/ttftrace.default", "/usr/share/man/man8/ttftrace.8.gz",
    "/usr/share/bash-completion/completions/ttftrace", "/usr/lib/systemd/system/ttftrace.service",
    "/usr/share/doc/ttftrace/copyright", "/usr/share/doc/ttftrace/changelog.gz",
    "/etc/default/ttftrace",
}
CUPTI = "/usr/lib/ttftrace/libttftrace-cupti.so"
TTFT_MS = 40
TOKENS = 5


def sh(*cmd, timeout=120, **kw):
    return subprocess.run(list(cmd), capture_output=True, text=True, timeout=timeout, **kw)


@pytest.fixture(scope="module")
def deb():
    require_built(TTFTRACE)
    if not os.path.exists(os.path.join(ROOT, ".git")):
        pytest.skip("make deb takes the package's version and maintainer from git: "
                    "this tree is not a checkout (tests/cuda/nocuda.sh copies one)")
    p = sh("make", "--no-print-directory", "deb", cwd=ROOT, timeout=MAKE_TIMEOUT_S)
    assert p.returncode == 0, p.stdout + p.stderr
    m = re.search(r"^deb: (\S+\.deb)$", p.stdout, re.M)
    assert m, p.stdout
    return os.path.join(ROOT, m.group(1))


def field(deb, name):
    p = sh("dpkg-deb", "-f", deb, name)
    assert p.returncode == 0, p.stderr
    return p.stdout.strip()


def lintian(deb):
    """(errors, warnings): lintian's E: and W: lines."""
    p = sh("lintian", "--tag-display-limit", "0", deb, timeout=300)
    lines = p.stdout.splitlines()
    # exit 0: no tag at error level or above; 2: errors; anything else: lintian failed
    assert p.returncode in (0, 2), p.stdout + p.stderr
    return [l for l in lines if l.startswith("E:")], [l for l in lines if l.startswith("W:")]


def test_lintian_finds_no_error(deb):
    errors, warns = lintian(deb)
    for w in warns:
        warnings.warn("lintian: " + w)
    assert not errors, "\n".join(errors)


def test_lintian_catches_a_planted_error(deb, tmp_path):
    tree = str(tmp_path / "tree")
    assert sh("dpkg-deb", "-R", deb, tree).returncode == 0
    os.unlink(os.path.join(tree, "usr/share/doc/ttftrace/copyright"))
    bad = str(tmp_path / "ttftrace_0_amd64.deb")
    p = sh("dpkg-deb", "--root-owner-group", "-b", tree, bad)
    assert p.returncode == 0, p.stderr
    errors, _ = lintian(bad)
    assert any("no-copyright-file" in e for e in errors), errors


def test_control_version_and_depends(deb):
    # the version: git describe's (deploy/debian/build.sh), the commit --version prints
    commit = sh("git", "describe", "--always", "--dirty", "--abbrev=12", cwd=ROOT).stdout.strip()
    with open(os.path.join(ROOT, "user/lib/version.h")) as f:
        base = re.search(r'#define TTF_VERSION "(.+)"', f.read()).group(1)
    version = field(deb, "Version")
    tagged = sh("git", "describe", "--tags", "--match", "v[0-9]*", cwd=ROOT).returncode == 0
    if not tagged:
        count = sh("git", "rev-list", "--count", "HEAD", cwd=ROOT).stdout.strip()
        assert version == "%s+git%s.%s" % (base, count, commit.replace("-dirty", ".dirty")), \
            version
    assert os.path.basename(deb) == "ttftrace_%s_%s.deb" % (version, field(deb, "Architecture"))
    # Depends: a package for every NEEDED library of the binary
    with tempfile.TemporaryDirectory() as d:
        assert sh("dpkg-deb", "-x", deb, d).returncode == 0
        needed = re.findall(r"\(NEEDED\)\s+Shared library: \[(.+?)\]",
                            sh("readelf", "-d", os.path.join(d, "usr/bin/ttftrace")).stdout)
    assert "libbpf.so.1" in needed, needed
    ldconfig = sh("ldconfig", "-p").stdout
    depends = {d.split()[0] for d in field(deb, "Depends").split(", ")}
    for lib in needed:
        m = re.search(r"^\s+%s \(libc6,x86-64\) => (\S+)$" % re.escape(lib), ldconfig, re.M)
        assert m, lib
        path = os.path.realpath(m.group(1))
        owner = sh("dpkg", "-S", path).stdout or sh("dpkg", "-S", path.replace("/usr/lib/", "/lib/", 1)).stdout
        pkg = owner.split(":")[0]
        assert pkg in depends, (lib, pkg, depends)


def test_package_holds_the_installed_tree(deb):
    listed = set()
    for line in sh("dpkg-deb", "-c", deb).stdout.splitlines():
        name = line.split()[-1]
        if line.startswith("-"):
            listed.add(name[1:])
    want = set(FILES)
    if os.path.exists(os.path.join(CUDA_HOME, "include", "cupti.h")):
        want.add(CUPTI)
    assert want <= listed, sorted(want - listed)
    with tempfile.TemporaryDirectory() as d:
        assert sh("dpkg-deb", "-e", deb, d).returncode == 0
        with open(os.path.join(d, "conffiles")) as f:
            assert f.read().split() == ["/etc/default/ttftrace"]


def installed_version():
    p = sh("dpkg-query", "-W", "-f", "${Status} ${Version}", "ttftrace")
    return p.stdout if p.returncode == 0 else ""


def traced_request(srv_pid, port, out):
    """/usr/bin/ttftrace -p srv_pid while curl streams one request: (records, curl's s)."""
    env = dict(os.environ)
    env.pop("TTFTRACE_PROFILE_DIR", None)
    tr = subprocess.Popen(["/usr/bin/ttftrace", "--json", "-p", str(srv_pid), "-o", out],
                          stderr=subprocess.PIPE, text=True, env=env, cwd="/")
    err = []
    try:
        deadline = time.monotonic() + ATTACH_TIMEOUT_S
        while time.monotonic() < deadline:
            line = tr.stderr.readline()
            if not line:
                break
            err.append(line)
            if "Hit Ctrl-C to end" in line:
                break
        assert err and "Hit Ctrl-C to end" in err[-1], "".join(err)
        body = json.dumps({"model": "m", "stream": True, "max_tokens": TOKENS,
                           "messages": [{"role": "user", "content": "hi"}]})
        c = sh("curl", "-sS", "-N", "-o", "/dev/null", "-w", "%{http_code} %{time_total}",
               "-H", "Content-Type: application/json", "-d", body,
               "http://127.0.0.1:%d/v1/chat/completions" % port, timeout=30)
        assert c.returncode == 0, c.stderr
        code, total = c.stdout.split()
        assert code == "200", c.stdout
        time.sleep(0.3)
    finally:
        tr.send_signal(signal.SIGINT)
        rc = tr.wait(timeout=15)
    err.append(tr.stderr.read())
    assert rc == 0, "".join(err)
    with open(out) as f:
        return [json.loads(l) for l in f if l.strip()], float(total), "".join(err)


@needs_root
@pytest.mark.skipif(shutil.which("apt-get") is None, reason="needs apt-get")
def test_apt_install_run_remove(deb, sse_server, tmp_path):
    before = installed_version()
    if before.startswith("install ok"):
        pytest.skip("ttftrace %s is installed here (dpkg): the test would replace and remove "
                    "it; dpkg -P ttftrace first" % before.split()[-1])
    if os.path.exists("/usr/bin/ttftrace"):
        pytest.skip("/usr/bin/ttftrace exists outside a package (make install PREFIX=/usr?): "
                    "the test would overwrite and remove it")
    env = dict(os.environ, DEBIAN_FRONTEND="noninteractive")
    version = field(deb, "Version")
    try:
        p = sh("apt-get", LOCK_WAIT, "install", "-y", "--no-install-recommends", deb, env=env,
               timeout=APT_TIMEOUT_S)
        assert p.returncode == 0, p.stdout + p.stderr
        assert installed_version() == "install ok installed " + version
        owned = set(sh("dpkg", "-L", "ttftrace").stdout.split())
        assert FILES <= owned, sorted(FILES - owned)

        p = sh("/usr/bin/ttftrace", "--version")
        assert p.returncode == 0, p.stderr
        lines = p.stdout.splitlines()
        assert lines[0].startswith("ttftrace ") and lines[1].startswith("commit "), lines
        if "+git" in version:   # no release tag: TTF_VERSION+gitN.COMMIT
            assert version.startswith(lines[0].split()[1] + "+git"), (version, lines)
            assert version.endswith("." + lines[1].split()[1].replace("-dirty", ".dirty")), \
                (version, lines)
        p = sh("man", "-w", "ttftrace")
        assert p.stdout.strip() == "/usr/share/man/man8/ttftrace.8.gz", p.stdout + p.stderr

        srv = sse_server("--ttft-ms", str(TTFT_MS), "--itl-ms", "5", "--tokens", str(TOKENS))
        # the installed profiles, found from /usr/bin (no TTFTRACE_PROFILE_DIR)
        env_np = dict(os.environ)
        env_np.pop("TTFTRACE_PROFILE_DIR", None)
        p = sh("/usr/bin/ttftrace", "-p", str(srv.pid), "--profile", "llamacpp", "-d", "0.3",
               "-o", "/dev/null", env=env_np, cwd="/", timeout=60)
        assert p.returncode == 0 and "no profile named" not in p.stderr, p.stderr

        recs, curl_s, err = traced_request(srv.pid, srv.port, str(tmp_path / "out.ndjson"))
        reqs = [r for r in recs if r.get("type") == "request"]
        assert len(reqs) == 1, err + json.dumps(recs)
        r = reqs[0]
        assert r["path"] == "/v1/chat/completions" and r["status"] == 200, r
        assert r["tokens"] == TOKENS and r["pid"] == srv.pid, r
        # the server waited TTFT_MS before the first token; curl saw the whole response
        assert TTFT_MS <= r["ttft_ms"] <= curl_s * 1e3, (r["ttft_ms"], curl_s)

        p = sh("apt-get", LOCK_WAIT, "remove", "-y", "ttftrace", env=env, timeout=APT_TIMEOUT_S)
        assert p.returncode == 0, p.stdout + p.stderr
        assert installed_version().startswith("deinstall ok config-files")
        left = [f for f in FILES if os.path.exists(f)]
        assert left == ["/etc/default/ttftrace"], left
    finally:
        p = sh("apt-get", LOCK_WAIT, "purge", "-y", "ttftrace", env=env, timeout=APT_TIMEOUT_S)
    assert p.returncode == 0, p.stdout + p.stderr
    assert installed_version() in ("", "unknown ok not-installed ")
    assert not [f for f in FILES | {CUPTI, "/usr/share/ttftrace"} if os.path.exists(f)]
