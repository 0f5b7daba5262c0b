# SPDX-License-Identifier: GPL-2.0-only
"""The demo's Node.js is checked first (tools/demo/check_node.sh, run at the top of
tools/setup.sh): a fake `node` earlier on PATH that prints Debian 12's v18.19.0 is
refused with Error and HINT, and `make demo` stops there, before any install or
build; one at node-llama-cpp's minimum passes. Without a node, the version apt
would install is judged (a fake apt-cache offering Debian 12's nodejs 18).
The minimum is node-llama-cpp's package.json "engines", read here from
tools/demo/package-lock.json with json, apart from the script's own reading.
"""
import json
import os
import re
import shutil
import subprocess
import time

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(
    os.path.abspath(__file__)))))
CHECK = os.path.join(ROOT, "tools", "demo", "check_node.sh")


def node_minimum():
    with open(os.path.join(ROOT, "tools", "demo", "package-lock.json")) as f:
        lock = json.load(f)
    pkg = lock["packages"]["node_modules/node-llama-cpp"]
    m = re.match(r">=(\d+)\.", pkg["engines"]["node"])
    assert m, pkg["engines"]
    return int(m.group(1)), pkg["version"]


def fake(bindir, name, text):
    p = os.path.join(bindir, name)
    with open(p, "w") as f:
        f.write("#!/bin/sh\n" + text + "\n")
    os.chmod(p, 0o755)


def check(path, **kw):
    env = dict(os.environ, PATH=path)
    return subprocess.run([CHECK], capture_output=True, text=True, env=env, timeout=30, **kw)


def test_old_node_refused(tmp_path):
    need, ver = node_minimum()
    assert need == 20 and ver == "3.21.1"   # what the docs say; change them with the pin
    fake(str(tmp_path), "node", "echo v18.19.0")
    p = check(str(tmp_path) + ":" + os.environ["PATH"])
    assert p.returncode == 1, p.stdout + p.stderr
    lines = p.stderr.splitlines()
    assert lines[0].startswith("Error: node v18.19.0 (%s/node) is too old" % tmp_path), lines
    assert "node-llama-cpp %s needs Node.js >= %d" % (ver, need) in lines[0], lines
    assert lines[1].startswith("HINT: install Node.js %d or newer" % need), lines


def test_new_enough_node_passes(tmp_path):
    need, _ = node_minimum()
    fake(str(tmp_path), "node", "echo v%d.0.0" % need)
    p = check(str(tmp_path) + ":" + os.environ["PATH"])
    assert p.returncode == 0 and p.stderr == "", p.stderr
    fake(str(tmp_path), "node", "echo v%d.99.0" % (need - 1))
    p = check(str(tmp_path) + ":" + os.environ["PATH"])
    assert p.returncode == 1 and "is too old" in p.stderr, p.stderr


def test_no_node_judges_apt_candidate(tmp_path):
    # a PATH with the script's tools and no node: a fake apt-cache answers
    for tool in ("bash", "sed", "head", "dirname"):
        os.symlink(shutil.which(tool), str(tmp_path / tool))
    fake(str(tmp_path), "apt-cache", "printf 'nodejs:\\n  Installed: (none)\\n"
         "  Candidate: 18.20.4+dfsg-1~deb12u2\\n'")
    p = check(str(tmp_path))
    assert p.returncode == 1, p.stderr
    assert "node 18.20.4+dfsg-1~deb12u2 (apt's nodejs package) is too old" in p.stderr, p.stderr
    assert "\nHINT: " in p.stderr


def test_make_demo_stops_before_building(tmp_path):
    fake(str(tmp_path), "node", "echo v18.19.0")
    # setup.sh's first look at the packages, and npm, leave a mark if they run at all
    mark = tmp_path / "ran"
    for tool in ("dpkg-query", "npm", "apt-get"):
        fake(str(tmp_path), tool, 'echo %s >> %s; exec %s "$@"' % (tool, mark, shutil.which(tool)))
    out = tmp_path / "output"
    env = dict(os.environ, PATH=str(tmp_path) + ":" + os.environ["PATH"])
    t = time.monotonic()
    p = subprocess.run(["make", "--no-print-directory", "demo", "OUTPUT=" + str(out)],
                       cwd=ROOT, capture_output=True, text=True, env=env, timeout=120)
    took = time.monotonic() - t
    assert p.returncode != 0, p.stdout + p.stderr
    assert "Error: node v18.19.0" in p.stderr and "\nHINT: " in p.stderr, p.stderr
    # nothing installed or built: setup.sh's installs and make all never started
    assert "setup:" not in p.stdout and "demo:" not in p.stdout, p.stdout
    assert not out.exists(), os.listdir(str(out))
    assert not mark.exists(), mark.read_text()
    assert took < 30, took
