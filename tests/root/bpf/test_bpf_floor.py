# SPDX-License-Identifier: GPL-2.0-only
"""Static check: every BPF object uses only the program types and helpers of
its oldest supported kernel (docs/kernel.md B8, the tables with their
sources). No root, no kernel: it reads .output/bpf/*.bpf.o."""
import glob
import os
import re

import pytest

from bpf_obj import helper_names, programs

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))))
DOC = os.path.join(ROOT, "docs", "kernel.md")
OBJS = sorted(glob.glob(os.path.join(ROOT, ".output", "bpf", "*.bpf.o")))
# Helpers an object calls only behind a run-time check (docs/kernel.md B7, B1.17).
GUARDED = {"engine.bpf.o": {"bpf_loop"}, "sched.bpf.o": {"bpf_jiffies64"}}


def version(v):
    return tuple(int(x) for x in v.split("."))


def b8_tables():
    """(floors {object: version}, types {type: version}, helpers {name: version})."""
    text = open(DOC).read()
    b8 = text[text.index("## B8 "):]
    b8 = b8[:b8.index("\n## ", 1)]
    floors, types, helpers = {}, {}, {}
    for line in b8.splitlines():
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        if len(cells) < 2 or not re.fullmatch(r"\d+\.\d+", cells[1]):
            continue
        names = re.findall(r"`([^`]+)`", cells[0])
        for n in names:
            if n.endswith(".bpf.o"):
                floors[n] = version(cells[1])
            elif n.startswith("bpf_"):
                helpers[n] = version(cells[1])
            else:
                types[n] = version(cells[1])
    return floors, types, helpers


def test_tables_parse():
    floors, types, helpers = b8_tables()
    assert floors["net_syscall.bpf.o"] == (5, 8)
    assert types["tp_btf"] == (5, 5) and helpers["bpf_ringbuf_output"] == (5, 8)


@pytest.mark.skipif(not OBJS, reason="BPF objects not built (make)")
@pytest.mark.parametrize("obj", OBJS, ids=os.path.basename)
def test_object_fits_its_oldest_kernel(obj):
    floors, types, helpers = b8_tables()
    name = os.path.basename(obj)
    assert name in floors, "%s has no oldest kernel in docs/kernel.md B8" % name
    floor = floors[name]
    ids = helper_names()
    bad = []
    for sec, calls in programs(obj).items():
        ptype = sec.split("/")[0]
        if ptype not in types:
            bad.append("%s: program type %s is not in the table" % (sec, ptype))
        elif types[ptype] > floor:
            bad.append("%s: %s needs %s" % (sec, ptype, types[ptype]))
        for i in calls:
            h = ids.get(i, "helper#%d" % i)
            if h in GUARDED.get(name, ()):
                continue
            if h not in helpers:
                bad.append("%s: %s is not in the table" % (sec, h))
            elif helpers[h] > floor:
                bad.append("%s: %s needs %s" % (sec, h, ".".join(map(str, helpers[h]))))
    assert not bad, "%s (oldest kernel %s): %s" % (name, ".".join(map(str, floor)),
                                                     sorted(set(bad)))


def test_check_finds_a_newer_helper(tmp_path):
    """The check is not vacuous: net.bpf.o calls bpf_task_pt_regs (5.15)."""
    obj = os.path.join(ROOT, ".output", "bpf", "net.bpf.o")
    if not os.path.exists(obj):
        pytest.skip("not built")
    _, _, helpers = b8_tables()
    ids = helper_names()
    used = {ids[i] for calls in programs(obj).values() for i in calls}
    assert "bpf_task_pt_regs" in used and helpers["bpf_task_pt_regs"] > (5, 8)
