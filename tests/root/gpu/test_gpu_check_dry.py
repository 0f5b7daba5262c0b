# SPDX-License-Identifier: GPL-2.0-only
"""`make gpu-check DRY=1`: the GPU check's every step, parser and report path
run here, on stand-ins (tests/gpu/dry/: the collector's transport fed from
Python, a libcudart on host memory, a sysfs tree and nvidia-smi text), with
the real ttftrace, BPF and gpu-attach. The stand-ins' numbers are known, so
each judgement is held to them; then each judgement is shown to fail on a
planted error in a copy of the outputs (docs/gpu.md "The GPU check")."""
import json
import os
import shutil
import subprocess

import pytest

from conftest import ROOT, TTFTRACE, needs_root, require_built, require_cupti

RUN = os.path.join(ROOT, "tests", "gpu", "run.sh")
CHECK = os.path.join(ROOT, "tests", "gpu", "check.py")
PY = "/usr/bin/python3"


@pytest.fixture(scope="module")
def dry(tmp_path_factory):
    require_built(TTFTRACE)
    require_cupti()
    work = str(tmp_path_factory.mktemp("gpucheck") / "w")
    res = os.path.join(os.path.dirname(work), "results.json")
    env = dict(os.environ, DRY="1", GPU_WORK=work, PORT="18437", PYTHON=PY)
    p = subprocess.run([RUN, res], env=env, capture_output=True, text=True, timeout=300)
    return p, work, json.load(open(res))


@needs_root
def test_dry_run_passes_every_step(dry):
    p, _work, r = dry
    assert p.returncode == 0, p.stdout[-3000:] + p.stderr[-3000:]
    assert r["dry"] and r["pass"]
    assert all(s["status"] == "ok" for s in r["steps"].values()), r["steps"]
    unrun = [(n, k) for n, s in r["steps"].items() for k, v in s["checks"].items() if v is None]
    assert unrun == [("attach", "records_after_attach")], unrun
    assert "GPU check (dry run, stand-ins): PASS" in p.stdout


@needs_root
def test_dry_figures_are_the_stand_ins(dry):
    """51 timed operations (12 kernels, 36 copies, 3 graph replays); 36 requests
    joined by client port, each prefill exactly the 3 ms span the server sent;
    the copy stage's pinned 32 MiB copy at 32 MiB / 2 ms."""
    _p, _work, r = dry
    k, t = r["steps"]["known"]["figures"], r["steps"]["tracer"]
    assert k["ops"] == 51
    assert t["figures"]["requests_joined"] == 36
    assert t["figures"]["within_10pct"] == {"1": "12/12", "8": "24/24"}
    assert all(abs(row["ttftrace_ms"] - 3.0) < 0.01 for row in t["rows"]), t["rows"]
    assert all(row["tid_match"] for row in t["rows"])
    assert t["figures"]["pinned_gbps_median"] == pytest.approx(33554432 / 2e6, rel=0.01)
    a = r["steps"]["attach"]["figures"]
    assert a["rc"] == {"first_rc": 12, "second_rc": 14}


def _perturb(work, tmp_path, name, fn, extra=None):
    w = str(tmp_path / "w")
    shutil.copytree(work, w)
    for other, text in (extra or {}).items():
        with open(os.path.join(w, other), "w") as f:
            f.write(text)
    with open(os.path.join(w, name)) as f:
        text = f.read()
    with open(os.path.join(w, name), "w") as f:
        f.write(fn(text))
    out = str(tmp_path / "r.json")
    p = subprocess.run([PY, CHECK, w, out], capture_output=True, text=True)
    return p.returncode, json.load(open(out))["steps"]


def _scale_col(col, factor):
    def fn(text):
        rows = [ln.split() for ln in text.splitlines() if ln.strip()]
        for r in rows:
            r[col] = str(int(int(r[col]) * factor))
        return "\n".join(" ".join(r) for r in rows) + "\n"
    return fn


@needs_root
@pytest.mark.parametrize("name,fn,step,check", [
    ("known.txt", _scale_col(3, 1.03), "known", "kernels_within_2pct_or_5us"),
    ("known-spans.txt", lambda t: t.replace(" 1\n", " 0\n"), "known", "pageable_flagged"),
    ("windows.txt", _scale_col(5, 1.15), "tracer", "c1_prefill_within_10pct_95pct"),
    ("copy-ref.json", lambda t: json.dumps({"results": [
        r for r in json.loads(t)["results"] if r["bytes"] != 268435456]}),
     "copybw", "same_sizes_measured"),
    ("nvsmi-busy.txt", lambda t: t.replace("Current                   : 4",
                                           "Current                   : 3"),
     "pcie", "busy_current_equals_nvidia_smi"),
    ("attach-rc.json", lambda t: t.replace('"second_rc": 14', '"second_rc": 0'),
     "attach", "second_attach_refused"),
    ("load-attach-after.json", lambda t: json.dumps(dict(json.loads(t), tokens_per_s=1.0)),
     "attach", "tokens_per_s_within_25pct"),
])
def test_each_judgement_catches_a_planted_error(dry, tmp_path, name, fn, step, check):
    _p, work, _r = dry
    rc, steps = _perturb(work, tmp_path, name, fn)
    assert rc == 1 and steps[step]["checks"][check] is False, steps[step]


@needs_root
@pytest.mark.parametrize("dry_bars, factor, check", [
    (False, 1.06, "pinned_within_5pct"),     # a GPU's bar
    (True, 1.40, "pinned_within_25pct"),     # the dry run's: its copies are sleeps
])
def test_copybw_judgement_catches_a_gap(dry, tmp_path, dry_bars, factor, check):
    _p, work, _r = dry
    with open(os.path.join(work, "env.json")) as f:
        env = dict(json.load(f), dry=dry_bars)

    # the reference set factor above ttftrace's own figures (not its own: those
    # differ from ttftrace's by the host's noise, which could hide the gap)
    with open(os.path.join(work, "copybw.json")) as f:
        ours = {(r["dir"], r["memory"], r["bytes"]): r["gbps"] for r in json.load(f)["results"]}

    def slower(text):
        d = json.loads(text)
        for r in d["results"]:
            r["gbps"] = ours.get((r["dir"], r["memory"], r["bytes"]), r["gbps"]) * factor
        return json.dumps(d)
    rc, steps = _perturb(work, tmp_path, "copy-ref.json", slower,
                         extra={"env.json": json.dumps(env)})
    assert rc == 1 and steps["copybw"]["checks"][check] is False, steps["copybw"]
