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


def setup_packages():
    with open(SETUP) as f:
        text = f.read()
    m = re.search(r"^PKGS=\((.*?)\)$", text, re.M | re.S)
    assert m
    return set(re.sub(r"#[^\n]*", "", m.group(1)).split())


def test_dockerfile_builds_as_setup_sh_and_make_do():
    st, text = stages()
    assert len(st) == 2, st
    build, runtime = st[0], st[1]
    extra = set(build) - setup_packages()
    assert not extra, "the Dockerfile installs what tools/setup.sh does not: %s" % extra
    # the build packages of setup.sh: its first PKGS line, minus test-only ones
    with open(SETUP) as f:
        first = re.search(r"^PKGS=\(([^\n]*)\n([^\n]*)", f.read(), re.M)
    wanted = set((first.group(1) + " " + first.group(2)).split()) - {
        "python3", "python3-pytest", "iproute2", "procps", "golang-go"}
    assert wanted <= set(build), wanted - set(build)
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
