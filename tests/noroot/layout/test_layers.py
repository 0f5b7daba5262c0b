# SPDX-License-Identifier: GPL-2.0-only
"""The layout of user/ and its dependency rules (README.md, "Layout").

Layers, and what each may include besides itself, lib and the ABI headers
(bpf/*.h, cupti/gpu_wire.h):

    cmd    -> core, export, model, proto, probe, hw
    core   -> export, model, proto
    export -> model, proto, hw   (hw: the PCIe gauges of the metrics endpoint)
    model  -> proto
    proto  -> (nothing else)
    probe  -> (nothing else)
    hw     -> (nothing else)
    lib    -> (nothing else)

Also: no .c file directly in user/ but main.c, and no comment or string in
the code points at a document outside the repository.
"""
import glob
import os
import re

from conftest import ROOT

ALLOWED = {
    "cmd": {"core", "export", "model", "proto", "probe", "hw"},
    "core": {"export", "model", "proto"},
    "export": {"model", "proto", "hw"},
    "model": {"proto"},
    "proto": set(),
    "probe": set(),
    "hw": set(),
    "lib": set(),
}
ABI = re.compile(r'^(bpf/[a-z_]+\.h|cupti/gpu_wire\.h|[a-z_]+\.skel\.h|report_template\.h)$')
INCLUDE = re.compile(r'^\s*#\s*include\s+"([^"]+)"', re.M)


def sources(pattern):
    return sorted(glob.glob(os.path.join(ROOT, pattern)))


def test_only_main_c_at_top():
    top = [os.path.basename(p) for p in sources("user/*.c")]
    assert top == ["main.c"]


def test_every_layer_exists_and_nothing_else():
    dirs = {os.path.basename(p) for p in sources("user/*") if os.path.isdir(p)}
    assert dirs == set(ALLOWED)


def layer_violations(root):
    bad = []
    for path in sorted(glob.glob(os.path.join(root, "user/*/**/*.[ch]"), recursive=True)):
        layer = os.path.relpath(path, root).split(os.sep)[1]
        with open(path) as f:
            text = f.read()
        for inc in INCLUDE.findall(text):
            if inc.startswith("user/"):
                to = inc.split("/")[1]
                if to not in (layer, "lib") and to not in ALLOWED.get(layer, ()):
                    bad.append("%s includes %s" % (os.path.relpath(path, root), inc))
            elif not ABI.match(inc) and layer in ("probe", "lib"):
                bad.append("%s includes %s" % (os.path.relpath(path, root), inc))
    return bad


def test_dependencies_point_one_way():
    bad = layer_violations(ROOT)
    assert not bad, "\n".join(bad)


def test_a_real_violation_is_caught(tmp_path):
    """The check finds a model file that includes the pipeline, and a probe that includes a model."""
    for layer, name, inc in (("model", "x.c", "user/core/pipeline.h"),
                             ("probe", "y.h", "user/model/sched.h"),
                             ("proto", "z.c", "user/lib/log.h")):
        d = tmp_path / "user" / layer
        d.mkdir(parents=True, exist_ok=True)
        (d / name).write_text('#include "%s"\n' % inc)
    assert layer_violations(str(tmp_path)) == [
        "user/model/x.c includes user/core/pipeline.h",
        "user/probe/y.h includes user/model/sched.h",
    ]


OUTSIDE = re.compile(r"\.\./shared|platform-brief|cases/README|style-anchors|\bissue \d+")


def test_no_reference_outside_the_repository():
    bad = []
    for pattern in ("user/**/*.[ch]", "bpf/*", "cupti/*", "tests/**/*.py", "tests/**/*.c",
                    "tests/**/*.sh", "bench/*", "tools/**/*.[ch]", "tools/**/*.sh",
                    "tools/**/*.py", "tools/**/*.mjs", "Makefile"):
        for path in glob.glob(os.path.join(ROOT, pattern), recursive=True):
            if os.path.isdir(path) or path == os.path.abspath(__file__):
                continue
            with open(path, errors="replace") as f:
                for i, line in enumerate(f, 1):
                    if OUTSIDE.search(line):
                        bad.append("%s:%d: %s" % (os.path.relpath(path, ROOT), i, line.strip()))
    assert not bad, "\n".join(bad[:40])


def test_docs_cited_by_the_code_exist():
    missing = set()
    for path in glob.glob(os.path.join(ROOT, "**/*.[ch]"), recursive=True):
        if "/.output/" in path or "/node_modules/" in path:
            continue
        with open(path, errors="replace") as f:
            for ref in re.findall(r"docs/[a-z_]+\.md", f.read()):
                if not os.path.exists(os.path.join(ROOT, ref)):
                    missing.add(ref)
    assert not missing, sorted(missing)
