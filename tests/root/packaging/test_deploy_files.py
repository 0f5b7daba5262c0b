# SPDX-License-Identifier: GPL-2.0-only
"""deploy/: the Dockerfile, the DaemonSet and the systemd unit agree with the
build and with what ttftrace checks at start.

The image is built and run by `make container-test` (tests/container/run.sh,
slow, not in `make test`); here, without building it, the Dockerfile's
build stage must install the build packages of tools/setup.sh (what a fresh
machine gets), its runtime stage a package for every library the built
binary links (readelf NEEDED, resolved with ldconfig and dpkg), and its
entrypoint is where `make install PREFIX=/usr` puts the binary. The DaemonSet
and the unit grant exactly the capabilities docs/deploy.md and ttftrace's start-up
check name (CAP_BPF, CAP_PERFMON; CAP_SYS_PTRACE for other users' /proc
entries), hostPID, and nothing privileged.
"""
import os
import re
import shutil
import subprocess

import pytest
import yaml

from conftest import ROOT, TTFTRACE, require_built

DOCKERFILE = os.path.join(ROOT, "deploy", "docker", "Dockerfile")
DAEMONSET = os.path.join(ROOT, "deploy", "kubernetes", "ttftrace-daemonset.yaml")
UNIT = os.path.join(ROOT, "deploy", "systemd", "ttftrace.service.in")
SETUP = os.path.join(ROOT, "tools", "setup.sh")
CAPS = {"BPF", "PERFMON", "SYS_PTRACE"}


def stages():
    """{stage index: [packages of its apt-get install lines]} and the whole text."""
    with open(DOCKERFILE) as f:
        text = f.read()
    out, cur = {}, -1
    joined = text.replace("\\\n", " ")
    for line in joined.splitlines():
        if line.startswith("FROM "):
            cur += 1
            out[cur] = []
            assert re.match(r"FROM debian:12(-slim)?( AS \w+)?$", line), line
        m = re.search(r"apt-get install -y -qq --no-install-recommends ([^&]+)", line)
        if m:
            out[cur] += m.group(1).split()
    return out, text


def setup_packages(name="PKGS"):
    with open(SETUP) as f:
        text = f.read()
    m = re.search(r"^%s=\((.*?)\)$" % name, text, re.M | re.S)
    assert m
    return set(re.sub(r"#[^\n]*", "", m.group(1)).split())


def test_dockerfile_builds_as_setup_sh_and_make_do():
    st, text = stages()
    assert len(st) == 2, st
    build, runtime = st[0], st[1]
    # `tools/setup.sh --build` (make build-deps, README's build-only start) installs
    # exactly the build stage's packages, which make container-test proves enough
    assert set(build) == setup_packages("BUILD_PKGS"), (
        set(build) ^ setup_packages("BUILD_PKGS"))
    assert re.search(r'^RUN make -j\S+ install PREFIX=/usr DESTDIR=/stage '
                     r'GIT_COMMIT="\$TTF_GIT_COMMIT"$', text, re.M)
    assert 'ENTRYPOINT ["/usr/bin/ttftrace"]' in text
    assert "COPY --from=build /stage/usr/ /usr/" in text


@pytest.mark.skipif(shutil.which("dpkg") is None or shutil.which("readelf") is None,
                    reason="needs dpkg and readelf")
def test_runtime_stage_has_every_linked_library():
    require_built(TTFTRACE)
    runtime = set(stages()[0][1])
    needed = re.findall(r"\(NEEDED\)\s+Shared library: \[(.+?)\]",
                        subprocess.run(["readelf", "-d", TTFTRACE], capture_output=True,
                                       text=True, check=True).stdout)
    assert "libbpf.so.1" in needed, needed
    cache = subprocess.run(["ldconfig", "-p"], capture_output=True, text=True).stdout
    missing = []
    for lib in needed:
        m = re.search(r"^\s+%s \(libc6,x86-64\) => (\S+)" % re.escape(lib), cache, re.M)
        assert m, lib
        # merged /usr: dpkg may know the file under /lib or /usr/lib
        real = os.path.realpath(m.group(1))
        out = subprocess.run(["dpkg", "-S", "*/" + os.path.basename(real)],
                             capture_output=True, text=True).stdout
        pkgs = set()
        for line in out.splitlines():
            names, _, path = line.partition(": ")
            if os.path.realpath(path) == real:
                pkgs |= {n.split(":")[0] for n in names.split(", ")}
        assert pkgs, (lib, out)
        if not pkgs & (runtime | {"libc6"}):
            missing.append("%s (%s)" % (lib, pkgs))
    assert not missing, missing


def test_daemonset_privileges():
    with open(DAEMONSET) as f:
        ds = yaml.safe_load(f)
    assert ds["kind"] == "DaemonSet" and ds["apiVersion"] == "apps/v1"
    spec = ds["spec"]["template"]["spec"]
    assert spec["hostPID"] is True
    assert not spec.get("hostNetwork")
    (c,) = spec["containers"]
    sc = c["securityContext"]
    assert sc["privileged"] is False and sc["allowPrivilegeEscalation"] is False
    assert sc["capabilities"]["drop"] == ["ALL"]
    assert set(sc["capabilities"]["add"]) == CAPS
    assert sc["seccompProfile"]["type"] == "Unconfined"
    mounts = {m["mountPath"]: m for m in c["volumeMounts"]}
    assert mounts["/sys"]["readOnly"] is True
    # uprobes as tracefs events where the kernel refuses perf uprobes (docs/deploy.md):
    # the host's tracefs writable, by UID 0 (uprobe_events is root's, mode 0640)
    assert not mounts["/sys/kernel/tracing"].get("readOnly")
    vols = {v["name"]: v for v in spec["volumes"]}
    assert vols[mounts["/sys/kernel/tracing"]["name"]]["hostPath"]["path"] == "/sys/kernel/tracing"
    assert sc["runAsUser"] == 0
    # the args are a valid command line: --metrics on every address, the port exposed
    args = c["args"]
    assert args[args.index("--metrics") + 1] == "0.0.0.0:9464"
    assert c["ports"][0]["containerPort"] == 9464
    with open(DAEMONSET) as f:
        text = f.read()
    for why in ("CAP_BPF", "CAP_PERFMON", "CAP_SYS_PTRACE", "hostPID", "seccomp"):
        assert why in text, why


def test_unit_capabilities_match():
    with open(UNIT) as f:
        unit = f.read()
    for key in ("CapabilityBoundingSet", "AmbientCapabilities"):
        m = re.search(r"^%s=(.*)$" % key, unit, re.M)
        assert m and set(m.group(1).split()) == {"CAP_" + c for c in CAPS}, key
    assert re.search(r"^ExecStart=@BINDIR@/ttftrace \$TTFTRACE_ARGS$", unit, re.M)
    # exit codes (README "Exit codes") a restart cannot fix: usage, privileges, kernel
    assert re.search(r"^RestartPreventExitStatus=2 3 4$", unit, re.M)
    # root with only those capabilities, tracefs writable (uprobe events, docs/deploy.md)
    assert not re.search(r"^(User|DynamicUser)=", unit, re.M)
    assert re.search(r"^ReadWritePaths=-/sys/kernel/tracing$", unit, re.M)


HARDENING = ("ProtectSystem=strict", "ProtectKernelModules=yes", "ProtectKernelLogs=yes",
             "ProtectClock=yes", "ProtectHostname=yes", "ProtectControlGroups=yes",
             "LockPersonality=yes", "RestrictRealtime=yes", "RestrictSUIDSGID=yes",
             "RestrictNamespaces=yes", "SystemCallArchitectures=native", "NoNewPrivileges=yes")


@pytest.mark.skipif(shutil.which("systemd-analyze") is None, reason="no systemd-analyze")
def test_unit_hardening(tmp_path):
    """The cheap hardening options are set, and systemd's own scoring of the unit
    (`systemd-analyze security --offline`) rates its exposure 5.0 or lower (the
    unit without them: 6.1, MEDIUM)."""
    with open(UNIT) as f:
        unit = f.read()
    lines = set(unit.splitlines())
    missing = [h for h in HARDENING if h not in lines]
    assert not missing, missing
    u = tmp_path / "ttftrace.service"
    u.write_text(unit.replace("@BINDIR@", "/usr/bin"))
    p = subprocess.run(["systemd-analyze", "security", "--offline=yes", str(u)],
                       capture_output=True, text=True, timeout=60)
    m = re.search(r"Overall exposure level for ttftrace.service: ([0-9.]+)", p.stdout)
    assert m, p.stdout + p.stderr
    assert float(m.group(1)) <= 5.0, p.stdout
